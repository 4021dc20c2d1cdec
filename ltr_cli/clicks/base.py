"""The click-model contract, the label checks every model shares, and the registry of
named click models.

A click model is a pure object: given the labels of a shown list, position 1 first, it
gives the exact law of the click vector, its marginals and seeded samples. Nothing in it
holds state between lists; randomness comes only from the generator passed to ``sample``.

A *named* click model (``navigational``, ``pbm``, ...) is a :class:`ClickModelKind`, an
entry point of the ``ltr_cli.click_models`` group (:mod:`ltr_cli.plugins`) named as the
model: this package's in its ``pyproject.toml``, a plugin's in its own. :data:`CLICK_MODELS`
is that registry: configs, ``ltr clicks``, ``ltr list``, the references and the
conformance suite read the names from it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ltr_cli import plugins
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


@dataclass(frozen=True)
class ClickSettings:
    """What a user asked of a named click model, resolved: ``name`` (the model's name, or
    ``custom``), ``click`` and ``stop`` (the click table's columns, one probability per
    grade: its named table's, or a custom table's; ``stop`` empty when a custom table has
    none), ``table`` (the table's name, or ``custom``), ``stop_rule`` (one of the kind's
    ``stop_rules``, None when it takes none), ``eta`` (the examination exponent, None
    when the kind takes none), ``hint`` (the option or key that changes the grades),
    ``where`` (the option or key that named the model) and ``options`` (a custom table's
    further keys, among the kind's ``keys``)."""

    name: str
    click: tuple[float, ...]
    stop: tuple[float, ...]
    table: str
    stop_rule: str | None = None
    eta: float | None = None
    hint: str = "--grades"
    where: str = "--model"
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def grades(self) -> int:
        return len(self.click)


@dataclass(frozen=True)
class ClickModelKind:
    """A named click model, as an entry point of ``ltr_cli.click_models`` declares it (the
    entry point's name is the model's: lower-case words joined by ``-``).

    * ``summary``: its one-line definition (``ltr list`` shows it);
    * ``build(settings) -> ClickModel``: the model for a :class:`ClickSettings`; raise
      :class:`~ltr_cli.errors.LtrError` naming ``settings.where`` for a setting it refuses;
    * ``table``: the named click table (:mod:`ltr_cli.clicks.tables`: ``perfect``,
      ``navigational``, ...) whose columns it takes when the user gives none;
    * ``stop_rules``: the stop rules it takes, the default first (a cascade's
      ``after-click`` and ``any-position``); empty: it takes none;
    * ``eta``: whether it takes an examination exponent eta >= 0 (default 1);
    * ``keys``: the further keys a custom table of its type may give (``negative``);
    * ``examination(n, eta)``: P(examined) at positions 1..n, float (n,), when that
      depends on the position alone (the truth an estimated propensity is compared with,
      and the true propensities of ``clicks.propensity: true``); None otherwise.
    """

    summary: str
    build: Callable[[ClickSettings], ClickModel]
    table: str = "perfect"
    stop_rules: tuple[str, ...] = ()
    eta: bool = False
    keys: tuple[str, ...] = ()
    examination: Callable[[int, float], np.ndarray] | None = None


#: a click model's name: lower-case words of letters and digits joined by ``-``
NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")

#: the named click models, built-in and plugged in
CLICK_MODELS = plugins.Registry("click_models", "click model")


@plugins.name_check("click_models")
def _check_name(name: str) -> str | None:
    if not NAME.fullmatch(name):
        return f"a click model's name is lower-case words joined by '-' ({NAME.pattern}), not {name!r}"
    return None


@plugins.registrar("click_models")
def _register(obj: Any, name: str, source: str) -> None:
    """An entry point must name a :class:`ClickModelKind` with a summary and a builder."""
    if not isinstance(obj, ClickModelKind):
        raise TypeError(f"expected a ClickModelKind, got {type(obj).__name__}")
    if not (isinstance(obj.summary, str) and obj.summary.strip()) or not callable(obj.build):
        raise TypeError(f"click model {name!r}: needs a one-line summary and a build(settings) function")
    if not (isinstance(obj.stop_rules, tuple) and all(isinstance(r, str) for r in obj.stop_rules)):
        raise TypeError(f"click model {name!r}: stop_rules must be a tuple of names")
