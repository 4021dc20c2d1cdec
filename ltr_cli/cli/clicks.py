"""``ltr clicks``: a click model's exact law on a shown list, seeded samples of it, simulated
click logs and the propensities they estimate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ltr_cli import plugins
from ltr_cli.cli.boundary import command
from ltr_cli.errors import LtrError

clicks_app = typer.Typer(help="Click models: the exact law of the clicks on a shown list, and samples.",
                         no_args_is_help=True, rich_markup_mode=None)

ModelOpt = Annotated[str, typer.Option(
    "--model", metavar="NAME", help=f"a click model: {', '.join(plugins.names('click_models', built_in=True))} "
    "or a plugin's (ltr list gives each one's definition); or a custom table in YAML flow style, e.g. "
    "'{click: [0.1, 0.9], stop: [0.2, 0.5]}' (see docs/clicks.md)")]
LabelsOpt = Annotated[str, typer.Option(
    "--labels", metavar="L1,L2,...", help="the shown documents' labels, position 1 first, e.g. 4,0,2,1 "
    "(at most 20)")]
GradesOpt = Annotated[Optional[int], typer.Option(
    "--grades", metavar="2|3|5", help="the named table for labels of 2, 3 or 5 grades (default: 5; "
    "a custom table: its length)")]
StopOpt = Annotated[Optional[str], typer.Option(
    "--stop", metavar="after-click|any-position", help="a cascade's stop rule: only after a click (default), "
    "or at any position, clicked or not, as the reference code draws it")]
EtaOpt = Annotated[Optional[float], typer.Option(
    "--eta", metavar="X", help="the examination exponent of a model that takes one (pbm: (1/rank)^X; ultra-pbm: "
    "ULTRA's examination table^X; ltr list says which; default 1)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON")]


def _model_and_labels(model: str, labels: str, grades: int | None, stop: str | None,
                      eta: float | None) -> tuple[Any, list[int]]:
    from ltr_cli.clicks.spec import build_model, parse_labels

    shown = parse_labels(labels)
    return build_model(model, grades, stop, eta), shown


def _print(rec: dict[str, Any], as_json: bool, exact: bool) -> None:
    from ltr_cli.clicks.records import render

    if as_json:
        typer.echo(json.dumps(rec, indent=2))
    else:
        typer.echo("\n".join(render(rec, exact)))


@command(clicks_app, "probabilities")
def probabilities(model: ModelOpt, labels: LabelsOpt, grades: GradesOpt = None, stop: StopOpt = None,
                  eta: EtaOpt = None, as_json: JsonOpt = False) -> None:
    """The exact law of the clicks on the shown list, by enumeration of its 2^n click
    patterns: P(click) at each position (marginal) and the probability of each click
    pattern (a 0/1 string, position 1 first; patterns of probability 0 are left out and
    counted in zero_patterns)."""
    from ltr_cli.clicks.records import exact_record

    built, shown = _model_and_labels(model, labels, grades, stop, eta)
    _print(exact_record(built, shown), as_json, exact=True)


@command(clicks_app, "sample")
def sample(model: ModelOpt, labels: LabelsOpt, grades: GradesOpt = None, stop: StopOpt = None,
           eta: EtaOpt = None,
           draws: Annotated[int, typer.Option("--draws", metavar="N", min=1,
                                              help="how many users to simulate (at most 10^8)")] = 10_000,
           seed: Annotated[int, typer.Option("--seed", metavar="S", min=0,
                                             help="seed of numpy's default generator")] = 0,
           as_json: JsonOpt = False) -> None:
    """Simulated clicks on the shown list: the click frequency at each position and the
    frequency of each click pattern seen. The same seed gives the same output."""
    from ltr_cli.clicks.records import MAX_DRAWS, sample_record

    if draws > MAX_DRAWS:
        raise LtrError(f"--draws {draws}: at most {MAX_DRAWS} per command")
    built, shown = _model_and_labels(model, labels, grades, stop, eta)
    _print(sample_record(built, shown, seed, draws), as_json, exact=False)


def _refuse_input_as_out(out: Path, inputs: list[tuple[str, Optional[Path]]]) -> None:
    """A one-line error when ``--out`` names one of the command's inputs (the log would
    replace it)."""
    import os

    def where(p: Path) -> set[str]:
        return {os.path.join(os.path.realpath(p.parent), p.name), os.path.realpath(p)}

    target = os.path.join(os.path.realpath(out.parent), out.name)
    for what, path in inputs:
        if path is not None and target in where(path):
            raise LtrError(f"--out {out}: that is the {what} {path}; give another path for the click log")


def _cell(value: float | None) -> str:
    return f"{value:9.4f}" if value is not None else f"{'-':>9s}"


@command(clicks_app, "simulate-log")
def simulate_log(
    data_file: Annotated[Path, typer.Argument(metavar="DATA", help="labelled SVMlight/LETOR file; the clicks follow its labels")],
    out: Annotated[Path, typer.Option("--out", metavar="LOG", help="the Parquet click log to write")],
    sessions: Annotated[int, typer.Option("--sessions", metavar="N", min=1,
                                          help="sessions in total, each on a query drawn uniformly (at most 10^8)")],
    policy: Annotated[str, typer.Option("--policy", metavar="ranking|shuffle|swap|plackett-luce",
                                        help="the logging policy: the file order's top documents, shuffled anew "
                                        "each session, with the top one swapped with a random position, or a "
                                        "Plackett-Luce draw (weight 1/rank)")] = "shuffle",
    shown: Annotated[int, typer.Option("--shown", metavar="K", min=1, max=1000,
                                       help="documents shown per session (at most 1000)")] = 10,
    per_query: Annotated[bool, typer.Option("--per-query", help="N sessions for every query instead of N in total")] = False,
    grades: GradesOpt = None, stop: StopOpt = None, eta: EtaOpt = None,
    seed: Annotated[int, typer.Option("--seed", metavar="S", min=0,
                                      help="seed of numpy's default generator")] = 0,
    run: Annotated[Optional[Path], typer.Option(
        "--run", metavar="RUN", help="a run directory (or its models.json) whose model ranks each query: the "
        "logging ranking (default: the file order)")] = None,
    fold: Annotated[Optional[str], typer.Option("--fold", help="which fold's model of a batch run (default: the first)")] = None,
    model: Annotated[Optional[str], typer.Option(
        "--model", metavar="NAME", help=f"a click model: {', '.join(plugins.names('click_models', built_in=True))} "
        "or a plugin's (ltr list gives each one's definition); or a custom table in YAML flow style, e.g. "
        "'{click: [0.1, 0.9], stop: [0.2, 0.5]}' (see docs/clicks.md)")] = None,
    fitted: Annotated[Optional[Path], typer.Option(
        "--fitted", metavar="FIT", help="instead of --model: a fitted model, the JSON of ltr clicks fit --json "
        "(pbm, cascade, dcm, sdbn, dbn, ccm), clicking with its parameters per query and document")] = None,
) -> None:
    """Simulate a click log: sessions of a logging policy on DATA's queries (the logging
    ranking is each query's file order, or the ranking of a saved model with --run),
    clicked by the click model on the true labels (or by a --fitted model on its
    parameters per query and document), written as Parquet with the policy,
    model, seed and a fingerprint in its metadata. The same inputs give the same file,
    byte for byte."""
    import numpy as np

    from ltr_cli.clicklog.logfile import write_log
    from ltr_cli.clicklog.policies import check_policy
    from ltr_cli.clicklog.simulate import simulate
    from ltr_cli.data.formats import open_dataset
    from ltr_cli.data.registry import reader_options
    from ltr_cli.protocols.interleave import RankedFile, build_clicks

    check_policy(policy)
    _refuse_input_as_out(out, [("data file", data_file), ("fitted model", fitted), ("run's model file", run),
                               ("run's model file", run / "models.json" if run is not None else None)])
    ranked = RankedFile([], [], [], [])
    if run is not None:
        from ltr_cli.protocols.interleave import rank_file
        from ltr_cli.results.scoring import load_model, training_index_base

        scorer, n_features = load_model(run, fold)
        ranked = rank_file(scorer, data_file,
                           reader_options(None, n_features, training_index_base(run), None, None, None))
        source = f"the scores of {run.name}" + (f" (fold {fold})" if fold else "")
    else:
        for qid, y, line in open_dataset(data_file, reader_options(None, None, None, None, None, None)).labelled_queries():
            ranked.labels.append(np.asarray(y, dtype=np.float64))
            ranked.rankings.append(np.arange(len(y)))
            ranked.lines.append(line)
            ranked.qids.append(qid)
        source = f"the file order of {data_file.name}"
    if not ranked.labels:
        raise LtrError(f"{data_file}: no queries; give a labelled SVMlight/LETOR file")
    if (model is None) == (fitted is None):
        raise LtrError("give exactly one of --model (a click model by grade) and --fitted (a fitted model's JSON)")
    from ltr_cli.clicks.base import ClickModel

    built: ClickModel
    if fitted is not None:
        if grades is not None or stop is not None or eta is not None:
            raise LtrError("--grades, --stop and --eta set a --model; a --fitted model has its own parameters")
        from ltr_cli.clicklog.fit.replay import fitted_model

        built, click_labels = fitted_model(fitted, ranked.qids, [len(y) for y in ranked.labels])
    else:
        built = build_clicks(str(model), ranked, data_file, grades, stop, eta)
        click_labels = [y.astype(np.int64) for y in ranked.labels]
    logged = simulate(click_labels, ranked.rankings, built, policy, shown, sessions, seed, per_query)
    meta = write_log(out, logged, ranked.qids,
                     {"policy": policy, "source": source, "model": built.describe(),
                      "seed": seed, "sessions": sessions, "per_query": per_query, "shown": shown})
    typer.echo(f"{out}: {int(logged.session.max(initial=-1)) + 1} sessions, {int(logged.click.sum())} clicks, "
               f"policy {policy}, fingerprint {meta['fingerprint'][:16]}")


@command(clicks_app, "log")
def log_folds(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", help="a batch (cv:) experiment config whose learner has "
                                           "a clicks.generate block")],
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="the folder of the fold logs (fold<N>.parquet) "
                                      "and manifest.json")],
    learner: Annotated[Optional[str], typer.Option("--learner", metavar="NAME", help="the learner whose "
                                                   "clicks.generate to follow (default: the first that has one)")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="override a config key "
                                                      "(repeatable)")] = None,
) -> None:
    """Simulate the click log of each fold's training queries: a logging RankSVM fitted on
    a share of them (logger_fraction, default 1%) ranks every training query, the policy
    shows its top documents, the click model clicks. Writes DIR/fold<N>.parquet (the log
    a run with clicks.generate trains on, byte for byte; clicks.log: DIR reads them) and
    DIR/manifest.json with each log's fingerprint."""
    from ltr_cli.config.experiment import load_config
    from ltr_cli.protocols.click_logs import write_fold_logs
    from ltr_cli.runs.plan import plan_fold_logs

    spec = load_config(config, set_ or [])
    manifest = write_fold_logs(plan_fold_logs(spec, learner, str(config)), out)
    for rec in manifest["logs"]:
        typer.echo(f"{out / rec['file']}: {rec['sessions']} sessions, {rec['clicks']} clicks, fingerprint "
                   f"{rec['fingerprint'][:16]}")


@command(clicks_app, "propensity")
def propensity(
    log: Annotated[Path, typer.Argument(metavar="LOG", help="a Parquet click log (ltr clicks simulate-log)")],
    method: Annotated[str, typer.Option("--method", metavar="randomisation|em",
                                        help="result randomisation (click-rate ratios of the same documents) or "
                                        "regression EM under a position-based model")] = "randomisation",
    seed: Annotated[int, typer.Option("--seed", metavar="S", min=0, help="seed of the bootstrap over sessions "
                                      "(the standard errors)")] = 0,
    plot: Annotated[Optional[Path], typer.Option("--plot", metavar="DIR", help="also draw the estimate with 95% "
                                                 "intervals (and the truth, for a position-based log) into DIR: "
                                                 "<log>_propensity.png/.pdf/.caption.txt")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Examination propensities per position, relative to position 1, estimated from a
    click log with their standard errors (the bootstrap's over sessions, seeded; a position
    whose error the log is too small to estimate has none, and a note says so). Needs a log
    whose documents move between positions (policy shuffle or swap)."""
    from ltr_cli.clicklog.logfile import read_log
    from ltr_cli.clicklog.propensity import METHODS, estimate

    if method not in METHODS:
        raise LtrError(f"--method {method!r}: the estimators are {', '.join(METHODS)}")
    read = read_log(log)
    rec = {"log": str(log), "policy": read.meta.get("policy"), "fingerprint": read.meta.get("fingerprint"),
           **estimate(read.session, read.query, read.doc, read.position, read.click, method, seed, str(log))}
    drawn: list[Path] = []
    if plot is not None:
        from ltr_cli.reports.propensity_plot import plot_propensity

        drawn = plot_propensity({**rec, "method": method}, read.meta.get("model"), plot, log.stem)
    if as_json:
        typer.echo(json.dumps({**rec, **({"plots": [str(p) for p in drawn]} if plot is not None else {})}, indent=2))
        return
    lines = [f"{log}: relative propensities by {method} ({rec['uncertainty']}), policy {rec['policy']}, "
             f"{rec['rows']} shown documents, {rec['clicks']} clicks", "",
             f"{'position':>8s}  {'p_k/p_1':>9s}  {'stderr':>9s}"]
    lines += [f"{k:8d}  {_cell(p)}  {_cell(s)}" for k, p, s in zip(rec["positions"], rec["propensity"], rec["stderr"])]
    lines += [f"note: {note}" for note in rec["notes"]]
    if drawn:
        lines += ["", "wrote " + ", ".join(str(p) for p in drawn)]
    typer.echo("\n".join(lines))


@command(clicks_app, "fit")
def fit(
    log: Annotated[Path, typer.Argument(metavar="LOG", help="a Parquet click log (ltr clicks simulate-log, "
                                        "ltr clicks import)")],
    model: Annotated[str, typer.Option("--model", metavar="pbm|cascade|ubm|dcm|ccm|dbn|sdbn",
                                       help="the click model to fit (docs/clicks.md gives each one's parameters)")],
    heldout: Annotated[float, typer.Option("--heldout", metavar="FRACTION", help="the share of the sessions held "
                                           "out of the fit and measured on (0: measure on the training sessions)")
                       ] = 0.25,
    seed: Annotated[int, typer.Option("--seed", metavar="S", min=0, help="seed of the split of the sessions")] = 0,
    iterations: Annotated[int, typer.Option("--iterations", metavar="N", min=1, help="EM iterations of a model "
                                            "fitted by EM (pbm, ubm, ccm, dbn; PyClick's 50)")] = 50,
    bootstrap: Annotated[int, typer.Option("--bootstrap", metavar="B", min=0, help="refit on B resamples of the "
                                           "training sessions and give each parameter's 95% interval (0: none)")
                         ] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Fit a click model's parameters on a share of LOG's sessions (split by session,
    seeded): by EM (pbm, ubm, ccm, dbn) or in closed form (cascade, dcm, sdbn), as PyClick
    fits them. Prints the log-likelihood and perplexity, overall and per rank, on the
    held-out and the training sessions; --json adds the parameters (attractiveness per
    query and document, examination or continuation per rank, ...); --bootstrap B their
    95% percentile intervals over B resamples of the training sessions."""
    from ltr_cli.clicklog.fit.record import fit_record
    from ltr_cli.clicklog.logfile import read_log

    rec = {"log": str(log), **fit_record(read_log(log), model, heldout, seed, iterations, bootstrap)}
    if as_json:
        typer.echo(json.dumps(rec, indent=2))
        return
    lines = [f"{log}: {model} ({rec['fitting']}) on {rec['train']['sessions']} of {rec['sessions']} sessions, "
             f"{rec['pairs']} query-document pairs"]
    parts = [("train", rec["train"])] + ([("heldout", rec["heldout_measures"])] if rec["heldout_measures"] else [])
    for name, m in parts:
        lines.append(f"{name:>8s}: {m['sessions']} sessions, log-likelihood {m['log_likelihood']:.6f}, "
                     f"perplexity {m['perplexity']:.6f}")
    lines += ["", f"{'rank':>4s}  " + "  ".join(f"{n + ' LL':>12s}  {n + ' ppl':>12s}" for n, _ in parts)]
    for r in range(len(parts[0][1]["perplexity_per_rank"])):
        cells = []
        for _, m in parts:
            ll, ppl = m["log_likelihood_per_rank"], m["perplexity_per_rank"]
            cells.append(f"{ll[r]:12.6f}  {ppl[r]:12.6f}" if r < len(ppl) else f"{'-':>12s}  {'-':>12s}")
        lines.append(f"{r + 1:4d}  " + "  ".join(cells))
    params = rec["parameters"]
    bounds = rec["intervals"]["parameters"] if "intervals" in rec else {}
    scalars = {k: v for k, v in params.items() if isinstance(v, float)}
    ranked = {k: v for k, v in params.items() if isinstance(v, list) and v and isinstance(v[0], float)}

    def shown(x: float, b: Any) -> str:
        return f"{x:.4f} [{b[0]:.4f}, {b[1]:.4f}]" if b else f"{x:.4f}"

    if scalars:
        lines += ["", "  ".join(f"{k} {shown(v, bounds.get(k))}" for k, v in scalars.items())]
    for k, v in ranked.items():
        lines.append(f"{k} by rank: " + ", ".join(shown(x, bounds[k][i] if k in bounds else None)
                                                  for i, x in enumerate(v)))
    if bounds:
        lines.append(f"[low, high]: 95% percentile bootstrap over {rec['intervals']['draws']} resamples of the "
                     "training sessions")
    lines.append("(--json prints every parameter)")
    typer.echo("\n".join(lines))


@command(clicks_app, "import")
def import_log(
    log: Annotated[Path, typer.Argument(metavar="LOG", help="an outside click log, .parquet or .csv: columns session, "
                                        "qid, doc, position, click and optionally propensity (docs/clicks.md)")],
    data_file: Annotated[Path, typer.Option("--data", metavar="FILE", help="the SVMlight/LETOR file whose queries "
                                            "and documents the log's qid and doc name")],
    out: Annotated[Path, typer.Option("--out", metavar="OUT", help="the Parquet click log to write")],
) -> None:
    """Import a click log from another system: every row checked against DATA (each qid a
    query of it, each doc an index among its documents), written in the tool's own format
    (sorted by session and position, policy 'logged', with a fingerprint), which
    ltr clicks fit, ltr clicks propensity and the counterfactual learners (clicks.log)
    read."""
    from ltr_cli.clicklog.importlog import read_outside, sessions_of
    from ltr_cli.clicklog.logfile import write_log
    from ltr_cli.data.formats import open_dataset
    from ltr_cli.data.registry import reader_options

    _refuse_input_as_out(out, [("imported log", log), ("data file", data_file)])
    outside = read_outside(log)
    counts: dict[str, int] = {}
    qids: list[str] = []
    for qid, y, _ in open_dataset(data_file, reader_options(None, None, None, None, None, None)).labelled_queries():
        if str(qid) not in counts:
            qids.append(str(qid))
        counts[str(qid)] = counts.get(str(qid), 0) + len(y)
    if not qids:
        raise LtrError(f"{data_file}: no queries; give the labelled SVMlight/LETOR file the log was shown from")
    sessions, propensity, shown = sessions_of(outside, counts, qids)
    n_sessions = int(sessions.session[-1]) + 1
    meta = write_log(out, sessions, shown, {"policy": "logged", "source": f"imported from {log.name}",
                                            "sessions": n_sessions, "shown": int(sessions.position.max())},
                     propensity)
    typer.echo(f"{out}: {n_sessions} sessions, {len(sessions.session)} shown documents, {int(sessions.click.sum())} "
               f"clicks, {len(shown)} queries{', with propensities' if propensity is not None else ''}, "
               f"fingerprint {meta['fingerprint'][:16]}")
