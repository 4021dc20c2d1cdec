"""``ltr bench --batch --letor2``: the LETOR 2.0 configs' CV timed on generated folds.
Structure only: timings are never asserted in unit tests."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ltr_cli.bench.letor2 import CONFIGS, format_letor2_table, run_letor2_bench, sized
from ltr_cli.cli.app import app


def test_letor2_bench_runs_every_dataset_and_prints_the_table():
    result = run_letor2_bench(scale=0.02, learners=["ranksvm", "rankboost", "permurank"])
    assert list(result["datasets"]) == list(CONFIGS)
    for name, row in result["datasets"].items():
        assert row["queries"] == sized(name, 0.02).queries == 5
        assert set(row["learners"]) == {"ranksvm", "rankboost", "permurank"}
        assert row["learners"]["ranksvm"]["fits"] == 5 * 5  # five folds of the config's five Cs
        assert all(r["seconds"] >= 0 for r in row["learners"].values())
    # PermuRank is timed but kept out of the total
    assert result["total_s"] == round(sum(d["learners"][n]["seconds"] for d in result["datasets"].values()
                                          for n in ("ranksvm", "rankboost")), 2)
    table = format_letor2_table(result)
    assert "ohsumed" in table and "td2004" in table and "permurank (apart)" in table
    assert "600 s budget" in table


def test_letor2_bench_from_the_command_line():
    res = CliRunner().invoke(app, ["bench", "--batch", "--letor2", "--letor2-scale", "0.02",
                                   "--letor2-learner", "adarank", "--json"])
    assert res.exit_code == 0, (res.stdout, res.stderr)
    out = json.loads(res.stdout)
    assert set(out) == {"letor2"}  # --letor2: only this figure
    assert all(set(d["learners"]) == {"adarank"} for d in out["letor2"]["datasets"].values())
    res = CliRunner().invoke(app, ["bench", "--letor2"])
    assert res.exit_code == 1 and "add --batch" in res.stderr
