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

_NON_METRIC = {"t", "pass", "qid", "m", "mistake", "updated", "no_relevant"}


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
