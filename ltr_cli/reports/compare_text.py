"""``ltr compare``'s text and JSON: one row per pair of learners (n, mean difference,
statistic, p and the adjusted p), under a header saying the test, the units paired and
what the mean difference is over (:mod:`ltr_cli.reports.compare` computes them)."""

from __future__ import annotations

import json
from typing import Any

from ltr_cli.reports.compare import BATCH, Comparison
from ltr_cli.reports.significance import RESAMPLES, SEED, TESTS


_METHOD = {"holm": "Holm's method", "bh": "Benjamini and Hochberg's method (false discovery rate)"}


def _unit(c: Comparison) -> str:
    if c.protocol == BATCH:
        return "the test queries of every fold, pooled (a pair: one query under both learners)"
    if c.on == "heldout":
        return "the seeds (a pair: one seed under both learners; a seed's value: the last held-out evaluation, " \
               "the report's heldout_last)"
    if c.on == "cumulative":
        return "the seeds (a pair: one seed under both learners; a seed's value: the discounted cumulative " \
               "online value, the report's discounted_cumulative)"
    return "the seeds (a pair: one seed under both learners; a seed's value: mean of the time-averaged curve " \
           "over the last ten rounds, the report's last10)"


def test_text(c: Comparison) -> str:
    """The test in words: ``paired t-test (two-sided)``, with the randomization test's draws."""
    how = TESTS[c.test] + " (two-sided)"
    if c.test == "randomization":
        how += f", {RESAMPLES} random sign flips of the pairs' differences, seed {SEED} (every flip when there are fewer)"
    return how


def mean_label(c: Comparison) -> str:
    """What ``mean_diff`` and the table's means are over, and how that differs from ``ltr report``."""
    if c.protocol == BATCH:
        return ("over the test queries of every fold, pooled (ltr report's columns are means of the fold means, "
                "which weigh each fold alike)")
    return "over the seeds"


def _header(c: Comparison) -> str:
    return f"{c.metric}: {test_text(c)} over {_unit(c)}; mean_diff = a - b, {mean_label(c)}"


def _p(p: float | None) -> str:
    if p is None:
        return "-"
    return f"{p:.1e}" if p < 1e-4 else f"{p:.4f}"


def _stat(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def adjusted_column(c: Comparison) -> str:
    """The adjusted p's column: ``p_holm``, ``p_bh`` (``p`` itself under ``none``)."""
    return f"p_{c.adjustment}"


def render_text(c: Comparison) -> str:
    adjusted = c.adjustment != "none"
    head = ["experiment", "a", "b", "n", "mean_diff", "statistic", "p"] + [adjusted_column(c)] * adjusted + ["note"]
    body = [[r.experiment, r.a, r.b, str(r.result.n),
             "-" if r.result.mean_difference is None else f"{r.result.mean_difference:+.4f}",
             _stat(r.result.statistic), _p(r.result.p)] + [_p(r.p_adjusted)] * adjusted + [r.result.note]
            for r in c.rows]
    widths = [max(len(line[j]) for line in [head, *body]) for j in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in [head, *body]]
    tested = sum(1 for r in c.rows if r.result.p is not None)
    col = adjusted_column(c)
    note = (f"{len(c.rows)} pair{'s' * (len(c.rows) != 1)} of learners, {tested} with a p-value: {col} is p "
            f"adjusted by {_METHOD[c.adjustment]} for these {tested} comparisons; a difference is significant "
            f"at {c.alpha:g} when {col} < {c.alpha:g} (p alone does not allow for the number of comparisons)."
            if adjusted else
            f"{len(c.rows)} pair{'s' * (len(c.rows) != 1)} of learners, {tested} with a p-value, not adjusted for the "
            f"number of comparisons (--adjust holm or bh does); significant at {c.alpha:g} when p < {c.alpha:g}.")
    return "\n".join([_header(c), *lines, note] + ([c.convention] if c.convention else [])) + "\n"


def json_object(c: Comparison) -> dict[str, Any]:
    """The comparison as ``--json`` prints it."""
    holm = c.adjustment == "holm"
    return {
        "metric": c.metric, "on": c.on, "test": c.test, "test_name": TESTS[c.test], "alternative": "two-sided",
        "protocol": c.protocol, "unit": "query" if c.protocol == BATCH else "seed",
        "comparisons": sum(1 for r in c.rows if r.result.p is not None), "adjustment": c.adjustment,
        "alpha": c.alpha, "mean_difference": f"a - b, {mean_label(c)}", "convention": c.convention,
        **({"resamples": RESAMPLES, "seed": SEED} if c.test == "randomization" else {}),
        "pairs": [{"experiment": r.experiment, "a": r.a, "b": r.b, "n": r.result.n,
                   "mean_difference": r.result.mean_difference, "statistic": r.result.statistic,
                   "p": r.result.p, "p_adjusted": r.p_adjusted, **({"p_holm": r.p_adjusted} if holm else {}),
                   "note": r.result.note or None} for r in c.rows],
    }


def to_json(c: Comparison) -> str:
    return json.dumps(json_object(c), indent=2, allow_nan=False) + "\n"
