"""Published numbers of neural learning to rank on MSLR-WEB30K, shown by ``ltr report``
beside the batch runs of a config that names their paper (``paper: neuralndcg``,
``context-aware`` or ``neural-vs-gbdt``).

Each :class:`Published` number says which rule its source applied to queries without a
relevant document (``one``: NDCG 1, ``zero``: NDCG 0, ``skip``: dropped; the rule moves
WEB30K's NDCG@10 by about 1.5 points), and the report puts the run's own convention beside
it, so a difference of rules is never read as a difference of rankers. A run is matched to
a number by its learner's config (``type``, ``scorer.kind``, ``loss.name`` and the loss
keys that name the row, such as LambdaLoss's ``weighing_scheme``); a number no run matches
(the NeuralNDCG paper's XGBoost) is listed with nothing beside it. Values are fractions
(the papers print percentages).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: the ``paper:`` values whose numbers this module holds
NEURAL_PAPERS = ("neuralndcg", "context-aware", "neural-vs-gbdt")
EMPTY_TEXT = {"one": "1", "zero": "0", "skip": "dropped"}


@dataclass(frozen=True)
class Published:
    """One printed row: ``papers`` (the ``paper:`` values it is shown for), its source and
    row as printed, the data it was measured on, ``match`` (dotted learner config keys ->
    value) and its values by metric."""

    papers: tuple[str, ...]
    source: str
    row: str
    dataset: str
    data: str
    empty: str
    match: dict[str, Any] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)


def _transformer(loss: str, **keys: Any) -> dict[str, Any]:
    return {"type": "neural", "scorer.kind": "attention", "loss.name": loss,
            **{f"loss.{k}": v for k, v in keys.items()}}


_T3 = "NeuralNDCG paper (Pobrotyn & Bialobrzeski 2021), Table 3"
_CA = "context-aware paper (Pobrotyn et al. 2020), via allRank issue 62"
_QIN = "Qin et al. (ICLR 2021), Table 2"
_LGB = "LightGBM docs (lambdarank, lr 0.1, 255 leaves, 500 trees, min_sum_hessian 100)"
_FOLD1 = "MSLR-WEB30K Fold1 test"
PUBLISHED: tuple[Published, ...] = (
    Published(("neuralndcg",), _T3, "Transformer + NeuralNDCG@max", "mslr-web30k", _FOLD1, "one",
              _transformer("neuralndcg"), {"ndcg@5": 0.5156, "ndcg@10": 0.5346}),
    Published(("neuralndcg",), _T3, "Transformer + LambdaRank@max", "mslr-web30k", _FOLD1, "one",
              _transformer("lambdaloss", weighing_scheme="lambdaRank_scheme"), {"ndcg@5": 0.5155, "ndcg@10": 0.5347}),
    Published(("neuralndcg",), _T3, "Transformer + ListNet", "mslr-web30k", _FOLD1, "one",
              _transformer("listnet"), {"ndcg@5": 0.5075, "ndcg@10": 0.5280}),
    Published(("neuralndcg",), _T3, "Transformer + ListMLE", "mslr-web30k", _FOLD1, "one",
              _transformer("listmle"), {"ndcg@5": 0.4981, "ndcg@10": 0.5182}),
    Published(("neuralndcg",), _T3, "Transformer + ApproxNDCG", "mslr-web30k", _FOLD1, "one",
              _transformer("approxndcgloss"), {"ndcg@5": 0.4907, "ndcg@10": 0.5090}),
    Published(("neuralndcg",), _T3, "Transformer + RMSE", "mslr-web30k", _FOLD1, "one",
              _transformer("pointwise_rmse"), {"ndcg@5": 0.5051, "ndcg@10": 0.5246}),
    Published(("neuralndcg",), _T3, "XGBoost rank:pairwise (not run here)", "mslr-web30k", _FOLD1, "one",
              {"type": "xgboost"}, {"ndcg@5": 0.4680, "ndcg@10": 0.4917}),
    Published(("context-aware",), _CA, "self-attention + NDCGLoss2++", "mslr-web30k",
              "MSLR-WEB30K, mean of the 5 folds' vali", "one",
              _transformer("lambdaloss", weighing_scheme="ndcgLoss2PP_scheme"), {"ndcg@5": 0.5265, "ndcg@10": 0.5449}),
    Published(("context-aware",), _CA, "MLP + NDCGLoss2++", "mslr-web30k", "MSLR-WEB30K, mean of the 5 folds' vali",
              "one", {"type": "neural", "scorer.kind": "mlp", "loss.name": "lambdaloss",
                      "loss.weighing_scheme": "ndcgLoss2PP_scheme"}, {"ndcg@5": 0.4915, "ndcg@10": 0.5122}),
    Published(("neural-vs-gbdt",), _QIN, "LightGBM lambdaMART", "mslr-web30k", _FOLD1, "skip",
              {"type": "lambdamart"}, {"ndcg@5": 0.4966}),
    Published(("neural-vs-gbdt",), _QIN, "DASALC", "mslr-web30k", _FOLD1, "skip",
              {"type": "neural", "scorer.kind": "dasalc"}, {"ndcg@5": 0.5092}),
    Published(("neural-vs-gbdt",), _QIN, "DASALC-ens (an ensemble; not run here)", "mslr-web30k", _FOLD1, "skip",
              {"type": "ensemble"}, {"ndcg@5": 0.5172}),
    Published(("neuralndcg", "neural-vs-gbdt"), _LGB, "LightGBM lambdarank", "mslr-web30k", _FOLD1, "one",
              {"type": "lambdamart"}, {"ndcg@5": 0.5100, "ndcg@10": 0.5274}),
)
METRICS = ("ndcg@5", "ndcg@10")
COLUMNS = ["source", "row", "data", "paper_empty", "ndcg@5", "ndcg@10", "beside", "run_ndcg@5", "run_ndcg@10",
           "run_convention"]


def _get(block: dict[str, Any], dotted: str) -> Any:
    node: Any = block
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def learner_block(run: Any) -> dict[str, Any]:
    """The run's learner config (its run folder's config holds that one learner)."""
    learners = run.config.get("learners") if isinstance(run.config, dict) else None
    if not isinstance(learners, dict) or not learners:
        return {}
    block = learners.get(run.summary.get("learner")) or next(iter(learners.values()))
    return block if isinstance(block, dict) else {}


def matches(entry: Published, run: Any) -> bool:
    """Whether ``run`` (a batch run of a config naming one of the entry's papers, on its
    dataset or data shaped like it) is the row's learner."""
    from ltr_cli.reports.paper_numbers import config_paper

    if config_paper(run.config) not in entry.papers:
        return False
    block = learner_block(run)
    return bool(block) and all(_get(block, k) == v for k, v in entry.match.items())


def named_papers(runs: list[Any]) -> list[str]:
    """The neural papers the runs' configs name, in the order first named."""
    from ltr_cli.reports.paper_numbers import config_paper

    out: list[str] = []
    for run in runs:
        paper = config_paper(run.config)
        if paper in NEURAL_PAPERS and paper not in out:
            out.append(paper)
    return out


def primary(run: Any) -> Published | None:
    """The number of the paper the run's config names that the run is the row of."""
    from ltr_cli.reports.paper_numbers import config_paper

    paper = config_paper(run.config)
    for entry in PUBLISHED:
        if entry.papers[0] == paper and matches(entry, run):
            return entry
    return None


def verdict(entry: Published, run: Any, convention: str | None) -> str:
    """What the difference between a run and the number it sits beside can mean."""
    said = [f"{entry.source}: {entry.row}, {entry.data}, empty queries {EMPTY_TEXT[entry.empty]}; "
            f"this run: {convention or 'its convention unknown'}"]
    from ltr_cli.reports.comparability import _generated

    dataset = str(run.summary.get("dataset", ""))
    generated = _generated(run)
    if generated:
        said += generated
    elif dataset != entry.dataset:
        said.append(f"not the paper's data ({dataset or 'unknown'}): not comparable")
    return "; ".join(said)


def published_rows(runs: list[Any]) -> list[dict[str, Any]]:
    """Every number of the papers the runs name, each beside the runs it matches (their
    NDCG@5 and @10 and convention), or beside nothing."""
    from ltr_cli.reports.captions import run_convention

    papers = set(named_papers(runs))
    rows = []
    for entry in PUBLISHED:
        if not papers & set(entry.papers):
            continue
        beside = [r for r in runs if matches(entry, r)] or [None]
        for run in beside:
            metrics = run.summary.get("metrics", {}) if run is not None else {}
            rows.append({
                "source": entry.source, "row": entry.row, "data": entry.data,
                "paper_empty": EMPTY_TEXT[entry.empty],
                **{m: entry.values.get(m) for m in METRICS},
                "beside": "" if run is None else f"{run.experiment}/{run.summary.get('learner')}",
                **{f"run_{m}": metrics.get(m) if run is not None else None for m in METRICS},
                "run_convention": "" if run is None else (run_convention(run) or ""),
            })
    return rows
