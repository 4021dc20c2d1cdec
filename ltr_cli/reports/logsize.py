"""``ltr plot`` on batch runs trained on click logs: the test metric against the log's size,
one line per learner (correction), the standard figure of counterfactual learning to rank.

A run trained on a generated log (a ``clicks.generate`` block) is a point at its
``sessions``; runs of one learner name at several sizes (a sweep) make its line, the mean
over folds with the sample standard deviation over folds as error bars. Runs on the labels
(no ``clicks`` block) are a horizontal line. One figure per experiment and click-model
setting (model and eta), ``<experiment>_logsize[_eta<X>].png``/``.pdf`` with a caption file;
an experiment whose click runs have fewer than two log sizes gets none.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.measures.registry import canonical_name, display_name
from ltr_cli.reports.captions import Curve, figure_title, write_caption
from ltr_cli.reports.curves import plain
from ltr_cli.reports.figures import check_outputs, make_folder, new_figure, place_legend, pyplot, save, set_title
from ltr_cli.reports.plot_style import FigureOptions
from ltr_cli.results.folders import Run

DEFAULT_METRIC = "ndcg@10"


def _generate(run: Run) -> dict[str, Any] | None:
    clicks = (run.manifest.get("learner_conventions") or {}).get("clicks")
    gen = clicks.get("generate") if isinstance(clicks, dict) else None
    return gen if isinstance(gen, dict) and isinstance(gen.get("sessions"), int) else None


def _setting(gen: dict[str, Any]) -> str:
    from ltr_cli.clicks.spec import DEFAULT_ETA, takes_eta

    eta = gen.get("eta")
    if eta is None and isinstance(gen.get("model"), str) and takes_eta(gen["model"]):  # the default exponent
        eta = DEFAULT_ETA
    return f"{gen.get('model')}" + ("" if eta is None else f", eta {eta:g}")


def _fold_values(run: Run, metric: str) -> np.ndarray:
    values = [r.get(metric) for r in run.summary.get("per_fold") or []]
    return np.array([v for v in values if isinstance(v, (int, float))], dtype=float)


def logsize_plan(runs: list[Run]) -> dict[tuple[str, str], tuple[list[Run], list[Run]]]:
    """(experiment, click setting) -> (its click runs, the experiment's label runs), for the
    settings with at least two log sizes."""
    batch = [r for r in runs if r.summary.get("protocol") == "batch-cv"]
    labels: dict[str, list[Run]] = defaultdict(list)
    clicks: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in batch:
        experiment = str(run.manifest.get("experiment") or run.path.parent.name)
        gen = _generate(run)
        if gen is None:
            if not (run.manifest.get("learner_conventions") or {}).get("clicks"):
                labels[experiment].append(run)
            continue
        clicks[(experiment, _setting(gen))].append(run)
    plan = {}
    for key, group in clicks.items():
        sizes = {(_generate(r) or {}).get("sessions") for r in group}
        if len(sizes) >= 2:
            plan[key] = (group, labels.get(key[0], []))
    return plan


def _stem(experiment: str, setting: str, many: bool, tag: str) -> str:
    if not many:
        return f"{experiment}_logsize{tag}"
    safe = "".join(c if c.isalnum() or c in ".-" else "_" for c in setting.replace(", ", "_"))
    return f"{experiment}_logsize_{safe}{tag}"


def logsize_names(runs: list[Run], tag: str = "") -> list[str]:
    """The files :func:`plot_logsize` writes (for the check before anything is written)."""
    plan = logsize_plan(runs)
    per_experiment: dict[str, int] = defaultdict(int)
    for experiment, _ in plan:
        per_experiment[experiment] += 1
    stems = [_stem(e, s, per_experiment[e] > 1, tag) for e, s in plan]
    return [f"{stem}{ext}" for stem in stems for ext in (".png", ".pdf", ".caption.txt")]


def plot_logsize(runs: list[Run], metric: str | None, out_dir: Path,
                 options: FigureOptions | None = None) -> list[Path]:
    """Draw the log-size figures; return the written files."""
    options = options or FigureOptions()
    metric = canonical_name(metric or DEFAULT_METRIC)
    plan = logsize_plan(runs)
    if not plan:
        return []
    check_outputs(out_dir, logsize_names(runs, options.tag))
    make_folder(out_dir)
    per_experiment: dict[str, int] = defaultdict(int)
    for experiment, _ in plan:
        per_experiment[experiment] += 1
    plt = pyplot()
    written: list[Path] = []
    for (experiment, setting), (group, label_runs) in plan.items():
        lines: dict[str, list[Run]] = defaultdict(list)
        for run in group:
            lines[str(run.manifest.get("learner") or run.label)].append(run)
        with plt.rc_context(options.rc()):
            fig, (ax,) = new_figure(plt, options)
            curves = []
            series = len(lines) + len(label_runs)
            for i, (_, members) in enumerate(sorted(lines.items())):
                members.sort(key=lambda r: (_generate(r) or {}).get("sessions", 0))
                x = [(_generate(r) or {})["sessions"] for r in members]
                y = [float(r.summary.get("metrics", {}).get(metric) or np.nan) for r in members]
                err = [float(np.std(v, ddof=1)) if (v := _fold_values(r, metric)).size > 1 else 0.0 for r in members]
                label = members[0].label
                ax.errorbar(x, y, yerr=err, marker="o", ms=3, capsize=1.5, lw=1, color=options.series(i, series),
                            label=plain(label))
                curves.append(Curve(label, [f"sessions {', '.join(map(str, x))}: mean over test folds, error bars "
                                            "the sample standard deviation over folds",
                                            "runs " + ", ".join(r.path.name for r in members)]))
            for j, run in enumerate(label_runs):
                value = run.summary.get("metrics", {}).get(metric)
                if value is None:
                    continue
                ax.axhline(float(value), ls="--", lw=1, color=options.series(len(lines) + j, series),
                           label=plain(run.label))
                curves.append(Curve(run.label, ["trained on the labels (no log): a horizontal line",
                                                f"run {run.path.name}"]))
            ax.set_xscale("log")
            ax.set_xlabel("Sessions in each fold's click log")
            ax.set_ylabel(f"{display_name(metric)} (test)")
            set_title(ax, figure_title(group, experiment) + f" ({setting})", options)
            ax.grid(True, alpha=0.3)
            place_legend(fig, [ax], options)
            stem = _stem(experiment, setting, per_experiment[experiment] > 1, options.tag)
            try:
                written += save(fig, out_dir, stem)
                heading = [f"Figure: {experiment}, test {display_name(metric)} against the click log's size "
                           f"({setting}).", "Lines:"]
                written.append(write_caption(out_dir, stem, heading, curves))
            finally:
                plt.close(fig)
    return written
