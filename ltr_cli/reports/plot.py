"""``ltr plot``: time-averaged metric vs. iteration, one line per run (paper figure style).

Legend entries read ``<learner label>:<METRIC>`` (e.g. ``SLAM:NDCG@10``), one figure per
experiment and metric, written as PNG and PDF (TrueType fonts). Colours, markers, limits
and titles: :mod:`ltr_cli.reports.plot_style`. The x-range is ``--max-rounds``, else the config's
``plot.max_rounds`` (the paper figure's range), else every round.

File names are made from the experiment name and the metric, both validated when the runs
were read (:func:`ltr_cli.results.folders.read_run`), and every file is written through
:func:`ltr_cli.outputs.write_file`, which refuses a path that resolves outside the output
folder. Labels are drawn as plain text (a ``$`` never starts matplotlib's math mode).
"""

from __future__ import annotations

from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.errors import ResultsError
from ltr_cli.measures.metrics import time_average
from ltr_cli.outputs import output_path, write_file
from ltr_cli.protocols.round_log import REGRET, SURROGATE
from ltr_cli.reports.regret_plot import EXPONENT, mean_regret, rate_constant, regret_names, regret_plan
from ltr_cli.reports.plot_style import LINESTYLES, TRUETYPE, converged_limits, mark_every, role_style, same_as, title
from ltr_cli.results.folders import Run, group_seeds
from ltr_cli.reports.run_labels import differing_settings, with_settings

HELDOUT = "heldout_"  # columns of held-out evaluations (ltr_cli.protocols.heldout), drawn as they are
_NON_METRIC = {"t", "pass", "qid", "m", "mistake", "updated", "no_relevant", "ranking_loss", SURROGATE, REGRET}


def _plain(text: str) -> str:
    """``text`` shown literally by matplotlib (no mathtext between ``$`` signs)."""
    return text.replace("$", r"\$")


def _savefig(fig: Any, ext: str, path: Path) -> None:
    fig.savefig(path, format=ext, dpi=150, bbox_inches="tight")


def _save(fig: Any, out_dir: Path, stem: str) -> list[Path]:
    """The figure as ``<stem>.png`` and ``<stem>.pdf`` inside ``out_dir``."""
    written = []
    for ext in _EXTS:  # not with_suffix: names may contain '.'
        written.append(write_file(out_dir, f"{stem}.{ext}", partial(_savefig, fig, ext)))
    return written


def metric_columns(run: Run) -> list[str]:
    return [c for c in run.rounds.columns if c not in _NON_METRIC]


def _group_by_learner(runs: list[Run]) -> dict[str, list[Run]]:
    """Runs of one learner and settings (its seeds) together."""
    return {"/".join(key): members for key, members in group_seeds(runs).items()}


def seed_curves(runs: list[Run], metric: str, max_rounds: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Time-averaged curves of one learner's seeds, cut to the shortest: (t, curves[seed, t]).
    A held-out column (``heldout_<metric>``) is not averaged: its values at the rounds where
    the weights were evaluated."""
    if metric.startswith(HELDOUT):
        raw = [r.rounds[metric].to_numpy(dtype=np.float64) for r in runs]
        n = min(len(c) for c in raw)
        if max_rounds:
            n = min(n, max_rounds)
        kept = ~np.isnan(raw[0][:n])
        return np.arange(1, n + 1)[kept], np.vstack([c[:n][kept] for c in raw])
    curves = [time_average(r.rounds[metric].to_numpy(dtype=np.float64)) for r in runs]
    n = min(len(c) for c in curves)
    if max_rounds:
        n = min(n, max_rounds)
    return np.arange(1, n + 1), np.vstack([c[:n] for c in curves])


def plot_runs(
    runs: list[Run],
    metrics: list[str] | None,
    out_dir: Path,
    max_rounds: int | None = None,
    band: str = "minmax",
) -> list[Path]:
    """Draw one figure per (experiment, metric); return the written files.

    A learner run with several seeds is drawn as the mean curve with a band: ``minmax``
    (the range over seeds), ``std`` (mean +- one standard deviation) or ``none``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plan = _curve_plan(runs, metrics)
    check_outputs(out_dir, [f"{_stem(e, m)}.{ext}" for e, m, _ in plan for ext in _EXTS])
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultsError(f"{out_dir}: cannot create the plot folder ({exc.strerror})") from None
    written: list[Path] = []
    for experiment, metric, have in plan:
        with matplotlib.rc_context({"pdf.fonttype": TRUETYPE, "ps.fonttype": TRUETYPE}):
            fig = _draw(plt, experiment, metric, have, max_rounds, band)
            try:
                written += _save(fig, out_dir, _stem(experiment, metric))
            finally:
                plt.close(fig)
    return written


def figure_pngs(runs: list[Run], max_rounds: int | None = None, band: str = "minmax",
                dpi: int = 110) -> list[tuple[str, str, bytes]]:
    """The figures of :func:`plot_runs` as PNG bytes, in memory (for ``ltr report --html``):
    ``(experiment, metric, png)`` per figure; [] when no run has a curve."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not any("t" in r.rounds.columns for r in runs):
        return []
    out = []
    for experiment, metric, have in _curve_plan(runs, None):
        fig = _draw(plt, experiment, metric, have, max_rounds, band)
        try:
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        finally:
            plt.close(fig)
        out.append((experiment, metric, buf.getvalue()))
    return out


def _draw(plt: Any, experiment: str, metric: str, have: list[Run], max_rounds: int | None, band: str) -> Any:
    """One figure (returned open): every learner's mean curve in its role's colour and
    marker (seeds as a band), the legend outside the axes, y-limits from the converged part."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    learners = sorted(_group_by_learner(have).values(), key=lambda seeds: seeds[0].label)
    names_by_group = _distinct_names(learners)
    order = sorted(range(len(learners)), key=lambda i: _natural(names_by_group[i]))  # eta=0.001 before 0.01
    learners, names_by_group = [learners[i] for i in order], [names_by_group[i] for i in order]
    means, names = [], []
    for seeds, label in zip(learners, names_by_group):
        t, curves = seed_curves(seeds, metric, max_rounds or _config_rounds(seeds[0]))
        means.append((t, curves))
        marks = sorted({m for run in seeds for m in run.marks})
        if marks:  # NaN weights, SmoothDCG direction: visible in the legend
            label += f" ({'; '.join(marks)})"
        names.append(label)
    mean_curves = [np.nanmean(curves, axis=0) for _, curves in means]
    twins = same_as(mean_curves, names)
    seen: dict[str, int] = {}
    for i, (seeds, (t, curves), mean, label, twin) in enumerate(zip(learners, means, mean_curves, names, twins)):
        role = str(seeds[0].summary.get("role") or seeds[0].label)
        color, marker = role_style(role)
        style = LINESTYLES[seen.get(role, 0) % len(LINESTYLES)]
        seen[role] = seen.get(role, 0) + 1
        n = f" ({len(seeds)} seeds)" if len(seeds) > 1 else ""
        note = f" (= {twin}, drawn on top)" if twin else ""
        ax.plot(t, mean, color=color, ls=style, lw=1.6, marker=marker, ms=5,
                markevery=mark_every(i, len(learners), len(t)),
                label=_plain(f"{label}:{metric.upper()}{n}{note}"))
        if len(seeds) > 1 and band != "none":
            if band == "std":
                sd = np.nanstd(curves, axis=0)
                lo, hi = mean - sd, mean + sd
            else:
                lo, hi = np.nanmin(curves, axis=0), np.nanmax(curves, axis=0)
            ax.fill_between(t, lo, hi, color=color, alpha=0.2, lw=0)
    limits = converged_limits(mean_curves)
    if limits is not None:
        ax.set_ylim(*limits)
    ax.set_xlabel("Iteration")
    ax.set_ylabel(f"Held-out {metric.removeprefix(HELDOUT).upper()} (current weights)" if metric.startswith(HELDOUT)
                  else f"Time averaged {metric.upper()}")
    ax.set_title(_plain(title(have, experiment)), fontsize=10)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()  # before the legend: the axes keep their size, the saved canvas grows
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return fig


def _natural(name: str) -> list[Any]:
    """Sort key reading the numbers in a name as numbers (``eta=0.001`` < ``eta=0.01`` <
    ``eta=1``)."""
    import re

    key: list[Any] = []
    for part in re.split(r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)", name):
        try:
            key.append((0, float(part), ""))
        except ValueError:
            key.append((1, 0.0, part))
    return key


def _distinct_names(groups: list[list[Run]]) -> list[str]:
    """Each group's learner label; groups sharing a label also name the settings that
    differ between them (``ListNet (step.eta=0.1)``)."""
    labels = [g[0].label for g in groups]
    names = list(labels)
    for label in set(labels):
        idx = [i for i, lab in enumerate(labels) if lab == label]
        if len(idx) > 1:
            for i, settings in zip(idx, differing_settings([groups[i][0].config for i in idx])):
                names[i] = with_settings(label, settings) if settings else \
                    f"{label} [{groups[i][0].path.name}]"  # same settings: the folders tell them apart
    return names


def _config_rounds(run: Run) -> int | None:
    """The x-range a config asks for (``plot.max_rounds``, e.g. the paper figure's)."""
    plot = run.config.get("plot") if isinstance(run.config, dict) else None
    value = plot.get("max_rounds") if isinstance(plot, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


_EXTS = ("png", "pdf")


def _stem(experiment: str, metric: str) -> str:
    return f"{experiment}_{metric.replace('@', '_at_')}"


def _curve_plan(runs: list[Run], metrics: list[str] | None) -> list[tuple[str, str, list[Run]]]:
    """The figures ``plot_runs`` draws: (experiment, metric, runs with that metric)."""
    by_experiment: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        if "t" in run.rounds.columns:  # batch (per-fold) runs have no curve
            by_experiment[run.experiment].append(run)
    plan = []
    for experiment, group in sorted(by_experiment.items()):
        available = metric_columns(group[0])
        for metric in metrics or available:
            have = [r for r in group if metric in r.rounds.columns]
            if have:
                plan.append((experiment, metric, have))
            elif metrics:
                raise ResultsError(f"metric {metric!r} is not in the runs of {experiment}; they have: "
                                   f"{', '.join(available)}")
    if not plan:
        raise ResultsError("nothing to plot: no runs with metric columns")
    return plan


def _theory_plan(runs: list[Run]) -> dict[str, list[Run]]:
    by_experiment: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        if (run.summary.get("theory") or {}).get("bound") and "ranking_loss" in run.rounds:
            by_experiment[run.experiment].append(run)
    if not by_experiment:
        raise ResultsError("--theory: no run has a bound (only separable streams with "
                           "slam-perceptron or alg3 learners do)")
    return dict(sorted(by_experiment.items()))


def output_names(runs: list[Run], metrics: list[str] | None, theory: bool, regret: bool = False) -> list[str]:
    """The file names ``ltr plot`` will write (checked before anything is drawn)."""
    names = [f"{_stem(e, m)}.{ext}" for e, m, _ in _curve_plan(runs, metrics) for ext in _EXTS]
    if theory:
        names += [f"{e}_theory.{ext}" for e in _theory_plan(runs) for ext in _EXTS]
    if regret:
        names += regret_names(runs)
    return names


def check_outputs(out_dir: Path, names: list[str]) -> None:
    """Refuse (one line) before writing anything if any of ``names`` would land outside
    ``out_dir`` (e.g. a symbolic link already there)."""
    for name in names:
        output_path(out_dir, name)


def plot_theory(runs: list[Run], out_dir: Path) -> list[Path]:
    """Cumulative ranking loss of the mistake-driven runs, with each run's bound
    (Corollary 7 / Theorem 8 / Corollary 11) as a dashed line; log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_experiment = _theory_plan(runs)
    check_outputs(out_dir, [f"{e}_theory.{ext}" for e in by_experiment for ext in _EXTS])
    written: list[Path] = []
    for experiment, group in by_experiment.items():
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for run in sorted(group, key=lambda r: r.label):
            color = role_style(str(run.summary.get("role") or run.label))[0]
            loss = np.nan_to_num(run.rounds["ranking_loss"].to_numpy(dtype=np.float64))
            ax.plot(run.rounds["t"], np.cumsum(loss), color=color, lw=1.6,
                    label=_plain(f"{run.label}: cumulative ranking loss"))
            bound = run.summary["theory"]["bound"]
            note = "" if bound.get("applies") else " (assumptions not met)"
            ax.axhline(bound["bound"], color=color, ls="--", lw=1.0,
                       label=_plain(f"{run.label}: {bound['name']} bound {bound['bound']:.3g}{note}"))
        ax.set_yscale("log")
        ax.set_xlabel("Iteration")
        ax.set_ylabel("Cumulative ranking loss")
        ax.set_title(_plain(f"{experiment}: loss vs. bound"))
        ax.grid(True, alpha=0.3, which="both")
        ax.legend(loc="center right", fontsize=7)
        fig.tight_layout()
        try:
            written += _save(fig, out_dir, f"{experiment}_theory")
        finally:
            plt.close(fig)
    return written


def plot_regret(runs: list[Run], out_dir: Path) -> list[Path]:
    """Each learner's cumulative regret beside ``c T^(2/3)`` (:mod:`ltr_cli.reports.regret_plot`),
    one panel per learner, one figure per experiment."""
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plan = regret_plan(runs)
    check_outputs(out_dir, regret_names(runs))
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultsError(f"{out_dir}: cannot create the plot folder ({exc.strerror})") from None
    written: list[Path] = []
    for experiment, groups in plan.items():
        cols = min(len(groups), 2)
        rows = math.ceil(len(groups) / cols)
        with matplotlib.rc_context({"pdf.fonttype": TRUETYPE, "ps.fonttype": TRUETYPE}):
            fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.4 * rows), squeeze=False)
            try:
                for ax, seeds in zip(axes.flat, sorted(groups, key=lambda g: g[0].label)):
                    _regret_panel(ax, seeds)
                for ax in list(axes.flat)[len(groups):]:
                    ax.axis("off")
                fig.suptitle(_plain(f"{experiment}: cumulative regret vs. c T^(2/3) (top-k paper, Theorem 4.1)"),
                             fontsize=10)
                fig.tight_layout()
                written += _save(fig, out_dir, f"{experiment}_regret")
            finally:
                plt.close(fig)
    return written


def _regret_panel(ax: Any, seeds: list[Run]) -> None:
    t, curves = mean_regret(seeds)
    mean = np.nanmean(curves, axis=0)
    run = seeds[0]
    color = role_style(str(run.summary.get("role") or run.label))[0]
    regret = run.manifest.get("regret")
    surrogate = regret.get("surrogate", "surrogate") if isinstance(regret, dict) else "surrogate"
    n = f" ({len(seeds)} seeds)" if len(seeds) > 1 else ""
    ax.plot(t, mean, color=color, lw=1.6, label=_plain(f"{run.label}: regret{n}"))
    if len(seeds) > 1:
        ax.fill_between(t, np.nanmin(curves, axis=0), np.nanmax(curves, axis=0), color=color, alpha=0.2, lw=0)
    c = rate_constant(t, mean)
    if c is not None:
        ax.plot(t, c * t ** EXPONENT, color=color, ls="--", lw=1.0, label=f"c T^(2/3), c = {c:.3g}")
    ax.set_xlabel("Iteration")
    ax.set_ylabel(_plain(f"Cumulative regret ({surrogate})"))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=7)
