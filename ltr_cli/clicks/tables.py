"""The literature's named click tables, as plain data.

A table gives, per relevance grade, the probability of a click on a shown document and the
probability that the user stops browsing there (how the stop is applied is the cascade's
stop rule, :mod:`ltr_cli.clicks.cascade`). The numbers are those of the online
learning-to-rank reference code's ``utils/clicks.py`` (Hofmann et al. 2013's sets), for
binary, 3-grade and 5-grade labels; ``tests/test_clicks.py`` holds every number.
"""

from __future__ import annotations

from dataclasses import dataclass

from ltr_cli.errors import LtrError

#: the label scales a named table exists for: binary (0, 1), 3 grades (0..2), 5 grades (0..4)
GRADES: tuple[int, ...] = (2, 3, 5)


@dataclass(frozen=True)
class Table:
    """One click table: ``click[r]`` = P(click | grade r), ``stop[r]`` = P(stop | grade r)."""

    name: str
    click: tuple[float, ...]
    stop: tuple[float, ...]

    @property
    def grades(self) -> int:
        return len(self.click)


def _sets(click5: tuple[float, ...], stop5: tuple[float, ...], click3: tuple[float, ...],
          stop3: tuple[float, ...]) -> dict[int, tuple[tuple[float, ...], tuple[float, ...]]]:
    """A table's 5- and 3-grade columns; the binary one is the 3-grade one without its middle grade."""
    return {5: (click5, stop5), 3: (click3, stop3), 2: ((click3[0], click3[2]), (stop3[0], stop3[2]))}


_NAMED = {
    "perfect": _sets((0.0, 0.2, 0.4, 0.8, 1.0), (0.0, 0.0, 0.0, 0.0, 0.0),
                     (0.0, 0.5, 1.0), (0.0, 0.0, 0.0)),
    "navigational": _sets((0.05, 0.3, 0.5, 0.7, 0.95), (0.2, 0.3, 0.5, 0.7, 0.9),
                          (0.05, 0.5, 0.95), (0.2, 0.5, 0.9)),
    "informational": _sets((0.4, 0.6, 0.7, 0.8, 0.9), (0.1, 0.2, 0.3, 0.4, 0.5),
                           (0.4, 0.7, 0.9), (0.1, 0.3, 0.5)),
    "almost-random": _sets((0.4, 0.45, 0.5, 0.55, 0.6), (0.5, 0.5, 0.5, 0.5, 0.5),
                           (0.4, 0.5, 0.6), (0.5, 0.5, 0.5)),
    "random": _sets((0.5, 0.5, 0.5, 0.5, 0.5), (0.0, 0.0, 0.0, 0.0, 0.0),
                    (0.5, 0.5, 0.5), (0.0, 0.0, 0.0)),
}

#: the named tables, in the order help and listings show them
TABLE_NAMES: tuple[str, ...] = tuple(_NAMED)


def table(name: str, grades: int) -> Table:
    """The named table ``name`` for labels of ``grades`` grades (2, 3 or 5)."""
    if name not in _NAMED:
        raise LtrError(f"click table {name!r}: unknown; the named tables are {', '.join(TABLE_NAMES)}")
    if grades not in GRADES:
        raise LtrError(f"grades {grades}: the named click tables exist for 2, 3 and 5 grades")
    click, stop = _NAMED[name][grades]
    return Table(name, click, stop)


def grades_for_max_label(max_label: int) -> int:
    """The table a dataset's labels call for: binary for labels 0..1, 3 grades for 0..2
    (LETOR's MQ and OHSUMED), 5 grades for 0..4 (MSLR-WEB, Yahoo, Istella)."""
    for grades in GRADES:
        if 0 <= max_label < grades:
            return grades
    raise LtrError(f"label {max_label}: beyond every named click table (grades 0..4); "
                   "give a custom table with one probability per grade")
