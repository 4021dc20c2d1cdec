"""``ltr report --format latex`` (booktabs tabulars) and ``--pivot`` (learners by dataset x
metric), through the CLI."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.reports.latex import escape

runner = CliRunner()


def _results(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    for name, dataset in (("sep", "{kind: separable, queries: 30}"),
                          ("shaped", "{kind: shaped, like: mslr-web10k, queries: 30, docs_per_query: 8}")):
        cfg = tmp_path / f"{name}.yaml"
        cfg.write_text(f"""experiment: {name}
dataset: {dataset}
learners:
  slam_1: {{type: slam-perceptron, label: "SLAM_1"}}
  listnet: {{type: listnet}}
""")
        res = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"])
        assert res.exit_code == 0, res.stderr
    return out


def test_latex_and_pivot_tables(tmp_path):
    out = _results(tmp_path)
    res = runner.invoke(app, ["report", str(out), "--format", "latex"])
    assert res.exit_code == 0, res.stderr
    text = res.stdout
    assert text.startswith("\\begin{tabular}") and "\\toprule" in text and text.rstrip().endswith("\\end{tabular}")
    assert "SLAM\\_1" in text and "slam_1" not in text.replace("slam\\_1", "")  # underscores escaped
    body = [line for line in text.splitlines() if line.endswith("\\\\")]
    assert len({line.count(" & ") for line in body}) == 1  # every row has the header's columns

    pivot = runner.invoke(app, ["report", str(out), "--pivot", "--format", "csv"])
    assert pivot.exit_code == 0, pivot.stderr
    header, *rows = pivot.stdout.strip().splitlines()
    assert header.startswith("learner,") and "separable-authors:ndcg@10" in header and "shaped:mslr-web10k:ap" in header
    assert sorted(r.split(",")[0] for r in rows) == ["ListNet", "SLAM_1"]
    latex = runner.invoke(app, ["report", str(out), "--pivot", "--format", "latex"])
    assert latex.exit_code == 0 and "\\multicolumn{2}{c}{shaped:mslr-web10k}" in latex.stdout
    bad = runner.invoke(app, ["report", str(out), "--pivot", "--html"])
    assert bad.exit_code == 1 and "--pivot" in bad.stderr


def test_escape():
    assert escape("a_b & 50% #1 {x} ~ ^ \\") == "a\\_b \\& 50\\% \\#1 \\{x\\} \\textasciitilde{} \\textasciicircum{} \\textbackslash{}"
