"""A fold's click log and what a learner trains on: the sessions, each shown position's
weight, and the log's identity.

The log of a fold is simulated on the fold's training queries (as given, after the run's
normalisation) by :func:`fold_log`: a logging RankSVM is fitted on ``logger_fraction`` of
them (drawn with the seed), ranks every training query, and ``policy`` shows its lists to
a click model. ``ltr clicks log`` writes the same sessions to Parquet, so a run reading the
written logs and a run generating them train on the same clicks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.clicklog.estimators import ClickLog, Estimator, check_weights, estimator
from ltr_cli.clicklog.logged import MAX_WEIGHT, inverse_weights
from ltr_cli.clicklog.signal import ClickSignal, GenerateSpec
from ltr_cli.clicklog.simulate import Sessions, simulate
from ltr_cli.errors import LtrError

Queries = list[tuple[np.ndarray, np.ndarray]]
PROPENSITY_LIMIT = 1 << 20  # bytes of a propensity file at most (its JSON is a few hundred)


@dataclass
class ClickData:
    """One fold's clicks: ``sessions`` (``query`` indexes the fold's training queries),
    the weight of a click at each position (``weights[k - 1]``: 1 for naive clicks,
    min(1/p_k, clip) for IPS) and what the log is (``meta``: policy, model, fingerprint,
    propensities)."""

    sessions: Sessions
    weights: np.ndarray
    correction: str
    meta: dict[str, Any] = field(default_factory=dict)
    #: the pairs a pairwise learner takes (``clicks.pairs``: unclicked or query)
    versus: str = "unclicked"
    #: a listwise learner's per-document targets, float (m_q,) per training query (None: weights only)
    targets: list[np.ndarray] | None = None
    #: ``clicks.debias``: a pairwise-debiasing correction's settings (None: its defaults)
    debias: Any = None
    #: ``clicks.propensity: logged``: the weight of a click at each row of ``sessions``,
    #: float (rows,), min(1/p_r, clip), used instead of ``weights`` (which then holds each
    #: position's mean row weight, for the record); None: the per-position weights
    row_weights: np.ndarray | None = None

    #: what a learner derives from the log once per fold, shared by the fits of its grid
    cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def pairs(self, width: int, versus: str = "unclicked", documents: Any = None, positions: bool = False) -> Any:
        """The log's weighted preference pairs (:func:`ltr_cli.clicklog.pairs.click_pairs`;
        ``versus``, ``documents``, ``positions``: its arguments), computed once per fold and
        shared by its grid's fits."""
        from ltr_cli.clicklog.pairs import click_pairs

        key = f"pairs {width} {versus}" + (" positions" if positions else "")
        if key not in self.cache:
            self.cache[key] = click_pairs(self.sessions, self.weights, width, versus=versus, documents=documents,
                                          positions=positions, row_weight=self.row_weights)
        return self.cache[key]

    def target_pairs(self) -> Any:
        """The pairs of the per-document targets (:func:`ltr_cli.clicklog.target_pairs.target_pairs`:
        i over j weighing ``t_i - t_j`` where ``t_i > t_j``), computed once per fold."""
        from ltr_cli.clicklog.target_pairs import target_pairs

        assert self.targets is not None
        if "target pairs" not in self.cache:
            self.cache["target pairs"] = target_pairs(self.targets, f"clicks.correction: {self.correction}")
        return self.cache["target pairs"]


def fold_seed(seed: int, fold: int | None) -> int:
    """The seed of a fold's log: one stream per (seed, fold)."""
    return int(np.random.SeedSequence([seed, 0 if fold is None else fold]).generate_state(1)[0])


def logging_ranker(train: Queries, fraction: float, C: float, seed: int) -> tuple[np.ndarray, list[int]]:
    """The logging RankSVM's weights, fitted on ``ceil(fraction x queries)`` training
    queries drawn with ``seed``, and the queries it saw."""
    from ltr_cli.learners.batch.ranksvm import fit_ranksvm

    take = max(1, math.ceil(fraction * len(train)))
    chosen = sorted(np.random.default_rng(seed).permutation(len(train))[:take].tolist())
    return fit_ranksvm([train[i] for i in chosen], C).w, chosen


def build_click_model(gen: GenerateSpec, where: str = "clicks.generate.model") -> Any:
    from ltr_cli.clicks.spec import build_model

    return build_model(gen.model, gen.grades, gen.stop, gen.eta, where=where, hint="clicks.generate.grades",
                       keys=("clicks.generate.stop", "clicks.generate.eta"))


def fold_log(train: Queries, gen: GenerateSpec, fold: int | None, policy: str | None = None,
             sessions: int | None = None, shown_on: Queries | None = None) -> tuple[Sessions, dict[str, Any]]:
    """The fold's simulated log (``policy`` and ``sessions`` override ``gen``'s) and its
    metadata (without the fingerprint, which the writer adds). ``shown_on``: log these
    queries (the vali split's) instead of the training queries, with the same logging
    ranker and another stream of the seed."""
    seed = fold_seed(gen.seed, fold)
    w, chosen = logging_ranker(train, gen.logger_fraction, gen.logger_C, seed)
    if shown_on is not None:
        seed = int(np.random.SeedSequence([gen.seed, 0 if fold is None else fold, 1]).generate_state(1)[0])
        train = shown_on
    scores = [np.asarray(X, dtype=np.float64) @ w for X, _ in train]
    rankings = [np.argsort(-s, kind="stable") for s in scores]
    model = build_click_model(gen)
    policy = policy or gen.policy
    labels = [np.maximum(np.asarray(y), 0).astype(np.int64) for _, y in train]
    logged = simulate(labels, rankings, model, policy, gen.shown, sessions or gen.sessions, seed, False, scores)
    meta = {"policy": policy, "model": model.describe(), "seed": gen.seed, "fold": fold,
            "sessions": sessions or gen.sessions, "per_query": False, "shown": gen.shown,
            "source": f"RankSVM (C {gen.logger_C:g}) fitted on {len(chosen)} of the fold's training queries, "
                      f"showing {len(train)} {'vali' if shown_on is not None else 'training'} queries",
            "logger_weights_sha256": _digest(w)}
    return logged, meta


def _digest(w: np.ndarray) -> str:
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(w, dtype="<f8").tobytes()).hexdigest()


def log_name(fold: int | None) -> str:
    return "log.parquet" if fold is None else f"fold{fold}.parquet"


def true_propensity(model_meta: dict[str, Any], shown: int, where: str) -> np.ndarray:
    """The examination of positions 1..shown relative to position 1, from a click model's
    description (:meth:`ClickModel.describe`); a model that does not examine by position
    alone (a cascade) is refused."""
    from ltr_cli.clicklog.docwise import examination_of

    _, p = examination_of(model_meta, shown, where)
    return p / p[0]


def read_propensity(path: Path, shown: int) -> np.ndarray:
    """Relative propensities from a file: ``ltr clicks propensity --json``'s record, or a
    JSON list; one positive value per position 1..shown (at least)."""
    from ltr_cli.core.bounded import Unreadable, read_json

    try:
        raw = read_json(path, PROPENSITY_LIMIT)  # a regular file, at most 1 MiB: never a FIFO's wait or a device
    except FileNotFoundError:
        raise LtrError(f"clicks.propensity: {path}: no such file; give true, estimated or a propensity file") from None
    except (OSError, Unreadable) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise LtrError(f"clicks.propensity: {path}: not a JSON propensity file ({reason})") from None
    values = raw.get("propensity") if isinstance(raw, dict) else raw
    if not isinstance(values, list) or len(values) < shown or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
            for v in values[:shown]):
        raise LtrError(f"clicks.propensity: {path}: give a list of at least {shown} positive propensities "
                       "(or the JSON of ltr clicks propensity --json)")
    p = np.asarray(values[:shown], dtype=float)
    with np.errstate(over="ignore"):  # an overflow is refused by click_weights, naming the file
        return p / p[0]


def _estimated(train: Queries, gen: GenerateSpec, fold: int | None) -> tuple[np.ndarray, dict[str, Any]]:
    from ltr_cli.clicklog.propensity import estimate

    randomised, _ = fold_log(train, gen, fold, "shuffle", gen.estimate_sessions or gen.sessions)
    rec = estimate(randomised.session, randomised.query, randomised.doc, randomised.position, randomised.click,
                   "randomisation",
                   where=f"fold {fold}'s shuffled log")
    p = np.array([np.nan if v is None else v for v in rec["propensity"]], dtype=float)
    if not np.all(np.isfinite(p) & (p > 0)):
        raise LtrError(f"clicks: fold {fold}: the shuffled log left a position without a propensity estimate; "
                       "give more estimate_sessions")
    return p, {"estimated_from": {"policy": "shuffle", "sessions": gen.estimate_sessions or gen.sessions,
                                  "stderr": rec["stderr"]}}


def _read_fold_log(signal: ClickSignal, fold: int | None,
                   train_ids: list[str]) -> tuple[Sessions, dict[str, Any], np.ndarray | None]:
    from ltr_cli.clicklog.logfile import read_log

    assert signal.log is not None
    path = signal.log / log_name(fold)
    log = read_log(path)
    index = {q: i for i, q in enumerate(train_ids)}
    missing = [q for q in log.qids if q not in index]
    if missing:
        raise LtrError(f"{path}: query {missing[0]!r} is not a training query of fold {fold}; each fold trains on "
                       "the log of its own training queries (write them with ltr clicks log)")
    remap = np.array([index[q] for q in log.qids], dtype=np.int32)
    sessions = Sessions(log.session, remap[log.query], log.doc, log.position, log.click)
    return sessions, {**log.meta, "path": str(path)}, log.propensity


def fold_clicks(signal: ClickSignal, train: Queries, train_ids: list[str], fold: int | None,
                reads: str = "weights") -> ClickData:
    """The clicks fold ``fold`` trains on, with each position's weight (``reads``:
    ``weights``), or each document's target (``targets``: the weights are then 1)."""
    propensity = None
    if signal.generate is not None:
        sessions, meta = fold_log(train, signal.generate, fold)
        from ltr_cli.clicklog.logfile import fingerprint

        meta["fingerprint"] = fingerprint(sessions.session, sessions.query, train_ids, sessions.doc,
                                          sessions.position, sessions.click, str(meta["policy"]))
    else:
        sessions, meta, propensity = _read_fold_log(signal, fold, train_ids)
    if sessions.doc.size:
        sizes = np.array([len(y) for _, y in train])
        if np.any(sessions.doc >= sizes[sessions.query]):
            raise LtrError(f"clicks: fold {fold}: the log shows a document index beyond its query's documents; "
                           "the log was written for other data")
    refuse_without_clicks(sessions, _log_name(meta, fold, "training"))
    shown = int(meta.get("shown") or int(sessions.position.max(initial=1)))
    from ltr_cli.clicklog.estimators import check_targets, gives

    chosen = estimator(signal.correction)
    refused = gives(signal.correction, reads)
    if refused is not None:
        raise LtrError(refused)
    logged = signal.propensity == "logged"
    from ltr_cli.clicklog import logged as per_row

    rowp = per_row.row_propensity(propensity, len(sessions.session), _log_name(meta, fold, "training")) \
        if logged else np.ones(0)
    if logged:
        meta = {**meta, "logged_propensity": per_row.summary(rowp)}
    log = ClickLog(sessions, meta, shown, signal, train, fold, rowp if logged else None)
    if reads == "targets":
        assert chosen.targets is not None
        targets = check_targets(chosen.targets(log), [len(y) for _, y in train], signal.correction)
        return ClickData(sessions, np.ones(shown), signal.correction, meta, versus=signal.pairs, targets=targets)
    assert chosen.weights is not None
    if logged:  # one weight per row (the signal admits only ips here)
        rows = per_row.row_weights(rowp, signal.clip, str(meta.get("path")))
        means = per_row.position_means(rows, sessions.position, shown)
        record = {**meta["logged_propensity"], "weights": per_row.summary(rows, signal.clip)}
        return ClickData(sessions, means, signal.correction, {**meta, "propensity": "logged",
                                                               "logged_propensity": record},
                         versus=signal.pairs, debias=signal.debias, row_weights=rows)
    weights, record = chosen.weights(log)
    weights = check_weights(weights, shown, signal.correction)
    return ClickData(sessions, weights, signal.correction, {**meta, **record}, versus=signal.pairs,
                     debias=signal.debias)


# --- the built-in estimators (entry points of ltr_cli.estimators) ---------------------------

def _ones(log: ClickLog) -> tuple[np.ndarray, dict[str, Any]]:
    return np.ones(log.shown), {}


def _inverse_propensities(log: ClickLog) -> tuple[np.ndarray, dict[str, Any]]:
    """min(1/p_k, clip) for the propensities ``clicks.propensity`` names (true: the click
    model's examination; estimated: result randomisation on a shuffled log; a file)."""
    signal, meta, shown = log.signal, log.meta, log.shown
    source = signal.propensity_file()
    p, extra, rec = position_propensities(log)
    record: dict[str, Any] = {"propensity": [float(f"{v:.12g}") for v in p], **extra}
    if signal.propensity_draw:
        from ltr_cli.clicklog.propensity_draw import draw_propensity, stderr_of

        stderr = stderr_of(signal, source, rec if signal.generate is None and source is None else None, extra,
                           shown)
        seed = signal.generate.seed if signal.generate is not None else int(meta.get("seed") or 0)
        p = draw_propensity(p, stderr, seed, log.fold, _propensity_source(signal, meta))
        record["propensity_drawn"] = [float(f"{v:.12g}") for v in p]
    weights = click_weights(p, signal.clip, _propensity_source(signal, meta))
    return weights, record


def position_propensities(log: ClickLog) -> tuple[np.ndarray, dict[str, Any], dict[str, Any]]:
    """The relative propensities p_k / p_1 of positions 1..shown, float (shown,), that
    ``clicks.propensity`` names, what the record keeps of how they were estimated, and the
    estimate's own record when they were estimated from the log itself (else empty)."""
    signal, meta, shown, sessions = log.signal, log.meta, log.shown, log.sessions
    extra: dict[str, Any] = {}
    rec: dict[str, Any] = {}
    source = signal.propensity_file()
    if source is not None:
        p = read_propensity(source, shown)
    elif signal.propensity == "regression-em":
        from ltr_cli.clicklog.rem import regression_em

        em = signal.em
        p, extra = regression_em(sessions, log.train, shown, **({} if em is None else em.model_dump()))
        extra = {"estimated_from": {**extra, "policy": meta.get("policy"), "sessions": meta.get("sessions")}}
    elif signal.propensity == "estimated":
        if signal.generate is None:
            from ltr_cli.clicklog.propensity import estimate

            rec = estimate(sessions.session, sessions.query, sessions.doc, sessions.position, sessions.click,
                           "randomisation", where=str(meta.get("path")))
            p = np.array([np.nan if v is None else v for v in rec["propensity"]] +
                         [np.nan] * max(0, shown - len(rec["propensity"])), dtype=float)[:shown]
            if not np.all(np.isfinite(p) & (p > 0)):
                raise LtrError(f"{meta.get('path')}: a position has no propensity estimate; log more sessions")
        else:
            p, extra = _estimated(log.train, signal.generate, log.fold)
    else:
        p = true_propensity(meta.get("model") or {}, shown, str(meta.get("path", "clicks.generate")))
    return p, extra, rec


NAIVE = Estimator("every click weighs 1 (biased towards what the logger showed on top)", "naive clicks", _ones)
IPS = Estimator("inverse propensity scoring: a click at position k weighs min(1/p_k, clip), p_k the propensity "
                "relative to position 1 (Joachims et al. 2017)", "IPS-weighted clicks", _inverse_propensities,
                weighs=True, unbiased=True)
POSITION_BIAS = Estimator("LightGBM's position-bias model: clicks weigh 1, the displayed positions are modelled "
                          "jointly with the ranker", "clicks with LightGBM's position-bias model", _ones,
                          positions=True)


def click_weights(p: np.ndarray, clip: float | None, where: str) -> np.ndarray:
    """The IPS weights min(1/p_k, clip) of relative propensities ``p``, float (shown,),
    checked as :func:`ltr_cli.clicklog.logged.inverse_weights` checks them; a one-line error
    naming ``where`` (the propensities' source) otherwise."""
    p = np.asarray(p, dtype=float)
    return inverse_weights(
        p, clip,
        lambda k: f"{where}: the propensity of position {k + 1} relative to position 1 is {p[k]:g}; each must be "
                  "a finite number above 0 (a position 1 propensity too small for its ratios to be numbers?)",
        lambda k, w: f"{where}: position {k + 1}'s propensity {p[k]:g} (relative to position 1) gives a click "
                     f"weight of {w:g}, above {MAX_WEIGHT:g}; set clicks.clip (say 10) or give larger propensities")


def _propensity_source(signal: ClickSignal, meta: dict[str, Any]) -> str:
    source = signal.propensity_file()
    if source is not None:
        return f"clicks.propensity: {source}"
    if signal.propensity == "estimated":
        return f"clicks.propensity: estimated from {meta.get('path') or 'the shuffled log'}"
    if signal.propensity == "regression-em":
        return f"clicks.propensity: regression-em on {meta.get('path') or 'the training log'}"
    return f"clicks.propensity: true (the click model of {meta.get('path') or 'clicks.generate'})"


def _log_name(meta: dict[str, Any], fold: int | None, split: str) -> str:
    """How an error names a fold's log: its file, or the log ``clicks.generate`` simulates."""
    if meta.get("path"):
        return str(meta["path"])
    return f"clicks.generate: the {split} log" + (f" of fold {fold}" if fold is not None else "")


def refuse_without_clicks(sessions: Sessions, where: str) -> None:
    """A one-line error when a log holds no click: a learner would fit a model to nothing
    (all-zero weights) and report its numbers as a result."""
    if not sessions.click.any():
        raise LtrError(f"{where}: the log's {int(sessions.session.max(initial=-1)) + 1} sessions hold no click, so "
                       "there is nothing to learn from; log more sessions, or use a click model that clicks on "
                       "these labels")


def vali_clicks(signal: ClickSignal, train: Queries, vali: Queries, fold: int | None,
                weights: np.ndarray, reads: str = "weights") -> ClickData:
    """``select: clicks``: a log of the vali queries, simulated like the training log
    (its ranker, policy, model and number of sessions), clicks weighted by ``weights``;
    ``reads``: ``targets``, the estimator's per-document targets on the vali log instead
    (its DM, if any, fitted on the vali log's clicks)."""
    assert signal.generate is not None
    sessions, meta = fold_log(train, signal.generate, fold, shown_on=vali)
    refuse_without_clicks(sessions, _log_name(meta, fold, "vali"))
    if reads == "targets":
        from ltr_cli.clicklog.estimators import check_targets

        chosen = estimator(signal.correction)
        assert chosen.targets is not None
        shown = int(meta.get("shown") or int(sessions.position.max(initial=1)))
        targets = check_targets(chosen.targets(ClickLog(sessions, meta, shown, signal, vali, fold)),
                                [len(y) for _, y in vali], signal.correction)
        return ClickData(sessions, np.ones(shown), signal.correction, meta, targets=targets)
    return ClickData(sessions, weights, signal.correction, meta)


def click_score(model: Any, vali: Queries, clicks: ClickData, cutoff: int = 10) -> float:
    """The estimate of ``model``'s DCG@``cutoff`` from the vali log: the mean over
    sessions of the sum, over its clicked documents the model ranks in its top ``cutoff``,
    of 1/log2(1 + rank) times the click's weight (IPS: 1/p_k, clipped; naive: 1). With
    per-document targets R_d: sum over queries of (n_q / sessions) sum over the documents
    the model ranks in its top ``cutoff`` of R_d / log2(1 + rank), n_q the query's sessions."""
    from ltr_cli.clicklog.ips import session_estimates

    s = clicks.sessions
    if not len(s.session):
        return float("nan")
    ranks = []
    for X, _ in vali:
        order = np.argsort(-np.asarray(model.scores(X), dtype=np.float64), kind="stable")
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(1, len(order) + 1)
        ranks.append(rank)
    if clicks.targets is not None:
        first = np.ones(len(s.session), dtype=bool)
        first[1:] = s.session[1:] != s.session[:-1]
        n_q = np.bincount(s.query[first], minlength=len(vali)).astype(float)
        gains = [float(np.sum(np.where(r <= cutoff, t / np.log2(1.0 + r), 0.0))) for r, t in zip(ranks, clicks.targets)]
        return float(np.dot(n_q, gains) / n_q.sum())
    _, ips, _ = session_estimates(s.session, s.query, s.doc, s.position, s.click, ranks, 1.0 / clicks.weights,
                                  cutoff)
    return float(ips.mean())


def log_record(data: ClickData) -> dict[str, Any]:
    """What a fold's model record keeps of its clicks."""
    keep = ("policy", "fingerprint", "sessions", "shown", "seed", "source", "path", "propensity", "estimated_from",
            "propensity_drawn", "logged_propensity")
    if data.targets is not None:  # per-document targets: what they are, in brief (no position weights)
        flat = np.concatenate(data.targets) if data.targets else np.zeros(0)
        used: dict[str, Any] = {"targets": {"documents": int(flat.size), "nonzero": int(np.count_nonzero(flat)),
                                            "mean": float(f"{flat.mean():.12g}") if flat.size else None,
                                            "min": float(f"{flat.min():.12g}") if flat.size else None,
                                            "max": float(f"{flat.max():.12g}") if flat.size else None}}
    elif data.row_weights is not None:  # per-row weights (logged_propensity has them in brief)
        used = {"weights_mean": [float(f"{v:.12g}") for v in data.weights]}
    else:
        used = {"weights": [float(f"{v:.12g}") for v in data.weights]}
    return {**{k: data.meta[k] for k in keep if k in data.meta}, "correction": data.correction,
            "model": data.meta.get("model"), **used, "clicks": int(data.sessions.click.sum())}
