"""Score files for ``ltr eval``: exactly three formats, recognised from the first line and
then required of every line (anything else is one ``file:line`` error):

* **plain**: one score per line, in data-file order (the LETOR tools' prediction format,
  ``ltr score``'s output); spaces or tabs around the number are allowed, nothing else.
* **RankLib** (``java -jar RankLib.jar ... -score``): ``qid<TAB>index<TAB>score``, one line
  per document in data-file order, ``index`` the 0-based position of the document within
  its query. Every line's qid and index are checked against the data file.
* **TREC run**: ``qid Q0 docno rank score tag`` (six fields, the second ``Q0``), in any
  order. Documents are matched by (qid, docno) to the data file's ``# docid = <docno>``
  comments (LETOR 3.0/4.0); a data file without them cannot be matched and is refused.
  Every document needs exactly one line.

Numbers, qids and separators follow :mod:`ltr_cli.data.grammar` (no ``_`` in numbers,
qids compared by value, ASCII only). Plain files are read by the compiled scanner
(:func:`ltr_cli.data.fastscan.scan_scores`) when it can; anything it does not accept is read
again here, which accepts it or names the line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ltr_cli import kernels
from ltr_cli.data.grammar import (
    bad_character,
    canonical_qid,
    is_integer,
    parse_number,
    strip_eol,
)
from ltr_cli.data.textio import iter_lines, show
from ltr_cli.errors import DataFormatError, LtrError

FORMATS = ("one score per line, RankLib's 'qid<TAB>index<TAB>score' or a TREC run "
           "'qid Q0 docno rank score tag'")
_DOCID = re.compile(rb"\bdocid\s*=\s*(\S+)")


@dataclass(frozen=True)
class DataOrder:
    """The documents of the data file a score file is checked against: its path and its
    queries as contiguous runs ``(qid, documents)`` in file order."""

    path: Path
    runs: list[tuple[str, int]]

    @property
    def documents(self) -> int:
        return sum(m for _, m in self.runs)


def read_scores(path: Path, order: DataOrder | None = None) -> np.ndarray:
    """The scores of ``path`` in data-file order (see the module doc); ``order`` checks a
    RankLib file's qids and indices and places a TREC run's lines (required for TREC)."""
    if kernels.ENABLED:
        fast = _read_plain_fast(Path(path))
        if fast is not None:
            return fast
    return read_scores_reference(path, order)


def _read_plain_fast(path: Path) -> np.ndarray | None:
    from ltr_cli.core.codes import SCAN_IRREGULAR as IRREGULAR
    from ltr_cli.core.codes import SCAN_SLOW_FULL as SLOW_FULL
    from ltr_cli.kernels import ahead

    scan_scores = ahead.function("ltr_cli.data.fastscan:scan_scores")
    from ltr_cli.data.options import DEFAULT_MAX_LINE_BYTES
    from ltr_cli.data.textio import BOM, open_binary

    try:
        with open_binary(path) as fh:
            data = fh.read()
    except Exception:  # the reference reader reports it, with the line
        return None
    if data.startswith(BOM):
        data = data[len(BOM):]
    buf = np.frombuffer(data, dtype=np.uint8)
    lines = data.count(b"\n") + 1
    out = np.empty(lines)
    slow = np.empty((3, 1024), dtype=np.int64)
    n, n_slow, status, _ = scan_scores(buf, out, slow, DEFAULT_MAX_LINE_BYTES)
    if status == SLOW_FULL:
        slow = np.empty((3, lines), dtype=np.int64)
        n, n_slow, status, _ = scan_scores(buf, out, slow, DEFAULT_MAX_LINE_BYTES)
    if status == IRREGULAR:
        return None
    for j in range(n_slow):
        value = float(data[slow[1, j]:slow[2, j]])
        if not math.isfinite(value):
            return None
        out[slow[0, j]] = value
    return out[:n]


def _kind(fields: list[bytes], text: bytes) -> str | None:
    if len(fields) == 1:
        return "plain"
    if len(fields) == 3 and text.count(b"\t") == 2 and len(text.split(b"\t")) == 3 and all(text.split(b"\t")):
        return "ranklib"
    if len(fields) == 6 and fields[1] == b"Q0":
        return "trec"
    return None


def read_scores_reference(path: Path, order: DataOrder | None = None) -> np.ndarray:
    """:func:`read_scores`, line by line in Python."""
    values: list[float] = []
    keys: list[tuple[int, str, bytes]] = []  # (line, qid, RankLib index or TREC docno)
    kind = None
    where = str(path)
    for lineno, raw in iter_lines(Path(path)):
        text = strip_eol(raw)
        bad = bad_character(text)
        if bad is not None:
            raise DataFormatError(where, lineno, f"{bad} in a score line; expected {FORMATS}, "
                                  "separated by spaces or tabs, in ASCII")
        fields = text.split()
        if not fields:
            raise DataFormatError(where, lineno, "score is empty (a blank line); expected one score per line")
        if kind is None:
            kind = _kind(fields, text)
            if kind is None:
                raise DataFormatError(where, lineno, f"a line of {len(fields)} fields {show(text)}; expected {FORMATS}")
        elif _kind(fields, text) != kind:
            raise DataFormatError(where, lineno, f"a line of {len(fields)} fields {show(text)}, but line 1 "
                                  f"makes this a {_NAMES[kind]} file; every line must have its format")
        score = fields[{"plain": 0, "ranklib": 2, "trec": 4}[kind]]
        try:
            v = parse_number(score)
        except ValueError:
            raise DataFormatError(where, lineno, f"bad score {show(score)}; expected a number "
                                  "([+-]digits[.digits][e[+-]digits], no '_')") from None
        if not math.isfinite(v):
            raise DataFormatError(where, lineno, "score is not a finite number")
        values.append(v)
        if kind != "plain":
            qid = canonical_qid(fields[0])
            if qid is None:
                raise DataFormatError(where, lineno, f"qid {show(fields[0])} is not an integer")
            second = fields[1] if kind == "ranklib" else fields[2]
            if kind == "ranklib" and not (is_integer(second) and not second.startswith(b"-")):
                raise DataFormatError(where, lineno, f"document index {show(second)} is not a "
                                      "non-negative integer (RankLib's second column)")
            if kind == "trec" and not is_integer(fields[3]):
                raise DataFormatError(where, lineno, f"rank {show(fields[3])} is not an integer "
                                      "(a TREC run's fourth column)")
            keys.append((lineno, qid, second))
    scores = np.asarray(values, dtype=np.float64)
    if kind == "ranklib" and order is not None:
        _check_ranklib(where, keys, order)
    elif kind == "trec":
        if order is None:
            raise LtrError(f"{where}: a TREC run is matched to the data file's documents by docno; "
                           "read it with ltr eval")
        scores = _place_trec(where, keys, scores, order)
    return scores


_NAMES = {"plain": "one-score-per-line", "ranklib": "RankLib score", "trec": "TREC run"}


def _check_ranklib(where: str, keys: list[tuple[int, str, bytes]], order: DataOrder) -> None:
    """Line k of a RankLib score file is document k of the data file: same qid, and its
    index is the document's position within its query."""
    if len(keys) != order.documents:
        return  # the caller names the count mismatch
    k = 0
    for qid, m in order.runs:
        for j in range(m):
            line, got_qid, index = keys[k]
            if got_qid != qid or int(index) != j:
                raise DataFormatError(
                    where, line, f"RankLib line for qid {got_qid} document {int(index)}, but document "
                    f"{k + 1} of {order.path} is document {j} of qid {qid}; the score file must be "
                    "RankLib's output for this data file")
            k += 1


def _docids(order: DataOrder) -> list[bytes]:
    """The ``docid = ...`` of every data line of the data file, in order."""
    from ltr_cli.data.formats import format_for

    if format_for(order.path).name != "svmlight":
        raise LtrError(f"{order.path}: a {format_for(order.path).name} file has no '# docid = ...' comments, so "
                       "the documents of a TREC run cannot be matched to its rows; give one score per line "
                       "in data-file order instead")
    out: list[bytes] = []
    for lineno, raw in iter_lines(order.path):
        text = strip_eol(raw)
        hash_at = text.find(b"#")
        body, comment = (text[:hash_at], text[hash_at + 1:]) if hash_at >= 0 else (text, b"")
        if not body.split():
            continue
        m = _DOCID.search(comment)
        if m is None:
            raise LtrError(f"{order.path}:{lineno}: no '# docid = ...' comment, so the documents of a "
                           "TREC run cannot be matched to this file's lines; give one score per line "
                           "in data-file order instead")
        out.append(m.group(1))
    return out


def _place_trec(where: str, keys: list[tuple[int, str, bytes]], scores: np.ndarray,
                order: DataOrder) -> np.ndarray:
    """A TREC run's scores in data-file order, matched by (qid, docno)."""
    docids = _docids(order)
    index: dict[tuple[str, bytes], int] = {}
    k = 0
    for qid, m in order.runs:
        for _ in range(m):
            if k < len(docids):
                if (qid, docids[k]) in index:
                    raise LtrError(f"{order.path}: qid {qid} has docid {docids[k].decode('latin-1')} twice, "
                                   "so a TREC run cannot name its documents")
                index[(qid, docids[k])] = k
            k += 1
    out = np.full(order.documents, np.nan)
    for (line, qid, docno), value in zip(keys, scores):
        at = index.get((qid, docno))
        if at is None:
            raise DataFormatError(where, line, f"qid {qid} docno {show(docno)} is not a document of "
                                  f"{order.path} (matched by its '# docid = ...' comments)")
        if not math.isnan(out[at]):
            raise DataFormatError(where, line, f"qid {qid} docno {show(docno)} appears twice")
        out[at] = value
    missing = np.flatnonzero(np.isnan(out))
    if missing.size:
        k = int(missing[0])
        qid = next(q for q, (a, b) in _spans(order) if a <= k < b)
        raise LtrError(f"{where}: no line for qid {qid} docno {docids[k].decode('latin-1')} "
                       f"({missing.size} documents of {order.path} have no score)")
    return out


def _spans(order: DataOrder) -> list[tuple[str, tuple[int, int]]]:
    out, start = [], 0
    for qid, m in order.runs:
        out.append((qid, (start, start + m)))
        start += m
    return out
