"""The compiled scanner against the reference parser.

Differential: on valid files, quirky files and mutated files the fast path (with its
fallback) gives exactly the reference queries or exactly the reference error; without
the fallback it either matches or declares the input irregular. Tiny block and piece
sizes put query and line boundaries at every possible byte.
"""

from __future__ import annotations

import gzip
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ltr_cli.data.fastread import Irregular, fast_query_rows
from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader
from ltr_cli.errors import DataFormatError

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

VALID = (
    b"2 qid:7 1:0.5 3:1e-3 # docid = GX1\n"
    b"0 qid:7 2:-1.5 5:3\n"
    b"\n"
    b"# a comment line\n"
    b"1 qid:8 1:1 2:2 3:3 4:4 5:5\r\n"
    b"0.5\tqid:8 4:2.6864e-05  \n"
    b"3 qid:9 2:.5 4:5. 5:-0.000000000000000000000012345678901234567890123\n"
    b"1 qid:9\n"
    b"0 qid:10 1:+7E+2 2:123456789012345678901234567890"
)


def outcome(path, options, **scan):
    """('ok', queries) or ('error', message) of one read."""
    try:
        if scan:
            reader = SVMLightReader(path, options)
            qs = [(r.qid, r.X, r.y, r.line) for r in fast_query_rows(reader, np.float64, **scan)]
        else:
            qs = [(q.qid, q.X, q.y, q.line) for q in SVMLightReader(path, options)]
        return "ok", qs
    except DataFormatError as exc:
        return "error", str(exc)


def same(a, b):
    if a[0] != b[0]:
        return False
    if a[0] == "error":
        return a[1] == b[1]
    return len(a[1]) == len(b[1]) and all(
        qa == qb and la == lb and np.array_equal(Xa, Xb) and np.array_equal(ya, yb)
        and np.array_equal(np.signbit(Xa), np.signbit(Xb))
        for (qa, Xa, ya, la), (qb, Xb, yb, lb) in zip(a[1], b[1]))


def check(path, options, block_bytes=None):
    ref = outcome(path, replace(options, engine="reference"))
    fast = outcome(path, options)
    assert same(fast, ref), (fast, ref)
    if block_bytes is not None:
        try:
            raw = outcome(path, options, block_bytes=block_bytes, piece_bytes=max(1, block_bytes // 2))
        except Irregular:
            return ref
        assert same(raw, ref), (raw, ref)
    return ref


@pytest.mark.parametrize("block", [1, 3, 7, 64, 1 << 20])
def test_quirky_valid_file_equals_reference_at_any_block_size(tmp_path, block):
    path = tmp_path / "v.txt"
    path.write_bytes(b"\xef\xbb\xbf" + VALID)
    kind, queries = check(path, ReaderOptions(n_features=5), block)
    assert kind == "ok" and [q[0] for q in queries] == ["7", "8", "9", "10"]


def test_fast_path_handles_the_regular_file_without_fallback(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(VALID)
    rows = list(fast_query_rows(SVMLightReader(path, ReaderOptions(n_features=5))))
    assert [r.qid for r in rows] == ["7", "8", "9", "10"]
    assert [r.tokens for r in rows] == [4, 6, 3, 2] and rows[1].max_col == 4


@pytest.mark.parametrize("text, kw", [
    (b"1 qid:1 1:NULL 2:3\n0 qid:1 1:1\n", {"null_value": 0.0}),         # LETOR NULL fill
    (b"1 qid:1 1.0:2 2:3\n", {}),                                          # float-written index
    (b"1 qid:1 3:2 1:3\n", {}),                                            # unsorted indices
    (b"1 qid:1 1:1\n1 qid:2 1:1\n1 qid:1 1:1\n", {"split_qids": "new-query"}),
    (b"1 1:1 # 10\n0 2:1 # 10\n1 1:1 # 11 extra\n", {"qid_source": "comment"}),
    (b"1 qid:1 1:1 2:nan\n", {}),
    (b"1 qid:1 1:1e400\n", {}),
    (b"1 qid:1 6:1\n", {}),
    (b"1 qid:1 1:1 1:2\n", {}),
    (b"1 qid:1 1:1\n1 qid:2 1:1\n1 qid:1 1:1\n", {}),
    (b"1 1:1\n0 2:1\n", {}),
    (b"", {}),
])
def test_fallback_cases_equal_reference(tmp_path, text, kw):
    path = tmp_path / "q.txt"
    path.write_bytes(text)
    check(path, ReaderOptions(n_features=5, **kw), 4)


def test_group_file_source(tmp_path):
    path = tmp_path / "g.txt"
    path.write_bytes(b"1 1:1\n0 2:1\n2 3:1 # x\n1 qid:5 4:1\n0 5:2\n")
    (tmp_path / "g.txt.query").write_text("2\n3\n")
    kind, queries = check(path, ReaderOptions(n_features=5), 5)
    assert kind == "ok" and [q[0] for q in queries] == ["1", "2"]
    (tmp_path / "g.txt.query").write_text("2\n2\n")
    assert check(path, ReaderOptions(n_features=5), 5)[0] == "error"


def test_gzip_and_float32(tmp_path):
    path = tmp_path / "v.txt.gz"
    path.write_bytes(gzip.compress(VALID))
    check(path, ReaderOptions(n_features=5), 9)
    r32 = list(SVMLightReader(path, ReaderOptions(n_features=5)).dense_queries(np.float32))
    r64 = list(SVMLightReader(path, ReaderOptions(n_features=5, engine="reference")))
    for a, b in zip(r32, r64):
        assert a.X.dtype == np.float32 and np.array_equal(a.X, b.X.astype(np.float32))


_FORMATS = ["%r", "%.17g", "%.6f", "%.3e", "%.25f", "%g", "%.0f"]


@SETTINGS
@given(st.lists(st.tuples(st.floats(allow_nan=False, allow_infinity=False, width=64), st.sampled_from(_FORMATS)),
                min_size=1, max_size=20))
def test_numbers_convert_exactly(tmp_path, values):
    """Every value equals Python's float() of its text (Clinger's fast path or float())."""
    tokens = []
    for v, fmt in values:
        text = repr(v) if fmt == "%r" else fmt % v
        tokens.append(text if np.isfinite(float(text)) else repr(v))  # '%.3e' % 1.7975e308 is inf
    line = " ".join(f"{j + 1}:{t}" for j, t in enumerate(tokens))
    path = tmp_path / "n.txt"
    path.write_text(f"1 qid:1 {line}\n")
    (q,) = SVMLightReader(path, ReaderOptions(n_features=len(tokens)))
    expected = np.array([float(t) for t in tokens])
    assert np.array_equal(q.X[0], expected) and np.array_equal(np.signbit(q.X[0]), np.signbit(expected))


_TOKENS = st.sampled_from([b"", b" ", b":", b"::", b"qid:", b"#", b"\t", b"\r", b"\n", b"NULL", b"nan",
                           b"-", b"+", b"e", b"E5", b".", b"1e999", b"0", b"6", b"-1", b"1.5", b"00",
                           b"\x00", b"\xff", b"x", b"\xef\xbb\xbf", b"12345678901234567890123",
                           b"\xc2\xa0", b"\x0b", b"\x0c", b"\r\n", b"_", b"01", b"+1", b"qid:01"])


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, len(VALID)), st.integers(0, 3), _TOKENS), max_size=6),
       st.sampled_from(["auto", "token", "comment"]), st.sampled_from(["error", "new-query"]),
       st.integers(1, 40))
def test_mutated_files_equal_reference(tmp_path, edits, qid, split, block):
    data = bytearray(VALID)
    for pos, cut, token in edits:
        pos = min(pos, len(data))
        data[pos:pos + cut] = token
    path = tmp_path / "m.txt"
    path.write_bytes(bytes(data))
    check(path, ReaderOptions(n_features=5, qid_source=qid, split_qids=split), block)
