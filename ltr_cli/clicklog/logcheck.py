"""The checks of a click log read back (:func:`ltr_cli.clicklog.logfile.read_log`): every
field of its metadata and every row, so that nothing a learner or an estimator reads can be
of another type, out of range, or a session that is not one shown list.

Metadata (the ``ltr.clicklog`` JSON object): ``policy`` a logging policy's name (or
``logged``, a log ``ltr clicks import`` wrote) and
``fingerprint`` 64 hex digits (both required); when present, ``seed`` an integer >= 0,
``sessions`` an integer from 1 to :data:`~ltr_cli.clicklog.simulate.MAX_SESSIONS`,
``per_query`` a boolean, ``shown`` an integer from 1 to
:data:`~ltr_cli.clicklog.simulate.MAX_SHOWN`, ``fold`` an integer or null, ``source`` and
``logger_weights_sha256`` strings, ``model`` an object (the click model's description:
string ``model`` and ``kind``, and names, finite numbers, booleans or short lists of finite
numbers). Rows: sessions in ascending order, each session's rows one query's, its positions
1, 2, ... in order (at most ``shown``) and its documents distinct. Each refusal is one line
naming the file and the field, or the row (1-based) and its column.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.clicklog.policies import POLICIES
from ltr_cli.clicklog.simulate import MAX_SESSIONS, MAX_SHOWN
from ltr_cli.errors import LtrError

#: the policies a log may name: a simulation's, or ``logged`` (a log imported from another
#: system, whose logging policy is that system's)
LOGGED_POLICIES: tuple[str, ...] = POLICIES + ("logged",)
#: the longest list a click model's description holds (a table per grade or per position)
MAX_LIST = 1000
_HEX = re.compile(r"[0-9a-f]{64}")


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _refuse(path: Path, field: str, value: Any, want: str) -> LtrError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return LtrError(f"{path}: metadata field {field!r} is {shown}; a click log's {field} is {want} (write logs "
                    "with ltr clicks simulate-log or ltr clicks log)")


def check_meta(path: Path, meta: dict[str, Any]) -> None:
    """One-line error unless every field of the log's metadata is as the module says."""
    if not isinstance(meta.get("policy"), str) or meta["policy"] not in LOGGED_POLICIES:
        raise _refuse(path, "policy", meta.get("policy"), f"one of {', '.join(LOGGED_POLICIES)}")
    if not isinstance(meta.get("fingerprint"), str) or not _HEX.fullmatch(meta["fingerprint"]):
        raise _refuse(path, "fingerprint", meta.get("fingerprint"), "64 hexadecimal digits")
    ranges = {"seed": (0, None), "sessions": (1, MAX_SESSIONS), "shown": (1, MAX_SHOWN)}
    for field, (low, high) in ranges.items():
        if field in meta and not (_integer(meta[field]) and meta[field] >= low
                                  and (high is None or meta[field] <= high)):
            raise _refuse(path, field, meta[field], f"an integer from {low}" + (f" to {high}" if high else " up"))
    if "per_query" in meta and not isinstance(meta["per_query"], bool):
        raise _refuse(path, "per_query", meta["per_query"], "true or false")
    if "fold" in meta and meta["fold"] is not None and not (_integer(meta["fold"]) and meta["fold"] >= 0):
        raise _refuse(path, "fold", meta["fold"], "a fold number or null")
    for field in ("source", "logger_weights_sha256"):
        if field in meta and not isinstance(meta[field], str):
            raise _refuse(path, field, meta[field], "a string")
    if "model" in meta:
        _check_model(path, meta["model"])


def _check_model(path: Path, model: Any) -> None:
    want = ("an object naming the click model (model, kind) with names, finite numbers, booleans or lists "
            "of finite numbers")
    if not isinstance(model, dict) or not isinstance(model.get("model"), str) or not isinstance(model.get("kind"), str):
        raise _refuse(path, "model", model, want)
    for key, value in model.items():
        ok = (isinstance(key, str) and (value is None or isinstance(value, (str, bool)) or _number(value)
              or (isinstance(value, list) and len(value) <= MAX_LIST and all(_number(v) for v in value))))
        if not ok:
            raise _refuse(path, f"model.{key}", value, want)


def check_rows(path: Path, session: np.ndarray, query: np.ndarray, doc: np.ndarray, position: np.ndarray,
               shown: int | None) -> None:
    """One-line error naming the first row that breaks the row rules of the module docstring."""
    n = len(session)
    if n == 0:
        return
    if int(session.min()) < 0:
        raise _row(path, int(np.argmin(session)), "session", f"holds {int(session.min())}; sessions are numbered from 0")
    back = np.flatnonzero(session[1:] < session[:-1])
    if back.size:
        i = int(back[0]) + 1
        raise _row(path, i, "session", f"holds {int(session[i])} after {int(session[i - 1])}; a log's rows are in "
                   "session order")
    start = np.ones(n, dtype=bool)
    start[1:] = session[1:] != session[:-1]
    firsts = np.flatnonzero(start)
    rank = np.arange(n) - firsts[np.cumsum(start) - 1] + 1
    wrong = np.flatnonzero(position.astype(np.int64) != rank)
    if wrong.size:
        i = int(wrong[0])
        raise _row(path, i, "position", f"holds {int(position[i])} where session {int(session[i])} shows its document "
                   f"{int(rank[i])}; a session's positions run 1, 2, ... in order")
    if shown is not None and int(rank.max()) > shown:
        i = int(np.argmax(rank))
        raise _row(path, i, "position", f"holds {int(rank[i])}; the log's metadata shows {shown} documents per session")
    spans = np.flatnonzero((query[1:] != query[:-1]) & ~start[1:])
    if spans.size:
        i = int(spans[0]) + 1
        raise _row(path, i, "qid", f"differs from the row before in session {int(session[i])}; a session shows one "
                   "query's documents")
    order = np.lexsort((doc, session))
    same = np.flatnonzero((session[order][1:] == session[order][:-1]) & (doc[order][1:] == doc[order][:-1]))
    if same.size:
        i = int(max(order[same[0]], order[same[0] + 1]))
        raise _row(path, i, "doc", f"holds document {int(doc[i])} a second time in session {int(session[i])}; a "
                   "session shows a document once")


def _row(path: Path, i: int, column: str, what: str) -> LtrError:
    return LtrError(f"{path}: row {i + 1}: column {column!r} {what}")
