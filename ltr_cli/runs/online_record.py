"""An online run's results written: its summary (with the regret against the best fixed
weights in hindsight, when it logs it), manifest, rounds and final model, in its folder."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ltr_cli import console, kernels
from ltr_cli.config.experiment import ExperimentSpec
from ltr_cli.data.sources import QuerySource
from ltr_cli.learners.online.theory import theory_block
from ltr_cli.measures.conventions import CONVENTIONS
from ltr_cli.protocols.online import OnlineResult, summarize
from ltr_cli.protocols.online_run import PreparedRun, seeds
from ltr_cli.core.round_log import SURROGATE
from ltr_cli.results.models import LinearModel
from ltr_cli.runs.folder import RunOutcome, record_run
from ltr_cli.runs.kernel_plan import KernelPlan
from ltr_cli.runs.plan import PlannedRun


def _conventions(spec: ExperimentSpec) -> dict[str, Any]:
    """The online run's metric conventions: the convention object's description, with the
    run's own policies."""
    m = spec.metrics
    return {
        **CONVENTIONS[m.convention].describe(),
        "ndcg_cutoff": "min(k, m); ideal DCG over all m labels sorted descending",
        "no_relevant": m.no_relevant,
        "ties": m.ties,
        "ap_relevant": f"label > {m.relevance_threshold:g}",
        "eru": {"d": m.eru_d, "alpha": m.eru_alpha},
        "time_average": "cumulative mean over rounds (NaN rows skipped)",
        "fidelity": spec.fidelity,
        **({"round_metrics": "on the shown list (protocol.clicks.shown), ideal DCG over all m labels",
            "discounted_cumulative": f"sum over rounds t of {spec.protocol.clicks.gamma:g}^(t-1) x the round's "
                                     "value (NaN rows skipped)"}
           if spec.protocol.clicks is not None else {}),
    }


def _found(record: dict[str, Any] | None) -> str:
    """How the comparator was found, for the closing progress line."""
    if not record or record.get("evaluations") is None:
        return ""
    gap = record.get("gap")
    said = "no bound (not convex)" if gap is None else f"certified within {gap:.2g}"
    return f"{said}, {str(record.get('start', '')).split(':')[0]}"


def write_run(run: PlannedRun, prep: PreparedRun, result: OnlineResult, source: QuerySource, constants: Any,
              argv: list[str] | None, quiet: bool = True, planned_path: KernelPlan | None = None) -> RunOutcome:
    """Write a computed online run (summary, manifest, rounds, final model) and drop its checkpoint."""
    spec, name = run.spec, run.learner
    lspec: Any = spec.learners[name]
    protocol = spec.protocol
    measures = prep.measures
    gamma = protocol.clicks.gamma if protocol.clicks is not None else None
    summary = {"dataset": source.name, **summarize(result, measures, gamma)}
    if protocol.drop_last_query:  # rounds the authors' loop costs: one query per file and pass
        summary["dropped_last_queries"] = prep.stream_stats.dropped_last
    if constants is not None:
        stream, generated = constants
        summary["theory"] = theory_block(lspec, stream, generated)
    if prep.heldout is not None:  # the last evaluation of each metric (the run's final weights' when due)
        summary["heldout"] = {"every": prep.heldout.every, "queries": prep.heldout.identity["queries"],
                              "last": {c: _last_defined(result.log.columns[c]) for c in prep.heldout.columns}}
    rounds, regret_record = result.log.arrow_table(), None
    if protocol.log_regret:
        from ltr_cli.protocols.regret import not_logged, rebuild_stream, regret, with_regret
    if prep.loss is not None:
        from ltr_cli.protocols.regret_progress import HindsightProgress

        rounds = result.rounds
        what = f"[{spec.experiment}] {name} (seed {spec.seed})"
        if not quiet and prep.loss.radius is not None:
            console.note(f"{what}: regret: finding the best fixed weights in hindsight over the run's "
                         f"{len(rounds):,} rounds")
        stream = rebuild_stream(source, protocol, np.random.default_rng(seeds(spec.seed)[0]), rounds)
        progress = HindsightProgress(what, quiet)
        try:
            column, regret_record, summary["regret"] = regret(
                prep.loss, stream, rounds[SURROGATE].to_numpy(dtype=np.float64), source.n_features, progress,
                json.dumps(source.identity(), sort_keys=True, default=str))
        finally:
            progress.close(_found(regret_record))
        rounds = with_regret(rounds, column)
    elif protocol.log_regret:
        regret_record = not_logged(prep.learner)
    # the model the run ends with, in the batch runs' format: `ltr score RUN_DIR FILE`
    own_model = getattr(prep.learner, "final_model", None)  # a neural learner's weights are its parameters
    final = own_model(result.weights) if own_model is not None else LinearModel(
        np.asarray(result.weights, dtype=np.float64)).to_dict()
    models = {"final": {**final,
                        "round": len(result.log),
                        **({"normalize": {"kind": source.normalize}} if source.normalize != "none" else {})}}
    outcome = record_run(run, prep.run_dir, rounds, summary, {
        "dataset": {"description": source.description, "n_features": source.n_features,
                    "normalize": source.normalize,
                    "fingerprint": source.identity()},
        "conventions": _conventions(spec),
        "learner_conventions": {**lspec.describe(), **prep.learner.resolved_settings()},
        "protocol": protocol.model_dump(mode="json"),
        **({"heldout": prep.heldout.identity} if prep.heldout is not None else {}),
        **({"clicks": {**prep.clicks.model.describe(), "shown": prep.clicks.shown, "gamma": protocol.clicks.gamma}}
           if prep.clicks is not None and protocol.clicks is not None else {}),
        **({"regret": regret_record} if regret_record is not None else {}),
        "kernels": planned_path.record() if planned_path is not None else {
            "path": "compiled" if kernels.ENABLED else "reference",
            "why": "not planned (a sweep): compiled where a learner has kernels, unless LTR_KERNELS=0"},
    }, {"wall_seconds": summary["wall_seconds"], "rounds_per_second": summary["rounds_per_second"],
        "kernel_load_seconds": summary["kernel_load_seconds"],
        # runs computed in one pass over the stream; wall_seconds is this run's even share
        "runs_in_one_pass": result.group_size},
        models, argv)
    prep.checkpointer.remove()
    return outcome


def _last_defined(values: Any) -> float | None:
    """The last value that is not NaN (None if every one is)."""
    kept = np.asarray(values, dtype=np.float64)
    kept = kept[~np.isnan(kept)]
    return float(kept[-1]) if kept.size else None
