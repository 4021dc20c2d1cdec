"""The round log of an online run: one row per round, with fixed columns and dtypes.

Columns, in order: ``t`` (int64, 1-based round), ``pass`` (int32), ``qid`` (string), ``m``
(int32, documents), one float64 column per measure (its value on the full labels of the
shown ranking; NaN under ``no_relevant: skip``), ``mistake`` and ``updated`` (bool, from the
learner's update), ``no_relevant`` (bool: no label above 0, so NDCG/AP took the policy
value) and ``ranking_loss`` (float64: the loss of the measure that drives a mistake-driven
learner, NaN for learners without one).

This module is the one definition of that table: the online protocol appends to it, a
checkpoint saves and validates it by :func:`column_kinds`, and ``rounds.parquet`` is
:meth:`RoundLog.frame`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

HEAD: tuple[tuple[str, str], ...] = (("t", "int64"), ("pass", "int32"), ("qid", "string"), ("m", "int32"))
TAIL: tuple[tuple[str, str], ...] = (("mistake", "bool"), ("updated", "bool"), ("no_relevant", "bool"),
                                     ("ranking_loss", "float64"))
MEASURE_DTYPE = "float64"
# numpy dtype kind of each column as a checkpoint stores it (qid as fixed-width unicode)
_KINDS = {"int64": "i", "int32": "i", "string": "U", "bool": "b", "float64": "f"}


def column_names(measure_names: list[str]) -> list[str]:
    """The log's columns, in order, for these measures."""
    return [n for n, _ in HEAD] + list(measure_names) + [n for n, _ in TAIL]


def column_kinds(measure_names: list[str]) -> dict[str, str]:
    """Column -> numpy dtype kind (``i``, ``U``, ``b``, ``f``) of its stored array."""
    dtypes = dict(HEAD) | {n: MEASURE_DTYPE for n in measure_names} | dict(TAIL)
    return {n: _KINDS[dtypes[n]] for n in column_names(measure_names)}


class RoundLog:
    """The rows recorded so far (column lists; :meth:`frame` types them)."""

    def __init__(self, measure_names: list[str], columns: dict[str, list[Any]] | None = None):
        self.measure_names = list(measure_names)
        names = column_names(self.measure_names)
        if columns is not None and list(columns) != names:
            raise ValueError(f"round log columns {list(columns)} are not {names}")
        self.columns: dict[str, list[Any]] = columns if columns is not None else {n: [] for n in names}
        cols = self.columns
        # bound appends: a row costs one call per column
        self._t, self._pass, self._qid, self._m = (cols[n].append for n, _ in HEAD)
        self._measures = tuple(cols[n].append for n in self.measure_names)
        self._mistake, self._updated, self._none, self._loss = (cols[n].append for n, _ in TAIL)

    def __len__(self) -> int:
        return len(self.columns["t"])

    def append(self, t: int, pass_no: int, qid: str, m: int, values: list[float],
               mistake: bool, updated: bool, no_relevant: bool, ranking_loss: float) -> None:
        """One round's row; ``values`` in measure order."""
        self._t(t)
        self._pass(pass_no)
        self._qid(qid)
        self._m(m)
        for add, v in zip(self._measures, values):
            add(v)
        self._mistake(mistake)
        self._updated(updated)
        self._none(no_relevant)
        self._loss(ranking_loss)

    def frame(self) -> pd.DataFrame:
        """The log as a typed table (the run's ``rounds.parquet``)."""
        frame = pd.DataFrame(self.columns)
        return frame.astype(dict(HEAD) | {n: MEASURE_DTYPE for n in self.measure_names} | dict(TAIL))
