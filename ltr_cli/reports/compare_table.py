"""``ltr compare --format markdown|csv|latex``: the researcher's table, one per experiment.

Learners are rows, lettered ``a``, ``b``, ... in the report's order; metrics are columns. A
cell is the learner's mean over its units (a batch run's test queries of every fold,
pooled; an online run's seeds, valued as ``--on`` says) with its 95% t interval
(:func:`~ltr_cli.reports.significance.mean_interval`), and a superscript letter for each
learner it is significantly better than: a pair's adjusted p (the comparison's test and
adjustment, over the pairs of one metric) below alpha, with the higher mean. The best mean
of a column is bold. The caption (LaTeX ``\\caption``, the paragraph under a Markdown
table, columns of the CSV) names the data as the figures do (a sample says so), the units,
the test, the adjustment, alpha and the convention with its rules.

The CSV is long: one row per learner and metric (``mean``, ``ci_low``, ``ci_high``, ``n``,
``better_than``: the letters), with the test, adjustment, alpha and convention as columns,
since a CSV file carries no notes.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr_cli.measures.registry import display_name
from ltr_cli.reports.captions import conventions_line, run_convention, table_dataset
from ltr_cli.reports.compare import BATCH, Comparison, Learner
from ltr_cli.reports.compare_text import test_text
from ltr_cli.reports.latex import escape
from ltr_cli.reports.significance import ADJUSTMENTS, LEVEL, Interval, mean_interval
from ltr_cli.results.folders import Run

FORMATS = ("markdown", "csv", "latex")


@dataclass
class Cell:
    """One learner on one metric: the mean and its interval, and the letters of the
    learners it is significantly better than."""

    interval: Interval
    better_than: list[str]


@dataclass
class Section:
    """One experiment's table: its learners (letter, name), metrics (as compared), cells
    ``[learner][metric]``, the caption's parts."""

    experiment: str
    learners: list[tuple[str, str]]
    metrics: list[str]
    cells: list[list[Cell]]
    comparisons: list[Comparison]
    dataset: str
    convention: str | None


def _letter(i: int) -> str:
    return _letter(i // 26 - 1) + chr(97 + i % 26) if i >= 26 else chr(97 + i)


def _values(learner: Learner) -> np.ndarray:
    values = learner.values or {}
    return np.array([v for v in values.values() if math.isfinite(v)], dtype=np.float64)


def sections(comparisons: list[Comparison], runs: list[Run]) -> list[Section]:
    """One :class:`Section` per experiment of the comparisons (one comparison per metric)."""
    out = []
    experiments = list(dict.fromkeys(x.experiment for x in comparisons[0].found))
    for experiment in experiments:
        names = [x.name for x in comparisons[0].found if x.experiment == experiment]
        letters = {name: _letter(i) for i, name in enumerate(names)}
        cells: list[list[Cell]] = [[] for _ in names]
        for c in comparisons:
            mine = {x.name: x for x in c.found if x.experiment == experiment}
            better: dict[str, list[str]] = {name: [] for name in names}
            for row in c.rows:
                winner = row.significant(c.alpha) if row.experiment == experiment else None
                if winner is not None:
                    better[winner].append(letters[row.b if winner == row.a else row.a])
            for i, name in enumerate(names):
                cells[i].append(Cell(mean_interval(_values(mine[name])), sorted(better[name])))
        chosen = [r for r in runs if r.experiment == experiment]
        said = conventions_line([{"convention": run_convention(r), "experiment": experiment} for r in chosen])
        shown = [_label(x, chosen) for x in comparisons[0].found if x.experiment == experiment]
        out.append(Section(experiment, [(letters[n], label) for n, label in zip(names, shown)],
                           [c.metric for c in comparisons], cells, comparisons, table_dataset(chosen), said))
    return out


def _label(learner: Learner, runs: list[Run]) -> str:
    """A learner as the report names it: its label (``RankSVM``), with the settings that
    tell it apart from the same learner's other rows."""
    label = next((r.label for r in runs if str(r.summary.get("learner")) == learner.key[1]), learner.key[1])
    return label + learner.name[len(learner.key[1]):]


def _units(c: Comparison, n: int) -> str:
    """What a cell's mean is over, in words."""
    if c.protocol == BATCH:
        return (f"the test queries of every fold, pooled ({n:,} queries; ltr report's columns are means of the fold "
                "means)")
    value = {"online": "the mean of its time-averaged online curve over the last ten rounds (last10)",
             "heldout": "its last held-out evaluation", "cumulative": "its discounted cumulative online value"}[c.on]
    return f"the seeds ({n} seed{'s' * (n != 1)}; a seed's value: {value})"


def caption(section: Section) -> str:
    """The caption: metrics, data, units, test, adjustment, alpha and convention."""
    first = section.comparisons[0]
    n = max((cell.interval.n for row in section.cells for cell in row), default=0)
    metrics = ", ".join(display_name(m.removeprefix("heldout_")) for m in section.metrics)
    tested = sorted({sum(1 for r in c.rows if r.result.p is not None) for c in section.comparisons})
    adjustment = ADJUSTMENTS[first.adjustment] + (
        f" over the {'/'.join(map(str, tested))} comparison{'s' * (tested != [1])} of "
        f"{'each metric' if len(section.metrics) > 1 else 'the metric'}" if first.adjustment != "none" else "")
    text = (f"{metrics} of {section.experiment} on {section.dataset}: mean over {_units(first, n)}, with its "
            f"{LEVEL:.0%} t interval. A superscript letter marks a learner significantly better than the learner of "
            f"that letter ({test_text(first)}; {adjustment}; alpha = {first.alpha:g}).")
    pairs = max((r.result.n for c in section.comparisons for r in c.rows), default=0)
    if first.test == "randomization" and 0 < pairs <= 20 and 2.0 / 2 ** pairs >= first.alpha:
        text += (f" With {pairs} pairs no sign-flip p-value is below {2.0 / 2 ** pairs:.4g}: no learner can be "
                 "marked at this alpha.")
    return text + (f" {section.convention}" if section.convention else "")


def _best(section: Section, j: int) -> float | None:
    means = [m for row in section.cells if (m := row[j].interval.mean) is not None]
    return max(means) if len(means) > 1 else None


def _number(v: float | None) -> str:
    return "--" if v is None else f"{v:.4f}"


def to_markdown(parts: list[Section]) -> str:
    blocks = []
    for section in parts:
        head = "| | learner | " + " | ".join(section.metrics) + " |"
        rule = "|---|---|" + "---|" * len(section.metrics)
        body = []
        for (letter, name), row in zip(section.learners, section.cells):
            cells = []
            for j, cell in enumerate(row):
                iv = cell.interval
                mean = _number(iv.mean)
                mean = f"**{mean}**" if iv.mean is not None and iv.mean == _best(section, j) else mean
                marks = f"<sup>{''.join(cell.better_than)}</sup>" if cell.better_than else ""
                spread = f" [{_number(iv.low)}, {_number(iv.high)}]" if iv.low is not None else ""
                cells.append(mean + marks + spread)
            body.append(f"| {letter} | {name.replace('|', chr(92) + '|')} | " + " | ".join(cells) + " |")
        blocks.append("\n".join([head, rule, *body]) + "\n\n" + caption(section) + "\n")
    return "\n".join(blocks)


def to_latex(parts: list[Section]) -> str:
    """One booktabs ``table`` per experiment (``\\usepackage{booktabs}``), its caption
    naming the data, test, adjustment, alpha and convention."""
    blocks = []
    for section in parts:
        said = escape(caption(section)).replace(r"2\textasciicircum{}r-1", r"$2^r-1$")
        lines = [r"\begin{table}[t]", r"\centering", rf"\caption{{{said}}}",
                 rf"\label{{tab:compare-{escape(section.experiment)}}}",
                 rf"\begin{{tabular}}{{ll{'r' * len(section.metrics)}}}", r"\toprule",
                 " & learner & " + " & ".join(escape(display_name(m.removeprefix("heldout_")))
                                             for m in section.metrics) + r" \\", r"\midrule"]
        for (letter, name), row in zip(section.learners, section.cells):
            cells = []
            for j, cell in enumerate(row):
                iv = cell.interval
                mean = _number(iv.mean)
                mean = rf"\textbf{{{mean}}}" if iv.mean is not None and iv.mean == _best(section, j) else mean
                marks = rf"$^{{\mathrm{{{''.join(cell.better_than)}}}}}$" if cell.better_than else ""
                spread = rf" {{\scriptsize [{_number(iv.low)}, {_number(iv.high)}]}}" if iv.low is not None else ""
                cells.append(mean + marks + spread)
            lines.append(f"{letter} & {escape(name)} & " + " & ".join(cells) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


CSV_COLUMNS = ["experiment", "dataset", "system", "learner", "metric", "on", "n", "mean", "ci_low", "ci_high",
               "better_than", "test", "adjustment", "alpha", "convention"]


def to_csv(parts: list[Section]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for section in parts:
        for (letter, name), row in zip(section.learners, section.cells):
            for c, cell in zip(section.comparisons, row):
                iv = cell.interval
                record: dict[str, Any] = {
                    "experiment": section.experiment, "dataset": section.dataset, "system": letter, "learner": name,
                    "metric": c.metric.removeprefix("heldout_"), "on": c.on, "n": iv.n, "mean": iv.mean,
                    "ci_low": iv.low, "ci_high": iv.high, "better_than": "".join(cell.better_than), "test": c.test,
                    "adjustment": c.adjustment, "alpha": c.alpha,
                    "convention": (section.convention or "").removeprefix("Convention: ").rstrip("."),
                }
                writer.writerow({k: "" if v is None else v for k, v in record.items()})
    return buf.getvalue()


def render_table(comparisons: list[Comparison], runs: list[Run], fmt: str) -> str:
    """The comparisons (one per metric, of the same runs) as ``fmt`` (:data:`FORMATS`)."""
    parts = sections(comparisons, runs)
    return {"markdown": to_markdown, "csv": to_csv, "latex": to_latex}[fmt](parts)
