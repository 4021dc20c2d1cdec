"""Shown-list kernels of the click learners (reference: :meth:`ltr_cli.interleaving.probabilistic.Probabilistic.draft`,
the test oracle).

:func:`probabilistic_draft` drafts a probabilistic interleaving or multileaving from draws
made beforehand (the ranker and the uniform of each position, which do not depend on the
rankings): the same cumulative softmax weights, summed in the same order, the same
inversion and the same bookkeeping of the documents left, so the same documents.

:func:`sign_masses` (reference: :func:`ltr_cli.interleaving.probabilistic.sign_masses`)
gives the laws of the click-count differences between one ranker and every other, with
the same operations in the same order, so the same numbers (the sums over them stay in
numpy). :func:`team_draft` (reference: :meth:`ltr_cli.interleaving.team_draft.TeamDraft.draft`)
drafts a team-draft list from its permutations drawn beforehand, :func:`epsilon_greedy`
(reference: :func:`ltr_cli.learners.online.pairwise_clicks.epsilon_greedy`) the pairwise
baseline's list from its coins; :func:`shared_prefix` and :func:`shown_first` are those of
:mod:`ltr_cli.interleaving.team_draft` and :mod:`ltr_cli.learners.online.dbgd`.

Conventions: see :mod:`ltr_cli.kernels`.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit


@njit(cache=_CACHE)
def probabilistic_draft(ranks, inv, weight, picks, coins, docs):
    """``docs`` (size,) = the shown documents of rankings ``ranks`` (k, n) (``inv`` (k, n)
    their inverse: the 0-based rank of each document), softmax weights by rank ``weight``
    (n,), the ranker ``picks[p]`` and the uniform ``coins[p]`` of each position p."""
    k, n = ranks.shape
    left = np.ones((k, n), dtype=np.bool_)
    cum = np.empty(n)
    for pos in range(docs.shape[0]):
        j = picks[pos]
        acc = 0.0
        for r in range(n):
            acc += weight[r] if left[j, r] else 0.0
            cum[r] = acc
        x = coins[pos] * cum[n - 1]
        lo, hi = 0, n                      # searchsorted(cum, x, side="right")
        while lo < hi:
            mid = (lo + hi) // 2
            if x < cum[mid]:
                hi = mid
            else:
                lo = mid + 1
        r = min(lo, n - 1)
        while not left[j, r]:              # rounding at the edge
            r -= 1
        doc = ranks[j, r]
        docs[pos] = doc
        for i in range(k):
            left[i, inv[i, doc]] = False


@njit(cache=_CACHE)
def _pair_law(post, over, mine, out):
    c, k = post.shape
    width = 2 * c + 1
    dist = np.zeros(width)
    new = np.empty(width)
    for x in range(k):
        for s in range(width):
            dist[s] = 0.0
        dist[c] = 1.0
        for i in range(c):
            if mine:
                u, d = post[i, x], post[i, over]
            else:
                u, d = post[i, over], post[i, x]
            stay = 1.0 - u - d
            for s in range(width):
                v = dist[s] * stay
                if s > 0:
                    v += dist[s - 1] * u
                if s < width - 1:
                    v += dist[s + 1] * d
                new[s] = v
            for s in range(width):
                dist[s] = new[s]
        for s in range(width):
            out[x, s] = dist[s]


@njit(cache=_CACHE)
def sign_masses(post, over, mine, theirs):
    """``mine`` and ``theirs`` (k, 2c + 1) = the laws of c_x - c_over and of c_over - c_x
    for every ranker x, each row of ``post`` (c, k) the law of the ranker credited with one
    click."""
    _pair_law(post, over, True, mine)
    _pair_law(post, over, False, theirs)


@njit(cache=_CACHE)
def team_draft(ranks, start, perms, docs, teams):
    """``docs`` and ``teams`` (size,) = the team-draft list of rankings ``ranks`` (k, n):
    their shared prefix of ``start`` documents (team -1), then one round per row of
    ``perms`` (rounds, k), each ranker in that order adding its highest-ranked document
    not shown yet."""
    k, n = ranks.shape
    size = docs.shape[0]
    used = np.zeros(n, dtype=np.bool_)
    for p in range(start):
        docs[p] = ranks[0, p]
        teams[p] = -1
        used[ranks[0, p]] = True
    nxt = np.full(k, start, dtype=np.int64)
    pos = start
    for r in range(perms.shape[0]):
        for q in range(k):
            if pos == size:
                break
            j = perms[r, q]
            i = nxt[j]
            while used[ranks[j, i]]:
                i += 1
            docs[pos] = ranks[j, i]
            teams[pos] = j
            used[ranks[j, i]] = True
            nxt[j] = i + 1
            pos += 1


@njit(cache=_CACHE)
def epsilon_greedy(exploit, explore, explores, out):
    """``out`` (m,) = the pairwise baseline's list: position p of the shown list (``explores``
    (n,)) from ``explore`` when ``explores[p]``, else from ``exploit``, each time the next
    document of that order not shown yet; then the other documents in the exploit order."""
    m = exploit.shape[0]
    used = np.zeros(m, dtype=np.bool_)
    nxt_exploit = 0
    nxt_explore = 0
    n = explores.shape[0]
    for p in range(n):
        if explores[p]:
            k = nxt_explore
            while used[explore[k]]:
                k += 1
            out[p] = explore[k]
            nxt_explore = k + 1
        else:
            k = nxt_exploit
            while used[exploit[k]]:
                k += 1
            out[p] = exploit[k]
            nxt_exploit = k + 1
        used[out[p]] = True
    p = n
    for k in range(m):
        if not used[exploit[k]]:
            out[p] = exploit[k]
            p += 1


@njit(cache=_CACHE)
def shared_prefix(ranks, size):
    """How many leading ranks (at most ``size``) hold the same document in every row of
    ``ranks`` (k, n)."""
    k = ranks.shape[0]
    for r in range(size):
        for j in range(1, k):
            if ranks[j, r] != ranks[0, r]:
                return r
    return size


@njit(cache=_CACHE)
def shown_first(docs, order, out):
    """``out`` (m,) = ``docs`` first, then the other documents of ``order`` (m,) in its order."""
    m = order.shape[0]
    taken = np.zeros(m, dtype=np.bool_)
    for p in range(docs.shape[0]):
        out[p] = docs[p]
        taken[docs[p]] = True
    p = docs.shape[0]
    for r in range(m):
        if not taken[order[r]]:
            out[p] = order[r]
            p += 1
