"""Writers stay inside their output folder: plot, report --out, score --out and the run
folders of ``ltr run``, including when a symbolic link in the output folder points
elsewhere; and what run folders hold is read back safely."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.errors import LtrError
from ltr_cli.outputs import output_path, write_file, write_text
from ltr_cli.runs.folder import run_path

runner = CliRunner()

CONFIG = """experiment: demo
dataset: {kind: separable, queries: 12}
learners:
  slam: {type: slam-perceptron, label: "1e3"}
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("contained")
    (base / "c.yaml").write_text(CONFIG)
    res = runner.invoke(app, ["run", str(base / "c.yaml"), "--out", str(base / "results"), "-q"])
    assert res.exit_code == 0, res.output
    return base / "results"


def _one_error(res) -> str:
    assert res.exit_code == 1, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    lines = [line for line in res.stderr.splitlines() if line.startswith("ltr: error:")]
    assert len(lines) == 1 and "Traceback" not in res.output, res.output
    return lines[0]


def test_plot_refuses_a_link_in_its_folder_before_writing_anything(tmp_path, results):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "plots"
    out.mkdir()
    (out / "demo_ap.png").symlink_to(victim)
    err = _one_error(runner.invoke(app, ["plot", str(results), "--out", str(out)]))
    assert "demo_ap.png" in err and "outside the output folder" in err
    assert victim.read_text() == "precious"
    assert sorted(p.name for p in out.iterdir()) == ["demo_ap.png"]  # no other figure either


def test_plot_theory_outputs_are_checked_too(tmp_path, results):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "plots"
    out.mkdir()
    (out / "demo_theory.pdf").symlink_to(victim)
    err = _one_error(runner.invoke(app, ["plot", str(results), "--out", str(out), "--theory"]))
    assert "demo_theory.pdf" in err
    assert victim.read_text() == "precious" and len(list(out.iterdir())) == 1


def test_report_out_refuses_a_link_leading_outside(tmp_path, results):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "out").mkdir()
    link = tmp_path / "out" / "report.md"
    link.symlink_to(victim)
    err = _one_error(runner.invoke(app, ["report", str(results), "--out", str(link)]))
    assert "report.md" in err and "outside the output folder" in err
    assert victim.read_text() == "precious"
    err = _one_error(runner.invoke(app, ["report", str(results), "--out", str(tmp_path / "out" / "..")]))
    assert "not a file name" in err


def test_report_out_replaces_a_file_atomically(tmp_path, results):
    out = tmp_path / "report.md"
    out.write_text("old")
    res = runner.invoke(app, ["report", str(results), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_text() == res.stdout and "| 1e3 |" in res.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temporary file left


def test_score_out_refuses_a_link_leading_outside(tmp_path, results):
    run = next(p for p in (results / "demo").iterdir() if p.is_dir() and not p.name.startswith("."))
    data = tmp_path / "d.txt"
    data.write_text("1 qid:1 " + " ".join(f"{j}:0.5" for j in range(1, 11)) + "\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "scores.txt").symlink_to(victim)
    err = _one_error(runner.invoke(app, ["score", str(run), str(data), "--out", str(tmp_path / "out" / "scores.txt")]))
    assert "outside the output folder" in err and victim.read_text() == "precious"


def test_run_refuses_an_experiment_folder_linked_elsewhere(tmp_path):
    (tmp_path / "c.yaml").write_text(CONFIG)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "demo").symlink_to(elsewhere)
    err = _one_error(runner.invoke(app, ["run", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "results"), "-q"]))
    assert "outside the results folder" in err
    assert list(elsewhere.iterdir()) == []


def test_output_path_rules(tmp_path):
    assert output_path(tmp_path, "a_ndcg_at_10.png") == tmp_path.resolve() / "a_ndcg_at_10.png"
    for bad in ("../x.png", "a/b.png", "..", ".", "", "x\n.png", "caf\u00e9.png"):
        with pytest.raises(LtrError):
            output_path(tmp_path, bad)
    assert output_path(tmp_path, "my report.md", own_name=False).name == "my report.md"
    with pytest.raises(LtrError):
        output_path(tmp_path, "../x.md", own_name=False)
    (tmp_path / "inside.png").symlink_to(tmp_path / "other.png")  # a link inside is fine
    assert output_path(tmp_path, "inside.png").parent == tmp_path.resolve()
    for experiment, run_id in (("../x", "r"), ("e", "../../r"), ("e\n", "r"), (".e", "r")):
        with pytest.raises(LtrError):
            run_path(tmp_path, experiment, run_id)
    assert run_path(tmp_path, "e", "r") == tmp_path / "e" / "r"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    (tmp_path / "f.txt").write_text("old")

    def boom(tmp: Path) -> None:
        tmp.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError):
        write_file(tmp_path, "f.txt", boom)
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"] and (tmp_path / "f.txt").read_text() == "old"
    write_text(tmp_path / "f.txt", "new")
    assert (tmp_path / "f.txt").read_text() == "new"
    assert oct(os.stat(tmp_path / "f.txt").st_mode & 0o777) != "0o600"  # umask, not mkstemp's 0600


def test_labels_are_drawn_as_plain_text(tmp_path, results):
    """A '$' in a label (a run folder from elsewhere) must not reach matplotlib's mathtext,
    where an unbalanced expression is an exception at draw time."""
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    for manifest in copy.rglob("manifest.json"):
        data = json.loads(manifest.read_text())
        data["learner_label"] = r"$\frac{$"
        manifest.write_text(json.dumps(data))
    res = runner.invoke(app, ["plot", str(copy), "--out", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output


def test_run_config_yaml_reads_back_identically(results):
    """Strings that YAML would take for numbers or booleans are quoted when written, so the
    run's config.yaml reads back with the same types (here the label "1e3")."""
    import yaml

    from ltr_cli.results.folders import find_runs, read_run
    from ltr_cli.core.yamlio import parse_yaml

    (run_dir,) = find_runs([results])
    text = (run_dir / "config.yaml").read_text()
    assert parse_yaml(text) == yaml.safe_load(text)
    assert read_run(run_dir).config["learners"]["slam"]["label"] == "1e3"


def test_sweep_status_with_a_damaged_failure_record(tmp_path):
    cfg = tmp_path / "s.yaml"
    cfg.write_text("experiment: sw\ndataset: {kind: separable, queries: 5}\n"
                   "learners: {slam: {type: slam-perceptron}}\nsweep: {seed: [0, 1]}\n")
    from ltr_cli.sweep.grid import expand

    tasks = expand(cfg)
    (tmp_path / "out" / "sw").mkdir(parents=True)
    for task, content in zip(tasks, ("[1, 2]", '{"error": "bad\\nthing"}')):
        (tmp_path / "out" / "sw" / f".{task.run_id}.failed.json").write_text(content)
    res = runner.invoke(app, ["sweep", str(cfg), "--out", str(tmp_path / "out"), "--status"])
    assert res.exit_code == 0, res.output
    assert "(unreadable failure record)" in res.stdout and "bad thing" in res.stdout


def test_error_is_one_line_even_for_a_folder_name_with_a_newline(tmp_path, results):
    import shutil

    (run,) = [p for p in (results / "demo").iterdir() if p.is_dir() and not p.name.startswith(".")]
    odd = tmp_path / "res" / "demo" / "run\nx\x1b[31m"
    shutil.copytree(run, odd)
    (odd / "summary.json").write_text('{"seed":')
    err = _one_error(runner.invoke(app, ["plot", str(tmp_path / "res"), "--out", str(tmp_path / "p")]))
    assert "run\\nx\\x1b[31m/summary.json: is not valid JSON" in err
    assert not (tmp_path / "p").exists()


def test_plot_refuses_a_plots_folder_that_is_a_link(tmp_path, results):
    victim = tmp_path / "victim"
    victim.mkdir()
    (results / "plots").symlink_to(victim)
    err = _one_error(runner.invoke(app, ["plot", str(results)]))
    assert "symbolic link" in err and list(victim.iterdir()) == []


def test_run_refuses_a_cache_folder_or_lock_that_is_a_link(tmp_path):
    data = tmp_path / "d.txt"
    data.write_text("".join(f"{i % 3} qid:{i // 4} 1:{i}\n" for i in range(40)))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"experiment: c\ndataset: {{kind: files, files: [{data}], features: 2}}\n"
                   "learners: {s: {type: slam-perceptron}}\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / ".cache").symlink_to(elsewhere)
    err = _one_error(runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"]))
    assert "symbolic link" in err and list(elsewhere.iterdir()) == []
    (out / ".cache").unlink()
    assert runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"]).exit_code == 0
    (lock,) = list((out / ".cache").glob(".*.lock"))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    lock.unlink()
    lock.symlink_to(victim)
    import shutil

    shutil.rmtree(out / "c")
    err = _one_error(runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"]))
    assert "cache lock" in err and victim.read_text() == "precious"


def _copy_run(results: Path, tmp_path: Path) -> Path:
    import shutil

    (run,) = [p.parent for p in results.rglob("summary.json")]
    copy = tmp_path / "copy" / run.parent.name / run.name
    shutil.copytree(run, copy)
    return copy


@pytest.mark.parametrize("edit", ["summary-number", "summary-rounds", "inf-value", "t-backwards"])
def test_a_run_folder_whose_files_disagree_is_refused_not_reported(tmp_path, results, edit):
    """A summary edited by hand, rounds from another run, an infinite metric value or rounds
    out of order: plot and report refuse the folder in one line instead of drawing it."""
    import pandas as pd

    run = _copy_run(results, tmp_path)
    summary = json.loads((run / "summary.json").read_text())
    rounds = pd.read_parquet(run / "rounds.parquet")
    metric = next(iter(summary["metrics"]))
    if edit == "summary-number":
        summary["metrics"][metric]["final_time_average"] = 0.999
    elif edit == "summary-rounds":
        summary["rounds"] += 1
    elif edit == "inf-value":
        rounds.loc[3, metric] = float("inf")
    else:
        rounds.loc[[2, 3], "t"] = rounds.loc[[3, 2], "t"].to_numpy()
    (run / "summary.json").write_text(json.dumps(summary))
    rounds.to_parquet(run / "rounds.parquet")
    expected = {"summary-number": "summary.json does not match rounds.parquet (final time average",
                "summary-rounds": "summary.json does not match rounds.parquet (rounds",
                "inf-value": "holds an infinite value", "t-backwards": "must count rounds upwards"}[edit]
    for argv in (["report", str(run.parent.parent)], ["plot", str(run.parent.parent), "--out", str(tmp_path / "p")]):
        assert expected in _one_error(runner.invoke(app, argv))
    assert not (tmp_path / "p").exists()


def test_a_killed_writers_temporary_is_removed_by_the_next_write(tmp_path):
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    left = tmp_path / f".fig.png.{dead}.0123abcd.tmp"
    left.write_bytes(b"half a figure")
    mine = tmp_path / f".fig.png.{os.getpid()}.0123abcd.tmp"  # a live writer's: kept
    mine.write_bytes(b"in progress")
    other = tmp_path / f".other.png.{dead}.0123abcd.tmp"  # another file's: not this write's business
    other.write_bytes(b"x")
    write_text(tmp_path / "fig.png", "done")
    assert not left.exists() and mine.exists() and other.exists()
    assert (tmp_path / "fig.png").read_text() == "done"
