"""``ltr plot``: time-averaged metric vs. iteration, one line per run (paper figure style).

One figure per experiment and metric (``--layout panels``: :mod:`ltr_cli.reports.panels`),
written as PNG and PDF (TrueType fonts) at the size asked for, with a caption file
(:mod:`ltr_cli.reports.captions`) naming every curve's details; the curves:
:mod:`ltr_cli.reports.curves`; the frame, legend and files: :mod:`ltr_cli.reports.figures`.
The x-range is ``--max-rounds``, else the config's ``plot.max_rounds`` (the paper
figure's range), else every round.

File names are made from the experiment name and the metric, both validated when the runs
were read (:func:`ltr_cli.results.folders.read_run`), and every file is written through
:func:`ltr_cli.outputs.write_file`, which refuses a path that resolves outside the output
folder. Labels are drawn as plain text (a ``$`` never starts matplotlib's math mode).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.errors import ResultsError
from ltr_cli.core.round_log import REGRET, SURROGATE
from ltr_cli.reports.captions import Curve, data_title, description, figure_title, write_caption
from ltr_cli.reports.curves import Selected, axis_label, draw_curves, natural, plain
from ltr_cli.reports.figures import (EXTS, check_outputs, make_folder, new_figure, place_legend, pyplot, save,
                                     set_title)
from ltr_cli.reports.plot_style import FigureOptions, role_style
from ltr_cli.reports.regret_plot import regret_names
from ltr_cli.results.folders import Run

_NON_METRIC = {"t", "pass", "qid", "m", "mistake", "updated", "no_relevant", "ranking_loss", SURROGATE, REGRET}
_EXTS = EXTS
_plain = plain
_save = save


def metric_columns(run: Run) -> list[str]:
    return [c for c in run.rounds.columns if c not in _NON_METRIC]


def _natural(name: str) -> list[Any]:
    return natural(name)


def stem(experiment: str, metric: str, options: FigureOptions | None = None) -> str:
    return f"{experiment}_{metric.replace('@', '_at_')}{options.tag if options else ''}"


def plot_runs(
    runs: list[Run],
    metrics: list[str] | None,
    out_dir: Path,
    max_rounds: int | None = None,
    band: str = "minmax",
    options: FigureOptions | None = None,
    selected: Selected | None = None,
) -> list[Path]:
    """Draw one figure per (experiment, metric) with its caption file; return the written
    files.

    A learner run with several seeds is drawn as the mean curve with a band: ``minmax``
    (the range over seeds), ``std`` (mean +- one standard deviation) or ``none``.
    """
    options = options or FigureOptions()
    plt = pyplot()
    plan = _curve_plan(runs, metrics)
    check_outputs(out_dir, [n for e, m, _ in plan for n in _names(stem(e, m, options))])
    make_folder(out_dir)
    written: list[Path] = []
    for experiment, metric, have in plan:
        with plt.rc_context(options.rc()):
            fig, curves = _draw(plt, experiment, metric, have, max_rounds, band, options, selected)
            try:
                name = stem(experiment, metric, options)
                written += save(fig, out_dir, name)
                written.append(write_caption(out_dir, name, _heading(have, experiment, metric), curves))
            finally:
                plt.close(fig)
    return written


def _names(name: str) -> list[str]:
    return [f"{name}.{ext}" for ext in EXTS] + [f"{name}.caption.txt"]


def _heading(runs: list[Run], experiment: str, metric: str) -> list[str]:
    data, partial_read = data_title(runs, of_total=True)
    what = f"{data}{' (a partial read)' if partial_read and 'sample' not in data else ''}" if data else \
        (description(runs) or experiment)
    return [f"Figure: {experiment}, {axis_label(metric)} vs. iteration. Data: {what}.", "Curves:"]


def figure_pngs(runs: list[Run], max_rounds: int | None = None, band: str = "minmax",
                dpi: int = 110) -> list[tuple[str, str, bytes]]:
    """The figures of :func:`plot_runs` as PNG bytes, in memory (for ``ltr report --html``):
    ``(experiment, metric, png)`` per figure; [] when no run has a curve. The legend goes
    below the axes, the figure a little wider than a column."""
    import io

    plt = pyplot()
    if not any("t" in r.rounds.columns for r in runs):
        return []
    options = FigureOptions(size=(6.0, 3.6), font_size=9.0)
    out = []
    for experiment, metric, have in _curve_plan(runs, None):
        with plt.rc_context(options.rc()):
            fig, _ = _draw(plt, experiment, metric, have, max_rounds, band, options)
            try:
                buf = io.BytesIO()
                fig.savefig(buf, format="png", dpi=dpi)
            finally:
                plt.close(fig)
        out.append((experiment, metric, buf.getvalue()))
    return out


def _draw(plt: Any, experiment: str, metric: str, have: list[Run], max_rounds: int | None, band: str,
          options: FigureOptions, selected: Selected | None = None) -> tuple[Any, list[Curve]]:
    """One figure (returned open) and its legend entries."""
    fig, (ax,) = new_figure(plt, options)
    curves = draw_curves(ax, metric, have, max_rounds, band, selected, options)
    set_title(ax, figure_title(have, experiment), options)
    place_legend(fig, [ax], options)
    return fig, curves


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


def output_names(runs: list[Run], metrics: list[str] | None, theory: bool, regret: bool = False,
                 options: FigureOptions | None = None) -> list[str]:
    """The file names ``ltr plot`` will write (checked before anything is drawn)."""
    tag = options.tag if options else ""
    names = [n for e, m, _ in _curve_plan(runs, metrics) for n in _names(stem(e, m, options))]
    if theory:
        names += [f"{e}_theory{tag}.{ext}" for e in _theory_plan(runs) for ext in EXTS]
    if regret:
        names += regret_names(runs, tag)
    return names


def plot_theory(runs: list[Run], out_dir: Path, options: FigureOptions | None = None) -> list[Path]:
    """Cumulative ranking loss of the mistake-driven runs, with each run's bound
    (Corollary 7 / Theorem 8 / Corollary 11) as a dashed line; log scale."""
    options = options or FigureOptions()
    plt = pyplot()
    by_experiment = _theory_plan(runs)
    check_outputs(out_dir, [f"{e}_theory{options.tag}.{ext}" for e in by_experiment for ext in EXTS])
    make_folder(out_dir)
    written: list[Path] = []
    for experiment, group in by_experiment.items():
        with plt.rc_context(options.rc()):
            fig, (ax,) = new_figure(plt, options)
            try:
                for run in sorted(group, key=lambda r: r.label):
                    color = options.colour(role_style(str(run.summary.get("role") or run.label))[0])
                    loss = np.nan_to_num(run.rounds["ranking_loss"].to_numpy(dtype=np.float64))
                    ax.plot(run.rounds["t"], np.cumsum(loss), color=color, label=plain(f"{run.label}: loss"))
                    bound = run.summary["theory"]["bound"]
                    note = "" if bound.get("applies") else " (assumptions not met)"
                    ax.axhline(bound["bound"], color=color, ls="--", lw=0.9,
                               label=plain(f"{run.label}: {bound['name']} bound {bound['bound']:.3g}{note}"))
                ax.set_yscale("log")
                ax.set_xlabel("Iteration")
                ax.set_ylabel("Cumulative ranking loss")
                set_title(ax, f"{experiment}: loss vs. bound", options)
                ax.grid(True, alpha=0.3, which="both")
                place_legend(fig, [ax], options)
                written += save(fig, out_dir, f"{experiment}_theory{options.tag}")
            finally:
                plt.close(fig)
    return written
