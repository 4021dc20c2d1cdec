"""PermuRank (Xu, Liu, Lu, Li, Ma, "Directly optimizing evaluation measures in learning
to rank", SIGIR 2008, s.4.3 and Fig. 2).

Each query q_i keeps two working sets: B_i of perfect permutations (E = 1) and C_i of
imperfect ones (E < 1). Round t fits

    F_t = argmin_w  1/2 ||w||^2 + C sum_i l(B_i, C_i)                     (Eq. 10, 11)
    l(B_i, C_i) = 1/|B_i| sum_{pi* in B_i} sum_{pi in C_i}
                  (E(pi*) - E(pi)) [1 - (F(pi*) - F(pi))]_+

with F(pi) = w.Phi(pi) and Phi of Eq. 2 (:mod:`ltr_cli.learners.batch.permutations`), then
adds to each B_i the perfect permutation with the lowest F_t and to each C_i the imperfect
one with the highest F_t, and stops after the first round that changes no set, or after
``rounds`` (the paper's T), returning F_t of that round. A permutation changes its set only
when its share of Eq. 11 exceeds the worst share its set holds by more than ``tolerance``
(:meth:`QuerySets.excess`; SVM-struct's epsilon): taken literally, the rule never stops on
realistic data, since the oracles find a new permutation for every query in every round and
each one adds a term to Eq. 11's sum. At large C (30 and up on OHSUMED-shaped folds) it does
not stop with any tolerance below the margin: the QP moves F so far that each query's new
imperfect permutation exceeds the set's worst by a good part of the margin in every round
(the trace's ``excess_median``). The sets start from the same two
choices at F = 0 (the paper: "an arbitrary perfect and an arbitrary imperfect
permutation"). Queries without an imperfect permutation have no loss and are skipped.

Each round's QP is the regularised hinge above, minimised by BMRM
(:mod:`ltr_cli.learners.batch.bmrm`, lambda = 1/C on the sum of the queries' losses) from
the previous round's w, to a duality gap of ``eps`` times its objective. A round that
changes no set is solved again 1000 times tighter before the fit stops, so that a QP
that stopped early (at its starting point, say) cannot end the fit.

``variant: max-violation`` is another method (:mod:`ltr_cli.learners.batch.permurank_cuts`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from ltr_cli.learners.batch.bmrm import BMRMResult, bmrm
from ltr_cli.learners.batch.common import FEATURE_SCALE_HELP, Queries, batch_measure, column_scale, measure_fn, rank
from ltr_cli.learners.batch.convergence import Convergence, FitContext, progress_of
from ltr_cli.learners.batch.permurank_cuts import fit_permurank_max_violation
from ltr_cli.learners.batch.permutations import Levels, highest_imperfect, lowest_perfect, permutation_features
from ltr_cli.results.models import LinearModel
from ltr_cli.core.schema import BatchLearnerConfig, Grid

QP_MAX_ITER = 1000  # BMRM iterations per QP; a QP that reaches it is counted in the record
CONFIRM = 1e-3  # a round that changes nothing is solved again to eps x CONFIRM


@dataclass
class QuerySets:
    """One query's working sets: B (perfect) and C (imperfect) permutations, each as its
    Phi row, keyed by the permutation itself; C's rows carry E(pi*) - E(pi) = 1 - E(pi)."""

    X: np.ndarray
    y: np.ndarray
    levels: Levels
    perfect: dict[bytes, np.ndarray] = field(default_factory=dict)
    imperfect: dict[bytes, tuple[np.ndarray, float]] = field(default_factory=dict)
    last_excess: float = float("nan")  # the imperfect oracle's excess at the last update

    def candidates(self, w: np.ndarray, E: Any) -> tuple[bytes, np.ndarray, float, bytes, np.ndarray]:
        """The two oracles' permutations under ``w``: the highest-F imperfect one (key, Phi,
        1 - E) and the lowest-F perfect one (key, Phi)."""
        f = self.X @ w
        star, bad = lowest_perfect(f, self.levels), highest_imperfect(f, self.levels)
        assert bad is not None, "queries without an imperfect permutation are skipped"
        return (bad.astype(np.int64).tobytes(), permutation_features(self.X, bad), 1.0 - float(E(bad, self.y)),
                star.astype(np.int64).tobytes(), permutation_features(self.X, star))

    def excess(self, w: np.ndarray, E: Any, found: Any = None) -> tuple[float, float]:
        """How far the oracles' permutations under ``w`` are violated beyond the worst of
        their sets (imperfect, perfect); at most 0 for one the set already holds. A
        permutation's violation is its share of Eq. 11, in the tolerance's unit on both
        sides: ``(1 - E(pi))`` times its mean hinge against B for an imperfect pi, and for a
        perfect pi* its (1 - E)-weighted hinges against C summed, over ``|B|``. Needs both
        sets non-empty; ``found``: :meth:`candidates` under the same ``w``, if already known."""
        _, bad_phi, value, _, star_phi = found or self.candidates(w, E)
        FB = np.array([row @ w for row in self.perfect.values()])
        FC = np.array([row @ w for row, _ in self.imperfect.values()])
        loss = np.array([v for _, v in self.imperfect.values()])
        weighted = loss[:, None] * np.maximum(0.0, 1.0 - FB[None, :] + FC[:, None])  # (C, B)
        bad = value * float(np.maximum(0.0, 1.0 - FB + bad_phi @ w).mean()) - float(weighted.mean(axis=1).max())
        star = float((loss * np.maximum(0.0, 1.0 - star_phi @ w + FC)).sum()) - float(weighted.sum(axis=0).max())
        star /= len(self.perfect)
        return bad, star

    def update(self, w: np.ndarray, E: Any, tolerance: float = 0.0) -> bool:
        """Add the lowest-F perfect and the highest-F imperfect permutation under ``w``, each
        only if its :meth:`excess` is more than ``tolerance`` (the first call, and
        ``tolerance`` 0, add any new one); True if either set changed."""
        found = self.candidates(w, E)
        bad_key, bad_phi, value, star_key, star_phi = found
        first = not self.perfect or tolerance <= 0  # 0: every new permutation, the rule as written
        bad_excess, star_excess = (np.inf, np.inf) if first else self.excess(w, E, found)
        self.last_excess = bad_excess if self.perfect else float("nan")
        changed = False
        if bad_key not in self.imperfect and bad_excess > tolerance:
            self.imperfect[bad_key] = (bad_phi, value)
            changed = True
        if star_key not in self.perfect and star_excess > tolerance:
            self.perfect[star_key] = star_phi
            changed = True
        return changed


class WorkingSetRisk:
    """``L(w) = sum_i l(B_i, C_i)`` (Eq. 11) and a subgradient, without listing the pairs.
    With u = F over B_i and t = 1 + F over C_i, the pair (pi*, pi) is active when
    u(pi*) < t(pi). One row per query holds its t then its u (padded); sorting each row (t
    before u on ties) gives, for each pi, how many u lie below its t and their sum, and for
    each pi*, the weight (1 - E(pi)) / |B_i| of the t above its u."""

    def __init__(self, sets: list[QuerySets], d: int):
        nb = np.array([len(s.perfect) for s in sets])
        nc = np.array([len(s.imperfect) for s in sets])
        width = int(nc.max()) + int(nb.max())
        self.PB = np.array([row for s in sets for row in s.perfect.values()]).reshape(-1, d)
        self.PC = np.array([row for s in sets for row, _ in s.imperfect.values()]).reshape(-1, d)
        # where each row of PC and PB sits in the (queries, width) table: C at 0.., B after C's widest
        self.rc = np.repeat(np.arange(len(sets)), nc)
        self.cc = np.concatenate([np.arange(n) for n in nc])
        self.rb = np.repeat(np.arange(len(sets)), nb)
        self.cb = int(nc.max()) + np.concatenate([np.arange(n) for n in nb])
        self.is_u = np.zeros((len(sets), width))
        self.is_u[self.rb, self.cb] = 1.0
        self.a = np.zeros((len(sets), width))
        self.a[self.rc, self.cc] = [loss / len(s.perfect) for s in sets for _, loss in s.imperfect.values()]
        self.real = np.zeros((len(sets), width), dtype=bool)
        self.real[self.rc, self.cc] = self.real[self.rb, self.cb] = True

    def __call__(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        vals = np.full(self.a.shape, np.inf)  # padding sorts last and meets nothing
        vals[self.rc, self.cc] = 1.0 + self.PC @ w
        vals[self.rb, self.cb] = self.PB @ w
        order = np.argsort(vals, axis=1, kind="stable")  # t before u on ties: they come first
        v, is_u, a, real = (np.take_along_axis(x, order, axis=1) for x in (vals, self.is_u, self.a, self.real))
        v = np.where(real, v, 0.0)
        is_u = is_u * real
        k = np.cumsum(is_u, axis=1) - is_u  # u strictly below
        u_sum = np.cumsum(is_u * v, axis=1) - is_u * v
        value = float((a * (k * v - u_sum)).sum())  # a = 0 but on the t of C
        above_a = a.sum(axis=1, keepdims=True) - np.cumsum(a, axis=1)  # weight of the t above
        coef = np.empty_like(vals)
        np.put_along_axis(coef, order, np.where(is_u > 0, -above_a, a * k), axis=1)
        return value, self.PC.T @ coef[self.rc, self.cc] + self.PB.T @ coef[self.rb, self.cb]


def objective(w: np.ndarray, sets: list[QuerySets], C: float) -> float:
    """``1/2 ||w||^2 + C L(w)`` over the working sets ``sets``."""
    return 0.5 * float(w @ w) + (C * WorkingSetRisk(sets, w.shape[0])(w)[0] if sets else 0.0)


def set_sizes(sets: list[QuerySets]) -> dict[str, Any]:
    """The working sets' sizes: per kind, the total over queries, the largest and the mean;
    and the number of (perfect, imperfect) pairs the loss sums over."""
    out: dict[str, Any] = {"queries": len(sets)}
    for kind in ("perfect", "imperfect"):
        sizes = np.array([len(getattr(s, kind)) for s in sets], dtype=np.int64)
        out[kind] = {"total": int(sizes.sum()), "max": int(sizes.max(initial=0)),
                     "mean": round(float(sizes.mean()), 3) if sizes.size else 0.0}
    out["pairs"] = int(sum(len(s.perfect) * len(s.imperfect) for s in sets))
    return out


@dataclass
class PermuRankResult:
    w: np.ndarray
    sets: list[QuerySets]
    iterations: int
    convergence: Convergence
    trace: list[dict[str, float | None]]  # per round: objective, measure, queries changed, excess_median


def permurank(train: Queries, C: float, measure: str = "map", rounds: int = 30, threshold: float = 0.0,
              eps: float = 1e-3, context: FitContext | None = None, tolerance: float = 0.0) -> PermuRankResult:
    """Fig. 2 of the paper; see the module's docstring. ``tolerance`` 0 is the paper's
    stopping rule taken literally: any new permutation changes a set."""
    start = time.perf_counter()
    E = measure_fn(measure, threshold)
    d = train[0][0].shape[1]
    sets = [QuerySets(X, y, lv) for X, y in train if (lv := Levels.of(y, measure, threshold)).has_imperfect()]
    w = np.zeros(d)
    for s in sets:
        s.update(w, E)  # B_i^1, C_i^1: the two oracles at F = 0
    progress = progress_of(context)
    qp = {"iterations": 0, "at_cap": 0, "confirmations": 0}

    def solve(tolerance: float) -> BMRMResult:
        res = bmrm(WorkingSetRisk(sets, d), d, 1.0 / C, tolerance, QP_MAX_ITER, warm=w)
        qp["iterations"] += res.iterations
        qp["at_cap"] += int(res.convergence.at_cap)
        return res

    it, changed, J, gap, trace = 0, bool(sets), 0.0, 0.0, []
    while sets and it < rounds:
        it += 1
        res = solve(eps)
        w = res.w
        n_changed = sum([s.update(w, E, tolerance) for s in sets])  # every query's sets, no short-cut
        if not n_changed:  # the stop must not come from a QP that stopped early
            qp["confirmations"] += 1
            res = solve(eps * CONFIRM)
            w = res.w
            n_changed = sum([s.update(w, E, tolerance) for s in sets])
        changed = n_changed > 0
        J, gap = C * res.objective, C * res.convergence.gap  # the paper's scale
        excess = np.array([s.last_excess for s in sets])
        trace.append({"round": it, "objective": J, "changed": n_changed,
                      "excess_median": float(np.median(excess)) if tolerance > 0 else None,
                      "train_measure": float(np.mean([E(rank(s.X @ w), s.y) for s in sets]))})
        if progress is not None:
            progress(it, gap / max(abs(J), 1e-300))
        if not changed:
            break
    details = {"working_sets": set_sizes(sets), "qp_iterations": qp["iterations"], "qp_at_cap": qp["at_cap"],
               "confirmations": qp["confirmations"], "tolerance": tolerance, "cap_key": "rounds"}
    conv = Convergence("PermuRank", it, J, float(gap), eps, not changed and qp["at_cap"] == 0,
                       changed, time.perf_counter() - start, details)
    return PermuRankResult(w, sets, it, conv, trace)


def fit_permurank(train: Queries, C: float, measure: str = "map", rounds: int = 30, threshold: float = 0.0,
                  eps: float = 1e-3, context: FitContext | None = None, tolerance: float = 0.0,
                  feature_scale: str = "none") -> LinearModel:
    """PermuRank's model; its ``info`` keeps the rounds, the working-set sizes, the
    per-round trace and the convergence record (which repeats the first two).

    ``feature_scale`` (:func:`~ltr_cli.learners.batch.common.column_scale`): when it
    applies, the fit runs on the columns divided by ``s`` and the weights are mapped back
    (``w = u / s``), as for SVMmap: on raw MSLR features (values up to 1e8) each round's QP
    otherwise ends at BMRM's iteration cap, about a minute per round."""
    scale = column_scale(train, feature_scale)
    if scale is not None:
        train = [(X / scale, y) for X, y in train]
    res = permurank(train, C, measure, rounds, threshold, eps, context, tolerance)
    info = {"rounds": res.iterations, "working_sets": set_sizes(res.sets), "trace": res.trace,
            "convergence": res.convergence.to_dict()}
    if scale is not None:
        info["feature_scale"] = "max-abs"
        return LinearModel(res.w / scale, info)
    return LinearModel(res.w, info)


# --- config ------------------------------------------------------------------------------

class PermuRankSpec(BatchLearnerConfig):
    """PermuRank (Xu et al. 2008, Fig. 2): working sets of perfect and imperfect permutations."""

    type: Literal["permurank"]
    summary: ClassVar[str] = "batch (cv:): PermuRank, working sets of permutations (the paper's Fig. 2)"
    # added after the first runs were named: at this value it is left out of run ids
    id_defaults: ClassVar[dict[str, Any]] = {"variant": "paper", "tolerance": 1e-2, "feature_scale": "auto"}
    # 1: each query's most violated pair, cutting planes (now variant max-violation); 2: Fig. 2;
    # 3: a set changes only by a permutation violated by more than tolerance; feature_scale;
    # 4: a perfect permutation's violation is its share of Eq. 11 (over |B|), as an imperfect one's
    implementation: ClassVar[int] = 4
    variant: Literal["paper", "max-violation"] = Field(
        "paper", description="paper: Fig. 2 and Eq. 11; max-violation: each query's worst pair only, "
        "cutting planes (another method)")
    measure: str = Field("map", description="the measure E of a permutation: map or ndcg@K")
    grid: Grid = Field(default_factory=lambda: {"C": [0.1, 1.0, 10.0]})
    rounds: int = Field(30, gt=0, description="T, the cap on rounds; a fit whose sets still change at it warns")
    tolerance: float = Field(1e-2, ge=0, description="paper: a new permutation changes its working set only "
                             "if its constraints are violated by more than this beyond the worst of the set's "
                             "(SVM-struct's epsilon; 0: any new permutation counts)")
    feature_scale: Literal["auto", "max-abs", "none"] = Field("auto", description=FEATURE_SCALE_HELP)
    relevance_threshold: float = Field(0.0, description="relevant (MAP, AP) = label > this")
    eps: float = Field(1e-3, gt=0, description="paper: each round's QP stops at a duality gap of eps x its "
                       "objective; max-violation: stop when new cuts add at most eps x the objective")

    _m = field_validator("measure")(batch_measure)

    def paper_role(self) -> str:
        return "PermuRank"  # its row in the paper's tables

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "variant": self.variant}

    def fit(self, train: Queries, params: dict[str, Any], context: FitContext | None = None) -> LinearModel:
        if self.variant == "paper":
            return fit_permurank(train, params["C"], self.measure, self.rounds, self.relevance_threshold, self.eps,
                                 context, self.tolerance, self.feature_scale)
        return fit_permurank_max_violation(train, params["C"], self.measure, self.rounds, self.relevance_threshold,
                                           self.eps, context)
