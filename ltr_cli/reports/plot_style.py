"""How ``ltr plot`` draws: one colour and marker per learner role in every figure, markers
spaced so overlapping curves stay visible, y-limits from the converged part of the curves,
TrueType (Type 42) fonts in PDFs, one hue's ramp for a sweep's settings, and the figure
options (size, text size, legend, title, palette).

Pure functions of the runs' names and curves; no matplotlib import here.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
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


#: ``tab10``: matplotlib's default colours; ``okabe-ito``: Okabe and Ito's colour-blind-safe
#: set; ``gray``: shades of gray, each curve also in its own line style, for print
PALETTES = ("tab10", "okabe-ito", "gray")
OKABE_ITO = ("#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#f0e442", "#000000")
# each tab10 colour's Okabe-Ito counterpart (the closest hue; the set has eight colours)
_TO_OKABE_ITO = {"#1f77b4": "#0072b2", "#ff7f0e": "#e69f00", "#2ca02c": "#009e73", "#d62728": "#d55e00",
                 "#9467bd": "#cc79a7", "#8c564b": "#000000", "#e377c2": "#cc79a7", "#7f7f7f": "#000000",
                 "#bcbd22": "#f0e442", "#17becf": "#56b4e9"}
LEGENDS = ("inside", "below", "none")
LAYOUTS = ("separate", "panels")  # a figure per experiment, or a panel per experiment in one figure
#: paper defaults: a one-column figure (ACM/IEEE columns are about 3.3-3.5 in wide), and a
#: two-column-wide row of panels; 8 pt text, the size of a caption
SINGLE_SIZE = (3.5, 2.6)
PANEL_WIDTH, PANEL_HEIGHT = 2.4, 2.3
PAGE_WIDTH = 7.0  # a two-column page's text width: panels side by side never exceed it
FONT_SIZE = 8.0


@dataclass(frozen=True)
class FigureOptions:
    """How a figure is laid out: ``size`` (width, height) in inches (None: the layout's
    default), the text size in points, where the legend goes (``inside`` the axes,
    ``below`` them across the figure, or ``none``: the caption file names the curves),
    whether titles are drawn, ``tag``, a suffix of every file name (``--select-by``'s
    ``_best-by-ndcg_at_10``), and the ``palette`` (:data:`PALETTES`)."""

    size: tuple[float, float] | None = None
    font_size: float = FONT_SIZE
    legend: str = "below"
    title: bool = True
    tag: str = ""
    palette: str = "tab10"

    def colour(self, colour: str) -> str:
        """A role's colour (``#rrggbb``, from :func:`role_style`) in this palette: itself,
        its Okabe-Ito counterpart, or a gray as light as it (at most 70% white)."""
        if self.palette == "okabe-ito":
            return _TO_OKABE_ITO.get(colour.lower(), colour)
        if self.palette == "gray":
            r, g, b = (int(colour[i:i + 2], 16) / 255.0 for i in (1, 3, 5))
            return _gray(0.7 * (0.299 * r + 0.587 * g + 0.114 * b))
        return colour

    def series(self, index: int, count: int) -> str:
        """The colour of the ``index``-th of ``count`` series told apart by position (the bars
        of one figure, the curves of a gray figure): black to 65% white in gray."""
        if self.palette == "gray":
            return _gray(0.65 * index / max(count - 1, 1))
        colours = OKABE_ITO if self.palette == "okabe-ito" else _PALETTE
        return colours[index % len(colours)]

    def figsize(self, panels: int = 1) -> tuple[float, float]:
        if self.size is not None:
            return self.size
        if panels <= 1:
            return SINGLE_SIZE
        return min(PANEL_WIDTH * panels, PAGE_WIDTH), PANEL_HEIGHT

    def rc(self) -> dict[str, Any]:
        """matplotlib rc settings: the text sizes, thin lines, TrueType fonts in PDFs."""
        small = max(self.font_size - 1.0, 4.0)
        return {"font.size": self.font_size, "axes.titlesize": self.font_size, "axes.labelsize": self.font_size,
                "xtick.labelsize": small, "ytick.labelsize": small, "legend.fontsize": small,
                "figure.titlesize": self.font_size, "axes.linewidth": 0.6, "grid.linewidth": 0.4,
                "xtick.major.width": 0.6, "ytick.major.width": 0.6, "lines.linewidth": 1.2,
                "lines.markersize": 3.5, "pdf.fonttype": TRUETYPE, "ps.fonttype": TRUETYPE}


def _gray(level: float) -> str:
    """``#rrggbb`` of a gray ``level`` of white (0: black)."""
    v = round(min(max(level, 0.0), 1.0) * 255)
    return f"#{v:02x}{v:02x}{v:02x}"


def parse_size(text: str) -> tuple[float, float]:
    """``"3.5x2.6"`` (inches) -> ``(3.5, 2.6)``; a ValueError saying what is wrong."""
    parts = text.lower().replace("×", "x").split("x")
    try:
        width, height = (float(p) for p in parts) if len(parts) == 2 else (0.0, 0.0)
    except ValueError:
        width = height = 0.0
    if not (0.5 <= width <= 40 and 0.5 <= height <= 40):
        raise ValueError(f"{text!r} is not WIDTHxHEIGHT in inches between 0.5 and 40 (e.g. 3.5x2.6)")
    return width, height


def ramp(color: str, count: int) -> list[str]:
    """``count`` shades of one hue (``#rrggbb``), dark to light, for the settings of one
    learner's sweep in their legend order: the darkest mixes 35% black in, the lightest
    55% white; one setting keeps the colour itself."""
    if count <= 1:
        return [color] * count
    rgb = [int(color[i:i + 2], 16) / 255.0 for i in (1, 3, 5)]
    out = []
    for i in range(count):
        f = -0.35 + 0.9 * i / (count - 1)  # <0: towards black, >0: towards white
        mixed = [c * (1 + f) if f < 0 else c + (1 - c) * f for c in rgb]
        out.append("#" + "".join(f"{round(min(max(c, 0.0), 1.0) * 255):02x}" for c in mixed))
    return out
