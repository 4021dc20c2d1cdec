"""What ``ltr plot --regret`` draws: each
learner's cumulative regret (``protocol.log_regret`` runs, :mod:`ltr_cli.protocols.regret`)
beside ``c T^(2/3)``, the rate of Theorem 4.1 (top-k paper).

One figure per experiment, ``<experiment>_regret.png`` / ``.pdf``, one panel per learner,
up to three a row (the surrogates' scales differ too much to share an axis): the regret
curve (mean over seeds, their range as a band) and, dashed, ``c t^(2/3)`` with ``c`` chosen so the line meets
the mean curve at the last round. A curve above its line before the end grows more
slowly than ``t^(2/3)`` from there on; one below it, faster.
"""

from __future__ import annotations

import math
import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.errors import ResultsError
from ltr_cli.protocols.round_log import REGRET
from ltr_cli.reports.curves import plain
from ltr_cli.reports.figures import EXTS, check_outputs, make_folder, new_figure, pyplot, save
from ltr_cli.reports.plot_style import FigureOptions, role_style
from ltr_cli.results.folders import Run, group_seeds

EXPONENT = 2.0 / 3.0


def regret_plan(runs: list[Run]) -> dict[str, list[list[Run]]]:
    """Experiment -> its learners' seed groups that have a regret column."""
    by_experiment: dict[str, list[list[Run]]] = defaultdict(list)
    for (experiment, _, _), seeds in sorted(group_seeds([r for r in runs if REGRET in r.rounds.columns]).items()):
        by_experiment[experiment].append(seeds)
    if not by_experiment:
        raise ResultsError("--regret: no run has a regret column (run a config with protocol.log_regret: true; "
                           "learners with a surrogate and a projection radius log it)")
    return dict(by_experiment)


def regret_names(runs: list[Run], tag: str = "") -> list[str]:
    return [f"{e}_regret{tag}.{ext}" for e in regret_plan(runs) for ext in EXTS]


def mean_regret(seeds: list[Run]) -> tuple[np.ndarray, np.ndarray]:
    """``(t, curves[seed, t])`` of one learner's seeds, cut to the shortest."""
    curves = [r.rounds[REGRET].to_numpy(dtype=np.float64) for r in seeds]
    n = min(len(c) for c in curves)
    return np.arange(1, n + 1), np.vstack([c[:n] for c in curves])


def rate_constant(t: np.ndarray, mean: np.ndarray) -> float | None:
    """``c`` with ``c T^(2/3)`` equal to the mean regret at the last round T (None: empty or NaN)."""
    if not t.size or not math.isfinite(mean[-1]):
        return None
    return float(mean[-1] / t[-1] ** EXPONENT)


def plot_regret(runs: list[Run], out_dir: Path, options: FigureOptions | None = None) -> list[Path]:
    """Draw :func:`regret_plan`'s figures (up to two panels a row; ``options``' size is the
    whole figure's); return the written files. Each panel keeps its own small legend (its
    curve and its line): the panels share no curve."""
    options = options or FigureOptions()
    plt = pyplot()
    plan = regret_plan(runs)
    check_outputs(out_dir, regret_names(runs, options.tag))
    make_folder(out_dir)
    written: list[Path] = []
    for experiment, groups in plan.items():
        cols = min(len(groups), 3)
        rows = math.ceil(len(groups) / cols)
        with plt.rc_context(options.rc()):
            fig, axes = new_figure(plt, options, cols, rows)
            try:
                for ax, seeds in zip(axes, sorted(groups, key=lambda g: g[0].label)):
                    _regret_panel(ax, seeds, options)
                for ax in axes[len(groups):]:
                    ax.axis("off")
                if options.title:
                    text = f"{experiment}: cumulative regret vs. c T^(2/3) (top-k paper, Theorem 4.1)"
                    chars = max(20, int(fig.get_figwidth() / (0.5 * options.font_size / 72.0)))
                    fig.suptitle(plain("\n".join(textwrap.wrap(text, chars))))
                written += save(fig, out_dir, f"{experiment}_regret{options.tag}")
            finally:
                plt.close(fig)
    return written


def _regret_panel(ax: Any, seeds: list[Run], options: FigureOptions) -> None:
    t, curves = mean_regret(seeds)
    mean = np.nanmean(curves, axis=0)
    run = seeds[0]
    color = options.colour(role_style(str(run.summary.get("role") or run.label))[0])
    regret = run.manifest.get("regret")
    surrogate = regret.get("surrogate", "surrogate") if isinstance(regret, dict) else "surrogate"
    n = f", {len(seeds)} seeds" if len(seeds) > 1 else ""
    ax.plot(t, mean, color=color, label=plain(f"{run.label}{n}"))
    if len(seeds) > 1:
        ax.fill_between(t, np.nanmin(curves, axis=0), np.nanmax(curves, axis=0), color=color, alpha=0.2, lw=0)
    c = rate_constant(t, mean)
    if c is not None:
        ax.plot(t, c * t ** EXPONENT, color=color, ls="--", lw=0.9, label=f"c T^(2/3), c = {c:.3g}")
    ax.set_xlabel("Iteration")
    ax.set_ylabel(plain(f"Regret ({surrogate})"))
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 4))
    ax.grid(True, alpha=0.3)
    if options.legend != "none":
        ax.legend(loc="upper left", frameon=False, handlelength=1.6)
