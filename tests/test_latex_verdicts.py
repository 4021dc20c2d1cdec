"""A LaTeX table carries its verdict: a "not comparable" row's paper numbers get a visible
letter and the verdict is a footnote row inside the ``tabular`` (escaped), not only a ``%``
comment that a compiled table drops."""

from __future__ import annotations

from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.reports.latex import to_latex
from tests.conftest import REPO

runner = CliRunner()


def _ok(*args: object):
    res = runner.invoke(app, [str(a) for a in args], env={"LTR_KERNELS": "0"})
    assert res.exit_code == 0, res.stderr
    return res


def _body(text: str) -> list[str]:
    """The table's lines without the ``%`` comments."""
    return [line for line in text.splitlines() if not line.startswith("%")]


def test_a_not_comparable_row_is_marked_and_footnoted_in_the_table(tmp_path):
    root = tmp_path / "synth"
    _ok("data", "synth", root, "--like", "letor2-ohsumed", "--folds", "--queries", "20", "--docs-per-query", "6")
    out = tmp_path / "out"
    _ok("run", REPO / "configs" / "letor2_ohsumed.yaml", "--data", root, "--out", out, "-q", "--learner", "ranksvm",
        "--set", "learners.ranksvm.grid={C: [1]}")
    body = _body(_ok("report", out, "--format", "latex").stdout)
    row = next(line for line in body if "RankSVM" in line)
    cells = row.removesuffix(r" \\").split(" & ")
    assert cells[-2].endswith(r"$^{\mathrm{a}}$") and cells[-1].endswith(r"$^{\mathrm{a}}$")  # paper MAP, NDCG@3
    end = body.index(r"\end{tabular}")
    foot, said = body[end - 2], body[end - 1]  # the verdict's footnote, then the convention's
    assert body.index(r"\bottomrule") == end - 3
    assert said.startswith(r"\multicolumn{") and r"{\footnotesize Convention: letor3 (gain 0,1,3" in said
    assert foot.startswith(r"\multicolumn{") and r"{\footnotesize $^{\mathrm{a}}$ Not comparable with the paper's number: " \
        "generated data, shaped like LETOR 2.0 OHSUMED" in foot and foot.endswith(r"} \\")
    columns = body[2].count(" & ") + 1
    assert foot.startswith(rf"\multicolumn{{{columns}}}")


def test_footnotes_are_escaped_and_one_per_distinct_verdict():
    rows = [
        {"label": "A_1", "ap": 0.5, "paper_ap": 0.4, "vs_paper": "not comparable: 50% of #files & {more}_x"},
        {"label": "B", "ap": 0.6, "paper_ap": 0.45, "vs_paper": "not comparable: 50% of #files & {more}_x"},
        {"label": "C", "ap": 0.7, "paper_ap": 0.46, "vs_paper": "comparable"},
        {"label": "D", "ap": 0.2, "paper_ap": None, "vs_paper": "not comparable: 3 folds (paper: 5)"},
    ]
    body = _body(to_latex(rows, ["label", "ap", "paper_ap", "vs_paper"]))
    table = [line for line in body if line.endswith(r"\\")]
    assert table[1].endswith(r"0.4000$^{\mathrm{a}}$ \\") and table[2].endswith(r"0.4500$^{\mathrm{a}}$ \\")
    assert "$^{\\mathrm{" not in table[3]  # comparable: no mark
    assert table[4].startswith(r"D$^{\mathrm{b}}$ & ")  # no paper number shown: the learner carries it
    notes = [line for line in body if line.startswith(r"\multicolumn")]
    assert len(notes) == 2
    assert r"50\% of \#files \& \{more\}\_x." in notes[0] and "$^{\\mathrm{b}}$ Not comparable" in notes[1]
