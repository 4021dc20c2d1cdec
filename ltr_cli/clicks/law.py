"""Exact click laws by enumeration, closed-form marginals and vectorised sampling.

Every click model of this package reduces, for a given list of shown labels, to one
*browsing walk* over the positions 1..n, written as three arrays of shape (n,):

- ``click[i]``: P(click at i | the user reached i);
- ``stop_click[i]``: P(the user stops after i | reached i and clicked it);
- ``stop_skip[i]``: P(the user stops after i | reached i and did not click it).

A user who stops clicks nothing further down. The cascade with stops only after a click has
``stop_skip = 0``; the reference code's any-position rule has ``stop_skip = stop_click``
(the stop coin is thrown whether or not the position was clicked); a position-based model
has no stops at all, its ``click`` being examination times attractiveness.

Patterns are the 2^n click vectors, row ``j`` the binary digits of ``j`` with position 1 as
the most significant digit, so rows sort as their 0/1 strings do.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.errors import LtrError

#: the longest list whose law is enumerated (2^20 patterns)
MAX_ENUMERATED = 20


def check_enumerable(n: int, hint: str = "show fewer documents") -> None:
    """Refuse a list too long for the enumeration over its 2^n click patterns."""
    if n > MAX_ENUMERATED:
        raise LtrError(f"{n} shown labels: the exact law enumerates 2^n click patterns and stops at "
                       f"n = {MAX_ENUMERATED}; {hint}")


def patterns(n: int) -> np.ndarray:
    """Every click vector of length ``n``: bool array of shape (2^n, n), in 0/1-string order."""
    check_enumerable(n)
    codes = np.arange(1 << n, dtype=np.int64)
    shifts = np.arange(n - 1, -1, -1, dtype=np.int64)
    return ((codes[:, None] >> shifts[None, :]) & 1).astype(bool)


def pattern_strings(rows: np.ndarray) -> list[str]:
    """Click vectors (bool, shape (k, n)) as 0/1 strings, position 1 first."""
    rows = np.asarray(rows, dtype=bool)
    if rows.shape[1] == 0:
        return [""] * len(rows)
    chars = np.ascontiguousarray(rows.astype(np.uint8) + ord("0"))
    return [b.decode("ascii") for b in chars.view(f"S{rows.shape[1]}").ravel()]


def walk_law(click: np.ndarray, stop_click: np.ndarray, stop_skip: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact law of the walk: ``(patterns, probs)``, patterns bool (2^n, n), probs
    float (2^n,) summing to 1. One forward pass per position over all patterns at once:
    the mass still browsing and the mass that has stopped (which can only add zeros)."""
    rows = patterns(len(click))
    browsing = np.ones(len(rows))
    stopped = np.zeros(len(rows))
    for i in range(len(click)):
        hit = rows[:, i]
        seen = np.where(hit, click[i], 1.0 - click[i])
        stop = np.where(hit, stop_click[i], stop_skip[i])
        stopped = np.where(hit, 0.0, stopped) + browsing * seen * stop
        browsing = browsing * seen * (1.0 - stop)
    return rows, browsing + stopped


def walk_marginal(click: np.ndarray, stop_click: np.ndarray, stop_skip: np.ndarray) -> np.ndarray:
    """P(click at i), shape (n,), in closed form: ``click[i]`` times the probability of
    reaching i, the product over the positions above of
    ``1 - click[j] stop_click[j] - (1 - click[j]) stop_skip[j]``."""
    go_on = 1.0 - click * stop_click - (1.0 - click) * stop_skip
    reach = np.concatenate(([1.0], np.cumprod(go_on)[:-1])) if len(click) else np.zeros(0)
    return click * reach


def walk_sample(click: np.ndarray, stop_click: np.ndarray, stop_skip: np.ndarray,
                rng: np.random.Generator, draws: int) -> np.ndarray:
    """``draws`` independent click vectors, bool (draws, n): a click coin and a stop coin per
    position (two ``rng.random((draws, n))`` calls, clicks first), the clicks kept up to and
    including the first position whose stop coin came up. The walk's arrays have shape (n,)
    (one list) or (draws, n) (one list per draw)."""
    n = click.shape[-1]
    clicks = rng.random((draws, n)) < click
    stops = rng.random((draws, n)) < np.where(clicks, stop_click, stop_skip)
    first = np.where(stops.any(axis=1), stops.argmax(axis=1), n)
    return clicks & (np.arange(n)[None, :] <= first[:, None])
