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
from ltr_cli.results import Run

_NON_METRIC = {"t", "pass", "qid", "m", "mistake", "updated", "no_relevant", "ranking_loss"}


def metric_columns(run: Run) -> list[str]:
    return [c for c in run.rounds.columns if c not in _NON_METRIC]


def plot_runs(
    runs: list[Run], metrics: list[str] | None, out_dir: Path, max_rounds: int | None = None
) -> list[Path]:
    """Draw one figure per (experiment, metric); return the written files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_experiment: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_experiment[run.experiment].append(run)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultsError(f"{out_dir}: cannot create the plot folder ({exc.strerror})") from None
    written: list[Path] = []
    for experiment, group in sorted(by_experiment.items()):
        available = [c for c in metric_columns(group[0])]
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
            for run in sorted(have, key=lambda r: r.label):
                values = run.rounds[metric].to_numpy(dtype=np.float64)
                t = run.rounds["t"].to_numpy()
                if max_rounds:
                    values, t = values[:max_rounds], t[:max_rounds]
                ax.plot(t, time_average(values), label=f"{run.label}:{metric.upper()}", lw=1.6)
            ax.set_xlabel("Iteration")
            ax.set_ylabel(f"Time averaged {metric.upper()}")
            ax.set_title(experiment)
            ax.grid(True, alpha=0.3)
            ax.legend(loc="lower right")
            fig.tight_layout()
            stem = f"{experiment}_{metric.replace('@', '_at_')}"
            for ext in ("png", "pdf"):
                path = out_dir / f"{stem}.{ext}"  # not with_suffix: names may contain '.'

                fig.savefig(path, dpi=150)
                written.append(path)
            plt.close(fig)
    if not written:
        raise ResultsError("nothing to plot: the runs have no metric columns")
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
