"""Every catalogue case through the real CLI: exit 1, one line naming file:line or the key
path, and no run directory that looks finished."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ltr_cli.cli import app
from ltr_cli.results import find_runs
from tests.catalogue import CONFIG_CASES, DATA_CASES, markdown
from tests.conftest import REPO

runner = CliRunner()


def test_docs_table_is_generated_from_the_catalogue():
    assert (REPO / "docs" / "bad-input.md").read_text() == markdown()
    assert len(DATA_CASES) >= 30 and len(CONFIG_CASES) >= 15


def _error_line(res) -> str:
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
    assert _no_finished_run(out)
