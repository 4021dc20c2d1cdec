"""The small dual QPs of the cutting-plane methods (BMRM, 1-slack SVMmap, PermuRank):

    maximise  b.a - 1/2 a'Qa   subject to  a >= 0  and  sum(a) = 1   (simplex)
                                                  or  sum(a) <= C   (capped)
                                                  or  sum over each block <= C (blocks)

solved by accelerated projected gradient (FISTA) with exact projections and a monotone
restart. Q is positive semidefinite; the step is 1/L with L its largest eigenvalue. The
iteration runs compiled (:mod:`ltr_cli.kernels.qp`) unless ``LTR_KERNELS=0``; the numpy
loop here is its reference.
"""

from __future__ import annotations

import numpy as np

from ltr_cli import kernels


def project_simplex(v: np.ndarray, z: float = 1.0) -> np.ndarray:
    """Euclidean projection of v onto {a >= 0, sum a = z}."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - z
    idx = np.arange(1, v.shape[0] + 1)
    rho = np.nonzero(u - css / idx > 0)[0][-1]
    theta = css[rho] / (rho + 1)
    return np.maximum(v - theta, 0.0)


def project_capped(v: np.ndarray, cap: float) -> np.ndarray:
    """Euclidean projection onto {a >= 0, sum a <= cap}."""
    a = np.maximum(v, 0.0)
    return a if a.sum() <= cap else project_simplex(v, cap)


def solve_dual_qp(
    Q: np.ndarray,
    b: np.ndarray,
    constraint: str = "simplex",
    cap: float = 1.0,
    blocks: np.ndarray | None = None,
    start: np.ndarray | None = None,
    tol: float = 1e-10,
    max_iter: int = 50_000,
    abs_tol: float | None = None,
) -> tuple[np.ndarray, float]:
    """Maximiser a and the objective value ``b.a - 1/2 a'Qa``.

    ``constraint``: ``simplex`` (sum a = 1), ``capped`` (sum a <= cap) or ``blocks``
    (sum over each block id in ``blocks`` <= cap). ``start`` warm-starts the iteration.
    Stops when the Frank-Wolfe gap (an upper bound on the distance to the optimum) is
    below ``abs_tol``, or else ``tol`` relative to the objective.
    """
    n = b.shape[0]
    groups = []
    if constraint == "blocks":
        assert blocks is not None, "constraint 'blocks' needs the block ids"
        groups = [np.flatnonzero(blocks == blk) for blk in np.unique(blocks)]

    def proj(v: np.ndarray) -> np.ndarray:
        if constraint == "simplex":
            return project_simplex(v, 1.0)
        if constraint == "capped":
            return project_capped(v, cap)
        out = np.empty_like(v)
        for sel in groups:
            out[sel] = project_capped(v[sel], cap)
        return out

    def objective(a: np.ndarray) -> float:
        return float(b @ a - 0.5 * a @ Q @ a)

    def fw_gap(a: np.ndarray) -> float:
        """Frank-Wolfe gap: max over the feasible set of grad.(v - a) >= optimum - f(a)."""
        g = b - Q @ a
        if constraint == "simplex":
            best = float(g.max())
        elif constraint == "capped":
            best = cap * max(0.0, float(g.max()))
        else:
            best = sum(cap * max(0.0, float(g[sel].max())) for sel in groups)
        return best - float(g @ a)

    L = float(np.linalg.eigvalsh(Q).max()) if n else 0.0
    if L <= 1e-15:  # linear objective: a projected step of any size solves it
        L = 1.0
    if kernels.ENABLED and n:
        from ltr_cli.kernels import qp  # numba loads only when a cutting-plane fit runs

        kind = ("simplex", "capped", "blocks").index(constraint)
        ids = (np.unique(np.asarray(blocks), return_inverse=True)[1].astype(np.int64) if kind == 2
               else np.zeros(n, np.int64))
        x0 = np.zeros(n) if start is None else np.asarray(start, dtype=np.float64)
        x = qp.fista(np.ascontiguousarray(Q, dtype=np.float64), np.asarray(b, dtype=np.float64), kind, float(cap),
                     ids, int(ids.max()) + 1, x0, L, -1.0 if abs_tol is None else float(abs_tol), tol, max_iter)
        return x, objective(x)
    x = proj(np.zeros(n) if start is None else np.asarray(start, dtype=np.float64))
    y, t = x.copy(), 1.0
    for it in range(max_iter):
        x_new = proj(y + (b - Q @ y) / L)
        t_new = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
        y = x_new + ((t - 1.0) / t_new) * (x_new - x)
        if objective(y) < objective(x_new):
            y, t_new = x_new.copy(), 1.0
        x, t = x_new, t_new
        if it % 10 == 9:
            limit = abs_tol if abs_tol is not None else tol * max(1.0, abs(objective(x)))
            if fw_gap(x) <= limit:
                break
    return x, objective(x)
