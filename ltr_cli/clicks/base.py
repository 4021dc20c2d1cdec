"""The click-model contract and the label checks every model shares.

A click model is a pure object: given the labels of a shown list, position 1 first, it
gives the exact law of the click vector, its marginals and seeded samples. Nothing in it
holds state between lists; randomness comes only from the generator passed to ``sample``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.clicks.law import walk_law, walk_marginal, walk_sample
from ltr_cli.errors import LtrError


def check_labels(labels: Any, grades: int, hint: str = "--grades") -> np.ndarray:
    """``labels`` as an int64 array of shape (n,), each a grade in 0..grades-1; a label
    beyond the table is refused, naming it, its position and ``hint`` (how to choose a
    table with more grades)."""
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise LtrError("labels: give one label per shown position")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr) & (arr == np.round(arr))):
        raise LtrError("labels: every label must be a whole number (a relevance grade)")
    if arr.dtype.kind not in "iuf" and arr.size:
        raise LtrError("labels: every label must be a whole number (a relevance grade)")
    arr = arr.astype(np.int64)
    bad = np.flatnonzero((arr < 0) | (arr >= grades))
    if bad.size:
        i = int(bad[0])
        raise LtrError(f"label {int(arr[i])} at position {i + 1} is outside the {grades}-grade click table "
                       f"(grades 0..{grades - 1}); give {hint} with more grades, or a table that covers it")
    return arr


class ClickModel:
    """A click model over shown lists of graded documents.

    Subclasses define ``name``, ``grades`` and :meth:`walk`, the list's browsing walk
    (:mod:`ltr_cli.clicks.law`); the law, the marginals and the samples follow from it.
    ``labels`` is always a sequence of n grades (position 1 first), checked against the
    model's ``grades``.
    """

    name: str = ""
    grades: int = 0
    hint: str = "--grades"

    def walk(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per position, float (n,) each: P(click | reached), P(stop | reached, clicked),
        P(stop | reached, not clicked)."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """The model's settings as plain data (for JSON output and manifests)."""
        raise NotImplementedError

    def law(self, labels: Any) -> tuple[np.ndarray, np.ndarray]:
        """The exact law: ``(patterns, probs)``, patterns bool (2^n, n) in 0/1-string
        order (position 1 the most significant digit), probs float (2^n,) summing to 1.
        Refused for n above :data:`ltr_cli.clicks.law.MAX_ENUMERATED`."""
        return walk_law(*self.walk(check_labels(labels, self.grades, self.hint)))

    def marginal(self, labels: Any) -> np.ndarray:
        """P(click at position i), float (n,), in closed form (no enumeration, any n)."""
        return walk_marginal(*self.walk(check_labels(labels, self.grades, self.hint)))

    def sample(self, labels: Any, rng: np.random.Generator, draws: int) -> np.ndarray:
        """``draws`` independent click vectors on the list, bool (draws, n), drawn from
        ``rng`` only: the same generator state gives the same clicks."""
        return walk_sample(*self.walk(check_labels(labels, self.grades, self.hint)), rng, draws)

    def sample_lists(self, labels: Any, rng: np.random.Generator) -> np.ndarray:
        """One click vector per row of ``labels`` (m, n), each row a shown list of its own:
        bool (m, n), drawn from ``rng`` only, as :meth:`sample` draws (the walk per row)."""
        arr = np.asarray(labels)
        if arr.ndim != 2:
            raise LtrError("labels: give one row of shown labels per session")
        checked = check_labels(arr.reshape(-1), self.grades, self.hint).reshape(arr.shape)
        walk = [np.broadcast_to(a, checked.shape) for a in self.walk(checked)]
        return walk_sample(walk[0], walk[1], walk[2], rng, len(checked))

    def walk_table(self, n: int) -> WalkTable:
        """The walk of every grade at every position of a list of ``n`` (built once per
        ``n`` and kept)."""
        cache: dict[int, WalkTable] | None = self.__dict__.get("_walk_tables")
        if cache is None:
            cache = self.__dict__["_walk_tables"] = {}
        table = cache.get(n)
        if table is None:
            table = cache[n] = WalkTable(self, n)
        return table

    def sample_shown(self, labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One click vector on one shown list, bool (n,): the same draws and the same clicks
        as ``sample(labels, rng, 1)[0]``, without its checks. ``labels`` must be grades the
        model covers, already checked where they entered (the click protocol checks the
        run's data before round 1); an unchecked label gives wrong clicks, not an error."""
        return self.walk_table(labels.shape[0]).sample(labels, rng)


class WalkTable:
    """A model's browsing walk for lists of ``n`` documents, tabulated by (position, grade):
    ``click``, ``stop_click`` and ``stop_skip``, flat lists whose entry ``i * grades + g``
    is the walk's value at position i for a document of grade g (elementwise the values
    ``model.walk`` gives any list)."""

    def __init__(self, model: ClickModel, n: int):
        grid = np.repeat(np.arange(model.grades, dtype=np.int64)[:, None], n, axis=1)    # (grades, n)
        self.n = n
        self.grades = model.grades
        self.click, self.stop_click, self.stop_skip = (
            np.ascontiguousarray(np.broadcast_to(a, grid.shape).T).reshape(-1).tolist() for a in model.walk(grid))

    def sample(self, labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One click vector, bool (n,), for the checked grades ``labels`` (n,): one
        ``rng.random(2 n)`` call, which gives the numbers of :func:`walk_sample`'s two
        ``rng.random((1, n))`` calls (click coins, then stop coins); the clicks up to and
        including the first position whose stop coin came up. A short list of plain
        numbers: a loop over the positions is cheaper here than array operations."""
        n, grades = self.n, self.grades
        coins = rng.random(2 * n).tolist()
        click, stop_click, stop_skip = self.click, self.stop_click, self.stop_skip
        out = [False] * n
        at = 0
        for i, label in enumerate(labels.tolist()):
            g = at + int(label)
            hit = coins[i] < click[g]
            out[i] = hit
            if coins[n + i] < (stop_click[g] if hit else stop_skip[g]):
                break
            at += grades
        return np.array(out, dtype=bool)


class EtaModel(ClickModel):
    """A model of one click probability per grade (``click``, length ``grades``) and an
    examination steepness ``eta`` >= 0 (PBM, examine-stop, ULTRA's table); ``table`` names
    the click table, ``hint`` the option that changes the grades."""

    def __init__(self, name: str, click: tuple[float, ...], eta: float, table: str, hint: str = "--grades"):
        self.name = name
        self.click = np.asarray(click, dtype=float)
        self.eta = float(eta)
        self.table = table
        self.grades = len(click)
        self.hint = hint
