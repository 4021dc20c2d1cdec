"""Every catalogue case through the real CLI: exit 1, one line naming file:line or the key
path, and no run directory that looks finished; every hostile run folder through
``ltr plot`` and ``ltr report``: exit 1, one line naming the run file, nothing written."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.results.folders import find_runs
from tests.catalogue import CONFIG_CASES, DATA_CASES, RESULTS_CASES, SCORE_CASES, SCORE_DATA, STATE_CASES, markdown
from tests.conftest import REPO

runner = CliRunner()


def test_docs_table_is_generated_from_the_catalogue():
    assert (REPO / "docs" / "bad-input.md").read_text() == markdown()
    assert len(DATA_CASES) >= 30 and len(CONFIG_CASES) >= 15 and len(RESULTS_CASES) >= 20


def test_every_state_case_names_a_test_that_exists():
    import ast

    for case in STATE_CASES:
        path, name = case.test.split("::")
        tree = ast.parse((REPO / path).read_text())
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert name in names, case.test


def _error_line(res) -> str:
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output
    lines = [line for line in res.stderr.splitlines() if line.startswith("ltr: error:")]
    assert len(lines) == 1, res.stderr[-2000:]
    return lines[0]


def _no_finished_run(out):
    return not out.exists() or find_runs([out]) == []


@pytest.mark.parametrize("case", DATA_CASES, ids=[c.id for c in DATA_CASES])
def test_bad_data(tmp_path, case):
    data = tmp_path / "data.txt"
    if case.kind == "file":
        data.write_bytes(case.content)
    elif case.kind == "directory":
        data.mkdir()
    elif case.kind == "fifo":
        import os

        os.mkfifo(data)
    elif case.kind == "device":
        data.symlink_to("/dev/zero")
    if case.group is not None:
        (tmp_path / "data.txt.query").write_bytes(case.group)
    extra = "".join(f", {k}: {v}" for k, v in case.dataset.items())
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"""
experiment: bad
dataset: {{kind: files, files: [{data}], features: 5{extra}}}
learners: {{slam: {{type: slam-perceptron}}}}
""")
    out = tmp_path / "out"
    res = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"])
    assert res.exit_code == 1
    err = _error_line(res)
    assert case.message in err and len(err) < 600
    assert str(data) in err
    if case.line is not None:
        assert f":{case.line}:" in err
    assert _no_finished_run(out)


@pytest.mark.parametrize("case", SCORE_CASES, ids=[c.id for c in SCORE_CASES])
def test_bad_score_file(tmp_path, case):
    data, scores = tmp_path / "data.txt", tmp_path / "scores.txt"
    data.write_bytes(SCORE_DATA)
    scores.write_bytes(case.content)
    res = runner.invoke(app, ["eval", str(data), str(scores)])
    assert res.exit_code == 1
    err = _error_line(res)
    assert case.message in err and str(scores) in err and len(err) < 600
    if case.line is not None:
        assert f"{scores}:{case.line}:" in err


@pytest.mark.parametrize("case", CONFIG_CASES, ids=[c.id for c in CONFIG_CASES])
def test_bad_config(tmp_path, case):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(case.text)
    out = tmp_path / "out"
    res = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"])
    assert res.exit_code == 1
    err = _error_line(res)
    assert case.message in err
    if case.key is not None:
        assert f"{cfg}: {case.key}:" in err
    if case.line is not None:
        assert f"{cfg}:{case.line}:" in err
    assert _no_finished_run(out)


# --- hostile run folders -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def good_run(tmp_path_factory) -> Path:
    """One real, small online run (separable data, so summary.json has a theory block)."""
    base = tmp_path_factory.mktemp("good")
    cfg = base / "c.yaml"
    cfg.write_text("experiment: demo\ndataset: {kind: separable, queries: 15}\n"
                   "learners: {slam: {type: slam-perceptron}}\n")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(base / "results"), "-q"])
    assert res.exit_code == 0, res.output
    return Path(res.stdout.strip())


def _snapshot(root: Path, skip: Path) -> dict[str, str]:
    """Every file and link under ``root`` (except under ``skip``) with a hash of its content."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p == skip or skip in p.parents:
            continue
        if p.is_symlink():
            out[str(p)] = "link:" + str(p.readlink())
        elif p.is_file():
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[str(p)] = "dir"
    return out


def test_a_good_run_plots_and_reports(tmp_path, good_run):
    """The fixture run is fine as it is: the errors below come from the edits."""
    results = tmp_path / "results" / "demo" / good_run.name
    shutil.copytree(good_run, results)
    out = tmp_path / "a" / "b" / "plots"
    for args in (["plot", tmp_path / "results", "--out", out, "--theory"],
                 ["report", tmp_path / "results", "--out", out / "report.md"]):
        res = runner.invoke(app, [str(a) for a in args])
        assert res.exit_code == 0, res.output
    assert (out / "demo_ndcg_at_10.png").is_file() and (out / "demo_theory.pdf").is_file()
    assert "| demo |" in (out / "report.md").read_text()


@pytest.mark.parametrize("case", RESULTS_CASES, ids=[c.id for c in RESULTS_CASES])
def test_hostile_run_folder(tmp_path, good_run, case):
    run = tmp_path / "results" / "demo" / good_run.name
    shutil.copytree(good_run, run)
    case.edit(run)
    out = tmp_path / "a" / "b" / "plots"  # '../../x' from here would still be inside tmp_path
    before = _snapshot(tmp_path, out)
    commands = (["plot", tmp_path / "results", "--out", out],
                ["plot", tmp_path / "results", "--out", out, "--theory"],
                ["report", tmp_path / "results", "--out", out / "report.md"])
    for args in commands:
        res = runner.invoke(app, [str(a) for a in args])
        assert res.exit_code == 1, (args, res.output)
        err = _error_line(res)
        assert f"{run / case.file}" in err and case.message in err, err
        assert len(err) < 600
    assert _snapshot(tmp_path, out) == before  # nothing written or changed outside the output folder
    assert not out.exists() or not any(out.iterdir())  # and nothing half-written inside it
    assert not (tmp_path / "x").exists() and not list(tmp_path.rglob("*OWNED*"))
