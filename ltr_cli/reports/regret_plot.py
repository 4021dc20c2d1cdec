"""What ``ltr plot --regret`` draws: each
learner's cumulative regret (``protocol.log_regret`` runs, :mod:`ltr_cli.protocols.regret`)
beside ``c T^(2/3)``, the rate of Theorem 4.1 (top-k paper).

One figure per experiment, ``<experiment>_regret.png`` / ``.pdf`` and its caption file
(``.caption.txt``: each panel's surrogate, radius, comparator and rate line), one panel per learner,
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
from ltr_cli.core.round_log import REGRET
from ltr_cli.reports.captions import Curve, data_title, description, figure_title, write_caption
from ltr_cli.reports.curves import plain
from ltr_cli.reports.figures import EXTS, check_outputs, make_folder, new_figure, pyplot, save
from ltr_cli.reports.plot_style import FigureOptions, role_style
from ltr_cli.results.folders import Run, group_seeds

EXPONENT = 2.0 / 3.0
RATE = r"$c\,T^{2/3}$"
#: the surrogates' names as the papers write them
SURROGATE_NAMES = {"squared": "squared loss", "kl": "KL", "ranksvm": "RankSVM hinge", "listnet": "ListNet",
                   "smoothdcg": "SmoothDCG", "ordinal": "ordinal regression", "preference": "preference pairs"}


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
    return [f"{e}_regret{tag}.{ext}" for e in regret_plan(runs) for ext in (*EXTS, "caption.txt")]


def mean_regret(seeds: list[Run]) -> tuple[np.ndarray, np.ndarray]:
    """``(t, curves[seed, t])`` of one learner's seeds, cut to the shortest."""
    curves = [r.rounds[REGRET].to_numpy(dtype=np.float64) for r in seeds]
    n = min(len(c) for c in curves)
    return np.arange(1, n + 1), np.vstack([c[:n] for c in curves])


def seed_band(curves: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The mean, least and greatest of the seeds' finite values at each round (NaN where no
    seed has one: a learner whose weights became NaN), without numpy's all-NaN warnings."""
    finite = np.isfinite(curves)
    have = finite.any(axis=0)
    n = finite.sum(axis=0)
    mean = np.where(finite, curves, 0.0).sum(axis=0) / np.maximum(n, 1)
    low = np.where(finite, curves, np.inf).min(axis=0)
    high = np.where(finite, curves, -np.inf).max(axis=0)
    return tuple(np.where(have, v, np.nan) for v in (mean, low, high))  # type: ignore[return-value]


def rate_constant(t: np.ndarray, mean: np.ndarray) -> float | None:
    """``c`` with ``c T^(2/3)`` equal to the mean regret at the last round T (None: empty or NaN)."""
    if not t.size or not math.isfinite(mean[-1]):
        return None
    return float(mean[-1] / t[-1] ** EXPONENT)


def tex_number(x: float) -> str:
    """``x`` to three figures in mathtext: ``2.33 \\times 10^{3}`` outside 1e-3 .. 1e3."""
    if x == 0 or 1e-3 <= abs(x) < 999.5:
        return f"{x:.3g}"
    mantissa, exponent = f"{x:.2e}".split("e")
    return rf"{float(mantissa):.3g} \times 10^{{{int(exponent)}}}"


def surrogate_name(run: Run) -> str:
    """The surrogate of a run's regret as the papers write it."""
    regret = run.manifest.get("regret")
    key = regret.get("surrogate") if isinstance(regret, dict) else None
    return SURROGATE_NAMES.get(str(key), "surrogate")


def plot_regret(runs: list[Run], out_dir: Path, options: FigureOptions | None = None) -> list[Path]:
    """Draw :func:`regret_plan`'s figures (up to three panels a row; ``options``' size is the
    whole figure's) with their caption files; return the written files. Each panel keeps its
    own small legend (its curve and its line): the panels share no curve."""
    options = options or FigureOptions()
    plt = pyplot()
    plan = regret_plan(runs)
    check_outputs(out_dir, regret_names(runs, options.tag))
    make_folder(out_dir)
    written: list[Path] = []
    for experiment, groups in plan.items():
        cols = min(len(groups), 3)
        rows = math.ceil(len(groups) / cols)
        every = [r for g in groups for r in g]
        with plt.rc_context(options.rc()):
            fig, axes = new_figure(plt, options, cols, rows)
            try:
                curves = [_regret_panel(ax, seeds, options) for ax, seeds in
                          zip(axes, sorted(groups, key=lambda g: g[0].label))]
                for ax in axes[len(groups):]:
                    ax.axis("off")
                if options.title:
                    data = figure_title(every, experiment)
                    text = f"Cumulative regret vs. {RATE} (top-k paper, Theorem 4.1)"
                    text += f": {plain(data)}" if data != experiment else ""
                    chars = max(20, int(fig.get_figwidth() / (0.5 * options.font_size / 72.0)))
                    fig.suptitle("\n".join(textwrap.wrap(text, chars)))
                name = f"{experiment}_regret{options.tag}"
                written += save(fig, out_dir, name)
                written.append(write_caption(out_dir, name, _heading(every, experiment), curves))
            finally:
                plt.close(fig)
    return written


def _heading(runs: list[Run], experiment: str) -> list[str]:
    data, partial = data_title(runs, of_total=True)
    what = data if data else (description(runs) or experiment)
    return [f"Figure: {experiment}, each learner's cumulative regret R_t = sum_(s<=t) phi_s(w_s) - "
            "sum_(s<=t) phi_s(w*) against the best fixed weights w* in hindsight (over the ball ||w|| <= U), "
            f"beside c T^(2/3) (top-k paper, Theorem 4.1). Data: {what}"
            f"{' (a partial read)' if partial and 'sample' not in what else ''}.",
            "Panels:"]


def _regret_panel(ax: Any, seeds: list[Run], options: FigureOptions) -> Curve:
    t, curves = mean_regret(seeds)
    mean, low, high = seed_band(curves)
    run = seeds[0]
    color = options.colour(role_style(str(run.summary.get("role") or run.label))[0])
    surrogate = surrogate_name(run)
    n = f", {len(seeds)} seeds" if len(seeds) > 1 else ""
    ax.plot(t, mean, color=color, label=plain(f"{run.label}{n}"))
    if len(seeds) > 1:
        ax.fill_between(t, low, high, color=color, alpha=0.2, lw=0)
    c = rate_constant(t, mean)
    if c is not None:
        ax.plot(t, c * t ** EXPONENT, color=color, ls="--", lw=0.9, label=f"{RATE}, $c = {tex_number(c)}$")
    finite = np.isfinite(mean)
    if not finite.all():  # the learner's weights became NaN or infinite: say where its curve ends
        ax.set_xlim(0, t[-1])
        said = f"not finite after round {int(np.argmin(finite))}" if finite.any() else "no finite regret"
        ax.text(0.97, 0.05, said, transform=ax.transAxes, ha="right", va="bottom")
    ax.set_xlabel(r"Iteration $t$")
    ax.set_ylabel(f"Regret $R_t$ ({surrogate})")
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 4), useMathText=True)
    ax.grid(True, alpha=0.3)
    if options.legend != "none":
        ax.legend(loc="upper left", frameon=False, handlelength=1.6)
    return Curve(plain(run.label), _details(seeds, surrogate, c, finite))


def _details(seeds: list[Run], surrogate: str, c: float | None, finite: np.ndarray) -> list[str]:
    record = seeds[0].manifest.get("regret")
    record = record if isinstance(record, dict) else {}
    out = [f"surrogate: {surrogate}", f"radius U = {record.get('radius')}", f"seeds: {len(seeds)}"]
    values = [r.summary.get("regret") for r in seeds]
    finals = [float(v["regret"]) for v in values if isinstance(v, dict) and isinstance(v.get("regret"), (int, float))]
    if finals:
        out.append("final regret: " + ", ".join(f"{v:.4g}" if math.isfinite(v) else "not finite" for v in finals))
    if record.get("value") is not None:
        gap = record.get("gap")
        out.append(f"comparator's cumulative surrogate {record['value']:.6g}"
                   + (f" (certified within {gap:.2g})" if isinstance(gap, (int, float)) else " (not convex: no bound)"))
    out.append(f"dashed: c T^(2/3), c = {c:.3g}, through the mean at the last round" if c is not None
               else "no rate line: the last round's regret is not finite")
    if not finite.all():
        out.append(f"not finite after round {int(np.argmin(finite))} (the learner's weights became NaN or infinite)"
                   if finite.any() else "no finite regret (the learner's weights became NaN or infinite)")
    return out
