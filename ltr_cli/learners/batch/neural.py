"""``type: neural``: a neural scorer trained on a ranking loss under the k-fold protocol, on
JAX (the optional extra ``neural``: ``pip install -e '.[neural]'``; JAX is imported only
when a fit runs).

.. code-block:: yaml

    learners:
      mlp:
        type: neural
        scorer: {kind: mlp, hidden: [64, 64], activation: relu, dropout: 0.0}
        loss: {name: lambdaloss, weighing_scheme: ndcgLoss2PP_scheme}
        transform: zscore
        train: {epochs: 30, batch_queries: 64, slate: 240, optimizer: adam, lr: 0.001}
        grid: {train.lr: [0.001, 0.0003]}

* ``scorer``: a kind of the ``ltr_cli.scorers`` group and its keys
  (:mod:`ltr_cli.neural.scorers`); ``loss``: a loss of the ``ltr_cli.losses`` group by its
  name (allRank's function names in lower case) and its parameters under allRank's names;
  ``transform``: :mod:`ltr_cli.neural.transforms`, fitted on each fold's training split;
  ``train``: :class:`~ltr_cli.neural.train.TrainSettings`.
* ``grid``: any key, dotted (``train.lr``, ``scorer.dropout``, ``loss.sigma``,
  ``train.early_stopping.patience``, ``transform``): every combination is trained on train
  and the best on vali kept, as for the other batch learners.
* Each fit's vali value, every epoch, is the CV's selection metric (``cv.select_by``, or
  ``train.early_stopping.metric``) under ``cv.convention``, computed by the same code as
  the fold's table; the best epoch's parameters are the model.
* ``clicks``: train on each fold's click log instead of the labels (the
  :class:`~ltr_cli.clicklog.signal.ClickSignal` of the other click learners): the labels of
  the training queries are replaced by a per-document estimator's targets
  (``clicks.correction``: naive, ips, policy-aware, affine, dm, dr;
  :mod:`ltr_cli.learners.batch.click_targets`), and the loss must be linear in them
  (:data:`LINEAR_LOSSES`; the default under ``clicks`` is ``softmax_ce``,
  ``-sum_d R_d log softmax(s)_d``), so that an unbiased estimate of relevance gives an
  unbiased estimate of the loss on the true relevance. Test reads the labels; the epoch
  and the grid point are chosen on the vali labels (``select: labels``), or with
  ``select: clicks`` on the estimate of DCG@10 from a log of the vali queries, each
  document weighing its target on that log (as the other click learners choose grid points).
  ``click_documents: shown`` cuts each training query to the documents the fold's log showed
  at least once (:func:`shown_documents`); ``all`` (the default) keeps every document.
* Seeds: the experiment's ``seed`` and the fold number seed initialisation, dropout and the
  batches. On the CPU a rerun gives the same bytes; between epochs the fit is checkpointed
  (``FitContext.store``), so a killed run resumes to the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from typing import Any, ClassVar, Literal, Union

import numpy as np
from pydantic import Field, field_validator, model_validator

from ltr_cli.clicklog.signal import ClickSignal
from ltr_cli.core.schema import BatchLearnerConfig
from ltr_cli.errors import LtrError
from ltr_cli.learners.batch.common import Queries
from ltr_cli.learners.batch.convergence import Convergence, FitContext
from ltr_cli.neural import jaxenv, transforms
from ltr_cli.neural.train import TrainSettings

GridValue = Union[int, float, str, bool, list[int]]
SECTIONS = ("scorer", "loss", "train")
MAX_GRID_POINTS = 10_000
#: the losses linear in the labels, which a fit on counterfactual click estimates takes
LINEAR_LOSSES = ("softmax_ce",)
OPTIMISER_KEYS = {"optimizer", "lr", "momentum", "weight_decay", "clip_norm"}  # what the compiled step reads


def _loss_kind(name: Any) -> Any:
    """The loss kind ``name`` (the ``ltr_cli.losses`` registry)."""
    try:
        from ltr_cli.neural.losses import resolve
    except ImportError:
        raise LtrError("neural: this install has no ranking losses (ltr_cli.neural.losses); reinstall: "
                       "pip install -e '.[neural]'") from None
    return resolve(name)


def loss_block(block: Any) -> dict[str, Any]:
    """A ``loss:`` block with its kind's canonical name and every parameter; ValueError."""
    if not isinstance(block, dict) or not isinstance(block.get("name"), str):
        raise ValueError("expected {name: LOSS, PARAMETER: VALUE, ...}")
    if jaxenv.missing():  # the losses' modules need JAX: ltr run stops on missing() first
        return dict(block)
    try:
        kind = _loss_kind(block["name"])
        bound = kind.bind({k: v for k, v in block.items() if k != "name"})
    except LtrError as exc:
        raise ValueError(str(exc)) from None
    return {"name": kind.name, **bound}


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    """``data`` with the dotted key set (the sections' own dicts are copied)."""
    head, _, rest = dotted.partition(".")
    if not rest:
        data[head] = value
        return
    node = data[head] = dict(data.get(head) or {})
    parts = rest.split(".")
    for part in parts[:-1]:
        node[part] = dict(node.get(part) or {})
        node = node[part]
    node[parts[-1]] = value


class NeuralSpec(BatchLearnerConfig):
    """A neural scorer (linear, MLP, self-attention, DASALC-like) trained with optax on a
    ranking loss, each epoch checked on vali, the best epoch kept."""

    type: Literal["neural"]
    summary: ClassVar[str] = ("batch (cv:): a neural scorer (linear, mlp, attention, dasalc) trained on a ranking "
                              "loss with JAX (not in the papers; needs pip install -e '.[neural]')")
    hyper_parameters: ClassVar[tuple[str, ...]] = ("scorer.KEY", "loss.KEY", "train.KEY", "transform")
    scorer: dict[str, Any] = Field(default_factory=lambda: {"kind": "mlp"}, validate_default=True,
                                   description="{kind: linear | mlp | attention | dasalc (or a plugin's), its keys}")
    loss: dict[str, Any] = Field(default_factory=lambda: {"name": "lambdaloss",
                                                          "weighing_scheme": "ndcgLoss2PP_scheme"},
                                 validate_default=True,
                                 description="{name: a loss (allRank's names: listnet, lambdaloss, ...), its "
                                 "parameters under allRank's names}")
    transform: Any = Field("zscore", validate_default=True, description="feature transform fitted on each fold's train split: zscore, "
                           "allrank, log1p, query_zscore, query_minmax, none, or a list of them")
    train: TrainSettings = Field(default_factory=TrainSettings, description="the training loop")
    grid: dict[str, list[GridValue]] = Field(  # type: ignore[assignment]  # any key's values, not numbers only
        default_factory=dict, description="dotted key (train.lr, scorer.hidden, ...) -> values to try; the best "
        "on vali is kept")
    clicks: ClickSignal | None = Field(None, description="train on each fold's click log instead of the labels: "
                                       "the targets of a per-document estimator (naive, ips, policy-aware, affine, "
                                       "dm, dr; see docs/clicks.md) under a loss linear in them (softmax_ce)")
    click_documents: Literal["all", "shown"] = Field(
        "all", description="with clicks: the documents of a training query the loss ranks: all (a document the "
        "log never showed has the estimator's value for it, 0 for most) or shown (only those the fold's log "
        "showed at least once; a query it never showed is left out)")
    id_defaults: ClassVar[dict[str, Any]] = {"clicks": None, "click_documents": "all"}
    #: what it reads of a click estimator: per-document targets
    reads_clicks: ClassVar[str] = "targets"

    @model_validator(mode="before")
    @classmethod
    def _click_loss(cls, data: Any) -> Any:
        """Under ``clicks`` the default loss is ``softmax_ce`` (linear in the targets)."""
        if isinstance(data, dict) and data.get("clicks") is not None and "loss" not in data:
            return {**data, "loss": {"name": "softmax_ce"}}
        return data

    @field_validator("scorer")
    @classmethod
    def _scorer(cls, block: dict[str, Any]) -> dict[str, Any]:
        from ltr_cli.neural import scorers

        return scorers.normalized(block)

    @field_validator("loss")
    @classmethod
    def _loss(cls, block: dict[str, Any]) -> dict[str, Any]:
        return loss_block(block)

    @field_validator("transform")
    @classmethod
    def _transform(cls, spec: Any) -> Any:
        return transforms.parse(spec)

    @field_validator("grid")
    @classmethod
    def _grid(cls, grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for key, values in grid.items():
            head = key.partition(".")[0]
            if not (key == "transform" or (head in SECTIONS and key.count(".") >= 1 and all(key.split(".")))):
                raise ValueError(f"grid key {key!r} is not a dotted key of scorer, loss or train (e.g. train.lr, "
                                 "scorer.dropout) nor transform")
            if key in ("scorer.kind", "loss.name"):
                raise ValueError(f"grid key {key!r}: give each {key.replace('.', ' ')} a learner of its own")
            if not values:
                raise ValueError(f"grid {key!r} has no values")
        if math.prod(len(v) for v in grid.values()) > MAX_GRID_POINTS:
            raise ValueError(f"the grid has more than {MAX_GRID_POINTS} points")
        return grid

    @model_validator(mode="after")
    def _clicks(self) -> NeuralSpec:
        if self.clicks is None:
            return self
        from ltr_cli.clicklog.estimators import gives

        refused = gives(self.clicks.correction, "targets")
        if refused is not None:
            raise ValueError(refused)
        if self.loss["name"] not in LINEAR_LOSSES:
            raise ValueError(f"loss: {self.loss['name']} is not linear in its labels, so it would not stay unbiased "
                             f"on click estimates; under clicks: use loss: {{name: {LINEAR_LOSSES[0]}}}")
        if self.clicks.propensity_draw:
            raise ValueError("clicks.propensity_draw: drawn propensities are ips's per-position weights; a neural "
                             "learner's per-document targets take the estimate as it is: drop propensity_draw")
        if self.clicks.pairs != "unclicked":
            raise ValueError("clicks.pairs: a neural learner trains on per-document targets, not pairs; drop pairs")
        return self

    @model_validator(mode="after")
    def _click_documents(self) -> NeuralSpec:
        if self.click_documents != "all" and self.clicks is None:
            raise ValueError(f"click_documents: {self.click_documents} chooses among the documents of a click log; "
                             "it needs clicks: (or drop click_documents)")
        return self

    @model_validator(mode="after")
    def _points(self) -> NeuralSpec:
        for point in self.grid_points():
            try:
                self.resolved(point)
            except ValueError as exc:
                shown = ", ".join(f"{k}={v!r}" for k, v in point.items())
                raise ValueError(f"grid point {shown}: {' '.join(str(exc).split())[:300]}") from None
        return self

    def resolved(self, point: dict[str, Any]) -> NeuralSpec:
        """This learner with one grid point's values set (validated again)."""
        if not point:
            return self
        data = self.model_dump(mode="json")
        data["grid"] = {}
        for key, value in point.items():
            _set(data, key, value)
        return type(self).model_validate(data)

    def paper_role(self) -> str:
        return f"neural {self.scorer['kind']}"

    def describe(self) -> dict[str, Any]:
        described = {**super().describe(), "library": "jax + optax",
                     "vali": "every epoch, by cv.select_by (or train.early_stopping.metric) under cv.convention; "
                             "the best epoch kept",
                     "determinism": "seeded by the experiment's seed and the fold; on the CPU the same bytes on "
                                    "every run"}
        if self.clicks is not None:
            described["training_signal"] = self.clicks.describe()
        if not jaxenv.missing() and "jax" in __import__("sys").modules:
            described["jax"] = jaxenv.describe(jaxenv.device(self.train.device))
        return described

    def missing(self) -> str | None:
        return jaxenv.missing()

    def fit(self, train: Queries, params: dict[str, Any], context: FitContext | None = None) -> Any:
        return fit_neural(self.resolved(params), train, context)


def shown_documents(queries: list[tuple[np.ndarray, np.ndarray]], sessions: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """``click_documents: shown``: each training query ``(X (m_q, d), targets (m_q,))`` cut
    to the documents some row of the fold's log ``sessions`` showed (``query``, ``doc``
    index them), in their order; a query with none shown is left out."""
    sizes = np.array([len(y) for _, y in queries], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    seen = np.zeros(int(offsets[-1]), dtype=bool)
    seen[offsets[np.asarray(sessions.query, dtype=np.int64)] + np.asarray(sessions.doc, dtype=np.int64)] = True
    out = []
    for q, (X, y) in enumerate(queries):
        keep = seen[offsets[q]:offsets[q + 1]]
        if keep.any():
            out.append((X[keep], y[keep]))
    return out


def _digest(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.tobytes() if isinstance(p, np.ndarray) else json.dumps(p, sort_keys=True).encode())
    return h.hexdigest()


def _flat(tree: Any) -> dict[str, np.ndarray]:
    from ltr_cli.neural.arrays import named

    return {k: np.array(v, dtype=np.float32) for k, v in named(tree, "params").items()}


def fit_neural(spec: NeuralSpec, train: Queries, context: FitContext | None) -> Any:
    """One fit (see the module docstring); the model is a :class:`~ltr_cli.neural.model.NeuralModel`."""
    from ltr_cli.measures.conventions import Measure
    from ltr_cli.measures.stacked import evaluate_lists
    from ltr_cli.neural import batching, scorers
    from ltr_cli.neural import train as loop
    from ltr_cli.neural.model import NeuralModel

    started = time.perf_counter()
    if not train:
        raise LtrError("neural: a fold has no training queries")
    s = spec.train
    d = int(train[0][0].shape[1])
    dev = jaxenv.device(s.device)
    total = jaxenv.device_memory(dev)
    budget = int(s.memory_gb * 2**30) if s.memory_gb is not None else (total // 2 if total else None)
    context = context or FitContext()
    labels = [y for _, y in train]
    if spec.clicks is not None:
        if context.clicks is None or context.clicks.targets is None:
            raise LtrError("neural: clicks: trains on a fold's click log; run it under cv: (ltr run)")
        labels = context.clicks.targets
    transform = transforms.fit(spec.transform, [X for X, _ in train], d)
    pairs = [(X, np.asarray(y, dtype=np.float32)) for (X, _), y in zip(train, labels)]
    chosen: dict[str, Any] = {}
    if spec.clicks is not None and spec.click_documents == "shown":
        assert context.clicks is not None
        pairs = shown_documents(pairs, context.clicks.sessions)
        if not pairs:
            raise LtrError("neural: click_documents: shown, but the fold's click log shows no training document; "
                           "log more sessions or use click_documents: all")
        chosen = {"click_documents": {"kind": "shown", "queries": len(pairs),
                                      "documents": int(sum(len(y) for _, y in pairs)),
                                      "of_documents": int(sum(len(y) for _, y in train))}}
    data = batching.pack([(transform.apply(X), y) for X, y in pairs], d)
    if not len(data):
        raise LtrError("neural: every training query of the fold is empty")
    kind = _loss_kind(spec.loss["name"])
    bound = kind.bind({k: v for k, v in spec.loss.items() if k != "name"})
    outputs = kind.n_outputs(bound)
    scorer = scorers.build(spec.scorer, outputs)
    longest = batching.bucket(int(data.lengths.max()), s.slate)
    if budget is not None:
        need = batching.bytes_needed(scorer.floats(d, longest), d, min(s.batch_queries, len(data)), longest, True)
        if need > budget:
            raise LtrError(f"neural: a training batch of {s.batch_queries} queries of {longest} documents needs about "
                           f"{need / 2**30:.1f} GiB, over the budget of {budget / 2**30:.1f} GiB; lower "
                           "train.batch_queries or train.slate (or raise train.memory_gb)")
    vali = context.vali or []
    conv = context.conv
    metric = s.early_stopping.metric
    measure = Measure(metric, conv=conv) if metric is not None and conv is not None else \
        (Measure(metric) if metric is not None else context.select)

    def model_of(params: Any) -> NeuralModel:
        return NeuralModel(spec.scorer, outputs, transform, _flat(params), d, budget=budget, device=dev)

    if vali and measure is not None:
        vali_ids = context.vali_ids or [f"#{i + 1}" for i in range(len(vali))]
        probe = NeuralModel(spec.scorer, outputs, transform, {}, d, budget=budget)
        for qid, (X, _) in zip(vali_ids, vali):
            try:
                probe.check_length(X.shape[0])
            except batching.QueryTooLong as exc:
                raise LtrError(f"neural: vali query {qid}: {exc}") from None

    def validate(params: Any) -> float:
        if context.vali_clicks is not None and vali:  # clicks.select: clicks: the click estimate of DCG@10
            from ltr_cli.learners.batch.click_data import click_score

            return click_score(model_of(params), vali, context.vali_clicks)
        if not vali or measure is None:
            return float("nan")
        model = model_of(params)
        value = evaluate_lists([(model.scores(X), y) for X, y in vali], conv or measure.conv, [measure])
        got = value.get(measure.name)
        return float("nan") if got is None else float(got)

    dumped = spec.model_dump(mode="json")
    for key, default in spec.id_defaults.items():  # keys added later, at their defaults: fingerprints stay
        if key in dumped and dumped[key] == default:
            dumped.pop(key)
    fingerprint = _digest(dumped, d, context.seed, context.fold, data.X, data.labels,
                          data.offsets)
    result = loop.fit(scorer, lambda out, y, mask: kind.fn(out, y, mask, **bound), data, s,
                      (int(context.seed), int(context.fold or 0)), validate, fingerprint, context.store, dev,
                      programs=json.dumps([spec.scorer, spec.loss, s.model_dump(mode="json",
                                                                               include=OPTIMISER_KEYS)],
                                          sort_keys=True))
    model = model_of(result.best)
    seconds = sum(result.seconds)
    steady = result.seconds[1:] or result.seconds
    details = {"best_epoch": result.best_epoch + 1, "epochs": result.epochs_run, "stopped_early": result.stopped_early,
               "vali_metric": "click estimate of dcg@10" if context.vali_clicks is not None and vali else
               (measure.name if measure is not None else None),
               **{k: [None if v != v else v for v in vals] for k, vals in result.curves.items()},
               "documents_per_epoch": result.documents,
               "documents_per_second": round(result.documents * len(steady) / max(sum(steady), 1e-9), 1),
               "epoch_seconds": [round(x, 4) for x in result.seconds],
               "compile_seconds": round(result.compile_seconds, 4),
               **({"resumed_after_epoch": result.resumed_from + 1} if result.resumed_from is not None else {}),
               **chosen}
    best_loss = result.curves["train_loss"][result.best_epoch] if result.curves["train_loss"] else float("nan")
    model.info = {"convergence": Convergence(f"optax {s.optimizer}", result.epochs_run, best_loss, float("nan"), 0.0,
                                             result.stopped_early, False, time.perf_counter() - started or seconds,
                                             details).to_dict()}
    return model

