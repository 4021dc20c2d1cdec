"""The round log of an online run: one row per round, with fixed columns and dtypes.

Columns, in order: ``t`` (int64, 1-based round), ``pass`` (int32), ``qid`` (string), ``m``
(int32, documents), one float64 column per measure (its value on the full labels of the
shown ranking; NaN under ``no_relevant: skip``; the last measure columns may be filled
later by :meth:`RoundLog.put_last`, NaN until then: the held-out evaluations), ``mistake`` and ``updated`` (bool, from the
learner's update), ``no_relevant`` (bool: no label above 0, so NDCG/AP took the policy
value) and ``ranking_loss`` (float64: the loss of the measure that drives a mistake-driven
learner, NaN for learners without one).

With ``protocol.log_regret`` (:mod:`ltr_cli.protocols.regret`) a learner that descends a
surrogate also records ``surrogate`` (float64, after the measures: its surrogate at its
scores before the update, on the full labels) and, written after the run, ``regret``
(float64, after ``surrogate``: the cumulative regret against the best fixed weights in
hindsight).

This module is the one definition of that table: the online protocol appends to it, a
checkpoint saves and validates it by :func:`column_kinds`, and ``rounds.parquet`` is
:meth:`RoundLog.frame`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

HEAD: tuple[tuple[str, str], ...] = (("t", "int64"), ("pass", "int32"), ("qid", "string"), ("m", "int32"))
TAIL: tuple[tuple[str, str], ...] = (("mistake", "bool"), ("updated", "bool"), ("no_relevant", "bool"),
                                     ("ranking_loss", "float64"))
MEASURE_DTYPE = "float64"
SURROGATE = "surrogate"  # logged like a measure column, after the measures
REGRET = "regret"  # added to the table after the run, after ``surrogate``
HELDOUT_PREFIX = "heldout_"  # ``heldout_<metric>``: the held-out evaluations, the last measure columns
# numpy dtype kind of each column as a checkpoint stores it (qid as fixed-width unicode)
_KINDS = {"int64": "i", "int32": "i", "string": "U", "bool": "b", "float64": "f"}


def column_names(measure_names: list[str]) -> list[str]:
    """The log's columns, in order, for these measures."""
    return [n for n, _ in HEAD] + list(measure_names) + [n for n, _ in TAIL]


def column_kinds(measure_names: list[str]) -> dict[str, str]:
    """Column -> numpy dtype kind (``i``, ``U``, ``b``, ``f``) of its stored array."""
    dtypes = dict(HEAD) | {n: MEASURE_DTYPE for n in measure_names} | dict(TAIL)
    return {n: _KINDS[dtypes[n]] for n in column_names(measure_names)}


def reserved_columns() -> tuple[str, ...]:
    """The columns the table holds whatever its measures: a measure named like one of them
    would be written twice (metric kinds may not take these names)."""
    return (*column_names([]), SURROGATE, REGRET)


def reserved_prefixes() -> tuple[str, ...]:
    """The prefixes of measure columns that are not the round's own measures."""
    return (HELDOUT_PREFIX,)


_NUMPY = {"int64": np.int64, "int32": np.int64, "bool": np.bool_, "float64": np.float64}


class RoundLog:
    """The rows recorded so far, in preallocated column arrays that double when full (the
    ``qid`` column is a list of strings). The per-round path appends a row
    (:meth:`append`), the compiled block loop whole blocks (:meth:`extend`); checkpoints
    read the rows they have not saved yet as array slices, without conversion."""

    def __init__(self, measure_names: list[str], columns: dict[str, Any] | None = None, capacity: int = 1024):
        self.measure_names = list(measure_names)
        names = column_names(self.measure_names)
        if columns is not None and list(columns) != names:
            raise ValueError(f"round log columns {list(columns)} are not {names}")
        dtypes = dict(HEAD) | {n: MEASURE_DTYPE for n in self.measure_names} | dict(TAIL)
        n = len(columns["t"]) if columns is not None else 0
        cap = max(capacity, n)
        self._arrays: dict[str, np.ndarray] = {name: np.empty(cap, dtype=_NUMPY[dtypes[name]])
                                               for name in names if name != "qid"}
        self._qid: list[str] = []
        self._n = 0
        if columns is not None:
            for name in names:
                if name == "qid":
                    self._qid.extend(columns[name])
                else:
                    self._arrays[name][:n] = np.asarray(columns[name], dtype=self._arrays[name].dtype)
            self._n = n

    def __len__(self) -> int:
        return self._n

    @property
    def columns(self) -> dict[str, Any]:
        """Column name -> its recorded values (array views; ``qid`` a list), in order."""
        n = self._n
        return {name: (self._qid if name == "qid" else self._arrays[name][:n])
                for name in column_names(self.measure_names)}

    def _reserve(self, extra: int) -> None:
        need = self._n + extra
        cap = next(iter(self._arrays.values())).shape[0]
        if need > cap:
            cap = max(need, 2 * cap)
            for name, arr in self._arrays.items():
                grown = np.empty(cap, dtype=arr.dtype)
                grown[:self._n] = arr[:self._n]
                self._arrays[name] = grown

    def append(self, t: int, pass_no: int, qid: str, m: int, values: list[float],
               mistake: bool, updated: bool, no_relevant: bool, ranking_loss: float) -> None:
        """One round's row; ``values`` in measure order."""
        self._reserve(1)
        i = self._n
        a = self._arrays
        a["t"][i] = t
        a["pass"][i] = pass_no
        self._qid.append(qid)
        a["m"][i] = m
        names = self.measure_names
        for name, v in zip(names, values):
            a[name][i] = v
        for name in names[len(values):]:  # columns filled later (held-out evaluations)
            a[name][i] = np.nan
        a["mistake"][i] = mistake
        a["updated"][i] = updated
        a["no_relevant"][i] = no_relevant
        a["ranking_loss"][i] = ranking_loss
        self._n = i + 1

    def extend(self, t0: int, pass_no: int, qids: list[str], m: np.ndarray, values: np.ndarray,
               mistake: np.ndarray, updated: np.ndarray, no_relevant: np.ndarray, ranking_loss: np.ndarray) -> None:
        """The rows of rounds ``t0 + 1 .. t0 + len(qids)``; ``values`` (n, measures)."""
        n = len(qids)
        self._reserve(n)
        i = self._n
        a = self._arrays
        a["t"][i:i + n] = np.arange(t0 + 1, t0 + n + 1)
        a["pass"][i:i + n] = pass_no
        self._qid.extend(qids)
        a["m"][i:i + n] = m[:n]
        filled = values.shape[1]
        for c, name in enumerate(self.measure_names):
            a[name][i:i + n] = values[:n, c] if c < filled else np.nan
        a["mistake"][i:i + n] = mistake[:n]
        a["updated"][i:i + n] = updated[:n]
        a["no_relevant"][i:i + n] = no_relevant[:n]
        a["ranking_loss"][i:i + n] = ranking_loss[:n]
        self._n = i + n

    def put_last(self, names: list[str], values: list[float]) -> None:
        """Set ``names`` (columns left out of ``append``/``extend``) of the last row."""
        for name, v in zip(names, values):
            self._arrays[name][self._n - 1] = v

    def _dtypes(self) -> dict[str, str]:
        return dict(HEAD) | {n: MEASURE_DTYPE for n in self.measure_names} | dict(TAIL)

    def frame(self) -> Any:
        """The log as a typed pandas DataFrame (imports pandas)."""
        import pandas as pd

        return pd.DataFrame(self.columns).astype(self._dtypes())

    def arrow_table(self) -> Any:
        """The log as a typed pyarrow Table, the run's ``rounds.parquet``: the column types
        of :meth:`frame`, built from the arrays' buffers (``pyarrow.array`` would import
        pandas, which a run does not otherwise need)."""
        import pyarrow as pa

        dtypes = self._dtypes()
        names = column_names(self.measure_names)
        return pa.Table.from_arrays([_arrow_column(self.columns[n], dtypes[n]) for n in names], names=names)


def _arrow_column(values: Any, dtype: str) -> Any:
    """One column as a pyarrow array without nulls: ``values`` a numpy array (or, for
    ``string``, a list of str) of the log's ``dtype``."""
    import pyarrow as pa

    n = len(values)
    if dtype == "string":
        encoded = [v.encode("utf-8") for v in values]
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        return pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets),
                                                            pa.py_buffer(b"".join(encoded))])
    if dtype == "bool":  # Arrow packs booleans to bits, least significant first
        bits = np.packbits(np.asarray(values, dtype=np.bool_), bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bits)])
    kind = {"int64": (np.int64, pa.int64()), "int32": (np.int32, pa.int32()), "float64": (np.float64, pa.float64())}
    np_type, arrow_type = kind[dtype]
    data = np.ascontiguousarray(values, dtype=np_type)
    return pa.Array.from_buffers(arrow_type, n, [None, pa.py_buffer(data)])
