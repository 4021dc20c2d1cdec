"""``ltr plot`` on batch runs trained on simulated click logs over several logs per
condition: each pair of click learners' difference in the test metric, condition by
condition, with its 95% interval counting both the test queries and the log drawn
(:mod:`ltr_cli.reports.log_pairs`, the numbers of ``ltr compare --logs``).

One figure per experiment whose click runs have at least two logs in some condition,
``<experiment>_conditions.png``/``.pdf`` with a caption file: the conditions along x (named
by the settings that differ between them), a marker per pair of learners (``a - b``) with
its interval as error bars, and a line at 0. A difference whose Holm-adjusted p is below
0.05 is a filled marker, else an open one.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from ltr_cli.measures.registry import canonical_name, display_name
from ltr_cli.reports.captions import Curve, figure_title, write_caption
from ltr_cli.reports.curves import plain
from ltr_cli.reports.figures import check_outputs, make_folder, new_figure, place_legend, pyplot, save, set_title
from ltr_cli.reports.log_pairs import LogPair, compare_logs, condition_of
from ltr_cli.reports.plot_style import FigureOptions
from ltr_cli.results.folders import Run

DEFAULT_METRIC = "ndcg@10"
ALPHA = 0.05


def _experiments(runs: list[Run]) -> dict[str, list[Run]]:
    """experiment -> its runs, for the experiments with two or more logs in a condition."""
    by: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by[run.experiment].append(run)
    keep = {}
    for experiment, members in by.items():
        logs: dict[tuple[str, str], set[int]] = defaultdict(set)
        for run in members:
            found = condition_of(run)
            if found is not None:
                logs[(found[0], str(run.summary.get("learner")))].add(found[2])
        if any(len(v) >= 2 for v in logs.values()):
            keep[experiment] = members
    return keep


def conditions_names(runs: list[Run], tag: str = "") -> list[str]:
    """The files :func:`plot_conditions` writes (for the check before anything is written)."""
    return [f"{e}_conditions{tag}{ext}" for e in _experiments(runs) for ext in (".png", ".pdf", ".caption.txt")]


def plot_conditions(runs: list[Run], metric: str | None, out_dir: Path,
                    options: FigureOptions | None = None) -> list[Path]:
    """Draw the conditions figures; return the written files."""
    options = options or FigureOptions()
    metric = canonical_name(metric or DEFAULT_METRIC)
    plan = _experiments(runs)
    if not plan:
        return []
    check_outputs(out_dir, conditions_names(runs, options.tag))
    make_folder(out_dir)
    plt = pyplot()
    written: list[Path] = []
    for experiment, members in plan.items():
        rows = [r for r in compare_logs(members, metric) if r.mean_difference is not None]
        if not rows:
            continue
        conditions = list(dict.fromkeys(r.condition for r in rows))
        pairs: dict[str, list[LogPair]] = defaultdict(list)
        for r in rows:
            pairs[f"{r.a} - {r.b}"].append(r)
        with plt.rc_context(options.rc()):
            fig, (ax,) = new_figure(plt, options)
            curves = []
            width = 0.6 / max(len(pairs), 1)
            for i, (name, found) in enumerate(sorted(pairs.items())):
                color = options.series(i, len(pairs))
                shift = (i - (len(pairs) - 1) / 2) * width
                for r in found:
                    x = conditions.index(r.condition) + shift
                    mean = float(r.mean_difference or 0.0)
                    low = mean - r.low if r.low is not None else 0.0
                    high = r.high - mean if r.high is not None else 0.0
                    filled = r.p_adjusted is not None and r.p_adjusted < ALPHA
                    ax.errorbar([x], [mean], yerr=[[low], [high]], fmt="o", ms=4, capsize=2, lw=1,
                                color=color, mfc=color if filled else "white",
                                label=plain(name) if r is found[0] else None)
                curves.append(Curve(name, [f"{r.condition}: {_num(r.mean_difference)} [{_num(r.low)}, {_num(r.high)}], "
                                           f"p_holm {_num(r.p_adjusted, '.2g')}, {r.logs} logs x {r.queries} queries"
                                           + (f" ({r.note})" if r.note else "") for r in found]))
            ax.axhline(0.0, color="0.5", lw=0.8, ls="--")
            ax.set_xticks(range(len(conditions)))
            ax.set_xticklabels([_tick(c) for c in conditions], fontsize="x-small")
            ax.set_ylabel(f"difference in {display_name(metric)} (test)")
            set_title(ax, figure_title(members, experiment) + ": learners on clicks, by condition", options)
            ax.grid(True, axis="y", alpha=0.3)
            place_legend(fig, [ax], options)
            stem = f"{experiment}_conditions{options.tag}"
            try:
                written += save(fig, out_dir, stem)
                heading = [f"Figure: {experiment}, the difference in test {display_name(metric)} between learners "
                           "trained on simulated click logs, per condition: the mean over the logs and test "
                           "queries with its 95% interval counting both (crossed random effects; ltr compare "
                           "--logs); filled markers: Holm-adjusted p < 0.05.", "Pairs:"]
                written.append(write_caption(out_dir, stem, heading, curves))
            finally:
                plt.close(fig)
    return written


#: shorter names of the generate settings on the x axis (the caption keeps the full ones)
_SHORT = {"logger_fraction": "logger", "sessions": "sessions", "estimate_sessions": "est. sessions"}


def _tick(condition: str) -> str:
    parts = []
    for part in condition.split(", "):
        key, _, value = part.partition(" ")
        parts.append(f"{_SHORT[key]} {value}" if key in _SHORT and value else part)
    return "\n".join(parts)


def _num(value: float | None, fmt: str = "+.4f") -> str:
    return "-" if value is None else format(value, fmt)
