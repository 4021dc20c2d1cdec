"""RankSVM on the pairs of per-document targets without storing the pairs: the same
squared-hinge objective as :class:`~ltr_cli.learners.batch.ranksvm.WeightedPairProblem` on
the pairs of :func:`~ltr_cli.clicklog.target_pairs.target_pairs` (i over j where
``t_i > t_j``, weighing ``t_i - t_j``), for folds whose queries would give more pairs than
:data:`~ltr_cli.clicklog.target_pairs.MAX_PAIRS`.

Every evaluation (the objective and gradient, each Hessian-vector product, the diagonal) is
a few sums, for each row, over the rows it is paired with and active against (the squared
hinge's margin ``1 - (s_i - s_j) > 0``): with ``c_ij = t_i - t_j`` and ``z_ij = 1 - s_i +
s_j``, each pair's ``c_ij z_ij^2``, ``c_ij z_ij`` and ``c_ij (u_i - u_j)`` expand into
products of a row's own values and sums of 1, s, s^2, u and their products with t over its
partners. Those sums take O(m log m) per query of m rows
(:func:`ltr_cli.kernels.dominance.pair_sums`), so time and memory are linear in the rows up
to the logarithm, not quadratic in the query length; the diagonal needs 4 d such sums per
row, taken over :data:`DIAGONAL_ROWS` rows at a time. The pairs themselves are never made in
training; :meth:`TargetPairProblem.block_pairs` makes them block by block
(:func:`~ltr_cli.clicklog.target_pairs.query_blocks`) for the tests, which compare the sums
with the stored pairs. Conventions as the stored
problem's: each query's rows centred, the loss averaged over the queries with a pair,
``lam = 1 / C``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ltr_cli.clicklog.target_pairs import block_pairs, query_blocks, query_starts
from ltr_cli.learners.batch.common import Queries
from ltr_cli.learners.batch.curvature import Curvature

DIAGONAL_ROWS = 1 << 15  # rows of whole queries per pass of the Hessian diagonal


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
        """J(w), its gradient, and the generalised Hessian's action and diagonal there, from
        sums over each row's active pairs in O(m log m) per query
        (:func:`ltr_cli.kernels.dominance.pair_sums`), the pairs never made."""
        from ltr_cli.kernels.dominance import pair_sums

        Q, n, t = max(self.queries, 1), self.X.shape[0], self.t
        s = self.X @ w
        # below: row i over the rows j it beats; above: row j under the rows i that beat it
        below = pair_sums(t, s, self.starts, np.column_stack([np.ones(n), s, s * s, t, t * s, t * s * s]), True)
        above = pair_sums(t, s, self.starts, np.column_stack([np.ones(n), s, t, t * s]), False)
        N, S1, S2, T, TS1, TS2 = below.T
        Nw, S1w, Tw, TS1w = above.T
        a, b = 1.0 - s, 1.0 + s  # z_ij = a_i + s_j = b_j - s_i
        value = float(np.sum(t * (a * a * N + 2 * a * S1 + S2) - (a * a * T + 2 * a * TS1 + TS2)))
        grad_s = 2.0 * ((Tw * b - TS1w) - t * (Nw * b - S1w)) - 2.0 * (t * (a * N + S1) - (a * T + TS1))

        def hessvec(v: np.ndarray) -> np.ndarray:
            u = self.X @ v
            U, TU = pair_sums(t, s, self.starts, np.column_stack([u, t * u]), True).T
            Uw, TUw = pair_sums(t, s, self.starts, np.column_stack([u, t * u]), False).T
            out = 2.0 * (t * (u * N - U) - (u * T - TU)) - 2.0 * ((TUw - u * Tw) - t * (Uw - u * Nw))
            return self.lam * v + (self.X.T @ out) / Q

        def diagonal() -> np.ndarray:
            return self.lam + self._diagonal(s, N, T) / Q

        return Curvature(self.lam / 2 * float(w @ w) + value / Q, self.lam * w + (self.X.T @ grad_s) / Q,
                         hessvec, diagonal)

    def _diagonal(self, s: np.ndarray, N: np.ndarray, T: np.ndarray) -> np.ndarray:
        """sum over the active pairs of 2 c (x_i - x_j)^2 per feature (d,), from each better
        row's sums of x, x^2, t x and t x^2 over the rows it beats, DIAGONAL_ROWS rows of
        whole queries at a time (memory: their rows x 4 d values)."""
        from ltr_cli.kernels.dominance import pair_sums

        out = np.zeros(self.X.shape[1])
        Qn = len(self.starts) - 1
        q = 0
        while q < Qn:
            r = q + 1
            while r < Qn and self.starts[r + 1] - self.starts[q] <= DIAGONAL_ROWS:
                r += 1
            lo, hi = int(self.starts[q]), int(self.starts[r])
            X, t = self.X[lo:hi], self.t[lo:hi]
            sums = pair_sums(t, s[lo:hi], self.starts[q:r + 1] - lo,
                             np.hstack([X, X * X, t[:, None] * X, t[:, None] * X * X]), True)
            Xs, X2s, TX, TX2 = np.split(sums, 4, axis=1)
            n_, t_ = N[lo:hi, None], T[lo:hi, None]
            tc = t[:, None]
            out += 2.0 * np.sum(tc * (X * X * n_ - 2 * X * Xs + X2s) - (X * X * t_ - 2 * X * TX + TX2), axis=0)
            q = r
        return out
