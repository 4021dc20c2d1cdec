"""The user browsing model (UBM, Dupret & Piwowarski 2008) as a simulator.

A document at rank r (1-based) is examined with gamma(r, j), where j is the rank of the
last click above r (j = 0: no click above), and an examined document is clicked with its
attractiveness, independently of everything else:
P(C_r = 1 | the clicks above) = alpha(label_r) gamma(r, j). The user never stops.

The examination depends on the last click, a state the one-state browsing walk of
:mod:`ltr_cli.clicks.law` cannot carry, so a :class:`BrowsingModel` computes its law, its
marginals and its samples itself, from the table ``exam(n)``: float (n, n + 1), row r - 1
the rank r, column j - 1 (j < r) the rank of the last click above, column n none.

The named ``ubm`` clicks with P(click | grade) of the ``perfect`` table and examines with
gamma(r, j) = (1 / (r - j))^eta: the examination decays with the distance to the last
click, or to the top of the list when there is none (so without clicks it is ``pbm``'s
(1/r)^eta). ``ltr clicks simulate-log --fitted`` simulates a fitted UBM with the same class
(:mod:`ltr_cli.clicklog.fit.replay`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.clicks.base import ClickModel, ClickModelKind, ClickSettings, check_labels
from ltr_cli.clicks.law import check_enumerable, patterns


class BrowsingModel(ClickModel):
    """A UBM: :meth:`attractiveness` of each label, :meth:`exam` the examination table
    (module docstring). Subclasses give both, ``name``, ``grades`` and ``describe``."""

    def attractiveness(self, labels: np.ndarray) -> np.ndarray:
        """alpha of each label, float of ``labels``' shape."""
        raise NotImplementedError

    def exam(self, n: int) -> np.ndarray:
        """gamma(r, j), float (n, n + 1): row r - 1 the rank, column j - 1 the last click
        above (j < r), column n no click above."""
        raise NotImplementedError

    def walk(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError("UBM's examination depends on the last click: it is not a one-state walk")

    def conditional(self, labels: Any) -> np.ndarray:
        """P(C_r = 1 | the last click above at j), float (n, n + 1), for one checked list."""
        checked = check_labels(labels, self.grades, self.hint)
        return self.attractiveness(checked)[:, None] * self.exam(len(checked))

    def law(self, labels: Any) -> tuple[np.ndarray, np.ndarray]:
        arr = np.asarray(labels)
        check_enumerable(arr.shape[0] if arr.ndim == 1 else 0)
        cond = self.conditional(labels)
        n = cond.shape[0]
        rows = patterns(n)
        probs = np.ones(len(rows))
        last = np.full(len(rows), n, dtype=np.int64)
        for r in range(n):
            p = cond[r, last]
            probs *= np.where(rows[:, r], p, 1.0 - p)
            last = np.where(rows[:, r], r, last)
        return rows, probs

    def marginal(self, labels: Any) -> np.ndarray:
        """P(C_r = 1) by a forward pass over the rank of the last click: O(n^2)."""
        cond = self.conditional(labels)
        n = cond.shape[0]
        state = np.zeros(n + 1)   # P(the last click above the current rank is at j; column n: none)
        state[n] = 1.0
        out = np.zeros(n)
        for r in range(n):
            p = cond[r]
            hit = state * p
            out[r] = hit.sum()
            state = state - hit
            state[r] += out[r]
        return out

    def _draw(self, attr: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One click vector per row of ``attr`` (m, n): one ``rng.random((m, n))`` call,
        then position by position, the examination read at each draw's last click."""
        m, n = attr.shape
        gamma = self.exam(n)
        coins = rng.random((m, n))
        out = np.zeros((m, n), dtype=bool)
        last = np.full(m, n, dtype=np.int64)
        for r in range(n):
            hit = coins[:, r] < attr[:, r] * gamma[r, last]
            out[:, r] = hit
            last = np.where(hit, r, last)
        return out

    def sample(self, labels: Any, rng: np.random.Generator, draws: int) -> np.ndarray:
        checked = check_labels(labels, self.grades, self.hint)
        return self._draw(np.broadcast_to(self.attractiveness(checked), (draws, len(checked))), rng)

    def sample_lists(self, labels: Any, rng: np.random.Generator) -> np.ndarray:
        arr = np.asarray(labels)
        if arr.ndim != 2:
            from ltr_cli.errors import LtrError

            raise LtrError("labels: give one row of shown labels per session")
        checked = check_labels(arr.reshape(-1), self.grades, self.hint).reshape(arr.shape)
        return self._draw(self.attractiveness(checked), rng)

    def sample_shown(self, labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self._draw(self.attractiveness(np.asarray(labels, dtype=np.int64))[None, :], rng)[0]


def distance_exam(n: int, eta: float) -> np.ndarray:
    """The named UBM's gamma(r, j) = (1 / (r - j))^eta, j = 0 for no click above: float
    (n, n + 1) in :meth:`BrowsingModel.exam`'s layout (entries with j >= r are 0)."""
    r = np.arange(1, n + 1, dtype=float)[:, None]
    j = np.r_[np.arange(1, n + 1, dtype=float), 0.0][None, :]
    d = r - j
    with np.errstate(divide="ignore"):
        return np.where(d > 0, (1.0 / np.where(d > 0, d, 1.0)) ** eta, 0.0)


class UserBrowsingModel(BrowsingModel):
    """``ubm``: ``click`` one attractiveness per grade, ``eta`` >= 0."""

    def __init__(self, name: str, click: tuple[float, ...], eta: float, table: str, hint: str = "--grades"):
        self.name = name
        self.click = np.asarray(click, dtype=float)
        self.eta = float(eta)
        self.table = table
        self.grades = len(click)
        self.hint = hint

    def attractiveness(self, labels: np.ndarray) -> np.ndarray:
        return self.click[labels]

    def exam(self, n: int) -> np.ndarray:
        return distance_exam(n, self.eta)

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "kind": "ubm", "grades": self.grades, "eta": self.eta, "table": self.table,
                "click": self.click.tolist()}


def _build(s: ClickSettings) -> UserBrowsingModel:
    return UserBrowsingModel(s.name, s.click, 1.0 if s.eta is None else s.eta, s.table, s.hint)


UBM = ClickModelKind("user browsing model: clicked with P(click | grade) of the perfect table when examined; rank r "
                     "examined with (1/(r - j))^eta, j the rank of the last click above (0: none); never stops",
                     _build, eta=True)
