"""``ltr plot`` on batch (k-fold) runs: grouped bars of the test metrics per method, as the
direct-optimisation paper's Figures 4-6 draw them (MAP and NDCG@1, 3, 5, 10 on the x-axis,
one bar per method, the mean over folds), with the spread over folds as error bars (sample
standard deviation). A run whose selected model was degenerate in some fold
(``degenerate_folds``) gets no bar: its numbers are not the method's; the legend says so.
One figure per experiment, ``<experiment>_bars.png`` and ``.pdf``, with a caption file
(``.caption.txt``) giving each method's folds and run folder.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from ltr_cli.errors import ResultsError
from ltr_cli.measures.registry import canonical_name, display_name
from ltr_cli.reports.captions import Curve, data_title, figure_title, write_caption
from ltr_cli.reports.curves import plain
from ltr_cli.reports.figures import EXTS, check_outputs, make_folder, new_figure, place_legend, pyplot, save, set_title
from ltr_cli.reports.plot_style import FigureOptions
from ltr_cli.results.folders import Run

#: the metrics of the paper's bar charts, in its order (when the runs have them)
PAPER_BARS = ("ap", "ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10")


def is_batch(run: Run) -> bool:
    return run.summary.get("protocol") == "batch-cv"


def _folds(folds: object) -> str:
    """``fold 3`` or ``folds 1, 4`` (a list of fold numbers as the summary records it)."""
    items = folds if isinstance(folds, list) else [folds]
    return ("fold " if len(items) == 1 else "folds ") + ", ".join(str(f) for f in items)


def _axis_name(metric: str) -> str:
    return display_name(metric)


def bar_plan(runs: list[Run], metrics: list[str] | None) -> dict[str, tuple[list[str], list[Run]]]:
    """Per experiment of the batch runs: the metrics on the x-axis (``metrics``, else the
    paper's five where the runs have them, else every test metric) and its runs."""
    by_experiment: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        if is_batch(run):
            by_experiment[run.experiment].append(run)
    plan = {}
    for experiment, group in sorted(by_experiment.items()):
        have: list[str] = []
        for run in group:
            have += [k for k in run.summary.get("metrics", {}) if k not in have]
        if metrics:
            wanted = [canonical_name(m) for m in metrics]
            missing = [m for m in wanted if m not in have]
            if missing:
                raise ResultsError(f"metric {missing[0]!r} is not a test metric of the batch runs of {experiment}; "
                                   f"they have: {', '.join(have)}")
            chosen = wanted
        else:
            chosen = [m for m in PAPER_BARS if m in have] or have
        plan[experiment] = (chosen, sorted(group, key=lambda r: (r.label, r.path.name)))
    return plan


def bar_names(runs: list[Run], metrics: list[str] | None, tag: str = "") -> list[str]:
    """The files :func:`plot_bars` writes (checked before anything is drawn)."""
    return [f"{e}_bars{tag}.{ext}" for e in bar_plan(runs, metrics) for ext in (*EXTS, "caption.txt")]


def _fold_values(run: Run, metric: str) -> np.ndarray:
    if metric not in run.rounds.columns:
        return np.empty(0)
    values = run.rounds[metric].to_numpy(dtype=np.float64)
    return values[np.isfinite(values)]


def metric_bounds(metric: str) -> tuple[float | None, float | None]:
    """The values a test metric can take: [0, 1] for a normalised metric (1 is a perfect
    ranking's value: NDCG, MAP, P@k, ERR, ...), [0, none] for another built-in one (ERU),
    no bounds for a metric a plugin adds."""
    from ltr_cli.measures.registry import KINDS, parse_metric, SOURCES

    try:
        kind = parse_metric(metric).kind
    except ValueError:
        return None, None
    info = KINDS.get(kind)
    if info is None:
        return None, None
    if info.normalised:
        return 0.0, 1.0
    return (0.0, None) if SOURCES.get(kind) == "built-in" else (None, None)


def clipped_errors(heights: list[float], spread: list[float],
                   bounds: list[tuple[float | None, float | None]]) -> np.ndarray:
    """Error bars of +-``spread`` around ``heights`` clipped to each metric's ``bounds``:
    ``(2, n)`` lengths below and above (a bar at 0.98 with a spread of 0.05 reaches 1.0,
    not 1.03)."""
    below, above = [], []
    for h, e, (lo, hi) in zip(heights, spread, bounds):
        if not np.isfinite(h):
            below.append(0.0)
            above.append(0.0)
            continue
        below.append(max(0.0, min(e, h - lo)) if lo is not None else e)
        above.append(max(0.0, min(e, hi - h)) if hi is not None else e)
    return np.array([below, above], dtype=np.float64)


def bar_limits(ends: list[float], bounds: list[tuple[float | None, float | None]],
               pad: float = 0.1) -> tuple[float, float] | None:
    """The y-range from the data: the bars' lowest and highest error-bar ends padded by
    ``pad`` of their range (at least 0.01), kept within the metrics' bounds; None without
    a finite value. Bars whose values lie far from 0 get a y-axis that does not start at 0,
    so the differences between methods are visible."""
    values = np.array([v for v in ends if np.isfinite(v)], dtype=np.float64)
    if values.size == 0:
        return None
    lo, hi = float(values.min()), float(values.max())
    margin = max(pad * (hi - lo), 0.01)
    lows = [b[0] for b in bounds if b[0] is not None]
    highs = [b[1] for b in bounds if b[1] is not None]
    floor = min(lows) if len(lows) == len(bounds) and lows else None
    ceiling = max(highs) if len(highs) == len(bounds) and highs else None
    bottom, top = lo - margin, hi + margin
    if floor is not None:
        bottom = max(bottom, floor)
    if ceiling is not None:
        top = min(top, ceiling)
    return bottom, top


def plot_bars(runs: list[Run], metrics: list[str] | None, out_dir: Path,
              options: FigureOptions | None = None) -> list[Path]:
    """Draw :func:`bar_plan`'s figures; return the written files."""
    options = options or FigureOptions()
    plt = pyplot()
    plan = bar_plan(runs, metrics)
    if plan:
        check_outputs(out_dir, bar_names(runs, metrics, options.tag))
        make_folder(out_dir)
    written: list[Path] = []
    for experiment, (chosen, group) in plan.items():
        with plt.rc_context(options.rc()):
            fig, (ax,) = new_figure(plt, options)
            x = np.arange(len(chosen))
            width = 0.8 / max(len(group), 1)
            curves = []
            ends: list[float] = []  # the bars' error-bar ends, for the y-range
            for i, run in enumerate(group):
                color = options.series(i, len(group))  # one colour per method in a figure
                offset = (i - (len(group) - 1) / 2) * width
                folds = run.summary.get("folds")
                where = f"run {run.path.name}"
                if run.summary.get("degenerate_folds"):
                    ax.bar([], [], width, color="none", edgecolor=color, hatch="//",
                           label=plain(f"{run.label} (degenerate)"))
                    curves.append(Curve(f"{run.label} (degenerate)", [
                        f"no bars: the selected model was degenerate in {_folds(run.summary['degenerate_folds'])}", where]))
                    continue
                curves.append(Curve(run.label, [f"mean over {len(folds) if isinstance(folds, list) else '?'} "
                                                "test folds, error bars the sample standard deviation over folds",
                                                where]))
                means = [run.summary.get("metrics", {}).get(m) for m in chosen]
                heights = [np.nan if v is None else float(v) for v in means]
                spread = [float(np.std(v, ddof=1)) if (v := _fold_values(run, m)).size > 1 else 0.0 for m in chosen]
                yerr = clipped_errors(heights, spread, [metric_bounds(m) for m in chosen])
                ends += [h + e for h, e in zip(heights, yerr[1])] + [h - e for h, e in zip(heights, yerr[0])]
                ax.bar(x + offset, heights, width, yerr=yerr, capsize=1.5, color=color,
                       label=plain(run.label), error_kw={"lw": 0.6})
            limits = bar_limits(ends, [metric_bounds(m) for m in chosen])
            if limits is not None:
                ax.set_ylim(*limits)
            ax.set_xticks(x, [_axis_name(m) for m in chosen])
            ax.set_ylabel("Mean over folds (test)")
            set_title(ax, figure_title(group, experiment), options)
            ax.grid(True, axis="y", alpha=0.3)
            place_legend(fig, [ax], options)
            try:
                written += save(fig, out_dir, f"{experiment}_bars{options.tag}")
                data, _ = data_title(group, of_total=True)
                heading = [f"Figure: {experiment}, test metrics per method. Data: {data or experiment}.", "Bars:"]
                written.append(write_caption(out_dir, f"{experiment}_bars{options.tag}", heading, curves))
            finally:
                plt.close(fig)
    return written
