"""The curves of one metric drawn on one matplotlib axes: time-averaged metric vs. iteration,
one line per learner and settings (its seeds' mean, their spread as a band), as the papers'
figures draw them. :mod:`ltr_cli.reports.plot` puts them in a figure of their own,
:mod:`ltr_cli.reports.panels` in one panel per results folder.

Legend labels are short (``SLAM-NDCG``, ``ListNet (eta=0.1)``); what a reader must know
besides (seeds, NaN weights, SmoothDCG's direction, a curve drawn on top of an equal one,
every setting) goes to the caption file as :class:`ltr_cli.reports.captions.Curve` details.
The settings of one learner's sweep share its colour as a dark-to-light ramp in their
legend order, with distinct line styles.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.measures.metrics import time_average
from ltr_cli.measures.registry import display_name
from ltr_cli.reports.captions import Curve, short_settings
from ltr_cli.reports.plot_style import (LINESTYLES, FigureOptions, converged_limits, mark_every, ramp, role_style,
                                       same_as)
from ltr_cli.reports.run_labels import describe_settings, differing_settings, with_settings
from ltr_cli.results.folders import Run, group_seeds

HELDOUT = "heldout_"  # columns of held-out evaluations (ltr_cli.protocols.heldout), drawn as they are

#: ``--select-by``'s chosen runs: run folder -> (legend note, caption detail)
Selected = dict[Path, tuple[str, str]]


def plain(text: str) -> str:
    """``text`` shown literally by matplotlib (no mathtext between ``$`` signs)."""
    return text.replace("$", r"\$")


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


def natural(name: str) -> list[Any]:
    """Sort key reading the numbers in a name as numbers (``eta=0.001`` < ``eta=0.01`` <
    ``eta=1``)."""
    key: list[Any] = []
    for part in re.split(r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)", name):
        try:
            key.append((0, float(part), ""))
        except ValueError:
            key.append((1, 0.0, part))
    return key


def _names(groups: list[list[Run]]) -> tuple[list[str], list[dict[str, Any]]]:
    """Each group's short name (its learner label; groups sharing a label add the settings
    that differ between them, keys shortened: ``ListNet (eta=0.1)``) and those settings
    with their full keys."""
    labels = [g[0].label for g in groups]
    names, settings = list(labels), [dict[str, Any]() for _ in groups]
    for label in set(labels):
        idx = [i for i, lab in enumerate(labels) if lab == label]
        if len(idx) > 1:
            for i, differ in zip(idx, differing_settings([groups[i][0].config for i in idx])):
                settings[i] = differ
                names[i] = with_settings(label, short_settings(differ)) if differ else \
                    f"{label} [{groups[i][0].path.name}]"  # same settings: the folders tell them apart
    return names, settings


def config_rounds(run: Run) -> int | None:
    """The x-range a config asks for (``plot.max_rounds``, e.g. the paper figure's)."""
    plot = run.config.get("plot") if isinstance(run.config, dict) else None
    value = plot.get("max_rounds") if isinstance(plot, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _role(run: Run) -> str:
    return str(run.summary.get("role") or run.label)


def _styles(groups: list[list[Run]], options: FigureOptions) -> list[tuple[str, str, str]]:
    """(colour, marker, line style) per group in legend order: a role's colour (in the
    palette) and marker; several settings of one role: a ramp of its colour and distinct
    line styles. In gray, each curve its own shade and line style, in legend order."""
    roles = [_role(g[0]) for g in groups]
    out = []
    for i, role in enumerate(roles):
        same = [j for j, r in enumerate(roles) if r == role]
        colour, marker = role_style(role)
        k = same.index(i)
        if options.palette == "gray":
            out.append((options.series(i, len(roles)), marker, LINESTYLES[i % len(LINESTYLES)]))
        else:
            out.append((ramp(options.colour(colour), len(same))[k], marker, LINESTYLES[k % len(LINESTYLES)]))
    return out


def draw_curves(ax: Any, metric: str, have: list[Run], max_rounds: int | None, band: str,
                selected: Selected | None = None, options: FigureOptions | None = None) -> list[Curve]:
    """Every learner's mean curve of ``metric`` on ``ax`` (seeds as a band; y-limits from the
    converged part; colours in ``options``' palette); returns the legend entries in their
    order, with caption details."""
    groups = list(group_seeds(have).values())
    names, settings = _names(groups)
    order = sorted(range(len(groups)), key=lambda i: natural(names[i]))  # eta=0.001 before 0.01
    groups, names, settings = [groups[i] for i in order], [names[i] for i in order], [settings[i] for i in order]
    curves: list[Curve] = []
    for seeds, name, differ in zip(groups, names, settings):
        details = []
        note = (selected or {}).get(seeds[0].path)
        if note:
            name = f"{seeds[0].label} ({note[0]})"
            details.append(note[1])
        elif differ:
            details.append(describe_settings(differ))
        details += sorted({m for run in seeds for m in run.marks})  # NaN weights, SmoothDCG direction
        if len(seeds) > 1:
            details.append(f"mean of {len(seeds)} seeds" + ("" if band == "none" else
                                                              f", band: {'mean +- sd' if band == 'std' else 'min-max'}"))
        curves.append(Curve(name, details))
    data = [seed_curves(seeds, metric, max_rounds or config_rounds(seeds[0])) for seeds in groups]
    means = [np.nanmean(c, axis=0) for _, c in data]
    for curve, twin in zip(curves, same_as(means, [c.label for c in curves])):
        if twin:
            curve.details.append(f"equal to {twin}, drawn on top of it")
    for curve, seeds in zip(curves, groups):
        folders = sorted(run.path.name for run in seeds)
        curve.details.append(f"run {folders[0]}" if len(folders) == 1 else
                             f"runs {', '.join(folders[:3])}{', ...' if len(folders) > 3 else ''}")
    for i, ((t, seed_values), mean, curve, (colour, marker, style)) in enumerate(
            zip(data, means, curves, _styles(groups, options or FigureOptions()))):
        ax.plot(t, mean, color=colour, ls=style, marker=marker, markevery=mark_every(i, len(groups), len(t)),
                label=plain(curve.label))
        if seed_values.shape[0] > 1 and band != "none":
            if band == "std":
                sd = np.nanstd(seed_values, axis=0)
                lo, hi = mean - sd, mean + sd
            else:
                lo, hi = np.nanmin(seed_values, axis=0), np.nanmax(seed_values, axis=0)
            ax.fill_between(t, lo, hi, color=colour, alpha=0.18, lw=0)
    limits = converged_limits(means)
    if limits is not None:
        ax.set_ylim(*limits)
    ax.set_xlabel("Iteration")
    ax.set_ylabel(axis_label(metric))
    ax.grid(True, alpha=0.3)
    return curves


def axis_label(metric: str) -> str:
    if metric.startswith(HELDOUT):
        return f"Held-out {display_name(metric.removeprefix(HELDOUT))} (current weights)"
    return f"Time averaged {display_name(metric)}"
