"""``ltr report --format latex`` (booktabs tabulars) and ``--pivot`` (learners by dataset x
metric), through the CLI."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.reports.latex import cell, escape

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
  odd: {{type: listnet, label: "50% & #2", step: {{rule: inv-sqrt, eta: 0.5}}}}
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
    body = [line for line in text.splitlines() if line.endswith("\\\\") and not line.startswith("\\multicolumn")]
    assert len({line.count(" & ") for line in body}) == 1  # every row has the header's columns
    # the conventions are a footnote row spanning the columns, with their rules
    assert "{\\footnotesize Convention: paper (gain 2\\textasciicircum{}r-1, discount 1/log2(i+1)" in text

    pivot = runner.invoke(app, ["report", str(out), "--pivot", "--format", "csv"])
    assert pivot.exit_code == 0, pivot.stderr
    header, *rows = pivot.stdout.strip().splitlines()
    assert header.startswith("learner,") and "separable-authors:ndcg@10" in header
    assert "generated, shaped like Microsoft MSLR-WEB10K:ap" in header  # generated data says so
    assert sorted(r.split(",")[0] for r in rows) == ["50% & #2", "ListNet", "SLAM_1"]
    latex = runner.invoke(app, ["report", str(out), "--pivot", "--format", "latex"])
    assert latex.exit_code == 0 and "\\multicolumn{2}{c}{generated, shaped like Microsoft MSLR-WEB10K}" in latex.stdout
    bad = runner.invoke(app, ["report", str(out), "--pivot", "--html"])
    assert bad.exit_code == 1 and "--pivot" in bad.stderr


def test_escape():
    assert escape("a_b & 50% #1 {x} ~ ^ \\") == "a\\_b \\& 50\\% \\#1 \\{x\\} \\textasciitilde{} \\textasciicircum{} \\textbackslash{}"


def test_latex_escapes_typesets_and_bolds(tmp_path):
    out = _results(tmp_path)
    text = runner.invoke(app, ["report", str(out), "--format", "latex"]).stdout
    assert "50\\% \\& \\#2" in text and "50%" not in text.replace("50\\%", "")
    head = [line for line in text.splitlines() if line.endswith("\\\\")][0].removesuffix(" \\\\")
    assert head.split(" & ")[:4] == ["experiment", "dataset", "learner", "metric"]  # two experiments
    assert "NDCG@10 &" in text and "MAP &" in text and "ndcg@10 &" not in text
    assert "runs" not in head and "notes" not in head  # a paper's columns only
    # in each (experiment, metric) the best last10 is bold, and only it
    body = [line.removesuffix(" \\\\").split(" & ") for line in text.splitlines()[4:]
            if line.endswith("\\\\") and "&" in line]
    last = head.split(" & ").index("last 10")
    groups: dict[tuple[str, str], list[str]] = {}
    for cells in body:
        groups.setdefault((cells[0], cells[3]), []).append(cells[last])
    for cells in groups.values():
        assert sum("\\textbf" in c for c in cells) >= 1
        best = max(float(c.replace("\\textbf{", "").rstrip("}")) for c in cells)
        assert all(("\\textbf" in c) == (float(c.replace("\\textbf{", "").rstrip("}")) == best) for c in cells)


def test_cells():
    assert cell(float("nan")) == cell(None) == cell("") == "--"
    assert cell(0.51234, marked=True, bold=True) == "\\textbf{0.5123}$^\\dagger$"
    assert cell("a_b%") == "a\\_b\\%"


def test_pivot_names_a_learner_two_experiments_share(tmp_path):
    out = tmp_path / "out"
    for name in ("first", "second"):
        cfg = tmp_path / f"{name}.yaml"
        cfg.write_text(f"experiment: {name}\ndataset: {{kind: separable, queries: 20}}\n"
                       "learners:\n  listnet: {type: listnet}\n  alg3: {type: alg3, label: Alg3}\n")
        assert runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q",
                                   "--set", f"learners.listnet.step.eta={0.5 if name == 'first' else 1}"]).exit_code == 0
    res = runner.invoke(app, ["report", str(out), "--pivot", "--format", "csv"])
    assert res.exit_code == 0, res.stderr
    names = sorted(line.split(",")[0] for line in res.stdout.strip().splitlines()[1:])
    assert names == ["Alg3 [first]", "Alg3 [second]", "ListNet [first]", "ListNet [second]"]
