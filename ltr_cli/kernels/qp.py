"""The dual QP of the cutting-plane methods by accelerated projected gradient, compiled
(reference: :func:`ltr_cli.learners.batch.qp.solve_dual_qp`, the same iteration in numpy).

``kind``: 0 simplex (sum a = 1), 1 capped (sum a <= cap), 2 blocks (sum over each block
<= cap; ``block`` (n,) int64 ids 0..B-1). ``Q`` (n, n) positive semidefinite, ``b`` (n,),
``x0`` (n,) the start (projected first), ``L`` the step's Lipschitz constant.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit


@njit(cache=_CACHE)
def _project_simplex(v, z):
    n = v.shape[0]
    u = np.sort(v)[::-1]
    css = 0.0
    theta = 0.0
    for i in range(n):
        css += u[i]
        t = (css - z) / (i + 1)
        if u[i] - t > 0:
            theta = t
    out = np.empty(n)
    for i in range(n):
        out[i] = max(v[i] - theta, 0.0)
    return out


@njit(cache=_CACHE)
def _project_capped(v, cap):
    a = np.maximum(v, 0.0)
    if a.sum() <= cap:
        return a
    return _project_simplex(v, cap)


@njit(cache=_CACHE)
def _project(v, kind, cap, block, n_blocks):
    if kind == 0:
        return _project_simplex(v, 1.0)
    if kind == 1:
        return _project_capped(v, cap)
    out = np.empty_like(v)
    for blk in range(n_blocks):
        sel = np.flatnonzero(block == blk)
        part = _project_capped(v[sel], cap)
        for i in range(sel.shape[0]):
            out[sel[i]] = part[i]
    return out


@njit(cache=_CACHE)
def _objective(Q, b, a):
    return b @ a - 0.5 * (a @ (Q @ a))


@njit(cache=_CACHE)
def _fw_gap(Q, b, a, kind, cap, block, n_blocks):
    g = b - Q @ a
    if kind == 0:
        best = g.max()
    elif kind == 1:
        best = cap * max(0.0, g.max())
    else:
        best = 0.0
        for blk in range(n_blocks):
            top = -np.inf
            for i in range(g.shape[0]):
                if block[i] == blk and g[i] > top:
                    top = g[i]
            best += cap * max(0.0, top)
    return best - g @ a


@njit(cache=_CACHE)
def fista(Q, b, kind, cap, block, n_blocks, x0, L, abs_tol, rel_tol, max_iter):
    """The maximiser of ``b.a - 1/2 a'Qa`` over the constraint set, stopping when the
    Frank-Wolfe gap is at most ``abs_tol`` (if >= 0) else ``rel_tol`` x max(1, |objective|),
    checked every 10 iterations."""
    x = _project(x0, kind, cap, block, n_blocks)
    y = x.copy()
    t = 1.0
    for it in range(max_iter):
        x_new = _project(y + (b - Q @ y) / L, kind, cap, block, n_blocks)
        t_new = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
        y = x_new + ((t - 1.0) / t_new) * (x_new - x)
        if _objective(Q, b, y) < _objective(Q, b, x_new):
            y = x_new.copy()
            t_new = 1.0
        x = x_new
        t = t_new
        if it % 10 == 9:
            limit = abs_tol if abs_tol >= 0 else rel_tol * max(1.0, abs(_objective(Q, b, x)))
            if _fw_gap(Q, b, x, kind, cap, block, n_blocks) <= limit:
                break
    return x
