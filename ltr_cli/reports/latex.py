"""``ltr report --format latex``: the report's tables as LaTeX ``tabular`` environments in
booktabs style (``\\toprule``, ``\\midrule``, ``\\bottomrule``; add ``\\usepackage{booktabs}``).

A paper's table, not the whole record: the columns a paper prints (data, learner, its
settings where they tell rows apart, the metric, the numbers and the paper's), without
empty columns; metrics typeset as the papers name them (``MAP``, ``NDCG@10``:
:func:`ltr_cli.measures.registry.display_name`). What the table leaves out but a reader
must know follows it as ``%`` comment lines: each row's verdict against the paper's
number. Each row's test against a baseline (``ltr report --baseline``: the difference, the
adjusted p and the pairs) and the meaning of the marks are footnote rows under the table. A "not comparable" verdict is also in the table: its
row's paper numbers carry a letter (``$^{\\mathrm{a}}$``) and the verdict is a footnote
row under ``\bottomrule`` (one per distinct verdict, spanning the columns).

Numbers get four decimals, a missing or NaN value is ``--``, text is escaped (``& % $ # _ {
} ~ ^ \\``), the best value of a metric column among the rows it compares (one experiment;
online: one metric) is bold, and a value marked significantly better than the baseline
(``ltr report --baseline``) carries ``$^\\dagger$``. The pivot (:mod:`ltr_cli.reports.pivot`)
gets a two-row header: datasets spanning their metrics (``\\multicolumn`` and ``\\cmidrule``),
the best value of each column bold.
"""

from __future__ import annotations

import math
from typing import Any

from ltr_cli.measures.registry import display_name, is_metric_name
from ltr_cli.reports.captions import conventions_line

_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}

# the online and batch tables' columns a paper prints, and their headers
_PAPER_COLUMNS = {
    "experiment": "experiment", "dataset": "dataset", "label": "learner", "settings": "settings", "metric": "metric", "rounds": "rounds",
    "seeds": "seeds", "folds": "folds", "last10": "last 10", "last10_std": "sd", "paper": "paper",
    "difference": "difference", "selected_by": "selected by", "candidates": "candidates", "score": "score",
    "score_std": "sd", "click_model": "clicks", "heldout_last": "final offline", "heldout_last_std": "sd",
    "discounted_cumulative": "cumulative online", "discounted_cumulative_std": "sd",
}
# columns that hold text a reader needs but a paper's table does not print: shown as comments
_COMMENTED = ("vs_paper",)
# ... and text a reader of the table needs: footnote rows under the table
_FOOTNOTED = ("vs_baseline",)


def escape(text: str) -> str:
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


def _per_gamma(column: str) -> tuple[str, str] | None:
    """(the column it splits, the gamma) of a per-gamma column of the online table
    (``discounted_cumulative@0.9``, ``..._std``), else None."""
    base, at, rest = column.partition("@")
    if not at or base != "discounted_cumulative":
        return None
    return (f"{base}_std", rest[:-4]) if rest.endswith("_std") else (base, rest)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def cell(value: Any, marked: bool = False, bold: bool = False, note: str = "") -> str:
    """One cell: four decimals for a float, ``--`` for nothing or NaN, escaped text;
    ``note``: the letter of a footnote the cell refers to (``$^{\\mathrm{a}}$``)."""
    after = (r"$^\dagger$" if marked else "") + (rf"$^{{\mathrm{{{note}}}}}$" if note else "")
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return "--" + after
    if isinstance(value, float):
        text = f"{value:.4f}"
    else:
        text = escape(str(value))
    return (rf"\textbf{{{text}}}" if bold else text) + after


def _verdicts(rows: list[dict[str, Any]], shown: list[str]) -> tuple[dict[tuple[int, str], str], list[str]]:
    """The "not comparable" verdicts as footnotes: (row index, column) -> the letter of its
    footnote, on the paper's numbers of that row (on its learner when no paper number is
    shown), and the footnote lines, one per distinct verdict."""
    letters: dict[str, str] = {}
    marks: dict[tuple[int, str], str] = {}
    papers = [c for c in shown if c == "paper" or c.startswith("paper_")]
    for i, r in enumerate(rows):
        verdict = str(r.get("vs_paper") or "")
        if not verdict.startswith("not comparable"):
            continue
        letter = letters.setdefault(verdict, _letter(len(letters)))
        where = [c for c in papers if r.get(c) not in (None, "")] or [c for c in ("label", "learner") if c in shown][:1]
        for c in where or shown[:1]:
            marks[(i, c)] = letter
    notes = [rf"\multicolumn{{{len(shown)}}}{{@{{}}p{{0.9\linewidth}}@{{}}}}{{\footnotesize $^{{\mathrm{{{letter}}}}}$ "
             rf"{escape(_sentence(verdict))}}} \\" for verdict, letter in letters.items()]
    return marks, notes


def _letter(i: int) -> str:
    """a, b, ..., z, aa, ab, ..."""
    return _letter(i // 26 - 1) + chr(97 + i % 26) if i >= 26 else chr(97 + i)


def _sentence(verdict: str) -> str:
    """A verdict as a footnote: ``Not comparable with the paper's number: ...``."""
    return "Not comparable with the paper's number" + verdict[len("not comparable"):] + \
        ("" if verdict.endswith(".") else ".")


def header(column: str) -> str:
    """A column's header: a metric typeset (``ap`` -> ``MAP``), its spread and the paper's
    number named after it (``MAP sd``, ``paper MAP``), other columns as :data:`_PAPER_COLUMNS`."""
    if is_metric_name(column):
        return escape(display_name(column))
    if column.endswith("_std") and is_metric_name(column[:-4]):
        return escape(display_name(column[:-4]) + " sd")
    if column.startswith("paper_") and is_metric_name(column[6:]):
        return escape("paper " + display_name(column[6:]))
    split = _per_gamma(column)
    if split is not None:  # one column per gamma: the sums of different discounts apart
        return escape(_PAPER_COLUMNS[split[0]]) + ("" if split[0].endswith("_std") else rf" ($\gamma$ {escape(split[1])})")
    return escape(_PAPER_COLUMNS.get(column, column))


def _paper_columns(rows: list[dict[str, Any]], columns: list[str]) -> list[str]:
    """The columns a paper prints: metric columns and :data:`_PAPER_COLUMNS`, each only when
    some row has a value in it."""
    keep = [c for c in columns if c != "experiment" and c in _PAPER_COLUMNS or is_metric_name(c) or c.startswith("paper_")
            or (c.endswith("_std") and is_metric_name(c[:-4])) or _per_gamma(c) is not None]
    if len({r.get("experiment") for r in rows}) > 1:  # rows of several experiments: say whose
        keep.insert(0, "experiment")
    return [c for c in keep if any(r.get(c) not in (None, "") for r in rows)] or keep


def _best(rows: list[dict[str, Any]], columns: list[str]) -> set[tuple[int, str]]:
    """(row index, column) of each best value: per metric column (online: ``last10``, per
    metric) the highest finite value among the rows of one experiment, when two or more
    rows have one (every metric here is better higher)."""
    out: set[tuple[int, str]] = set()
    for c in columns:
        if not (is_metric_name(c) or c == "last10"):
            continue
        groups: dict[tuple[Any, ...], list[tuple[int, float]]] = {}
        for i, r in enumerate(rows):
            v: Any = r.get(c)
            if _number(v) and math.isfinite(v):
                key = (r.get("experiment"), r.get("metric") if c == "last10" else None)
                groups.setdefault(key, []).append((i, float(v)))
        for members in groups.values():
            if len(members) > 1:
                top = max(v for _, v in members)
                out |= {(i, c) for i, v in members if v == top}
    return out


def _who(r: dict[str, Any]) -> str:
    return " ".join(str(r[c]) for c in ("label", "settings", "dataset", "metric") if r.get(c))


def _comments(rows: list[dict[str, Any]], columns: list[str]) -> list[str]:
    """``%`` lines after the table: each row's verdict (a column it leaves out)."""
    lines = []
    for r in rows:
        said = [f"{c}: {r[c]}" for c in _COMMENTED if c in columns and r.get(c)]
        if said:
            lines.append(f"% {_who(r)}: " + "; ".join(said))
    return [line.replace("\n", " ") for line in lines]


def _tests(rows: list[dict[str, Any]], columns: list[str], note: str | None, span: int) -> list[str]:
    """Footnote rows: each row's test against the baseline, then ``note`` (the marks' legend)."""
    lines = [f"{_who(r)} vs. baseline: {r[c]}" for r in rows for c in _FOOTNOTED
             if c in columns and r.get(c) and r.get(c) != "baseline"]
    if note:
        lines += [line for line in note.strip().splitlines() if line]
    out = []
    for line in lines:
        text = escape(line.replace("\n", " ")).replace("\u2020", r"$^\dagger$")
        out.append(rf"\multicolumn{{{span}}}{{@{{}}p{{0.9\linewidth}}@{{}}}}{{\footnotesize {text}}} \\")
    return out


def to_latex(rows: list[dict[str, Any]], columns: list[str], note: str | None = None) -> str:
    """One ``tabular`` of the paper's columns among ``columns`` (numbers right-aligned, text
    left), the footnote rows of :func:`_tests` (``note``: the marks' legend), then the
    comment lines of :func:`_comments`."""
    shown = _paper_columns(rows, columns)
    align = "".join("r" if any(_number(r.get(c)) for r in rows) else "l" for c in shown)
    best = _best(rows, shown)
    notes, footnotes = _verdicts(rows, shown)
    lines = [rf"\begin{{tabular}}{{{align}}}", r"\toprule", " & ".join(header(c) for c in shown) + r" \\",
             r"\midrule"]
    for i, r in enumerate(rows):
        marked = r.get("marked", ())
        values = [display_name(r[c]) if c == "metric" and isinstance(r.get(c), str) else r.get(c) for c in shown]
        lines.append(" & ".join(cell(v, c in marked, (i, c) in best, notes.get((i, c), ""))
                                for c, v in zip(shown, values)) + r" \\")
    lines += [r"\bottomrule", *footnotes, *_tests(rows, columns, note, len(shown)),
              *_footnote(conventions_line(rows), len(shown)), r"\end{tabular}"]
    return "\n".join(lines + _comments(rows, columns)) + "\n"


def _footnote(text: str | None, span: int) -> list[str]:
    """A footnote row under ``\\bottomrule`` spanning ``span`` columns (none for no text)."""
    if not text:
        return []
    return [rf"\multicolumn{{{span}}}{{@{{}}p{{0.9\linewidth}}@{{}}}}{{\footnotesize {escape(text)}}} \\"]


def pivot_to_latex(header_groups: list[tuple[str, list[str]]], rows: list[tuple[str, list[Any]]],
                   conventions: str | None = None) -> str:
    """The pivot: ``header_groups`` (dataset, its metrics) left to right, ``rows`` (learner,
    values); the best value of each column bold (when two or more learners have one);
    ``conventions``: the line naming the conventions, a footnote row."""
    n = sum(len(metrics) for _, metrics in header_groups)
    lines = [rf"\begin{{tabular}}{{l{'r' * n}}}", r"\toprule"]
    spans, rules, col = [], [], 2
    for dataset, metrics in header_groups:
        spans.append(rf"\multicolumn{{{len(metrics)}}}{{c}}{{{escape(dataset)}}}")
        rules.append(rf"\cmidrule(lr){{{col}-{col + len(metrics) - 1}}}")
        col += len(metrics)
    lines.append(" & " + " & ".join(spans) + r" \\")
    lines.append(" ".join(rules))
    lines.append("learner & " + " & ".join(escape(display_name(m)) for _, metrics in header_groups
                                            for m in metrics) + r" \\")
    lines.append(r"\midrule")
    tops = []
    for j in range(n):
        finite = [float(v[j]) for _, v in rows if _number(v[j]) and math.isfinite(v[j])]
        tops.append(max(finite) if len(finite) > 1 else None)
    for learner, values in rows:
        lines.append(escape(learner) + " & " + " & ".join(
            cell(v, bold=tops[j] is not None and _number(v) and float(v) == tops[j]) for j, v in enumerate(values))
            + r" \\")
    lines += [r"\bottomrule", *_footnote(conventions, n + 1), r"\end{tabular}"]
    return "\n".join(lines) + "\n"
