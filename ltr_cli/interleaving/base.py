"""The interleaving contract: what a method makes, what it returns, and the input checks.

Conventions, for every method of this package:

- ``rankings``: k rankings of the same n documents, an int array of shape (k, n) (or a
  sequence of k arrays of length n); row j is ranker j's ranking, best first, each row a
  permutation of the document indices 0..n-1.
- ``length``: how many documents are shown; the shown list has min(length, n) of them.
- ``Shown.docs``: the shown list, int64 of shape (L,), document indices, position 1 first.
- ``clicks``: a click vector on the shown list, bool of shape (L,), position 1 first.
- ``Outcome.credit``: float (k,), each ranker's credit for the clicks (its meaning is the
  method's: clicks of its team, expected clicks, weighted correct pairs).
- ``Outcome.prefer``: float (k, k), antisymmetric with a zero diagonal, in [-1, 1];
  ``prefer[x, y] > 0`` means ranker x beats ranker y, ``< 0`` that it loses, ``0`` a tie.
  For the probabilistic methods it is the expectation of sign(clicks of x - clicks of y)
  over the method's own assignments; for the others it is that sign.

Randomness comes only from the ``numpy.random.Generator`` given to ``make``; ``credit`` is
a pure function of the shown list and the clicks.

A method a user names is an :class:`InterleavingKind`, an entry point of the
``ltr_cli.interleaving`` group (:mod:`ltr_cli.interleaving.methods`): what it compares and
the method object it builds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ltr_cli.errors import LtrError


@dataclass(frozen=True)
class Shown:
    """A shown (interleaved or multileaved) list and what its credit needs.

    ``docs``: int64 (L,), the shown documents, position 1 first. ``rankings``: int64 (k, n),
    the input rankings. ``teams``: int64 (L,) for team-draft, the ranker that contributed
    each position (-1: a position of the prefix every ranking shares, credited to none);
    ``None`` for the methods that infer their assignment from the list."""

    docs: np.ndarray
    rankings: np.ndarray
    teams: np.ndarray | None = None


@dataclass(frozen=True)
class Outcome:
    """The result of one impression: ``credit`` float (k,) and ``prefer`` float (k, k)
    (see the module's conventions)."""

    credit: np.ndarray
    prefer: np.ndarray

    def wins(self) -> np.ndarray:
        """bool (k, k): ``wins()[x, y]`` when ranker x beats ranker y."""
        return self.prefer > 0

    def winners(self, over: int = 0) -> np.ndarray:
        """The rankers that beat ranker ``over`` (int64 indices, ascending): a dueling
        bandit's candidates that beat its current ranker (``over=0``)."""
        return np.flatnonzero(self.prefer[:, over] > 0)


class Method(Protocol):
    """An interleaving or multileaving method: ``make`` a shown list from k rankings,
    ``credit`` the clicks on it."""

    name: str
    #: the fewest and the most rankers the method compares (``None``: no upper bound)
    min_rankers: int
    max_rankers: int | None

    def make(self, rankings: Any, length: int, rng: np.random.Generator) -> Shown:
        """A shown list of min(length, n) documents from ``rankings``, drawn from ``rng``."""
        ...

    def make_checked(self, ranks: np.ndarray, size: int, rng: np.random.Generator) -> Shown:
        """:meth:`make` without its checks, for rankings known to be int64 (k, n)
        permutations (a learner's own) and ``size`` <= n: the same draws, the same list."""
        ...

    def credit(self, shown: Shown, clicks: Any) -> Outcome:
        """Each ranker's credit and the pairwise outcome for ``clicks`` on ``shown``."""
        ...


@dataclass(frozen=True)
class InterleavingKind:
    """An interleaving or multileaving method as an entry point of ``ltr_cli.interleaving``
    declares it (the entry point's name is the method's: lower-case words joined by ``-``).

    * ``summary``: its one-line definition (``ltr list`` shows it);
    * ``build(**params) -> Method``: the method object, its parameters as keywords;
    * ``interleaves``: it compares two rankers (``ltr interleave``, DBGD's one candidate);
    * ``multileaves``: it compares k >= 2 rankers at once (MGD's several candidates);
    * ``params``: the parameters ``build`` takes -> their meaning (``tau``); a caller passes
      those it has (``dbgd``'s ``tau``) and the others keep ``build``'s defaults;
    * ``abbreviation``: how a learner's paper role names it (``td`` in ``td-dbgd``; empty:
      the method's name).

    The method object follows :class:`Method`; its ``unbiased = False`` says that random
    clicks favour one ranker (the conformance suite then skips that check, saying so).
    """

    summary: str
    build: Callable[..., Method]
    interleaves: bool = True
    multileaves: bool = False
    params: Mapping[str, str] = field(default_factory=dict)
    abbreviation: str = ""


def check_rankings(rankings: Any, min_rankers: int = 2, max_rankers: int | None = None) -> np.ndarray:
    """``rankings`` as int64 (k, n), each row a permutation of 0..n-1; one-line errors."""
    arr = np.asarray(rankings)
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise LtrError("rankings: give k rankings of the same n >= 1 documents, an array of shape (k, n)")
    if arr.dtype.kind not in "iu":
        raise LtrError("rankings: document indices must be integers")
    k, n = arr.shape
    if k < min_rankers or (max_rankers is not None and k > max_rankers):
        wanted = f"{min_rankers}" if max_rankers == min_rankers else \
            f"{min_rankers} or more" if max_rankers is None else f"{min_rankers} to {max_rankers}"
        raise LtrError(f"rankings: {k} given; this method compares {wanted} rankings")
    arr = arr.astype(np.int64)
    inside = (arr >= 0) & (arr < n)
    seen = np.zeros((k, n), dtype=bool)
    np.put_along_axis(seen, np.where(inside, arr, 0), inside, axis=1)
    whole = inside.all(axis=1) & seen.all(axis=1)
    if not whole.all():
        bad = int(np.flatnonzero(~whole)[0])
        raise LtrError(f"rankings: ranking {bad} is not a permutation of the document indices 0..{n - 1}")
    return arr


def check_length(length: int, n: int) -> int:
    """The shown length, min(length, n); refuses a length below 1."""
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        raise LtrError(f"length {length!r}: show at least one document")
    return min(int(length), n)


def check_clicks(shown: Shown, clicks: Any) -> np.ndarray:
    """``clicks`` as bool (L,) matching the shown list."""
    arr = np.asarray(clicks)
    if arr.shape != shown.docs.shape:
        raise LtrError(f"clicks: {arr.shape} for a shown list of {len(shown.docs)} documents; "
                       "give one 0/1 per shown position")
    return arr.astype(bool)


def inverse(rankings: np.ndarray) -> np.ndarray:
    """int64 (k, n): ``inverse(r)[j, d]`` is the 0-based rank of document d in ranking j."""
    k, n = rankings.shape
    out = np.empty((k, n), dtype=np.int64)
    out[np.arange(k)[:, None], rankings] = np.arange(n)
    return out


def sign_matrix(credit: np.ndarray) -> np.ndarray:
    """float (k, k): sign(credit[x] - credit[y])."""
    return np.sign(credit[:, None] - credit[None, :]).astype(float)
