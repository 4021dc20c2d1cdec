"""The online protocol in blocks of rounds, each block one compiled call
(:mod:`ltr_cli.kernels.loop`).

It computes what :func:`ltr_cli.protocols.online.run_online` computes round by round, for
the learners whose whole round has a compiled step (Alg. 2, Alg. 3, OGD on the squared,
ListNet, KL and SmoothDCG surrogates, online ListNet, RTop-kF with its own feedback size,
its exploration drawn per block in Python from its generator, in round order) under the tie policies the ranking
kernel implements (``input-order``, ``reverse-input``) and the compiled measures (NDCG, AP,
precision@k), on data with arrays (a cached file, read as is). Every other combination runs
round by round. The tests keep the two paths equal, row by row and in the final weights.

Blocks end at checkpoint rounds, so checkpoints are taken after the same rounds as the
per-round path takes them; Python is entered between blocks only (progress, checkpoints,
Ctrl-C).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr_cli import kernels
from ltr_cli.data.sources import Segment, UnitArrays
from ltr_cli.errors import LtrError
from ltr_cli.kernels import codes
from ltr_cli.learners.base import OnlineLearner
from ltr_cli.protocols.round_measures import RoundMeasures
from ltr_cli.round_log import RoundLog

# LTR_BLOCKS=0 runs every learner round by round (the reference the tests compare with)
BLOCKS = os.environ.get("LTR_BLOCKS", "1").strip().lower() not in ("0", "false", "no", "off")
BLOCK_ROUNDS = 4096  # rounds per compiled call at most (also bounds the output buffers)
_KERNEL_TIES = {"input-order": False, "reverse-input": True}


def block_eligible(learner: OnlineLearner, measures: RoundMeasures, feedback_k: int | None) -> bool:
    """Whether ``learner``'s rounds can run in compiled blocks (see the module docstring)."""
    kernel = getattr(learner, "block_kernel", None)
    ties = getattr(learner, "ties", "input-order")  # the random baseline ranks without scores
    return (kernel is not None and kernel() is not None and feedback_k == learner.feedback_k
            and measures.compiled and ties in _KERNEL_TIES)


@dataclass
class BlockOutcome:
    t: int
    nonfinite_round: int | None


class BlockRunner:
    """Runs the planned rounds of one learner block by block into ``log``."""

    def __init__(self, learner: Any, round_measures: RoundMeasures, plan: list[Segment],
                 units: dict[int, UnitArrays], nan_allowed: bool):
        found = learner.block_kernel()
        assert found is not None
        self.family, self.params = found
        self.learner = learner
        self.spec = round_measures.spec
        self.reverse = _KERNEL_TIES[getattr(learner, "ties", "input-order")]
        self.plan = plan
        self.units = units
        self.nan_allowed = nan_allowed
        longest = max((int((u.ends - u.starts).max()) if u.starts.size else 1 for u in units.values()), default=1)
        self.disc = kernels.discounts(max(longest, 1))
        self.scores = np.empty(max(longest, 1))
        self.K = kernels.load()

    def _call(self, unit: UnitArrays, order: np.ndarray, w: np.ndarray, t0: int, check_finite: bool,
              out: dict[str, np.ndarray], draws: tuple[np.ndarray, ...] | None = None) -> tuple[int, int, int]:
        n = order.shape[0]
        cols = (out["values"][:n], out["mistake"][:n], out["updated"][:n], out["no_relevant"][:n],
                out["ranking_loss"][:n], out["m"][:n])
        K = self.K
        if self.family == codes.BLOCK_RANDOM:
            assert draws is not None
            return K.random_block(unit.y, unit.starts, unit.ends, order, self.spec, self.disc, *cols,
                                  draws[1], draws[2])
        common = (unit.X, unit.y, unit.starts, unit.ends, order, w, self.params, t0, self.reverse, self.spec,
                  self.disc, check_finite, self.nan_allowed, *cols, self.scores, np.empty(w.shape[0]))
        if self.family == codes.BLOCK_RTOPKF:
            assert draws is not None
            return K.rtopkf_block(*common, int(self.learner.feedback_k), bool(self.learner.skip_short), *draws)
        kernel = K.perceptron_block if self.family == codes.BLOCK_PERCEPTRON else K.ogd_block
        return kernel(*common)

    def _draws(self, unit: UnitArrays, block: np.ndarray, t0: int, learner: Any) -> tuple[np.ndarray, ...] | None:
        """A learner's own random draws for the block (RTop-kF's exploration, the random
        baseline's permutations), made now in round order from its generator."""
        if self.family not in (codes.BLOCK_RTOPKF, codes.BLOCK_RANDOM):
            return None
        return learner.block_draws(t0, unit.ends[block] - unit.starts[block])

    def warm_up(self) -> None:
        """Compile (or load) the block kernel for this run's argument types on one round,
        with copies: nothing of the run changes."""
        import copy

        for seg in self.plan:
            if seg.order.size:
                w = np.array(self.learner.w, dtype=np.float64, copy=True)
                unit = self.units[seg.unit]
                twin = copy.deepcopy(self.learner)  # its generator is drawn from, not the run's
                self._call(unit, seg.order[:1], w, 0, True, _buffers(1, self.spec.shape[0]),
                           self._draws(unit, seg.order[:1], 0, twin))
                return

    def run(self, log: RoundLog, t: int, nonfinite_round: int | None, max_rounds: int | None,
            every: int, after_block: Callable[[int, int, int | None], None], name: str) -> BlockOutcome:
        """Every planned round after round ``t`` (the rounds before were done, e.g. before a
        checkpoint), up to ``max_rounds``; ``after_block(t, n, nonfinite_round)`` after each
        block (progress, checkpoints; also given the round the weights left the reals, if they did). ``every``:
        blocks end at multiples of it (0: no checkpoints)."""
        learner = self.learner
        out = _buffers(BLOCK_ROUNDS, self.spec.shape[0])
        skip = t  # rounds already done (resume)
        for seg in self.plan:
            order = seg.order
            if skip >= order.shape[0]:
                skip -= order.shape[0]
                continue
            pos, skip = skip, 0
            unit = self.units[seg.unit]
            while pos < order.shape[0]:
                if max_rounds is not None and t >= max_rounds:
                    return BlockOutcome(t, nonfinite_round)
                n = min(BLOCK_ROUNDS, order.shape[0] - pos)
                if max_rounds is not None:
                    n = min(n, max_rounds - t)
                if every:
                    n = min(n, every - t % every)
                block = order[pos:pos + n]
                w = np.array(learner.w, dtype=np.float64, copy=True)
                counted = hasattr(learner, "t")  # the random baseline keeps no round counter
                t0 = learner.t if counted else t
                ran, stop, nonfinite = self._call(unit, block, w, t0, nonfinite_round is None, out,
                                                  self._draws(unit, block, t0, learner))
                _record(log, t, seg.pass_no, [unit.qids[q] for q in block[:ran].tolist()], out, ran)
                learner.w = w
                if counted:
                    learner.t += ran
                if nonfinite >= 0:
                    nonfinite_round = t + nonfinite + 1
                    qid = unit.qids[int(block[nonfinite])]
                    print(f"warning: {name}: weights became NaN or infinite in round {nonfinite_round} "
                          f"(qid {qid}); numerics: authors-code keeps them, as the authors' code "
                          "did: from here on it ranks NaN scores as their sort does", file=sys.stderr)
                t += ran
                pos += ran
                if stop != codes.BLOCK_DONE:
                    qid = unit.qids[int(block[ran])]
                    learner.t += 1  # the failing round's update was called
                    if stop == codes.BLOCK_NOT_FINITE_STEP:
                        raise learner._not_finite()
                    raise LtrError(
                        f"round {t + 1} (qid {qid}): the learner's weights became NaN or infinite "
                        "after its update; lower the learning rate, add a projection radius, or "
                        "rescale the features")
                after_block(t, ran, nonfinite_round)
        return BlockOutcome(t, nonfinite_round)


def _buffers(n: int, k: int) -> dict[str, np.ndarray]:
    return {"values": np.empty((n, k)), "mistake": np.empty(n, dtype=np.bool_),
            "updated": np.empty(n, dtype=np.bool_), "no_relevant": np.empty(n, dtype=np.bool_),
            "ranking_loss": np.empty(n), "m": np.empty(n, dtype=np.int64)}


def _record(log: RoundLog, t: int, pass_no: int, qids: list[str], out: dict[str, np.ndarray], n: int) -> None:
    """The block's rows into the round log."""
    log.extend(t, pass_no, qids, out["m"], out["values"], out["mistake"], out["updated"], out["no_relevant"],
               out["ranking_loss"])
