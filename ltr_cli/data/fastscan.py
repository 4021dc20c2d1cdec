"""Compiled scanner for well-formed SVMlight / LETOR text (numba).

:func:`scan_block` parses a block of whole lines straight into a dense row matrix and
per-row label, line number and qid span. It accepts only the regular grammar::

    line   := ws* label ws+ ["qid:" word ws+] (index ":" number ws+)* ["#" comment] "\\n"
    number := [+-]? digits? ["." digits?] [(e|E) [+-]? digits]   (at least one digit)
    index  := digits (at most 10), strictly increasing within the line, in range

and reports anything else as *irregular*: then the caller re-reads with the reference
parser (:mod:`ltr_cli.data.svmlight`), which either accepts it (NULL fill, float-written
indices, unsorted indices, ...) or raises the exact ``file:line`` error. So this module
never decides what an error says, and results equal the reference parse by construction
of the fallback plus exact number conversion:

* a number with at most 19 significant digits and a decimal exponent in [-22, 22] is
  converted as ``mantissa * 10**e`` (or ``/ 10**-e``) in float64: both operands are exact,
  so the one rounding is the correctly rounded result (Clinger's fast path), the same
  double that Python's ``float()`` gives;
* any other number is listed as *slow* (its byte span) and converted by the caller with
  ``float()``.

Whitespace is SVMlight's (space and tab); lines end at \\n, optionally after one \\r; a qid
is canonical digits (no sign, no leading zero): anything else, any byte outside printable
ASCII before a comment included, is irregular (:mod:`ltr_cli.data.grammar` is the grammar
both parsers follow).
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels.numba_cache import ensure, install_locator

_CACHE = ensure()  # before numba is imported: picks a writable cache directory

from numba import njit  # noqa: E402

install_locator()  # cached in this module's own folder, named by its source

from ltr_cli.core.codes import QID_COMMENT, QID_TOKEN  # noqa: E402
from ltr_cli.core.codes import SCAN_IRREGULAR as IRREGULAR  # noqa: E402
from ltr_cli.core.codes import SCAN_SLOW_FULL as SLOW_FULL  # noqa: E402

_POW10 = np.array([10.0**i for i in range(23)])


@njit(cache=_CACHE, inline="always")
def _is_space(c):
    return c == 32 or c == 9


@njit(cache=_CACHE, inline="always")
def _at_eol(buf, i, end):
    """At the end of a line: end of input, LF, or a CR right before LF / end of input."""
    if i >= end or buf[i] == 10:
        return True
    return buf[i] == 13 and (i + 1 >= end or buf[i + 1] == 10)


@njit(cache=_CACHE, inline="always")
def _next_line(buf, i, end):
    """From the end of a line (see :func:`_at_eol`) to the start of the next."""
    if i < end and buf[i] == 13:
        i += 1
    return i + 1


@njit(cache=_CACHE, inline="always")
def _is_digit(c):
    return 48 <= c <= 57


@njit(cache=_CACHE, inline="always")
def _digits(buf, i, end, cap):
    """The decimal digits at buf[i:]: (value, digit count, next index). Digits stop
    adding to the value once it reaches ``cap`` (the count goes on)."""
    value = 0
    count = 0
    while i < end and _is_digit(buf[i]):
        if value < cap:
            value = value * 10 + (buf[i] - 48)
        count += 1
        i += 1
    return value, count, i


@njit(cache=_CACHE)
def _number(buf, i, end, pow10):
    """Parse a number at buf[i:]; return (value, next index, status).

    status 0: exact value; 1: well-formed but needs float() (slow); -1: not a number of
    the regular grammar. The number must be followed by whitespace, '#', '\\n' or end.
    """
    neg = False
    c = buf[i] if i < end else 10
    if c == 45 or c == 43:  # '-' '+'
        neg = c == 45
        i += 1
    mant = np.uint64(0)
    ndig = 0
    exp10 = 0
    digits = 0
    slow = False
    seen_dot = False
    while i < end:
        c = buf[i]
        if c == 46 and not seen_dot:  # '.'
            seen_dot = True
            i += 1
            continue
        if not _is_digit(c):
            break
        d = np.uint64(c - 48)
        digits += 1
        if mant != 0 or d != 0:
            if ndig < 19:
                mant = mant * np.uint64(10) + d
                ndig += 1
                if seen_dot:
                    exp10 -= 1
            else:
                slow = True
        elif seen_dot:
            exp10 -= 1
        i += 1
    if digits == 0:
        return 0.0, i, -1
    if i < end and (buf[i] == 101 or buf[i] == 69):  # 'e' 'E'
        i += 1
        eneg = False
        if i < end and (buf[i] == 45 or buf[i] == 43):
            eneg = buf[i] == 45
            i += 1
        e, edigits, i = _digits(buf, i, end, 100000)
        if edigits == 0:
            return 0.0, i, -1
        exp10 += -e if eneg else e
    if i < end:
        c = buf[i]
        if not (_is_space(c) or c == 35 or _at_eol(buf, i, end)):
            return 0.0, i, -1
    if mant == 0:
        return (-0.0 if neg else 0.0), i, 0
    if slow or mant >= np.uint64(9007199254740992) or exp10 > 22 or exp10 < -22:
        return 0.0, i, 1
    v = float(mant)
    if exp10 >= 0:
        v = v * pow10[exp10]
    else:
        v = v / pow10[-exp10]
    return (-v if neg else v), i, 0


@njit(cache=_CACHE, inline="always")
def _note_slow(slow, n, row, col, start, stop):
    """Record number n (row, column or -1 for a label, byte span) for float(); False when
    ``slow`` (4, capacity) is full."""
    if n >= slow.shape[1]:
        return False
    slow[0, n] = row
    slow[1, n] = col
    slow[2, n] = start
    slow[3, n] = stop
    return True


@njit(cache=_CACHE, inline="always")
def _skip_spaces(buf, i, end):
    while i < end and _is_space(buf[i]):
        i += 1
    return i


@njit(cache=_CACHE, inline="always")
def _to_newline(buf, i, end):
    """To the LF that ends the line (or the end of input): a comment's rest."""
    while i < end and buf[i] != 10:
        i += 1
    return i


@njit(cache=_CACHE, inline="always")
def _leading_zero(buf, i, qs, end):
    """A '0' opening a qid of more digits ('01'): the reference respells it."""
    return buf[i] == 48 and i == qs and i + 1 < end and _is_digit(buf[i + 1])


@njit(cache=_CACHE, inline="always")
def _starts_qid(buf, i, end):
    """A "qid:" token at buf[i:]."""
    return (i + 4 <= end and buf[i] == 113 and buf[i + 1] == 105 and buf[i + 2] == 100
            and buf[i + 3] == 58)


@njit(cache=_CACHE)
def _qid_word(buf, i, end, qid_mode):
    """The word after "qid:" (to whitespace, '#' or the line end): (next index, regular).
    A qid the row keeps is canonical digits ('01', '+1' are respelled by the reference);
    one skipped is printable ASCII."""
    qs = i
    while not (_at_eol(buf, i, end) or _is_space(buf[i]) or buf[i] == 35):
        c = buf[i]
        if qid_mode == QID_TOKEN:
            if not _is_digit(c) or _leading_zero(buf, i, qs, end):
                return i, False
        elif c < 33 or c > 126:
            return i, False
        i += 1
    return i, i > qs


@njit(cache=_CACHE)
def _qid_token(buf, i, end, r, qid_mode, qid_start, qid_end):
    """The optional (:data:`QID_TOKEN`: required) "qid:" token and the spaces after it:
    (next index, status)."""
    if not _starts_qid(buf, i, end):
        return i, (IRREGULAR if qid_mode == QID_TOKEN else 0)
    qs = i + 4
    i, regular = _qid_word(buf, qs, end, qid_mode)
    if not regular:
        return i, IRREGULAR
    if qid_mode == QID_TOKEN:
        qid_start[r] = qs
        qid_end[r] = i
    return _skip_spaces(buf, i, end), 0


@njit(cache=_CACHE, inline="always")
def _index_ends(buf, i, end, nd):
    """An index of 1 to 10 digits ends at buf[i], followed by ':'."""
    return 0 < nd <= 10 and i < end and buf[i] == 58


@njit(cache=_CACHE, inline="always")
def _in_order(col, n_features, last):
    """A 0-based column in range, after the line's last one."""
    return 0 <= col < n_features and col > last


@njit(cache=_CACHE)
def _to_data_line(buf, i, end, line):
    """Past blank and comment-only lines to the next data line's first byte: (index, line
    number, found); not found at the end of input."""
    while i < end:
        i = _skip_spaces(buf, i, end)
        if i >= end:
            break
        if _at_eol(buf, i, end):
            i = _next_line(buf, i, end)
            line += 1
            continue
        if buf[i] == 35:  # comment-only line
            i = _to_newline(buf, i, end)
            continue
        return i, line, True
    return i, line, False


@njit(cache=_CACHE)
def _row_start(buf, i, end, r, line, qid_mode, label, lineno, qid_start, qid_end, ntok, lastcol, slow, n_slow,
               pow10):
    """Row ``r`` from its label through the "qid:" token: (index of its first feature,
    n_slow, status)."""
    start = i
    value, i, parsed = _number(buf, i, end, pow10)
    if parsed < 0:
        return i, n_slow, IRREGULAR
    if parsed == 1:
        if not _note_slow(slow, n_slow, r, -1, start, i):
            return i, n_slow, SLOW_FULL
        n_slow += 1
    label[r] = value
    lineno[r] = line
    qid_start[r] = -1
    qid_end[r] = -1
    ntok[r] = 0
    lastcol[r] = -1
    i, status = _qid_token(buf, _skip_spaces(buf, i, end), end, r, qid_mode, qid_start, qid_end)
    return i, n_slow, status


@njit(cache=_CACHE)
def _comment_qid(buf, i, end, r, qid_start, qid_end):
    """:data:`QID_COMMENT`: the comment's first word, canonical digits, is the row's qid:
    (next index, status)."""
    i = _skip_spaces(buf, i, end)
    qs = i
    while not (_at_eol(buf, i, end) or _is_space(buf[i])):
        if not _is_digit(buf[i]) or _leading_zero(buf, i, qs, end):
            return i, IRREGULAR
        i += 1
    if i == qs:
        return i, IRREGULAR
    qid_start[r] = qs
    qid_end[r] = i
    return i, 0


@njit(cache=_CACHE)
def _comment(buf, i, end, r, qid_mode, qid_start, qid_end):
    """The optional (:data:`QID_COMMENT`: required) "#" comment, to the LF: (next index,
    status)."""
    if not (i < end and buf[i] == 35):
        return i, (IRREGULAR if qid_mode == QID_COMMENT else 0)
    i += 1
    if qid_mode == QID_COMMENT:
        i, status = _comment_qid(buf, i, end, r, qid_start, qid_end)
        if status != 0:
            return i, status
    return _to_newline(buf, i, end), 0


@njit(cache=_CACHE, nogil=True)
def scan_block(buf, qid_mode, base, n_features, X, label, lineno, qid_start, qid_end, ntok, lastcol,
               slow, first_line, max_abs):
    """Parse every line of ``buf`` (uint8, whole lines) into the preallocated outputs.

    ``X`` (rows, n_features) must be zero-filled, or have no columns (then features are
    checked, indices against ``n_features``, but not kept); row r gets the r-th data line (blank and
    comment-only lines are skipped); ``ntok[r]`` counts its feature tokens (explicit zeros
    included) and ``lastcol[r]`` is its largest 0-based column (-1 if none). A value
    beyond ``max_abs`` (the storage dtype's largest finite number) is irregular. Returns ``(rows, n_slow, status, bad_line)``; status
    :data:`IRREGULAR` means: stop, re-read with the reference parser (``bad_line`` is the
    1-based line number where it happened). Slow numbers are listed in ``slow`` (4, capacity):
    row, column (-1: the label), start and end byte.
    """
    end = buf.shape[0]
    pow10 = _POW10
    i = 0
    line = first_line
    rows = 0
    n_slow = 0
    while i < end:
        i, line, found = _to_data_line(buf, i, end, line)
        if not found:
            break
        r = rows
        if r >= X.shape[0]:
            return rows, n_slow, IRREGULAR, line
        i, n_slow, status = _row_start(buf, i, end, r, line, qid_mode, label, lineno, qid_start, qid_end, ntok,
                                       lastcol, slow, n_slow, pow10)
        last = -1  # the features: the hot loop, kept here (a call per line costs less than per token)
        while status == 0 and not _at_eol(buf, i, end) and buf[i] != 35:
            idx, nd, i = _digits(buf, i, end, 1000000000)  # all of any 10-digit index
            if not _index_ends(buf, i, end, nd):
                return rows, n_slow, IRREGULAR, line
            i += 1
            col = idx - base
            if not _in_order(col, n_features, last):
                return rows, n_slow, IRREGULAR, line
            last = col
            lastcol[r] = col
            ntok[r] += 1
            start = i
            value, i, parsed = _number(buf, i, end, pow10)
            if parsed < 0:
                return rows, n_slow, IRREGULAR, line
            if parsed == 1:
                if not _note_slow(slow, n_slow, r, col, start, i):
                    return rows, n_slow, SLOW_FULL, line
                n_slow += 1
            else:
                if abs(value) > max_abs:
                    return rows, n_slow, IRREGULAR, line
                if X.shape[1]:  # no columns: labels and qids only, features checked not kept
                    X[r, col] = value
            i = _skip_spaces(buf, i, end)
        if status == 0:
            i, status = _comment(buf, i, end, r, qid_mode, qid_start, qid_end)
        if status != 0:
            return rows, n_slow, status, line
        rows += 1
        if i < end:  # at the line end
            i = _next_line(buf, i, end)
            line += 1
    return rows, n_slow, 0, line


@njit(cache=_CACHE, nogil=True)
def query_starts(buf, qid_start, qid_end, rows, prev):
    """Rows (within one block) where the qid differs from the row before; row 0 is compared
    with ``prev`` (the previous block's last qid bytes; empty: always a start)."""
    out = np.empty(rows, dtype=np.int64)
    n = 0
    for r in range(rows):
        a, b = qid_start[r], qid_end[r]
        if r == 0:
            same = prev.shape[0] == b - a
            if same:
                for j in range(b - a):
                    if buf[a + j] != prev[j]:
                        same = False
                        break
        else:
            pa, pb = qid_start[r - 1], qid_end[r - 1]
            same = pb - pa == b - a
            if same:
                for j in range(b - a):
                    if buf[a + j] != buf[pa + j]:
                        same = False
                        break
        if not same:
            out[n] = r
            n += 1
    return out[:n]


@njit(cache=_CACHE, nogil=True)
def scan_scores(buf, out, slow, max_line_bytes):
    """One number per line (``ltr eval``'s plain score files), spaces and tabs around it
    allowed, into ``out``. Returns ``(n, n_slow, status, line)``; any line the reference
    reader (:mod:`ltr_cli.data.score_files`) might treat otherwise (blank, a second token,
    not a plain number, too long) is :data:`IRREGULAR` at ``line``; numbers outside the
    exact fast path are listed in ``slow`` (3, capacity: line index, start byte, end byte)."""
    end = buf.shape[0]
    pow10 = _POW10
    i = 0
    n = 0
    n_slow = 0
    while i < end:
        line_start = i
        while i < end and _is_space(buf[i]):
            i += 1
        if _at_eol(buf, i, end):
            return n, n_slow, IRREGULAR, n + 1
        start = i
        value, i, status = _number(buf, i, end, pow10)
        if status < 0:
            return n, n_slow, IRREGULAR, n + 1
        stop = i
        while i < end and _is_space(buf[i]):
            i += 1
        if not _at_eol(buf, i, end):
            return n, n_slow, IRREGULAR, n + 1
        if status == 1:
            if n_slow >= slow.shape[1]:
                return n, n_slow, SLOW_FULL, n + 1
            slow[0, n_slow] = n
            slow[1, n_slow] = start
            slow[2, n_slow] = stop
            n_slow += 1
        if n >= out.shape[0]:
            return n, n_slow, IRREGULAR, n + 1
        out[n] = value
        n += 1
        if i - line_start > max_line_bytes:
            return n, n_slow, IRREGULAR, n
        i = _next_line(buf, i, end)
    return n, n_slow, 0, n
