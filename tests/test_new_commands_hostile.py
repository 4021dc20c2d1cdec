"""Hostile input to the click-log and kernel commands: each case once exited 0 with a wrong
result, or overwrote an input; now a one-line error (exit 1) or the right answer."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli import kernels
from ltr_cli.cli.app import app
from ltr_cli.clicklog.logfile import write_log
from ltr_cli.clicklog.simulate import simulate
from ltr_cli.clicks.spec import build_model

runner = CliRunner()


def _ltr(*args):
    return runner.invoke(app, [str(a) for a in args])


def _one_line_error(res, message):
    assert res.exit_code == 1, res.output
    assert message in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "Traceback" not in res.output


def _data(path, label=None):
    rng = np.random.default_rng(2)
    path.write_text("".join(f"{int(rng.integers(0, 3)) if label is None else label} qid:{q + 1} "
                            f"1:{rng.random():.3f} 2:{rng.random():.3f}\n" for q in range(4) for _ in range(5)))
    return path


@pytest.mark.parametrize("given, out", [("train.txt", "train.txt"), ("train.txt", "./train.txt"),
                                        ("link.txt", "train.txt")])  # the data read through a link
def test_simulate_log_will_not_write_over_its_data_file(tmp_path, monkeypatch, given, out):
    monkeypatch.chdir(tmp_path)
    data = _data(tmp_path / "train.txt")
    before = data.read_bytes()
    os.symlink(data, tmp_path / "link.txt")
    res = _ltr("clicks", "simulate-log", given, "--out", out, "--model", "pbm", "--sessions", 5)
    _one_line_error(res, "that is the data file")
    assert data.read_bytes() == before and not list(tmp_path.glob("*.partial"))


@pytest.mark.parametrize("kind", ["directory", "device"])
def test_propensity_refuses_a_path_that_is_not_a_file(tmp_path, kind):
    if kind == "directory":
        path = tmp_path / "logs"
        path.mkdir()
        _write_log(path / "a.parquet", clicks=True)  # pyarrow would read the folder as a dataset
    else:
        path = tmp_path / "null.parquet"
        os.symlink(os.devnull, path)
    _one_line_error(_ltr("clicks", "propensity", path), "not a regular file")


def _write_log(path, clicks):
    labels = [np.array([2, 1, 0, 2]) if clicks else np.zeros(4, np.int64) for _ in range(3)]
    built = build_model("pbm")
    s = simulate(labels, [np.arange(4)] * 3, built, "shuffle", 4, 60, 0, False)
    write_log(path, s, ["1", "2", "3"], {"policy": "shuffle", "model": built.describe(), "seed": 0, "sessions": 60})


@pytest.mark.parametrize("method", ["randomisation", "em"])
def test_propensity_refuses_a_log_without_clicks(tmp_path, method):
    """em once printed 1.0 +- 0 at every position for a log with no click at all."""
    _write_log(tmp_path / "log.parquet", clicks=False)
    _one_line_error(_ltr("clicks", "propensity", tmp_path / "log.parquet", "--method", method), "no clicks")


@pytest.mark.parametrize("family", ["rtopkf", "perceptron"])
def test_dry_run_lists_the_examples_when_kernels_are_off(monkeypatch, family):
    """With LTR_KERNELS=0 the plan once held no family, so the dry run listed none and a
    build compiled nothing, exiting 0."""
    monkeypatch.setattr(kernels, "ENABLED", False)
    res = _ltr("kernels", "build", "--family", family, "--dry-run")
    assert res.exit_code == 0, res.output
    assert res.output.startswith(f"{family}: ") and "no learner example" not in res.output


@pytest.mark.parametrize("planted", ["log.parquet.partial"])
def test_simulate_log_does_not_write_through_a_planted_link(tmp_path, planted):
    """The log was once written through ``LOG.partial``, so a link planted under that name
    sent the Parquet bytes outside the output location."""
    data = _data(tmp_path / "train.txt")
    (tmp_path / "out").mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    os.symlink(victim, tmp_path / "out" / planted)
    res = _ltr("clicks", "simulate-log", data, "--out", tmp_path / "out" / "log.parquet", "--model", "pbm",
               "--sessions", 5)
    assert res.exit_code == 0, res.output
    assert victim.read_text() == "keep\n" and (tmp_path / "out" / "log.parquet").read_bytes()[:4] == b"PAR1"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["log.parquet", planted]


@pytest.mark.parametrize("position", [11, 32767])
def test_propensity_refuses_positions_beyond_the_logs_shown(tmp_path, position):
    """A log whose fingerprint matches but whose positions pass its own ``shown`` once
    printed a table of 32,767 positions, em's unseen ones as 0.0000 +- 0.0000."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from ltr_cli.clicklog.logfile import KEY, fingerprint

    _ltr("clicks", "simulate-log", _data(tmp_path / "train.txt"), "--out", tmp_path / "log.parquet", "--model",
         "pbm", "--sessions", 40, "--shown", 5)
    table = pq.read_table(tmp_path / "log.parquet")
    meta = json.loads(table.schema.metadata[KEY])
    pos = table.column("position").to_numpy().copy()
    pos[0] = position
    table = table.set_column(table.schema.get_field_index("position"), "position", pa.array(pos, pa.int16()))
    qid = table.column("qid").combine_chunks()
    meta["fingerprint"] = fingerprint(table.column("session").to_numpy(), qid.indices.to_numpy(),
                                      qid.dictionary.to_pylist(), table.column("doc").to_numpy(), pos,
                                      table.column("click").to_numpy(), meta["policy"])
    pq.write_table(table.replace_schema_metadata({KEY: json.dumps(meta).encode()}), tmp_path / "forged.parquet")
    _one_line_error(_ltr("clicks", "propensity", tmp_path / "forged.parquet"), f"column 'position' holds {position}")


@pytest.fixture(scope="module")
def online_run(tmp_path_factory):
    from tests.conftest import REPO

    tmp = tmp_path_factory.mktemp("hostile")
    res = _ltr("run", REPO / "configs" / "simulated_separable.yaml", "--out", tmp / "runs", "-q",
               "--learner", "listnet", "--set", "protocol.max_rounds=2")
    assert res.exit_code == 0, res.output
    data = tmp / "test.txt"
    data.write_text("".join(f"{q % 3} qid:{q // 4 + 1} " + " ".join(f"{j + 1}:0.{q}{j}" for j in range(10)) + "\n"
                            for q in range(8)))
    return Path(res.stdout.strip()), data


@pytest.mark.parametrize("given", ["folder", "models.json"])
def test_simulate_log_will_not_write_over_the_runs_model(online_run, given):
    """``--out RUN/models.json --run RUN`` once replaced the run's model with the log."""
    run, data = online_run
    model = (run / "models.json").read_bytes()
    res = _ltr("clicks", "simulate-log", data, "--out", run / "models.json", "--model", "pbm", "--sessions", 5,
               "--run", run if given == "folder" else run / "models.json")
    _one_line_error(res, "that is the run's model file")
    assert (run / "models.json").read_bytes() == model


@pytest.mark.parametrize("key, bad, option, value", [
    ("ties", "sideways", "--ties", "input-order"),
    ("no_relevant", "sideways", "--no-relevant", "zero"),
    ("relevance_threshold", ".nan", "--relevance-threshold", "0"),
    ("convention", "nope", "--convention", "paper"),
])
def test_eval_run_takes_the_option_its_error_asks_for(online_run, tmp_path, key, bad, option, value):
    """A damaged ``metrics.<key>`` in the run's config.yaml says "give --<key>"; giving it
    was once refused with the same error."""
    import re
    import shutil

    run, data = online_run
    damaged = tmp_path / run.name
    shutil.copytree(run, damaged)
    config = damaged / "config.yaml"
    text, count = re.subn(rf"(?m)^  {key}: .*$", f"  {key}: {bad}", config.read_text())
    assert count == 1
    config.write_text(text)
    scores = tmp_path / "scores.txt"
    scores.write_text("".join(f"0.{i}\n" for i in range(8)))
    _one_line_error(_ltr("eval", data, scores, "--run", damaged), f"give {option}")
    res = _ltr("eval", data, scores, "--run", damaged, option, value, "--json")
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("command", ["simulate-log", "interleave"])
def test_a_custom_table_covers_labels_beyond_the_named_tables(online_run, tmp_path, command):
    """Labels 0-7 with an 8-grade custom table were once refused with "beyond every named
    click table ... give a custom table" (and no file:line)."""
    run, data = online_run
    wide = tmp_path / "wide.txt"
    wide.write_text("".join(f"{i % 8} qid:{i // 8 + 1} 1:0.{i}\n" for i in range(16)))
    table = "{click: [0, .1, .2, .3, .4, .5, .6, .9], stop: [0, 0, 0, 0, 0, 0, 0, .5]}"
    args = (["clicks", "simulate-log", wide, "--out", tmp_path / "log.parquet", "--sessions", 20]
            if command == "simulate-log" else ["interleave", run, run, wide, "--impressions", 20])
    res = _ltr(*args, "--model", table)
    assert res.exit_code == 0, res.output
    short = "{click: [0, .1, .2, .3, .4], stop: [0, 0, 0, 0, .5]}"
    _one_line_error(_ltr(*args, "--model", short), f"{wide}:1: label 7 is outside the 5-grade click table")


@pytest.mark.parametrize("out", ["", ".", "logs"])
def test_simulate_log_refuses_a_directory_as_out(tmp_path, monkeypatch, out):
    """``--out .`` once wrote a temporary beside the folder and then failed with "Device or
    resource busy"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    data = _data(tmp_path / "train.txt")
    before = sorted(p.name for p in tmp_path.iterdir())
    res = _ltr("clicks", "simulate-log", data, "--out", out, "--model", "pbm", "--sessions", 5)
    _one_line_error(res, "is a directory; give --out a file name")
    assert sorted(p.name for p in tmp_path.iterdir()) == before and not any((tmp_path / "logs").iterdir())
