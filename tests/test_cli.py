"""End to end through the CLI: run, plot, list, data inspect/convert, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.measures.metrics import time_average
from tests.conftest import REPO

runner = CliRunner()
DEMO = REPO / "configs" / "simulated_separable.yaml"


def run_ok(*args):
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, (res.stdout, res.stderr)
    return res


def test_demo_reproduces_figure1_claims(tmp_path):
    """Authors' protocol: NDCG@10 time average >= 0.98 at round 100, no update in the
    last half of 1000 rounds (a finite number of mistakes, Corollary 7)."""
    res = run_ok("run", DEMO, "--out", tmp_path, "--quiet", "--learner", "slam-ndcg")
    run_dir = Path(res.stdout.strip())
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "config.yaml", "manifest.json", "models.json", "rounds.parquet", "summary.json"]
    rounds = pd.read_parquet(run_dir / "rounds.parquet")
    assert len(rounds) == 1000
    curve = time_average(rounds["ndcg@10"].to_numpy())
    assert curve[99] >= 0.98
    assert not rounds["updated"].iloc[500:].any()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["rounds"] == 1000 and summary["updates"] == int(rounds["updated"].sum())
    assert summary["metrics"]["ndcg@10"]["final_time_average"] == pytest.approx(curve[-1])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    conv = manifest["conventions"]
    assert conv["ties"] == "reverse-input" and conv["no_relevant"] == "one"
    assert conv["fidelity"] == "authors-code" and manifest["seed"] == 0
    assert manifest["dataset"]["fingerprint"]["generator"]["variant"] == "authors"

    plots = run_ok("plot", tmp_path / "simulated_separable", "--out", tmp_path / "plots")
    pngs = [Path(p) for p in plots.stdout.split() if p.endswith(".png")]
    assert pngs and all(p.stat().st_size > 1000 for p in pngs)
    assert (tmp_path / "plots" / "simulated_separable_ndcg_at_10.pdf").is_file()


def test_same_config_same_rounds(tmp_path):
    a = run_ok("run", DEMO, "--out", tmp_path / "a", "-q", "--set", "protocol.max_rounds=50").stdout.split()
    b = run_ok("run", DEMO, "--out", tmp_path / "b", "-q", "--set", "protocol.max_rounds=50").stdout.split()
    assert len(a) == 3 and [Path(p).name for p in a] == [Path(p).name for p in b]
    for pa, pb in zip(a, b):
        pd.testing.assert_frame_equal(pd.read_parquet(Path(pa) / "rounds.parquet"),
                                      pd.read_parquet(Path(pb) / "rounds.parquet"))


def test_keep_probability_and_passes(tmp_path):
    res = run_ok("run", DEMO, "--out", tmp_path, "-q", "--learner", "listnet", "--set", "protocol.passes=3",
                 "--set", "protocol.keep_probability=0.5", "--set", "dataset.queries=40")
    rounds = pd.read_parquet(Path(res.stdout.strip()) / "rounds.parquet")
    assert set(rounds["pass"]) == {1, 2, 3}
    assert 20 < len(rounds) < 100  # about 60 of 120


def test_registry_dataset_missing_gives_one_line_error(tmp_path):
    cfg = REPO / "configs" / "mslr_slam.yaml"
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path), "--set",
                              f"dataset.root={tmp_path / 'nowhere'}"])
    assert res.exit_code == 1
    err = res.stderr.strip()
    assert "\n" not in err and "Fold1/train.txt" in err and "MSLR-WEB10K.zip" in err
    assert not any(tmp_path.iterdir())  # nothing written


def test_run_on_files_dataset(tmp_path, write):
    from ltr_cli.data.registry import get_dataset
    from ltr_cli.data.synthetic import ShapeSpec, shaped_queries, write_svmlight

    data = tmp_path / "yandex_like.txt"
    write_svmlight(data, shaped_queries(get_dataset("yandex-imat2009"), ShapeSpec(queries=30)),
                   qid_style="comment", sparse=True)
    cfg = write("files.yaml", f"""
experiment: files_demo
dataset: {{kind: files, files: [{data}], features: 245, qid: comment}}
protocol: {{passes: 2}}
metrics: {{names: [ndcg@10, ap, p@5, neru@10]}}
learners:
  slam: {{type: slam-perceptron, step: {{rule: constant, eta: 0.1}}}}
""")
    res = run_ok("run", cfg, "--out", tmp_path / "out", "-q")
    rounds = pd.read_parquet(Path(res.stdout.strip()) / "rounds.parquet")
    assert len(rounds) == 60 and {"ndcg@10", "ap", "p@5", "neru@10"} <= set(rounds.columns)
    assert rounds[["ndcg@10", "ap", "p@5", "neru@10"]].apply(lambda c: c.between(0, 1).all()).all()


def test_bad_data_line_stops_run_without_results(tmp_path, write):
    data = write("bad.txt", "1 qid:1 1:1\n0 qid:1 1:oops\n")
    cfg = write("c.yaml", f"""
experiment: bad
dataset: {{kind: files, files: [{data}], features: 3}}
learners: {{slam: {{type: slam-perceptron}}}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out")])
    assert res.exit_code == 1 and "bad.txt:2:" in res.stderr
    assert not (tmp_path / "out" / "bad").exists() or not any((tmp_path / "out" / "bad").iterdir())


def test_interrupted_write_leaves_nothing_that_looks_complete(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise KeyboardInterrupt

    import ltr_cli.results.folders as folders

    monkeypatch.setattr(folders, "_write_parquet", boom)  # every table of a run folder is written by it
    res = runner.invoke(app, ["run", str(DEMO), "--out", str(tmp_path), "-q"])
    assert res.exit_code != 0  # click reports the interrupt as "Aborted!"
    exp = tmp_path / "simulated_separable"
    # only hidden entries may remain (the resume checkpoint); no run directory
    assert not exp.exists() or all(p.name.startswith(".") for p in exp.iterdir())
    from ltr_cli.results.folders import find_runs

    assert not exp.exists() or find_runs([exp]) == []


def test_unknown_learner_filter_and_config_error(tmp_path):
    res = runner.invoke(app, ["run", str(DEMO), "--learner", "nope"])
    assert res.exit_code == 1 and "no learner named 'nope'" in res.stderr
    res = runner.invoke(app, ["run", str(DEMO), "--set", "metrics.names=[ndcg@0]"])
    assert res.exit_code == 1 and "metrics.names" in res.stderr


def test_plot_errors(tmp_path):
    res = runner.invoke(app, ["plot", str(tmp_path / "none")])
    assert res.exit_code == 1 and "no such results directory" in res.stderr
    res = runner.invoke(app, ["plot", str(tmp_path)])
    assert res.exit_code == 1 and "no finished runs" in res.stderr


def test_list_json():
    out = json.loads(run_ok("list", "--json").stdout)
    assert "slam-perceptron" in out["learners"] and "mslr-web10k" in out["datasets"]
    assert set(out["conventions"]) == {"paper", "letor3", "letor4", "mslr", "lightgbm", "trec_eval", "ranx", "allrank"}


def test_data_inspect_and_convert(yahoo_sample, tmp_path):
    res = run_ok("data", "inspect", yahoo_sample / "rank.train", "--dataset", "yahoo-set1",
                 "--qid", "group", "--json")
    info = json.loads(res.stdout)
    assert info["queries"] == 201 and info["documents"] == 3005 and info["features"] == 700
    assert info["labels"] == {"0": 645, "1": 1211, "2": 858, "3": 222, "4": 69}
    assert info["all_zero_queries"] == {"count": 3, "qids": ["1", "46", "95"]}
    out = tmp_path / "train.parquet"
    run_ok("data", "convert", yahoo_sample / "rank.train", out, "--features", "700")
    table = pd.read_parquet(out)
    assert table.shape == (3005, 702) and list(table.columns[:3]) == ["qid", "label", "f1"]
    npz = tmp_path / "train.npz"
    run_ok("data", "convert", yahoo_sample / "rank.train", npz, "--features", "700")
    with np.load(npz) as z:
        np.testing.assert_array_equal(z["X"], table.iloc[:, 2:].to_numpy())


def test_data_inspect_reports_split_qids(write):
    p = write("split.txt", "1 qid:1 1:1\n0 qid:2 1:1\n0 qid:1 1:2\n")
    info = json.loads(run_ok("data", "inspect", p, "--json").stdout)
    assert info["queries"] == 3 and any("reappears at line 3" in s for s in info["problems"])
    assert info["all_zero_queries"]["qids"] == ["2", "1"]


def test_data_errors(write, tmp_path):
    bad = write("bad.txt", "1 qid:1 1:1\n1 qid:1 0:1\n")
    res = runner.invoke(app, ["data", "inspect", str(bad)])
    assert res.exit_code == 1 and "bad.txt:2:" in res.stderr
    good = write("good.txt", "1 qid:1 1:1\n")
    res = runner.invoke(app, ["data", "convert", str(good), str(tmp_path / "x.txt"), "--features", "1"])
    assert res.exit_code == 1 and ".parquet, .csv or .npz" in res.stderr
    res = runner.invoke(app, ["data", "convert", str(good), str(tmp_path / "x.npz")])
    assert res.exit_code == 1 and "--features" in res.stderr


def test_python_dash_m_and_console_script():
    out = subprocess.run([sys.executable, "-m", "ltr_cli", "list"], capture_output=True, text=True)
    assert out.returncode == 0 and "slam-perceptron" in out.stdout
    out = subprocess.run([sys.executable, "-m", "ltr_cli", "run", "missing.yaml"],
                         capture_output=True, text=True)
    here = Path.cwd()
    assert out.returncode == 1 and out.stderr.strip() == (
        f"ltr: error: missing.yaml: config file not found (tried {here / 'missing.yaml'}, resolved from {here})")


def test_data_synth_then_inspect(tmp_path):
    out = tmp_path / "mslr_like.txt.gz"
    info = json.loads(run_ok("data", "synth", out, "--like", "mslr-web10k", "--queries", "7",
                             "--docs-per-query", "12").stdout)
    seen = json.loads(run_ok("data", "inspect", out, "--dataset", "mslr-web10k", "--json").stdout)
    assert seen["queries"] == 7 and seen["documents"] == info["documents"]
    sep = tmp_path / "sep.txt"
    run_ok("data", "synth", sep, "--separable", "authors", "--queries", "3")
    seen = json.loads(run_ok("data", "inspect", sep, "--features", "10", "--json").stdout)
    assert seen["documents"] == 60 and seen["labels"] == {"0": 15, "1": 15, "2": 12, "3": 9, "4": 9}
    res = runner.invoke(app, ["data", "synth", str(sep)])
    assert res.exit_code == 1 and "exactly one of" in res.stderr


def test_plot_names_with_dots_do_not_collide(tmp_path):
    run_ok("run", DEMO, "--out", tmp_path, "-q", "--set", "experiment=sim.v1", "--set", "protocol.max_rounds=20")
    out = run_ok("plot", tmp_path / "sim.v1", "--out", tmp_path / "p").stdout.split()
    assert len(set(out)) == 6 and (tmp_path / "p" / "sim.v1_ndcg_at_10.png").is_file()  # PNG, PDF, caption x 2


def test_unusable_output_paths_are_one_line_errors(tmp_path, write):
    afile = write("a.txt", "1 qid:1 1:1\n")
    cases = [
        ["data", "convert", afile, afile / "x.parquet", "--features", "1"],
        ["data", "synth", tmp_path / "no" / "dir" / "x.txt", "--like", "mslr-web10k", "--queries", "1"],
        ["run", DEMO, "--out", afile, "-q", "--set", "protocol.max_rounds=5"],
    ]
    for args in cases:
        res = runner.invoke(app, [str(a) for a in args])
        assert res.exit_code == 1, args
        assert res.stderr.startswith("ltr: error: ") and res.stderr.count("\n") == 1, res.stderr


def test_negative_seed_and_impossible_margin(tmp_path, write):
    res = runner.invoke(app, ["run", str(DEMO), "--set", "seed=-1"])
    assert res.exit_code == 1 and "seed" in res.stderr
    res = runner.invoke(app, ["data", "synth", str(tmp_path / "x.txt"), "--like", "mslr-web10k", "--seed", "-1"])
    assert res.exit_code == 2  # usage error from the option's range
    res = runner.invoke(app, ["run", str(DEMO), "--out", str(tmp_path), "--set", "dataset.margin=50",
                              "--set", "dataset.queries=2"])
    assert res.exit_code == 1 and "dataset.margin" in res.stderr


def test_infinite_step_is_refused():
    res = runner.invoke(app, ["run", str(DEMO), "--set", "learners.slam-ndcg.step.eta=1e400"])
    assert res.exit_code == 1 and "learners.slam-ndcg.step.eta" in res.stderr


def test_damaged_run_files(tmp_path):
    run_dir = Path(run_ok("run", DEMO, "--out", tmp_path, "-q", "--learner", "alg3",
                          "--set", "protocol.max_rounds=5").stdout.strip())
    (run_dir / "manifest.json").write_text("[1, 2]")
    res = runner.invoke(app, ["plot", str(run_dir)])
    assert res.exit_code == 1 and "not a mapping" in res.stderr
    (run_dir / "manifest.json").write_text("{}")
    (run_dir / "config.yaml").write_text("")
    res = runner.invoke(app, ["plot", str(run_dir)])
    assert res.exit_code == 1 and "config file is not a mapping" in res.stderr


def test_files_dataset_with_group_files(tmp_path, write, yahoo_sample):
    cfg = write("g.yaml", f"""
experiment: yahoo_sample
dataset:
  kind: files
  files: [{yahoo_sample / 'rank.train'}, {yahoo_sample / 'rank.test'}]
  group_files: [{yahoo_sample / 'rank.train.query'}, {yahoo_sample / 'rank.test.query'}]
  features: 700
metrics: {{names: [ndcg@10]}}
learners: {{slam: {{type: slam-perceptron}}}}
""")
    rounds = pd.read_parquet(Path(run_ok("run", cfg, "--out", tmp_path, "-q").stdout.strip()) / "rounds.parquet")
    assert len(rounds) == 251 and rounds["qid"].iloc[0] == "1:1" and rounds["qid"].iloc[-1] == "2:50"
    bad = write("b.yaml", cfg.read_text().replace(f", {yahoo_sample / 'rank.test.query'}", ""))
    res = runner.invoke(app, ["run", str(bad)])
    assert res.exit_code == 1 and "one group file per data file" in res.stderr


def test_cost_matrix_too_small_for_the_labels(tmp_path, write):
    cfg = write("c.yaml", """
experiment: cost
dataset: {kind: separable, queries: 5}
learners: {o: {type: ogd, surrogate: ordinal, cost: [[0, 1], [0, 0]]}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out")])
    err = res.stderr.strip().splitlines()[-1]
    assert res.exit_code == 1 and err.startswith("ltr: error: label 2 cannot index the 2 x 2 cost matrix")


def test_bench_reports_ratios(tmp_path, monkeypatch):
    """Structure only: timings are never asserted in unit tests. On the reference path: the
    bench's float32 rounds would compile kernel variants no other test needs (the kernels'
    equality with their references, float32 included, is tested in test_kernels.py)."""
    from ltr_cli import kernels
    from ltr_cli.bench.command import format_table

    monkeypatch.setenv("LTR_KERNELS", "0")
    monkeypatch.setattr(kernels, "ENABLED", False)

    res = run_ok("bench", "--queries", "6", "--rounds", "20", "--e2e-queries", "2", "--json")
    out = json.loads(res.stdout)
    assert set(out) == {"parse", "per_round", "memory", "end_to_end"}
    assert {"dense_mslr", "sparse_yahoo"} <= set(out["parse"])
    assert out["parse"]["dense_mslr"]["ours_mb_per_s"] > 0
    assert out["parse"]["dense_mslr"]["cached_speedup"] > 0
    assert out["parse"]["dense_mslr"]["synth_speedup_vs_python"] > 0
    learners = out["per_round"]["learners"]
    assert {"slam-ndcg", "alg3", "listnet", "rtopkf-ranksvm"} <= set(learners)
    assert all(v["ratio_to_floor"] > 0 for v in learners.values())
    for mode in ("parse", "cached"):
        assert out["memory"][mode]["file_4x"]["megabytes"] > out["memory"][mode]["file_1x"]["megabytes"]
    compiled = out["memory"]["compiled_run"]  # whole `ltr run --kernels compiled` processes
    assert [compiled[f"file_{f}x"]["peak_rss_mb"] > 0 for f in (1, 4, 16)] == [True] * 3
    assert compiled["file_16x"]["cache_megabytes"] > compiled["file_4x"]["cache_megabytes"]
    assert out["end_to_end"]["rounds"] == 30 and out["end_to_end"]["cold_s"] > 0
    table = format_table(out)
    assert "x floor" in table and "peak RSS" in table and "cached" in table
    assert "peak RSS of ltr run, compiled path: 1x file" in table and "the 600 MB target" in table


def test_online_runs_keep_their_model_and_ltr_score_reads_it(tmp_path):
    """Every online run writes its final weights (models.json, the batch runs' format);
    `ltr score` scores a held-out file with them."""
    res = run_ok("run", DEMO, "--out", tmp_path, "-q", "--learner", "listnet", "--set", "protocol.max_rounds=30")
    run_dir = Path(res.stdout.strip())
    model = json.loads((run_dir / "models.json").read_text())["final"]
    assert model["kind"] == "linear" and model["features"] == 10 and model["round"] == 30
    w = np.array(model["w"])
    assert np.abs(w).max() > 0
    rng = np.random.default_rng(1)
    X = np.round(rng.normal(size=(7, 10)), 3)
    lines = [f"{i % 3} qid:{1 + i // 4} " + " ".join(f"{j + 1}:{x}" for j, x in enumerate(row))
             for i, row in enumerate(X)]
    data = tmp_path / "test.txt"
    data.write_text("\n".join(lines) + "\n")
    scored = run_ok("score", run_dir, data)
    scores = np.array([float(v) for v in scored.stdout.split()])
    np.testing.assert_allclose(scores, X @ w, rtol=1e-9)
    # a damaged model file is a one-line error, not a traceback
    for damaged in ('{"final": {"kind": "linear", "features": 10, "w": ["x"]}}',
                    '{"final": {"kind": "linear", "features": 10, "w": [1, 2]}}',
                    '{"final": {"kind": "stumps", "features": 10, "stumps": [{"feature": 99, "threshold": 0, "alpha": 1}]}}',
                    '{"final": {"kind": "linear", "features": true, "w": [1]}}',
                    '{"final": {"kind": "linear"}}', '{"final": []}'):
        (run_dir / "models.json").write_text(damaged)
        bad = runner.invoke(app, ["score", str(run_dir), str(data)])
        assert bad.exit_code == 1 and "not a valid model" in bad.output, (damaged, bad.output)
        assert "Traceback" not in bad.output
    (run_dir / "models.json").write_text('{"final": {"kind": "linear", "features": 2, "w": [1, null]}}')
    bad = runner.invoke(app, ["score", str(run_dir), str(data)])
    assert bad.exit_code == 1 and "NaN or infinite weights" in bad.output


def test_saved_weights_round_trip_exactly_float32_and_nan_included():
    from ltr_cli.results.models import LinearModel, model_from_dict

    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        w = rng.normal(size=50).astype(dtype) * np.logspace(-30, 30, 50).astype(dtype)
        w[3], w[7], w[9] = np.nan, np.inf, -np.inf
        text = json.dumps(LinearModel(w).to_dict())
        assert "NaN" not in text and "Infinity" not in text  # standard JSON
        back = model_from_dict(json.loads(text)).w
        np.testing.assert_array_equal(back.astype(dtype), w)
        assert back.astype(dtype).tobytes() == w.tobytes()


def test_every_command_is_registered():
    from typer.main import get_command

    from ltr_cli.cli.app import app

    names = set(get_command(app).commands)  # type: ignore[attr-defined]
    assert {"run", "plot", "report", "compare", "list", "bench", "sweep", "data", "eval", "score"} <= names, names
    assert not any(name.startswith("-") or name.startswith("point") for name in names)


def test_version_is_printed():
    from ltr_cli import __version__
    from ltr_cli.cli.app import app

    res = CliRunner().invoke(app, ["--version"])
    assert res.exit_code == 0 and res.stdout.strip() == f"ltr {__version__}"
