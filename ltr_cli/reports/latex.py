"""``ltr report --format latex``: the report's tables as LaTeX ``tabular`` environments in
booktabs style (``\\toprule``, ``\\midrule``, ``\\bottomrule``; add ``\\usepackage{booktabs}``).

Numbers get four decimals, a missing value is ``--``, text is escaped (``& % $ # _ { } ~ ^
\\``), and a value marked significantly better than the baseline (``ltr report --baseline``)
carries ``$^\\dagger$``. The pivot (:mod:`ltr_cli.reports.pivot`) gets a two-row header:
datasets spanning their metrics (``\\multicolumn`` and ``\\cmidrule``).
"""

from __future__ import annotations

from typing import Any

_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def escape(text: str) -> str:
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


def cell(value: Any, marked: bool = False) -> str:
    if value is None or value == "":
        text = "--"
    elif isinstance(value, float):
        text = f"{value:.4f}" if value == value else "--"
    else:
        text = escape(str(value))
    return text + (r"$^\dagger$" if marked else "")


def to_latex(rows: list[dict[str, Any]], columns: list[str], note: bool | None = None) -> str:
    """One ``tabular`` of ``columns`` (numbers right-aligned, text left)."""
    align = "".join("r" if any(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool)
                               for r in rows) else "l" for c in columns)
    lines = [rf"\begin{{tabular}}{{{align}}}", r"\toprule", " & ".join(escape(c) for c in columns) + r" \\",
             r"\midrule"]
    for r in rows:
        marked = r.get("marked", ())
        lines.append(" & ".join(cell(r.get(c), c in marked) for c in columns) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def pivot_to_latex(header: list[tuple[str, list[str]]], rows: list[tuple[str, list[Any]]]) -> str:
    """The pivot: ``header`` (dataset, its metrics) left to right, ``rows`` (learner, values)."""
    n = sum(len(metrics) for _, metrics in header)
    lines = [rf"\begin{{tabular}}{{l{'r' * n}}}", r"\toprule"]
    spans, rules, col = [], [], 2
    for dataset, metrics in header:
        spans.append(rf"\multicolumn{{{len(metrics)}}}{{c}}{{{escape(dataset)}}}")
        rules.append(rf"\cmidrule(lr){{{col}-{col + len(metrics) - 1}}}")
        col += len(metrics)
    lines.append(" & " + " & ".join(spans) + r" \\")
    lines.append(" ".join(rules))
    lines.append("learner & " + " & ".join(escape(m) for _, metrics in header for m in metrics) + r" \\")
    lines.append(r"\midrule")
    for learner, values in rows:
        lines.append(escape(learner) + " & " + " & ".join(cell(v) for v in values) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"
