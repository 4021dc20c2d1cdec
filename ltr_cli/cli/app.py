"""The ``ltr`` command line (Typer).

Heavy modules (pandas, matplotlib, the learners) are imported inside the commands that
need them, so ``ltr --help`` and ``ltr list`` start quickly. Every user-caused error is an
``LtrError``: printed as one line on stderr, exit code 1.
"""

from __future__ import annotations

import json
import sys
import warnings
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ltr_cli.cli.boundary import USAGE_ERROR, command, one_line, refuse
from ltr_cli.cli.data import data_app
from ltr_cli.measures.convention_table import CONVENTION_NAMES
from ltr_cli.cli.options import (BandOpt, BaseOpt, ConventionOpt, DatasetOpt, ExecutorOpt, GroupOpt, NoRelevantOpt,
                                 NullOpt, QidSourceOpt, TiesOpt, _value)
from ltr_cli.data.registry import reader_options
from ltr_cli.errors import LtrError
from ltr_cli.sweep.tasks import EXECUTORS

def _usage_like_click() -> None:
    """Usage lines in click's style (``ltr run [OPTIONS] CONFIG``): recent Typer releases
    write a required argument as ``{CONFIG}``, which reads like a template placeholder."""
    from typer.core import TyperArgument

    def usage_name(self: Any) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")

    hook = "_usage_display_name"  # absent in older Typer releases, which need no fix
    if hasattr(TyperArgument, hook):
        setattr(TyperArgument, hook, usage_name)


_usage_like_click()

app = typer.Typer(
    name="ltr",
    help="Reproducible learning-to-rank experiments: run configs, plot curves, evaluate scores.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: no "<bool>" beside flags
)
def _show_version(value: bool) -> None:
    if value:
        from ltr_cli import __version__

        typer.echo(f"ltr {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_show_version,
                                          help="print the version and exit")] = False,
) -> None:
    """Reproducible learning-to-rank experiments: run configs, plot curves, evaluate scores."""


app.add_typer(data_app, name="data")


# --- run / plot / list ------------------------------------------------------------------------

@command(app)
def run(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", help="experiment config (YAML)")],
    set_: Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="override a config key: --set protocol.passes=2 (repeatable)")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="results root (default: the config's output, 'results')")] = None,
    learner: Annotated[Optional[list[str]], typer.Option("--learner", metavar="NAME", help="run only this learner of the config (repeatable)")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar or messages")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="skip finished runs; continue killed runs from their last checkpoint")] = False,
    fresh: Annotated[bool, typer.Option("--fresh", help="start interrupted runs over, deleting their checkpoints")] = False,
) -> None:
    """Run every learner of an experiment config; write results/<experiment>/<run-id>/."""
    from ltr_cli.config.experiment import load_config
    from ltr_cli.runs.runner import run_experiment

    spec = load_config(config, set_ or [])
    if spec.sweep:
        raise LtrError(f"{config}: sweep: this config has a sweep; run it with 'ltr sweep {config}' "
                       "(or remove the sweep block)")
    if learner:
        unknown = [name for name in learner if name not in spec.learners]
        if unknown:
            raise LtrError(f"{config}: learners: no learner named {unknown[0]!r}; the config has "
                           f"{', '.join(spec.learners)}")
    if resume and fresh:
        raise LtrError("--resume continues interrupted runs and --fresh starts them over: give one of them")

    def done(o: Any) -> None:  # each run's line as soon as it is written
        metrics = o.summary["metrics"]
        if quiet:
            typer.echo(str(o.path))
        elif o.summary.get("protocol") == "batch-cv":
            typer.echo(f"{o.learner}: {len(o.summary['folds'])} folds, test {_headline(metrics)} "
                       f"(mean over folds) -> {o.path}")
        else:
            parts = [f"{name}={vals['final_time_average']:.4f}" for name, vals in metrics.items()
                     if vals["final_time_average"] is not None]
            typer.echo(f"{o.learner}: {o.summary['rounds']} rounds, {o.summary['updates']} updates, "
                       f"time-averaged {' '.join(parts)} -> {o.path}")

    run_experiment(spec, out=out, quiet=quiet, learners=learner, argv=sys.argv, resume=resume, fresh=fresh,
                   on_done=done)


LATEST_HELP = "keep only each learner's newest configuration (runs of older settings are left out)"
CONFIG_HELP = "keep only the runs this config (every point of its sweep) writes"


def _headline(metrics: dict[str, Any]) -> str:
    """A batch run's test metrics on its one line: MAP and NDCG@3 when it has them (the
    batch papers' tables), else its first three."""
    keys = [k for k in ("ap", "ndcg@3") if k in metrics] or list(metrics)[:3]
    return " ".join(f"{'MAP' if k == 'ap' else k.upper()}="
                    + ("n/a" if metrics[k] is None else f"{metrics[k]:.4f}") for k in keys)


@command(app)
def plot(
    results: Annotated[list[Path], typer.Argument(metavar="RESULTS", help="run directories or folders containing them")],
    metric: Annotated[Optional[list[str]], typer.Option("--metric", metavar="METRIC", help="metric column(s) to plot (default: all)")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="output folder (default: <first results path>/plots)")] = None,
    max_rounds: Annotated[Optional[int], typer.Option("--max-rounds", min=1, help="plot only the first N rounds")] = None,
    theory: Annotated[bool, typer.Option("--theory", help="also draw cumulative ranking loss beside the paper's bound (separable data)")] = False,
    band: Annotated[BandOpt, typer.Option("--band", help="band over seeds: minmax, std (mean +- sd) or none")] = BandOpt("minmax"),
    select_by: Annotated[Optional[str], typer.Option("--select-by", help="draw only each learner's best settings by this metric")] = None,
    window: Annotated[int, typer.Option("--window", min=1, help="with --select-by: rounds at the end of the curve to average")] = 10,
    latest: Annotated[bool, typer.Option("--latest", help=LATEST_HELP)] = False,
    config: Annotated[Optional[Path], typer.Option("--config", help=CONFIG_HELP)] = None,
) -> None:
    """Plot time-averaged metric curves (PNG + PDF), one line per learner."""
    from ltr_cli.reports.plot import check_outputs, output_names, plot_runs, plot_theory

    runs = _chosen_runs(results, latest, config, say=not select_by)  # a selection shows one each
    if select_by:
        from ltr_cli.reports.selection import select

        runs = [r for choice in select(runs, select_by, window) for r in choice.runs]
    target = out or (results[0] if results[0].is_dir() else results[0].parent) / "plots"
    check_outputs(target, output_names(runs, metric, theory))  # before anything is written
    written = plot_runs(runs, metric, target, max_rounds, _value(band))
    if theory:
        written += plot_theory(runs, target)
    for p in written:
        typer.echo(str(p))


@command(app)
def sweep(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", help="experiment config with a sweep: block")],
    set_: Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="override a config key before expanding")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="results root (default: the config's output)")] = None,
    executor: Annotated[ExecutorOpt, typer.Option("--executor", help="where the runs are computed: " + ", ".join(EXECUTORS))] = ExecutorOpt("local"),
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="parallel runs (processes, or Dask workers of a LocalCluster); capped at the number of runs and 4 per CPU")] = 1,
    scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786 (default: a LocalCluster)")] = None,
    connect_timeout: Annotated[float, typer.Option("--connect-timeout", min=0.1, help="seconds to wait for --scheduler to answer")] = 10.0,
    max_grid: Annotated[int, typer.Option("--max-grid", min=1, help="refuse grids of more points than this")] = 10_000,
    show_status: Annotated[bool, typer.Option("--status", help="only show done / failed / running / pending runs (reads, never writes)")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no notes on stderr (grid size, capped --jobs)")] = False,
) -> None:
    """Expand the config's sweep grid and run every point; re-running skips finished runs
    and resumes killed or failed ones. A run that fails, or whose worker process dies, is
    recorded and the others go on; the sweep then names each failed run and exits 1."""
    def note(message: str) -> None:
        if not quiet:
            typer.echo(f"ltr: note: {message}", err=True)

    from ltr_cli.sweep.grid import effective_jobs, execute, plan, point_label, status
    from ltr_cli.sweep.dask_executor import check_scheduler_address

    if scheduler is not None and not show_status:
        if _value(executor) != "dask":
            raise LtrError("--scheduler needs --executor dask")
        check_scheduler_address(scheduler)
    sweep_plan = plan(config, set_ or [])
    sweep_plan.check_limit(max_grid)  # from the axis lengths, before expanding anything
    if not show_status:
        note(f"sweep: {sweep_plan.describe()}")
    tasks = sweep_plan.tasks()
    root = out or Path(tasks[0].run.spec.output)
    if show_status:
        rows = status(tasks, root)
        counts = {s: sum(r["status"] == s for r in rows) for s in ("done", "failed", "running", "pending")}
        for r in rows:
            extra = f" (checkpoint at round {r['checkpoint_round']})" if "checkpoint_round" in r else ""
            error = f": {r['error']}" if r.get("error") else ""
            typer.echo(f"{r['status']:8s} {r['run']}{point_label(r['point'], r['learner'])}{extra}{error}")
        typer.echo(" ".join(f"{k}={v}" for k, v in counts.items()) + f" total={len(rows)}")
        return
    if not (_value(executor) == "dask" and scheduler):
        used = effective_jobs(jobs, len(tasks))
        if used < jobs:
            why = "the number of runs" if used == len(tasks) else "4 per CPU"
            note(f"--jobs {jobs} capped at {used} ({why})")
        jobs = used
    results = execute(tasks, root, _value(executor), jobs, scheduler, connect_timeout)
    failed = [r for r in results if r["status"] != "done"]
    typer.echo(f"sweep: {len(results) - len(failed)} of {len(results)} runs done -> {root}")
    for r in failed:
        typer.echo(f"ltr: error: run {r['run']} failed: {r['error']}", err=True)
    if failed:
        raise typer.Exit(1)


class ReportFormat(str, Enum):
    markdown = "markdown"
    csv = "csv"


@command(app)
def report(
    results: Annotated[list[Path], typer.Argument(metavar="RESULTS", help="run directories or folders containing them")],
    fmt: Annotated[ReportFormat, typer.Option("--format", help="markdown table or CSV")] = ReportFormat.markdown,
    out: Annotated[Optional[Path], typer.Option("--out", help="also write the table to this file")] = None,
    select_by: Annotated[Optional[str], typer.Option("--select-by", help="pick each learner's best settings by this metric (e.g. ndcg@10)")] = None,
    window: Annotated[int, typer.Option("--window", min=1, help="with --select-by: rounds at the end of the time-averaged curve to average")] = 10,
    latest: Annotated[bool, typer.Option("--latest", help=LATEST_HELP)] = False,
    config: Annotated[Optional[Path], typer.Option("--config", help=CONFIG_HELP)] = None,
    html: Annotated[bool, typer.Option("--html", help="write one self-contained HTML report (figures, tables with verdicts and spreads, config, conventions, data fingerprints, versions) to --out, default RESULTS/report.html")] = False,
) -> None:
    """Last-ten-rounds averages per learner and dataset, beside the paper's numbers;
    with --select-by, each learner's best hyper-parameters (mean and spread over seeds)."""
    from ltr_cli.outputs import write_text
    from ltr_cli.reports.run_filter import mixed_configurations

    runs = _chosen_runs(results, latest, config, say=not html)
    if html:
        from ltr_cli.reports.report_html import render_html

        if select_by:
            from ltr_cli.reports.selection import select

            runs = [r for choice in select(runs, select_by, window) for r in choice.runs]
        target = out or (results[0] if results[0].is_dir() else results[0].parent) / "report.html"
        write_text(target, render_html(runs, mixed_configurations(runs), command=["ltr", *sys.argv[1:]]))
        typer.echo(str(target))
        return
    from ltr_cli.reports.report import render_report

    text = render_report(runs, _value(fmt), select_by, window)
    if out is not None:
        write_text(out, text)
    typer.echo(text, nl=False)


def _chosen_runs(results: list[Path], latest: bool, config: Path | None, say: bool = True) -> list[Any]:
    """The finished runs under ``results`` that plot and report show, after ``--latest`` /
    ``--config``; a note on stderr when several configurations of a learner remain."""
    from ltr_cli.results.folders import find_runs, read_run
    from ltr_cli.reports.run_filter import mixed_configurations, newest_configurations, runs_named_by

    where = ", ".join(map(str, results))
    dirs = find_runs(results)
    if not dirs:
        raise LtrError(f"no finished runs under {where} (run 'ltr run CONFIG' first)")
    runs = [read_run(d) for d in dirs]
    if config is not None:
        runs = runs_named_by(runs, config)
        if not runs:
            raise LtrError(f"no run under {where} was written by {config} (run 'ltr run {config}' first)")
    if latest:
        runs = newest_configurations(runs)
    if say:
        for note in mixed_configurations(runs):
            typer.echo(f"ltr: note: {note}", err=True)
    return runs


@command(app)
def bench(
    queries: Annotated[int, typer.Option("--queries", min=5, help="queries per generated file")] = 200,
    rounds: Annotated[int, typer.Option("--rounds", min=10, help="rounds per learner for the per-round cost")] = 2000,
    e2e_queries: Annotated[int, typer.Option("--e2e-queries", min=1, help="queries per MSLR subset for the end-to-end run (2000 = MSLR-WEB10K's 30,000 rounds)")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    batch: Annotated[bool, typer.Option("--batch", help="the batch solvers and ltr eval instead (RankSVM vs scikit-learn's pairwise LinearSVC, SVMmap, PermuRank, ltr eval vs pytrec_eval)")] = False,
    eval_queries: Annotated[int, typer.Option("--eval-queries", min=1, help="--batch: queries of the ltr eval comparison (about 116 documents each)")] = 20000,
    online: Annotated[bool, typer.Option("--online", help="online runs end to end instead: every learner's per-round cost as whole ltr processes (vs the two-matvec floor and its Python reference path), a 16-rate sweep vs one run, four learners vs one, checkpoint overhead")] = False,
    data: Annotated[Path | None, typer.Option("--data", metavar="<path>", exists=True, dir_okay=False, help="--online: measure on this SVMlight file in MSLR-WEB's layout (136 features, qids) instead of generated data")] = None,
) -> None:
    """Measure parse speed (vs scikit-learn), cached reload (vs cold parse), per-round cost
    (vs two matrix-vector passes), end-to-end 'ltr run' time (cold, cached) and peak
    memory growth, as ratios measured side by side in one run; --batch: the batch
    solvers and 'ltr eval' instead."""
    from ltr_cli.bench.command import format_table, main_json, run_bench

    if data is not None and not online:
        raise LtrError("--data measures online runs on a file: add --online")
    if online:
        from ltr_cli.bench.online import format_online_table, run_online_bench

        found = run_online_bench(queries=max(queries, 50), data=data)
        typer.echo(main_json(found) if as_json else format_online_table(found), nl=as_json)
        return
    if batch:
        from ltr_cli.bench.batch import format_batch_table, run_batch_bench

        found = run_batch_bench(eval_queries=eval_queries)
        typer.echo(main_json(found) if as_json else format_batch_table(found), nl=as_json)
        return
    result = run_bench(queries, rounds, e2e_queries)
    typer.echo(main_json(result) if as_json else format_table(result), nl=as_json)


@command(app, "list")
def list_(
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """List learners, datasets, metrics, data formats and plugins (with where each comes from)."""
    from ltr_cli import plugins
    from ltr_cli.data.formats import formats
    from ltr_cli.data.registry import DATASETS
    from ltr_cli.learners.registry import learner_help
    from ltr_cli.measures.registry import metric_help

    data = {
        "learners": learner_help(),
        "datasets": {k: f"{d.title}: {d.n_features} features, labels {d.labels}, qid from {d.qid_source}"
                     for k, d in DATASETS.items()},
        "generated": {"separable": "perceptron paper's separable set (variant authors|paper)",
                      "shaped": "queries shaped like a registry dataset (like: NAME)"},
        "metrics": metric_help(),
        "conventions": list(CONVENTION_NAMES),
        "formats": {name: f"{fmt.description} [{', '.join(fmt.suffixes)}]" for name, fmt in formats().items()},
        "plugins": {f"{p.group}:{p.name}": f"{p.value} (from {p.distribution})"
                    for group in plugins.GROUPS for p in plugins.loaded(group)},
        "broken_plugins": {f"{p.group}:{p.name}": f"{p.value} (from {p.distribution}): {p.error}"
                           for group in plugins.GROUPS for p in plugins.broken(group)},
    }
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    for section, items in data.items():
        if not items and section in ("plugins", "broken_plugins"):
            continue
        typer.echo(f"{section}:")
        if isinstance(items, dict):
            for k, v in items.items():
                typer.echo(f"  {k:18s} {v}")
        else:
            typer.echo("  " + ", ".join(items))


@command(app, "score")
def score(
    model: Annotated[Path, typer.Argument(metavar="RUN_DIR", help="a run directory, batch or online (or its models.json)")],
    data_file: Annotated[Path, typer.Argument(metavar="DATA_FILE", help="SVMlight/LETOR file to score")],
    fold: Annotated[Optional[str], typer.Option("--fold", help="which fold's model of a batch run (default: the first); an online run has one, 'final'")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="write the scores here (default: stdout)")] = None,
    qid: QidSourceOpt = None, group: GroupOpt = None, null_value: NullOpt = None,
) -> None:
    """Write one score per line for every document of a file (LETOR evaluation tools' format),
    from the model a batch run selected per fold or the final weights of an online run."""
    from ltr_cli.results.scoring import load_model, score_lines

    scorer, n_features = load_model(model, fold)
    lines = score_lines(scorer, data_file, reader_options(None, n_features, None, _value(qid), group, null_value))
    text = "\n".join(lines) + "\n"
    if out is not None:
        from ltr_cli.outputs import write_text

        write_text(out, text)
    else:
        typer.echo(text, nl=False)


# --- eval -------------------------------------------------------------------------------------

@command(app, "eval")
def eval_(
    data_file: Annotated[Path, typer.Argument(metavar="DATA_FILE", help="labelled SVMlight/LETOR file")],
    score_file: Annotated[Path, typer.Argument(metavar="SCORE_FILE", help="one score per line, in data-file order")],
    convention: Annotated[ConventionOpt, typer.Option("--convention", help="metric preset (see README)")] = ConventionOpt("paper"),
    ties: Annotated[Optional[TiesOpt], typer.Option("--ties", help="tie policy (default: the preset's, input-order)")] = None,
    no_relevant: Annotated[Optional[NoRelevantOpt], typer.Option("--no-relevant", help="value of a query without relevant documents (default: the preset's, zero)")] = None,
    threshold: Annotated[float, typer.Option("--relevance-threshold", help="paper preset: relevant = label > this")] = 0.0,
    seed: Annotated[int, typer.Option("--seed", min=0, help="seed for --ties random")] = 0,
    per_query: Annotated[bool, typer.Option("--per-query", help="also print every query")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    metric: Annotated[Optional[list[str]], typer.Option("--metric", metavar="METRIC", help="a metric to report, repeatable (e.g. --metric err@10 --metric rr; 'ltr list' shows them); default: the convention's NDCG@k, MAP, P@k columns")] = None,
    dataset: DatasetOpt = None, index_base: BaseOpt = None, qid: QidSourceOpt = None,
    group: GroupOpt = None,
) -> None:
    """Evaluate scores per query and averaged under a metric convention: by default NDCG@k,
    MAP and P@k (the LETOR scripts' tables), or the metrics given with --metric."""
    from ltr_cli.measures.file_eval import evaluate_file, format_tables, nan_to_none

    opts = reader_options(dataset, None, index_base, _value(qid), group, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = evaluate_file(data_file, score_file, opts, _value(convention), _value(ties),
                               _value(no_relevant), threshold, seed, per_query, metric)
    for w in caught:
        typer.echo(f"ltr: warning: {w.message}", err=True)
    if as_json:
        typer.echo(json.dumps(nan_to_none(result), indent=2, allow_nan=False))
    else:
        typer.echo(format_tables(result, per_query), nl=False)


def _refuse_unencodable(argv: list[str]) -> None:
    """Arguments (paths above all) that are not valid UTF-8 are refused before any work:
    they could not be written into a manifest, a config copy or a report."""
    for i, arg in enumerate(argv[1:], 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
            raise LtrError(f"argument {i} ({shown}) is not valid UTF-8; rename the file or "
                           "directory, or give another path") from None


def main() -> None:
    try:
        _refuse_unencodable(sys.argv)
        code = app(standalone_mode=False)
    except USAGE_ERROR as exc:  # one line and status 1, like every other refusal
        command = exc.ctx.command_path.split(" ", 1) if exc.ctx is not None else []
        hint = f"ltr {command[1]} --help" if len(command) > 1 else "ltr --help"
        typer.echo(f"ltr: error: {one_line(exc.format_message())} (see '{hint}')", err=True)
        sys.exit(1)
    except (typer.Abort, KeyboardInterrupt):  # Ctrl-C
        typer.echo("ltr: interrupted", err=True)
        sys.exit(130)
    except LtrError as exc:  # errors raised outside a command body
        refuse(exc)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
