"""The online protocol in blocks of rounds, each block one compiled call (the family's block
kernel: the generic driver of :mod:`ltr_cli.kernels.loop` around its round kernel), for a group of learners of one family that read the same
stream (the learners of one config, the points of a sweep that differ only in learner
settings; a single run is a group of one).

It computes what :func:`ltr_cli.protocols.online.run_online` computes round by round, for
the learners whose whole round has a compiled step (Alg. 2, Alg. 3, OGD on the squared,
ListNet, KL and SmoothDCG surrogates, online ListNet, RTop-kF with its own feedback size,
its exploration drawn per block in Python from its generator, in round order, and the
random baseline) under the tie policies the ranking kernel implements (``input-order``,
``reverse-input``) and the compiled measures (NDCG, AP, precision@k), on data with arrays
(a cached file, or a generated stream kept as arrays). Every other combination runs round
by round. The tests keep the two paths equal, row by row and in the final weights, and a
learner's rows in a group equal to its rows alone, bit for bit.

Blocks end at checkpoint rounds, so checkpoints are taken after the same rounds as the
per-round path takes them; Python is entered between blocks only (progress, checkpoints,
Ctrl-C). A learner whose weights leave the reals (when that is an error) stops with its
error; the others of its group go on.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr_cli import console
from ltr_cli import kernels
from ltr_cli.data.sources import Segment, UnitArrays
from ltr_cli.errors import LtrError
from ltr_cli.core import codes
from ltr_cli.learners.online.base import OnlineLearner
from ltr_cli.learners.online.family import BlockCall, BlockFamily
from ltr_cli.protocols.round_measures import RoundMeasures
from ltr_cli.core.round_log import RoundLog

# LTR_BLOCKS=0 runs every learner round by round (the reference the tests compare with)
BLOCKS = os.environ.get("LTR_BLOCKS", "1").strip().lower() not in ("0", "false", "no", "off")
BLOCK_ROUNDS = 4096  # rounds per compiled call at most (also bounds the output buffers)
_KERNEL_TIES = {"input-order": False, "reverse-input": True}


def block_eligible(learner: OnlineLearner, measures: RoundMeasures, feedback_k: int | None,
                   clicks: bool = False) -> bool:
    """Whether ``learner``'s rounds can run in compiled blocks (see the module docstring);
    never under click feedback (``clicks``), whose rounds run one by one."""
    kernel = getattr(learner, "block_kernel", None)
    return (not clicks and kernel is not None and kernel() is not None and feedback_k == learner.feedback_k
            and measures.compiled and _ties(learner) in _KERNEL_TIES)


def _ties(learner: Any) -> str:
    return getattr(learner, "ties", "input-order")  # the random baseline ranks without scores


def group_key(learner: Any) -> tuple[str, int, str]:
    """Learners with equal keys can share a block call: family, parameter count, ties."""
    family, params = learner.block_kernel()
    return family.name, int(np.asarray(params).shape[0]), _ties(learner)


@dataclass
class BlockOutcome:
    nonfinite_round: int | None
    error: LtrError | None = None  # the learner stopped with this error (the group went on)


class BlockRunner:
    """Runs the planned rounds of a group of learners (equal :func:`group_key`) block by
    block, each into its own round log."""

    def __init__(self, learners: list[Any], round_measures: RoundMeasures, plan: list[Segment],
                 units: dict[int, UnitArrays], nan_allowed: list[bool]):
        keys = {group_key(lr) for lr in learners}
        assert len(keys) == 1, keys
        self.family: BlockFamily = learners[0].block_kernel()[0]
        self.P = np.ascontiguousarray(np.stack([np.asarray(lr.block_kernel()[1], dtype=np.float64)
                                                for lr in learners]))
        self.learners = learners
        self.spec = round_measures.spec
        self.reverse = _KERNEL_TIES[_ties(learners[0])]
        self.plan = plan
        self.units = units
        self.nan_allowed = np.array(nan_allowed, dtype=np.bool_)
        longest = max((int((u.ends - u.starts).max()) if u.starts.size else 1 for u in units.values()), default=1)
        self.disc = kernels.discounts(max(longest, 1))
        self.scores = np.empty(max(longest, 1))
        self.kernel = self.family.kernel()

    def _call(self, unit: UnitArrays, order: np.ndarray, W: np.ndarray, P: np.ndarray, t0: np.ndarray,
              active: np.ndarray, check_finite: np.ndarray, nan_allowed: np.ndarray, out: dict[str, np.ndarray],
              draws: tuple[np.ndarray, ...], learners: list[Any]) -> None:
        n = order.shape[0]
        cols = (out["values"][:, :n], out["mistake"][:, :n], out["updated"][:, :n], out["no_relevant"][:, :n],
                out["ranking_loss"][:, :n], out["m"][:, :n], out["ran"], out["stop"], out["nonfinite"])
        block = BlockCall(unit.X, unit.y, unit.starts, unit.ends, order, W, P, t0, active, self.reverse, self.spec,
                          self.disc, check_finite, nan_allowed, cols, self.scores, draws)
        self.kernel(*block.arguments())

    def _draws(self, unit: UnitArrays, block: np.ndarray, t0: np.ndarray, learners: list[Any],
               running: list[int]) -> tuple[np.ndarray, ...]:
        """The running learners' own random draws for the block (RTop-kF's exploration, the
        random baseline's permutations), made now in round order from each one's generator:
        ``explore``, the permutations of all learners concatenated, ``perm_starts``,
        ``gammas``, ``etas``, with one row per learner of the group (a stopped learner's row
        is zeros, which the kernel does not read; a family that draws nothing gets zeros)."""
        L, n = len(learners), block.shape[0]
        explore, perm_starts = np.zeros((L, n), dtype=np.bool_), np.zeros((L, n + 1), dtype=np.int64)
        gammas, etas = np.zeros((L, n)), np.zeros((L, n))
        draw = self.family.draws
        if draw is None:
            return explore, np.zeros(0, dtype=np.int64), perm_starts, gammas, etas
        sizes = unit.ends[block] - unit.starts[block]
        perms: list[np.ndarray] = []
        offset = 0
        for i in running:
            explore[i], shown, starts, gammas[i], etas[i] = draw(learners[i], int(t0[i]), sizes)
            perm_starts[i] = starts + offset
            offset += shown.shape[0]
            perms.append(shown)
        return explore, np.concatenate(perms) if perms else np.zeros(0, dtype=np.int64), perm_starts, gammas, etas

    def warm_up(self) -> None:
        """Compile (or load) the block kernel for this run's argument types on one round of
        the first learner, on copies: nothing of the run changes."""
        for seg in self.plan:
            if seg.order.size:
                twin = copy.deepcopy(self.learners[0])  # its generator is drawn from, not the run's
                W = np.array([twin.w], dtype=np.float64)
                t0 = np.zeros(1, dtype=np.int64)
                unit = self.units[seg.unit]
                self._call(unit, seg.order[:1], W, self.P[:1], t0, np.ones(1, dtype=np.bool_),
                           np.ones(1, dtype=np.bool_), self.nan_allowed[:1], _buffers(1, 1, self.spec.shape[0]),
                           self._draws(unit, seg.order[:1], t0, [twin], [0]), [twin])
                return

    def run(self, logs: list[RoundLog], t: int, nonfinite_rounds: list[int | None], max_rounds: int | None,
            every: tuple[int, ...], after_block: Callable[[int, int, int, int | None], None],
            on_block: Callable[[int, int], None], names: list[str]) -> list[BlockOutcome]:
        """Every planned round after round ``t`` (the rounds before were done, e.g. before a
        checkpoint), up to ``max_rounds``, for every learner of the group. After each block,
        ``after_block(l, t, n, nonfinite_round)`` for each learner ``l`` still running
        (checkpoints, held-out evaluations) and then ``on_block(t, n)`` (progress). ``every``:
        blocks end at multiples of each of these (checkpoints, held-out evaluations).
        Returns each learner's outcome."""
        learners = self.learners
        L = len(learners)
        outcomes = [BlockOutcome(nonfinite_rounds[i]) for i in range(L)]
        active = np.ones(L, dtype=np.bool_)
        W = np.ascontiguousarray(np.stack([np.asarray(lr.w, dtype=np.float64) for lr in learners]))
        out = _buffers(L, BLOCK_ROUNDS, self.spec.shape[0])
        skip = t  # rounds already done (resume)
        for seg in self.plan:
            order = seg.order
            if skip >= order.shape[0]:
                skip -= order.shape[0]
                continue
            pos, skip = skip, 0
            unit = self.units[seg.unit]
            while pos < order.shape[0] and active.any():
                if max_rounds is not None and t >= max_rounds:
                    return outcomes
                n = min(BLOCK_ROUNDS, order.shape[0] - pos)
                if max_rounds is not None:
                    n = min(n, max_rounds - t)
                for stop in every:
                    n = min(n, stop - t % stop)
                n = unit.rounds_within(order[pos:pos + n])  # a mapped file: a bounded share of it per block
                block = order[pos:pos + n]
                # a family without a round counter counts the run's rounds
                t0 = np.array([lr.t if self.family.counts_rounds else t for lr in learners], dtype=np.int64)
                check = np.array([o.nonfinite_round is None for o in outcomes], dtype=np.bool_)
                running = [i for i in range(L) if active[i]]
                draws = self._draws(unit, block, t0, learners, running)
                self._call(unit, block, W, self.P, t0, active, check, self.nan_allowed, out, draws, learners)
                unit.read(block)  # its pages handed back past the limit: the resident set stays bounded
                qids = [unit.qids[q] for q in block.tolist()]
                for i in running:
                    self._after(i, out, W, t, seg.pass_no, qids, logs[i], outcomes[i], names[i])
                t += n
                pos += n
                for i in running:
                    if outcomes[i].error is None:
                        after_block(i, t, n, outcomes[i].nonfinite_round)
                on_block(t, n)
        return outcomes

    def _after(self, i: int, out: dict[str, np.ndarray], W: np.ndarray, t: int, pass_no: int, qids: list[str],
               log: RoundLog, outcome: BlockOutcome, name: str) -> None:
        """Learner ``i``'s block: its rows into its log, its weights and counter, and its
        stop (an error kept in its outcome) or its weights leaving the reals (a warning)."""
        learner = self.learners[i]
        ran, stop, nonfinite = int(out["ran"][i]), int(out["stop"][i]), int(out["nonfinite"][i])
        log.extend(t, pass_no, qids[:ran], out["m"][i], out["values"][i], out["mistake"][i], out["updated"][i],
                   out["no_relevant"][i], out["ranking_loss"][i])
        learner.w = np.array(W[i], copy=True)
        if self.family.counts_rounds:
            learner.t += ran
        if nonfinite >= 0:
            outcome.nonfinite_round = t + nonfinite + 1
            console.warn(f"{name}: weights became NaN or infinite in round {outcome.nonfinite_round} "
                         f"(qid {qids[nonfinite]}); numerics: authors-code keeps them, as the authors' code "
                         "did: from here on it ranks NaN scores as their sort does")
        if stop != codes.BLOCK_DONE:
            if self.family.counts_rounds:
                learner.t += 1  # the failing round's update was called
            if stop == codes.BLOCK_NOT_FINITE_STEP and self.family.not_finite is not None:
                outcome.error = self.family.not_finite(learner)
            else:
                outcome.error = LtrError(
                    f"round {t + ran + 1} (qid {qids[ran]}): the learner's weights became NaN or infinite "
                    "after its update; lower the learning rate, add a projection radius, or "
                    "rescale the features")


def _buffers(L: int, n: int, k: int) -> dict[str, np.ndarray]:
    return {"values": np.empty((L, n, k)), "mistake": np.empty((L, n), dtype=np.bool_),
            "updated": np.empty((L, n), dtype=np.bool_), "no_relevant": np.empty((L, n), dtype=np.bool_),
            "ranking_loss": np.empty((L, n)), "m": np.empty((L, n), dtype=np.int64),
            "ran": np.empty(L, dtype=np.int64), "stop": np.empty(L, dtype=np.int64),
            "nonfinite": np.empty(L, dtype=np.int64)}
