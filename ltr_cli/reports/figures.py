"""A figure's frame, shared by every plot of ``ltr plot``: a figure of the exact size asked
for (constrained layout, saved without trimming, so a 3.5x2.6 in figure is 3.5x2.6 in on
the page), the legend inside the axes, below them across the figure or left out, and the
files: ``<stem>.png`` (300 dpi) and ``<stem>.pdf`` (TrueType fonts), written only inside
the output folder through :func:`ltr_cli.outputs.write_file`.
"""

from __future__ import annotations

import math
import textwrap
from functools import partial
from pathlib import Path
from typing import Any

from ltr_cli.errors import ResultsError
from ltr_cli.outputs import output_path, write_file
from ltr_cli.reports.plot_style import FigureOptions

EXTS = ("png", "pdf")
DPI = 300


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def new_figure(plt: Any, options: FigureOptions, panels: int = 1, rows: int = 1) -> tuple[Any, list[Any]]:
    """A figure of ``options``' size (its layout default for ``panels`` side by side) with
    ``rows`` x ``panels`` axes; call inside ``plt.rc_context(options.rc())``."""
    width, height = options.figsize(panels)
    if options.size is None and rows > 1:
        height *= rows
    fig, axes = plt.subplots(rows, panels, figsize=(width, height), layout="constrained", squeeze=False)
    fig.get_layout_engine().set(w_pad=0.02, h_pad=0.02, wspace=0.04, hspace=0.04)
    return fig, list(axes.flat)


def _columns(labels: list[str], width: float, font_size: float) -> int:
    """How many legend entries fit side by side across ``width`` inches."""
    if not labels:
        return 1
    char = 0.55 * max(font_size - 1.0, 4.0) / 72.0  # an average character's width, inches
    entry = max(len(s) for s in labels) * char + 0.45  # the handle and the gaps
    return max(1, min(len(labels), math.floor(width / entry)))


def place_legend(fig: Any, axes: list[Any], options: FigureOptions, handles: list[Any] | None = None,
                 labels: list[str] | None = None) -> Any:
    """One legend for the figure: ``handles``/``labels`` (default: the first axes'),
    ``inside`` the last axes (best corner), ``below`` the axes across the figure, or none."""
    if options.legend == "none":
        return None
    if handles is None or labels is None:
        handles, labels = axes[0].get_legend_handles_labels()
    if not handles:
        return None
    if options.legend == "inside":
        return axes[-1].legend(handles, labels, loc="best", frameon=True, framealpha=0.85, edgecolor="none",
                               handlelength=2.2, borderaxespad=0.3, ncol=1 if len(labels) <= 6 else 2)
    ncol = _columns(labels, fig.get_figwidth(), options.font_size)
    return fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False,
                      handlelength=2.2, columnspacing=1.2, borderaxespad=0.2)


def set_title(ax: Any, text: str, options: FigureOptions) -> None:
    """The axes' title (if ``options.title``), wrapped to the axes' share of the figure's
    width so a long description is never cut off."""
    if not options.title:
        return
    spec = ax.get_subplotspec()
    columns = spec.get_gridspec().ncols if spec is not None else 1
    width = 0.9 * ax.figure.get_figwidth() / columns  # inches, less the y-axis labels
    chars = max(12, int(width / (0.5 * options.font_size / 72.0)))  # DejaVu Sans: about 0.5 em a character
    ax.set_title("\n".join(textwrap.wrap(text, chars)).replace("$", r"\$"))


def check_outputs(out_dir: Path, names: list[str]) -> None:
    """Refuse (one line) before writing anything if any of ``names`` would land outside
    ``out_dir`` (e.g. a symbolic link already there)."""
    for name in names:
        output_path(out_dir, name)


def make_folder(out_dir: Path) -> None:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultsError(f"{out_dir}: cannot create the plot folder ({exc.strerror})") from None


def _savefig(fig: Any, ext: str, path: Path) -> None:
    fig.savefig(path, format=ext, dpi=DPI)


def save(fig: Any, out_dir: Path, stem: str) -> list[Path]:
    """The figure as ``<stem>.png`` and ``<stem>.pdf`` inside ``out_dir``, at its size."""
    return [write_file(out_dir, f"{stem}.{ext}", partial(_savefig, fig, ext)) for ext in EXTS]
