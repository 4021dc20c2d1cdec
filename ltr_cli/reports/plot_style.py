"""How ``ltr plot`` draws: one colour and marker per learner role in every figure, markers
spaced so overlapping curves stay visible, y-limits from the converged part of the curves,
TrueType (Type 42) fonts in PDFs, titles from the experiment's description.

Pure functions of the runs' names and curves; no matplotlib import here.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

# the paper roles' colours (tab10) and markers: the same in every figure
ROLE_STYLES: dict[str, tuple[str, str]] = {
    "slam-ndcg": ("#1f77b4", "o"),
    "slam-ap": ("#17becf", "D"),
    "alg3": ("#d62728", "s"),
    "listnet": ("#2ca02c", "^"),
    "random": ("#7f7f7f", "x"),
    "rtopkf-squared": ("#ff7f0e", "v"),
    "rtopkf-ranksvm": ("#9467bd", "P"),
    "rtopkf-kl": ("#8c564b", "*"),
    "rtopkf-smoothdcg": ("#e377c2", "h"),
    "ogd-squared": ("#bcbd22", "<"),
    "ogd-ranksvm": ("#9467bd", ">"),
}
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
            "#bcbd22", "#17becf")
_MARKERS = ("o", "s", "^", "v", "D", "P", "*", "h", "<", ">", "X", "d")
LINESTYLES = ("-", "--", ":", "-.")
MARKERS_PER_CURVE = 8
TRUETYPE = 42  # pdf.fonttype / ps.fonttype: TrueType fonts, accepted by ACM and IEEE checkers (Type 3 are not)


def role_style(role: str) -> tuple[str, str]:
    """The colour and marker of a learner role; roles outside the table get a stable pair
    from a hash of their name (the same in every figure and every run of the tool)."""
    if role in ROLE_STYLES:
        return ROLE_STYLES[role]
    h = zlib.crc32(role.encode("utf-8"))
    return _PALETTE[h % len(_PALETTE)], _MARKERS[(h // len(_PALETTE)) % len(_MARKERS)]


def mark_every(index: int, count: int, length: int) -> tuple[int, int]:
    """``markevery`` for curve ``index`` of ``count``: about eight markers, each curve's
    shifted so curves drawn on top of each other still show all their markers."""
    step = max(1, length // MARKERS_PER_CURVE)
    return (index * step // max(count, 1)) % step, step


def converged_limits(curves: list[np.ndarray], skip: float = 0.1) -> tuple[float, float] | None:
    """y-limits from the curves after their first ``skip`` share of rounds, padded by 15% of
    the range (at least 0.005), so early spikes do not flatten the converged part."""
    tails = [c[int(len(c) * skip):] for c in curves if len(c)]
    values = np.concatenate([t[np.isfinite(t)] for t in tails]) if tails else np.zeros(0)
    if values.size == 0:
        return None
    lo, hi = float(values.min()), float(values.max())
    pad = max(0.15 * (hi - lo), 0.005)
    return lo - pad, hi + pad


def same_as(curves: list[np.ndarray], labels: list[str]) -> list[str | None]:
    """For each curve, the label of an earlier curve it equals exactly (drawn on top of
    it), else None."""
    out: list[str | None] = []
    for i, c in enumerate(curves):
        twin = next((labels[j] for j in range(i) if curves[j].shape == c.shape
                     and np.array_equal(curves[j], c, equal_nan=True)), None)
        out.append(twin)
    return out


def title(runs: list[Any], experiment: str) -> str:
    """The figure's title: the experiment's description (the shipped configs name the paper
    figure and the dataset there), else its name."""
    for run in runs:
        description = (run.config or {}).get("description") if isinstance(run.config, dict) else None
        if isinstance(description, str) and description.strip():
            return description.strip()
    return experiment
