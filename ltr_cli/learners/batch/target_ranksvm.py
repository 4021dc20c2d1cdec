"""RankSVM on the pairs of per-document targets without storing the pairs: the same
squared-hinge objective as :class:`~ltr_cli.learners.batch.ranksvm.WeightedPairProblem` on
the pairs of :func:`~ltr_cli.clicklog.target_pairs.target_pairs` (i over j where
``t_i > t_j``, weighing ``t_i - t_j``), for folds whose queries would give more pairs than
:data:`~ltr_cli.clicklog.target_pairs.MAX_PAIRS`.

The queries are cut into blocks of consecutive queries whose full m x m grids hold at most
:data:`~ltr_cli.clicklog.target_pairs.BLOCK_CELLS` cells together (a query larger than that
is a block of its own, :func:`~ltr_cli.clicklog.target_pairs.query_blocks`). Every
evaluation (the objective and gradient, each Hessian-vector product, the diagonal) makes
each block's pairs again from its targets, all at once, uses them and drops them, so memory
is one block's grid, not the fold's pairs; time is the same sums as with stored pairs, each
evaluation making the pairs anew. Conventions as the stored problem's: each query's rows
centred, the loss averaged over the queries with a pair, ``lam = 1 / C``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ltr_cli.clicklog.target_pairs import block_pairs, query_blocks, query_starts
from ltr_cli.learners.batch.common import Queries
from ltr_cli.learners.batch.curvature import Curvature, pair_diagonal


@dataclass
class TargetPairProblem:
    """The training rows ``X`` (n, d) (each query's rows centred), their targets ``t`` (n,),
    the queries' first rows ``starts`` (Q + 1,), the blocks as ranges of queries, the number
    of pairs and of queries with a pair, and ``lam``."""

    X: np.ndarray
    t: np.ndarray
    starts: np.ndarray
    blocks: list[tuple[int, int]]
    pairs: int
    queries: int
    lam: float

    @classmethod
    def from_targets(cls, train: Queries, targets: list[np.ndarray], C: float) -> TargetPairProblem:
        d = train[0][0].shape[1] if train else 0
        sizes = np.array([len(t) for t in targets], dtype=np.int64)
        starts = query_starts(sizes)
        X = np.zeros((int(starts[-1]), d))
        pairs, queries = 0, 0
        for q, ((Xq, _), t) in enumerate(zip(train, targets)):
            if len(t):
                rows = np.asarray(Xq, dtype=np.float64)
                X[starts[q]:starts[q + 1]] = rows - rows.mean(axis=0)
            _, counts = np.unique(np.asarray(t, dtype=np.float64), return_counts=True)
            found = (len(t) * len(t) - int(np.sum(counts * counts))) // 2
            pairs += found
            queries += found > 0
        blocks = query_blocks(sizes)
        t_all = np.concatenate([np.asarray(t, dtype=np.float64) for t in targets]) if targets else np.zeros(0)
        return cls(X, t_all, starts, blocks, pairs, queries, 1.0 / C)

    def block_pairs(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Each block's pairs (:func:`~ltr_cli.clicklog.target_pairs.block_pairs`)."""
        return block_pairs(self.t, self.starts, self.blocks)

    def at(self, w: np.ndarray) -> Curvature:
        """J(w), its gradient, and the generalised Hessian's action and diagonal there."""
        Q, n = max(self.queries, 1), self.X.shape[0]
        s = self.X @ w
        value, grad_s = 0.0, np.zeros(n)
        for i, j, c in self.block_pairs():
            z = 1.0 - (s[i] - s[j])
            act = z > 0
            ia, ja, ca, za = i[act], j[act], c[act], z[act]
            value += float(ca @ (za * za))
            tt = 2.0 * ca * za
            grad_s += np.bincount(ja, tt, n) - np.bincount(ia, tt, n)

        def active() -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
            for i, j, c in self.block_pairs():
                act = 1.0 - (s[i] - s[j]) > 0
                yield i[act], j[act], c[act]

        def hessvec(v: np.ndarray) -> np.ndarray:
            u = self.X @ v
            out = np.zeros(n)
            for ia, ja, ca in active():
                r = 2.0 * ca * (u[ia] - u[ja])
                out += np.bincount(ia, r, n) - np.bincount(ja, r, n)
            return self.lam * v + (self.X.T @ out) / Q

        def diagonal() -> np.ndarray:
            return self.lam + sum((pair_diagonal(self.X, ia, ja, ca) for ia, ja, ca in active()),
                                  np.zeros(self.X.shape[1])) / Q

        return Curvature(self.lam / 2 * float(w @ w) + value / Q, self.lam * w + (self.X.T @ grad_s) / Q,
                         hessvec, diagonal)
