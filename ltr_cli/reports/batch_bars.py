"""``ltr plot`` on batch (k-fold) runs: grouped bars of the test metrics per method, as the
direct-optimisation paper's Figures 4-6 draw them (MAP and NDCG@1, 3, 5, 10 on the x-axis,
one bar per method, the mean over folds), with the spread over folds as error bars (sample
standard deviation). A run whose selected model was degenerate in some fold
(``degenerate_folds``) gets no bar: its numbers are not the method's; the legend says so.
One figure per experiment, ``<experiment>_bars.png`` and ``.pdf``.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from ltr_cli.errors import ResultsError
from ltr_cli.measures.registry import canonical_name, display_name
from ltr_cli.reports.plot import _EXTS, _plain, _save
from ltr_cli.reports.plot_style import TRUETYPE
from ltr_cli.results.folders import Run

# distinct colours for the bars of one figure (matplotlib's tab10)
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
            "#17becf")

#: the metrics of the paper's bar charts, in its order (when the runs have them)
PAPER_BARS = ("ap", "ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10")


def is_batch(run: Run) -> bool:
    return run.summary.get("protocol") == "batch-cv"


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


def bar_names(runs: list[Run], metrics: list[str] | None) -> list[str]:
    """The files :func:`plot_bars` writes (checked before anything is drawn)."""
    return [f"{e}_bars.{ext}" for e in bar_plan(runs, metrics) for ext in _EXTS]


def _fold_values(run: Run, metric: str) -> np.ndarray:
    if metric not in run.rounds.columns:
        return np.empty(0)
    values = run.rounds[metric].to_numpy(dtype=np.float64)
    return values[np.isfinite(values)]


def plot_bars(runs: list[Run], metrics: list[str] | None, out_dir: Path) -> list[Path]:
    """Draw :func:`bar_plan`'s figures; return the written files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plan = bar_plan(runs, metrics)
    if plan:
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ResultsError(f"{out_dir}: cannot create the plot folder ({exc.strerror})") from None
    written: list[Path] = []
    for experiment, (chosen, group) in plan.items():
        with plt.rc_context({"pdf.fonttype": TRUETYPE, "ps.fonttype": TRUETYPE}):
            fig, ax = plt.subplots(figsize=(6.4, 3.6))
            x = np.arange(len(chosen))
            width = 0.8 / max(len(group), 1)
            for i, run in enumerate(group):
                color = _PALETTE[i % len(_PALETTE)]  # one colour per method in a figure
                offset = (i - (len(group) - 1) / 2) * width
                if run.summary.get("degenerate_folds"):
                    ax.bar([], [], width, color="none", edgecolor=color, hatch="//",
                           label=_plain(f"{run.label} (degenerate model: no numbers)"))
                    continue
                means = [run.summary.get("metrics", {}).get(m) for m in chosen]
                heights = [np.nan if v is None else float(v) for v in means]
                spread = [float(np.std(v, ddof=1)) if (v := _fold_values(run, m)).size > 1 else 0.0 for m in chosen]
                ax.bar(x + offset, heights, width, yerr=spread, capsize=2, color=color,
                       label=_plain(run.label), error_kw={"lw": 0.8})
            ax.set_xticks(x, [_axis_name(m) for m in chosen])
            ax.set_ylabel("mean over folds (test)")
            ax.set_title(_plain(experiment))
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=7, ncol=min(len(group), 3), loc="lower center", bbox_to_anchor=(0.5, 1.08),
                      frameon=False)
            fig.tight_layout()
            try:
                written += _save(fig, out_dir, f"{experiment}_bars")
            finally:
                plt.close(fig)
    return written
