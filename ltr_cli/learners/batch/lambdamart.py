"""LambdaMART (Burges 2010) through LightGBM's ``lambdarank`` objective (the optional
``gbdt`` extra: ``pip install -e '.[gbdt]'``; LightGBM is imported only when a fit runs).

Labels: LightGBM ranks by integer grades 0, 1, 2, ...; a label below 0 (LETOR's -1 for
"not judged") is grade 0, and a label that is not a whole number is an error. The gain of
grade g is the run's metric convention's (``cv.convention``): ``label_gain[g] = gain(g)``,
which for every preset (paper, letor3, letor4, mslr) is ``2^g - 1`` on the grades they list
and 0 for a grade outside a gain table, so LambdaMART optimises the NDCG the tables
report, with lambdarank's own discount ``1/log2(1 + i)`` over its first 30 positions
(LightGBM's ``lambdarank_truncation_level``).

Deterministic: ``seed``, ``deterministic=True``, ``force_row_wise=True`` (LightGBM would
otherwise time both histogram layouts and keep the faster, a choice that depends on the
machine) and a fixed ``num_threads`` (``threads``, default 1; another thread count can sum
histograms in another order). No bagging or feature sampling.

The fitted model is LightGBM's model text, read back by :mod:`ltr_cli.results.gbdt`
(which scores it in numpy, the scores ``ltr score`` gives); each fit checks that those
scores equal ``Booster.predict`` on its training rows (at most ``CHECK_ROWS`` of them, evenly
spread: the check costs as much as a tenth of a LETOR-sized fit otherwise).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from ltr_cli.clicklog.signal import ClickSignal
from ltr_cli.core.schema import BatchLearnerConfig, Grid
from ltr_cli.errors import LtrError
from ltr_cli.learners.batch.common import Queries
from ltr_cli.learners.batch.convergence import FitContext
from ltr_cli.measures.metrics import exp2_gain
from ltr_cli.results.gbdt import LightGBMModel

INSTALL = "LightGBM is not installed: pip install -e '.[gbdt]'"
MAX_GRADE = 30  # gains 2^g - 1 stay exact doubles
CHECK_ROWS = 2000  # training rows a fit's model is checked on against Booster.predict


def _lightgbm() -> Any:
    try:
        import lightgbm
    except ImportError as exc:
        raise LtrError(f"lambdamart needs LightGBM ({exc}); {INSTALL}") from None
    return lightgbm


def grades(y: np.ndarray) -> np.ndarray:
    """Integer grades for LightGBM: labels below 0 are 0; any other label must be a whole number."""
    y = np.asarray(y, dtype=np.float64)
    odd = y[(y != np.floor(y)) | ~np.isfinite(y)]
    if odd.size:
        raise LtrError(f"lambdamart needs whole-number relevance grades; found the label {float(odd[0])!r} "
                       "(LightGBM's lambdarank ranks by grades 0, 1, 2, ...)")
    g = np.maximum(y, 0).astype(np.int64)
    if g.size and g.max() > MAX_GRADE:
        raise LtrError(f"lambdamart: a relevance grade of {int(g.max())} is above {MAX_GRADE}")
    return g


@dataclass
class _Training:
    """A fit's LightGBM booster, still holding its training data, so that the next grid
    point's fit of more rounds with the same settings on the same queries goes on from it
    (LightGBM's trees are grown one after another, each from the scores of those before:
    100 more rounds on a 200-round booster are the last 100 trees of a 300-round fit, the
    same model text byte for byte). ``rounds``: the ``Booster.update`` calls made, as
    ``lightgbm.train`` counts them, which is not the number of trees once LightGBM has
    ``finished`` (no leaf meets the split requirements: it then drops the round's tree and
    every later round does the same, the scores and so the gradients no longer changing).
    The booster moves on to the model that continues it."""

    train: Queries
    settings: str
    booster: Any
    rounds: int
    finished: bool


def _continuable(warm: Any, train: Queries, settings: str, rounds: int) -> _Training | None:
    state = getattr(warm, "_resume", None)
    if not (isinstance(state, _Training) and state.booster is not None and state.settings == settings
            and state.rounds <= rounds and len(state.train) == len(train)
            and all(a is c and b is e for (a, b), (c, e) in zip(state.train, train))):
        return None
    taken = _Training(state.train, settings, state.booster, state.rounds, state.finished)
    state.booster = None
    return taken


def boost(booster: Any, done: int, rounds: int, finished: bool, fobj: Any = None) -> tuple[int, bool]:
    """``lightgbm.train``'s loop from round ``done`` to ``rounds``: one ``Booster.update``
    per round (``fobj``: a custom objective's), except that once an update reports LightGBM
    finished the rounds left are counted without running them (each would grow and drop
    the same tree). Returns the rounds counted and whether LightGBM finished."""
    while done < rounds and not finished:
        finished = bool(booster.update() if fobj is None else booster.update(fobj=fobj))
        done += 1
    return max(done, rounds), finished


@dataclass
class Rows:
    """LightGBM's training rows when they are not the queries' labelled documents (a click
    log's sessions): ``X`` (n, d), integer ``label`` (n,), ``group`` sizes, and optional
    per-row ``weight`` and 0-based displayed ``position``; ``kind`` names them.
    ``objective``: a custom objective's ``(preds, data) -> (grad, hess)`` instead of
    lambdarank (per-document targets, :func:`target_rows`; ``label`` is then the targets)."""

    X: np.ndarray
    label: np.ndarray
    group: list[int]
    weight: np.ndarray | None
    position: np.ndarray | None
    kind: str
    objective: Any = None


def target_rows(train: Queries, clicks: Any, objective: str = "ranknet") -> Rows:
    """The rows of a per-document estimator's targets: every training query's documents,
    labelled by their targets, under the pairwise logistic loss on the pairs of the targets,
    RankNet's or LambdaRank's weights (``objective``,
    :mod:`ltr_cli.learners.batch.target_objective`)."""
    from ltr_cli.clicklog.target_pairs import MAX_PAIRS, pair_bound, query_blocks, query_starts
    from ltr_cli.learners.batch.target_objective import BlockPairs, rows_of

    d = train[0][0].shape[1] if train else 0
    sizes = [len(y) for _, y in train]
    X = np.vstack([np.asarray(X, dtype=np.float64) for X, _ in train]) if train else np.zeros((0, d))
    label = np.concatenate(clicks.targets) if train else np.zeros(0)
    if pair_bound(clicks.targets) > MAX_PAIRS:  # too many to store: made block by block each round
        blocks = BlockPairs(np.asarray(label, dtype=np.float64), query_starts(sizes), query_blocks(np.array(sizes)),
                            objective)
        return Rows(X, label, sizes, None, None, f"{clicks.correction} targets", blocks.objective)
    pairs = clicks.target_pairs()
    pairs_of = rows_of(sizes, pairs.query, pairs.better, pairs.worse, pairs.weight, objective)
    return Rows(X, label, sizes, None, None, f"{clicks.correction} targets", pairs_of.objective)


def click_rows(train: Queries, clicks: Any) -> Rows:
    """The rows of a fold's click log (:class:`ltr_cli.learners.batch.click_data.ClickData`).

    Sessions without a click are left out (they hold no preference), and sessions alike
    (same query, same shown list, same clicks) are one group weighing their count.
    An estimator that does not weigh its clicks (``naive``, ``position-bias``): a group per
    distinct session, its shown documents labelled clicked 1 / not clicked 0, with their
    displayed positions when the estimator models them (LightGBM's position-bias model).
    One that weighs them (``ips``): a group per click of a distinct session, the clicked
    document and the session's documents not clicked, every row weighing the count times
    the clicked position's weight (``clicks.propensity: logged``: the clicked row's, sessions
    alike only when their clicked rows' weights are the same too), so each (clicked, not
    clicked) pair of lambdarank weighs as in IPS-RankSVM."""
    from ltr_cli.clicklog.estimators import estimator

    how = estimator(clicks.correction)
    s = clicks.sessions
    per_row = getattr(clicks, "row_weights", None)
    n = len(s.session)
    d = train[0][0].shape[1] if train else 0
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]] = []
    if n:
        starts = np.flatnonzero(np.r_[True, s.session[1:] != s.session[:-1]])
        lengths = np.diff(np.r_[starts, n])
        for k in np.unique(lengths):
            rows = starts[lengths == k][:, None] + np.arange(k)
            c = s.click[rows]
            rows = rows[c.any(axis=1)]
            if not len(rows):
                continue
            key = np.column_stack((s.query[rows[:, 0]], s.doc[rows], s.position[rows], s.click[rows]))
            if per_row is not None:  # float keys: the integers above are exact in float64
                key = np.column_stack((key, np.where(s.click[rows], per_row[rows], 0.0)))
            uniq, first, count = np.unique(key, axis=0, return_index=True, return_counts=True)
            for r, m in zip(rows[first], count):
                q, docs, pos, clk = int(s.query[r[0]]), s.doc[r], s.position[r], s.click[r]
                if not how.weighs:
                    parts.append((np.full(len(r), q), docs, pos, clk, float(m)))
                    continue
                for a in np.flatnonzero(clk):
                    keep = ~clk
                    keep[a] = True
                    parts.append((np.full(int(keep.sum()), q), docs[keep], pos[keep], clk[keep],
                                  float(m) * float(clicks.weights[pos[a] - 1] if per_row is None
                                                   else per_row[r[a]])))
    if not parts:
        return Rows(np.zeros((0, d)), np.zeros(0, np.int64), [], None, None, clicks.correction)
    X = np.vstack([np.asarray(train[int(q[0])][0], dtype=np.float64)[docs] for q, docs, _, _, _ in parts])
    label = np.concatenate([clk for *_, clk, _ in parts]).astype(np.int64)
    weight = np.concatenate([np.full(len(q), w) for q, _, _, _, w in parts])
    position = np.concatenate([pos for _, _, pos, _, _ in parts]).astype(np.int32) - 1
    return Rows(X, label, [len(q) for q, *_ in parts], weight,
                position if how.positions else None, clicks.correction)


def fit_lambdamart(train: Queries, num_leaves: int = 31, learning_rate: float = 0.1, rounds: int = 100,
                   min_data_in_leaf: int = 20, seed: int = 0, threads: int = 1,
                   gains: Any = None, warm: Any = None, rows: Rows | None = None) -> LightGBMModel:
    """One LightGBM lambdarank fit on the training queries (``gains``: label -> gain,
    default ``2^r - 1``): ``lightgbm.train`` as its loop runs, one ``Booster.update`` per
    round. ``warm``: the previous grid point's model; when it was fitted here on the very
    same queries with the same settings and fewer rounds, its booster goes on to ``rounds``.
    ``rows``: train on these rows instead of the queries' labelled documents (a click log's,
    :func:`click_rows`; clicked is grade 1, of gain 1)."""
    lgb = _lightgbm()
    d = train[0][0].shape[1]
    if rows is None:
        kept = [(X, y) for X, y in train if X.shape[0]]
        X = np.vstack([X for X, _ in kept]).astype(np.float64) if kept else np.zeros((0, d))
        g = grades(np.concatenate([y for _, y in kept])) if kept else np.zeros(0, dtype=np.int64)
        group, weight, position = [x.shape[0] for x, _ in kept], None, None
    else:
        X, g, group, weight, position = rows.X, rows.label, rows.group, rows.weight, rows.position
        gains = None
    fobj = None if rows is None else rows.objective
    params: dict[str, Any] = {"objective": "lambdarank" if fobj is None else "none", "num_leaves": num_leaves,
                              "learning_rate": learning_rate, "min_data_in_leaf": min_data_in_leaf, "seed": seed,
                              "deterministic": True, "force_row_wise": True, "num_threads": threads,
                              "verbosity": -1, "feature_pre_filter": False}
    label_gain: list[float] | None = None
    if fobj is None:
        top = int(g.max()) if g.size else 0
        gain_of = gains if gains is not None else exp2_gain
        label_gain = [float(v) for v in gain_of(np.arange(top + 1, dtype=np.float64))]
        params["label_gain"] = label_gain
    settings = repr(sorted(params.items())) + ("" if rows is None else f" clicks {rows.kind}")
    try:
        state = _continuable(warm, train, settings, rounds)
        if state is None:
            data = lgb.Dataset(X, label=g, group=group, weight=weight, position=position,
                               params={**params, "num_iterations": rounds}, free_raw_data=True)
            booster = lgb.Booster(params={**params, "num_iterations": rounds}, train_set=data)
            done, finished = boost(booster, 0, rounds, False, fobj)
        else:
            booster = state.booster
            booster.reset_parameter({"num_iterations": rounds})
            done, finished = boost(booster, state.rounds, rounds, state.finished, fobj)
        # read back as lightgbm.train hands its booster over: the same text but for a
        # single-leaf tree's empty leaf_weight, written "0" by the booster still training
        text = lgb.Booster(model_str=booster.model_to_string(num_iteration=-1)).model_to_string(num_iteration=-1)
        check = X[::max(1, -(-X.shape[0] // CHECK_ROWS))]
        expected = booster.predict(check, raw_score=True, num_threads=threads) if X.shape[0] else np.zeros(0)
    except lgb.basic.LightGBMError as exc:
        raise LtrError(f"lambdamart: LightGBM refused the fit: {' '.join(str(exc).split())[:300]}") from None
    model = LightGBMModel.from_text(text, d)
    if not np.array_equal(model.scores(check), expected):
        raise LtrError(f"lambdamart: LightGBM {lgb.__version__} wrote a model whose scores this tool does not "
                       "reproduce exactly; use a LightGBM 4 release this tool is tested with")
    model.info = {"trees": len(model.trees), **({"label_gain": label_gain} if label_gain is not None else
                                                {"objective": "pairwise logistic on the targets' pairs"})}
    object.__setattr__(model, "_resume", _Training(train, settings, booster, done, finished))
    return model


def _grid(**values: list[int | float]) -> Grid:
    """The default grid: 8 settings around LightGBM's defaults (31 leaves, rate 0.1, 100
    rounds, 20 documents per leaf)."""
    return dict(values)


class LambdaMARTSpec(BatchLearnerConfig):
    """LambdaMART: gradient-boosted trees on LightGBM's lambdarank objective."""

    type: Literal["lambdamart"]
    summary: ClassVar[str] = ("batch (cv:): LambdaMART, LightGBM's lambdarank objective (not in the papers; "
                              "needs pip install -e '.[gbdt]')")
    hyper_parameters: ClassVar[tuple[str, ...]] = ("num_leaves", "learning_rate", "num_boost_round",
                                                   "min_data_in_leaf")
    integer_parameters: ClassVar[tuple[str, ...]] = ("num_leaves", "num_boost_round", "min_data_in_leaf")
    grid: Grid = Field(default_factory=lambda: _grid(num_leaves=[7, 31], learning_rate=[0.05, 0.1],
                                                     num_boost_round=[100, 300], min_data_in_leaf=[20]))
    seed: int = Field(0, ge=0, description="LightGBM's seed")
    threads: int = Field(1, gt=0, description="LightGBM's num_threads (fixed: another count may change the "
                         "model in its last digits)")
    clicks: ClickSignal | None = Field(None, description="train on each fold's click log instead of the labels, "
                                       "under any estimator (ips: IPS-weighted pairs; position-bias: LightGBM's "
                                       "position-bias model on the displayed positions; a per-document estimator "
                                       "(affine, dm, dr, ...): RankNet's loss on its targets' pairs; see "
                                       "docs/clicks.md)")
    target_objective: Literal["ranknet", "lambdarank"] = Field(
        "ranknet", description="on a per-document estimator's targets: the pairs' weights, t_i - t_j (ranknet, "
        "RankNet's gradients) or |delta DCG| at the current ranking with the targets as gains (lambdarank, "
        "LambdaRank's); see docs/clicks.md")
    id_defaults: ClassVar[dict[str, Any]] = {"clicks": None, "target_objective": "ranknet"}

    @property
    def reads_clicks(self) -> str:
        """What it reads of its click estimator: per-position ``weights`` when the estimator
        gives them (lambdarank on the clicks), else its per-document ``targets`` (a custom
        pairwise objective, :mod:`ltr_cli.learners.batch.target_objective`)."""
        from ltr_cli.clicklog.estimators import estimator

        if self.clicks is None or estimator(self.clicks.correction).weights is not None:
            return "weights"
        return "targets"

    @model_validator(mode="after")
    def _leaves(self) -> LambdaMARTSpec:
        if any(v < 2 for v in self.grid.get("num_leaves", [])):
            raise ValueError("grid 'num_leaves': a tree needs at least 2 leaves")
        if self.clicks is None and self.target_objective != "ranknet":
            raise ValueError(f"target_objective: {self.target_objective} weighs the pairs of a click estimator's "
                             "targets; it needs clicks: (on the labels LambdaMART is LightGBM's lambdarank)")
        if self.clicks is not None and self.clicks.pairs != "unclicked":
            raise ValueError("clicks.pairs: LambdaMART weighs its clicked documents in LightGBM's lambdarank; "
                             "pairs: query is RankSVM's (type: ranksvm)")
        if self.clicks is not None:
            from ltr_cli.clicklog.estimators import estimator

            if estimator(self.clicks.correction).pairwise:
                raise ValueError(f"clicks.correction: {self.clicks.correction} weighs each pair by both its positions, "
                                 "which LightGBM's lambdarank does not take; use it with type: ranksvm")
            if self.target_objective != "ranknet" and self.reads_clicks != "targets":
                raise ValueError(f"target_objective: {self.target_objective} weighs the pairs of a per-document "
                                 f"estimator's targets; clicks.correction {self.clicks.correction} gives per-position "
                                 "weights, which lambdarank takes as they are: drop target_objective")
            if self.reads_clicks == "targets" and self.clicks.propensity_draw:
                raise ValueError(f"clicks.propensity_draw: drawn propensities are ips's per-position weights; "
                                 f"{self.clicks.correction}'s per-document targets take the estimate as it is: "
                                 "drop propensity_draw")
        return self

    def paper_role(self) -> str:
        return "LambdaMART"

    def describe(self) -> dict[str, Any]:
        from importlib import metadata

        try:
            version: str | None = metadata.version("lightgbm")
        except metadata.PackageNotFoundError:
            version = None
        on_targets = self.reads_clicks == "targets"
        return {**super().describe(), "library": "lightgbm", "lightgbm_version": version,
                "objective": ("pairwise logistic (RankNet) on the targets' pairs, weighing t_i - t_j"
                              if self.target_objective == "ranknet" else
                              "pairwise logistic on the targets' pairs, weighing |delta DCG| at the current ranking "
                              "(LambdaRank, the targets as gains)") if on_targets else "lambdarank",
                **({} if on_targets else {"label_gain": "the gain cv.convention gives each grade (labels below 0: 0)"}),
                "determinism": f"seed {self.seed}, deterministic, force_row_wise, num_threads {self.threads}",
                **({"training_signal": self.clicks.describe()} if self.clicks is not None else {})}

    def missing(self) -> str | None:
        return None if importlib.util.find_spec("lightgbm") is not None else INSTALL

    def fit(self, train: Queries, params: dict[str, Any], context: FitContext | None = None) -> LightGBMModel:
        rows = None
        if context is not None and context.clicks is not None:
            cache = context.clicks.cache
            key = f"lightgbm {self.target_objective}"
            if key not in cache:
                on_targets = context.clicks.targets is not None
                cache[key] = target_rows(train, context.clicks, self.target_objective) if on_targets \
                    else click_rows(train, context.clicks)
            rows = cache[key]
        return fit_lambdamart(train, int(params.get("num_leaves", 31)), float(params.get("learning_rate", 0.1)),
                              int(params.get("num_boost_round", 100)), int(params.get("min_data_in_leaf", 20)),
                              self.seed, self.threads, None if context is None else context.gains,
                              None if context is None else context.warm, rows)
