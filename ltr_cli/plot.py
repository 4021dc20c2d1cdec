"""``ltr plot``: time-averaged metric vs. iteration, one line per run (paper figure style).

Legend entries read ``<learner label>:<METRIC>`` (e.g. ``SLAM:NDCG@10``), one figure per
experiment and metric, written as PNG and PDF.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from ltr_cli.errors import ResultsError
from ltr_cli.protocols.online import time_average
from ltr_cli.results import Run, group_seeds

_NON_METRIC = {"t", "pass", "qid", "m", "mistake", "updated", "no_relevant", "ranking_loss"}


def metric_columns(run: Run) -> list[str]:
    return [c for c in run.rounds.columns if c not in _NON_METRIC]


def _group_by_learner(runs: list[Run]) -> dict[str, list[Run]]:
    """Runs of one learner and settings (its seeds) together."""
    return {"/".join(key): members for key, members in group_seeds(runs).items()}


def seed_curves(runs: list[Run], metric: str, max_rounds: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Time-averaged curves of one learner's seeds, cut to the shortest: (t, curves[seed, t])."""
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

    by_experiment: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        if "t" in run.rounds.columns:  # batch (per-fold) runs have no curve
            by_experiment[run.experiment].append(run)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultsError(f"{out_dir}: cannot create the plot folder ({exc.strerror})") from None
    written: list[Path] = []
    for experiment, group in sorted(by_experiment.items()):
        available = metric_columns(group[0])
        wanted = metrics or available
        for metric in wanted:
            have = [r for r in group if metric in r.rounds.columns]
            if not have:
                if metrics:
                    raise ResultsError(
                        f"metric {metric!r} is not in the runs of {experiment}; they have: "
                        f"{', '.join(available)}"
                    )
                continue
            fig, ax = plt.subplots(figsize=(6.4, 4.2))
            learners = _group_by_learner(have)
            labels = [members[0].label for members in learners.values()]
            for i, (_, seeds) in enumerate(sorted(learners.items(), key=lambda kv: kv[1][0].label)):
                t, curves = seed_curves(seeds, metric, max_rounds)
                mean = np.nanmean(curves, axis=0)
                n = f" ({len(seeds)} seeds)" if len(seeds) > 1 else ""
                label = seeds[0].label
                if labels.count(label) > 1:  # same learner, other settings: say which
                    label += f" [{seeds[0].summary.get('config_id', seeds[0].path.name)}]"
                marks = sorted({m for run in seeds for m in run.marks})
                if marks:  # NaN weights, SmoothDCG direction: visible in the legend
                    label += f" ({'; '.join(marks)})"
                ax.plot(t, mean, color=f"C{i}", lw=1.6, label=f"{label}:{metric.upper()}{n}")
                if len(seeds) > 1 and band != "none":
                    if band == "std":
                        sd = np.nanstd(curves, axis=0)
                        lo, hi = mean - sd, mean + sd
                    else:
                        lo, hi = np.nanmin(curves, axis=0), np.nanmax(curves, axis=0)
                    ax.fill_between(t, lo, hi, color=f"C{i}", alpha=0.2, lw=0)
            ax.set_xlabel("Iteration")
            ax.set_ylabel(f"Time averaged {metric.upper()}")
            ax.set_title(experiment)
            ax.grid(True, alpha=0.3)
            ax.legend(loc="lower right", fontsize=8)
            fig.tight_layout()
            stem = f"{experiment}_{metric.replace('@', '_at_')}"
            for ext in ("png", "pdf"):
                path = out_dir / f"{stem}.{ext}"  # not with_suffix: names may contain '.'
                fig.savefig(path, dpi=150)
                written.append(path)
            plt.close(fig)
    if not written:
        raise ResultsError("nothing to plot: no online runs with metric columns (batch runs: use ltr report)")
    return written


def plot_theory(runs: list[Run], out_dir: Path) -> list[Path]:
    """Cumulative ranking loss of the mistake-driven runs, with each run's bound
    (Corollary 7 / Theorem 8 / Corollary 11) as a dashed line; log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_experiment: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        if (run.summary.get("theory") or {}).get("bound") and "ranking_loss" in run.rounds:
            by_experiment[run.experiment].append(run)
    written: list[Path] = []
    for experiment, group in sorted(by_experiment.items()):
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for i, run in enumerate(sorted(group, key=lambda r: r.label)):
            color = f"C{i}"
            loss = np.nan_to_num(run.rounds["ranking_loss"].to_numpy(dtype=np.float64))
            ax.plot(run.rounds["t"], np.cumsum(loss), color=color, lw=1.6,
                    label=f"{run.label}: cumulative ranking loss")
            bound = run.summary["theory"]["bound"]
            note = "" if bound.get("applies") else " (assumptions not met)"
            ax.axhline(bound["bound"], color=color, ls="--", lw=1.0,
                       label=f"{run.label}: {bound['name']} bound {bound['bound']:.3g}{note}")
        ax.set_yscale("log")
        ax.set_xlabel("Iteration")
        ax.set_ylabel("Cumulative ranking loss")
        ax.set_title(f"{experiment}: loss vs. bound")
        ax.grid(True, alpha=0.3, which="both")
        ax.legend(loc="center right", fontsize=7)
        fig.tight_layout()
        for ext in ("png", "pdf"):
            path = out_dir / f"{experiment}_theory.{ext}"
            fig.savefig(path, dpi=150)
            written.append(path)
        plt.close(fig)
    if not written:
        raise ResultsError("--theory: no run has a bound (only separable streams with "
                           "slam-perceptron or alg3 learners do)")
    return written
