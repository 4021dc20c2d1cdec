"""Streaming SVMlight reader: real sample, quirks vs. a reference parse, malformed input."""

from __future__ import annotations

import bz2
import gzip
import lzma

import numpy as np
import pytest

from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader
from ltr_cli.errors import DataFormatError
from tests.reference import parse_reference


def read(path, **kw):
    kw.setdefault("n_features", 5)
    return list(SVMLightReader(path, ReaderOptions(**kw)))


def assert_same(queries, reference):
    assert [q.qid for q in queries] == [r[0] for r in reference]
    for q, (_, X, y) in zip(queries, reference):
        np.testing.assert_array_equal(q.X, X)
        np.testing.assert_array_equal(q.y, y)


# --- the real sample -------------------------------------------------------------------------

def test_yahoo_sample_with_group_file(yahoo_sample):
    path = yahoo_sample / "rank.train"
    qs = read(path, n_features=700)
    assert len(qs) == 201
    assert sum(q.m for q in qs) == 3005
    labels = np.concatenate([q.y for q in qs])
    assert np.bincount(labels.astype(int)).tolist() == [645, 1211, 858, 222, 69]
    sizes = [int(x) for x in (yahoo_sample / "rank.train.query").read_text().split()]
    assert [q.m for q in qs] == sizes
    # labels and feature values equal the file, line by line
    lines = path.read_text().splitlines()
    X = np.vstack([q.X for q in qs])
    for row, line in zip(X, lines):
        toks = line.split()
        expect = np.zeros(700)
        for t in toks[1:]:
            i, v = t.split(":")
            expect[int(i) - 1] = float(v)
        np.testing.assert_array_equal(row, expect)
    np.testing.assert_array_equal(labels, [float(line.split()[0]) for line in lines])


def test_yahoo_test_file_group_option(yahoo_sample):
    qs = read(yahoo_sample / "rank.test", n_features=700, qid_source="group",
              group_file=yahoo_sample / "rank.test.query")
    assert len(qs) == 50 and sum(q.m for q in qs) == 768


# --- quirks ----------------------------------------------------------------------------------

QUIRKY = (
    "\ufeff2 qid:7 1:0.5 3:1e-3 # docid = GX1 inc = 0.1 prob = 0.2\r\n"
    "0\tqid:7\t2:-1.5E+2   5:3\r\n"
    "\n"
    "# a comment line\n"
    "0.5 qid:8 1:1 2:2 3:3 4:4 5:5\n"
    "1 qid:8\n"
    "-1 qid:9 4:2.6864e-05 \n"
)


def test_quirks_match_reference(write):
    p = write("quirky.txt", QUIRKY)
    assert_same(read(p), parse_reference(QUIRKY, 5))


@pytest.mark.parametrize("compress,suffix", [(gzip.compress, ".gz"), (bz2.compress, ".bz2"),
                                             (lzma.compress, ".xz"), (gzip.compress, ".txt")])
def test_compressed_files(write, compress, suffix):
    p = write("c" + suffix, compress(QUIRKY.encode()))
    assert_same(read(p), parse_reference(QUIRKY, 5))


def test_qid_in_trailing_comment_yandex(write):
    text = "0.5 2:1.0 3:0.004833 # 934\n1 1:2 # 934\n0 5:1 # 12\n"
    p = write("imat.txt", text)
    qs = read(p, qid_source="comment")
    assert_same(qs, parse_reference(text, 5, qid_from="comment"))
    assert read(p)[0].qid == "934"  # auto-detected


def test_zero_based_index(write):
    p = write("z.txt", "1 qid:1 0:1 4:2\n")
    q = read(p, index_base=0)[0]
    assert q.X.tolist() == [[1, 0, 0, 0, 2]]


def test_null_fill(write):
    p = write("null.txt", "1 qid:1 1:NULL 2:3\n")
    assert read(p, null_value=-1.0)[0].X.tolist() == [[-1, 3, 0, 0, 0]]


def test_split_qids_allowed_as_new_queries(write):
    p = write("split.txt", "1 qid:1 1:1\n0 qid:2 1:1\n1 qid:1 1:2\n")
    qs = read(p, split_qids="new-query")
    assert [q.qid for q in qs] == ["1", "2", "1"]


def test_huge_values_are_kept(write):
    p = write("ist.txt", "1 qid:1 1:1.79769313486e+308\n")
    assert read(p)[0].X[0, 0] == 1.79769313486e308


def test_group_file_next_to_data(write):
    p = write("g.txt", "1 1:1\n0 2:1\n2 3:1\n")
    write("g.txt.group", "2\n1\n")
    qs = read(p)
    assert [q.m for q in qs] == [2, 1] and [q.qid for q in qs] == ["1", "2"]


def test_reader_streams_lazily(write):
    """A generator: the first query is available before a bad line far below is read."""
    p = write("lazy.txt", "1 qid:1 1:1\n1 qid:2 1:1\nbad line\n")
    it = iter(SVMLightReader(p, ReaderOptions(n_features=5)))
    assert next(it).qid == "1"
    with pytest.raises(DataFormatError):
        list(it)


# --- malformed input: every case names file and line --------------------------------------------

MALFORMED = [
    ("bad label", "x qid:1 1:1\n", {}, 1, "bad label"),
    ("nan label", "nan qid:1 1:1\n", {}, 1, "not a finite number"),
    ("inf label", "1 qid:1 1:1\ninf qid:1 1:1\n", {}, 2, "not a finite number"),
    ("idx without value", "1 qid:1 1:\n", {}, 1, "bad feature token"),
    ("value without idx", "1 qid:1 :5\n", {}, 1, "bad feature token"),
    ("no colon", "1 qid:1 1:1 7\n", {}, 1, "bad feature token"),
    ("two colons", "1 qid:1 1:2:3\n", {}, 1, "bad feature token"),
    ("two colons and no colon cancel out", "1 qid:1 1:2 3:4:5 6\n", {}, 1, "bad feature token"),
    ("cancel out across lines", "1 qid:1 1:1 2:2:3\n0 qid:1 4\n", {}, 1, "bad feature token"),
    ("empty sides cancel out", "1 qid:1 1:2 3: :4\n", {}, 1, "bad feature token"),
    ("non-integer index", "1 qid:1 a:1\n", {}, 1, "bad feature index"),
    ("fractional index", "1 qid:1 1.5:1\n", {}, 1, "not an integer"),
    ("fractional index, slow path", "1 qid:1 1.5:NULL\n", {"null_value": 0.0}, 1, "not an integer"),
    ("bad value", "1 qid:1 1:abc\n", {}, 1, "bad feature value"),
    ("index 0 in 1-based", "1 qid:1 0:1\n", {}, 1, "below the index base"),
    ("negative index", "1 qid:1 -3:1\n", {}, 1, "below the index base"),
    ("index beyond count", "1 qid:1 1:1\n1 qid:1 6:1\n", {}, 2, "beyond the declared feature count"),
    ("huge index", "1 qid:1 1000000000000:1\n", {}, 1, "beyond the declared feature count"),
    ("nan value", "1 qid:1 1:nan\n", {}, 1, "non-finite"),
    ("inf value", "1 qid:1 2:-inf\n", {}, 1, "non-finite"),
    ("duplicate feature", "1 qid:1 2:1 3:1 2:5\n", {}, 1, "appears twice"),
    ("missing qid", "1 qid:1 1:1\n0 1:1\n", {}, 2, "missing qid"),
    ("empty qid", "1 qid: 1:1\n", {}, 1, "empty qid"),
    ("qid split across file", "1 qid:1 1:1\n1 qid:2 1:1\n1 qid:1 1:1\n", {}, 3, "first line was 1"),
    ("missing comment qid", "1 1:1 # 5\n0 1:1\n", {"qid_source": "comment"}, 2, "missing qid"),
    ("NULL without fill", "1 qid:1 1:NULL\n", {}, 1, "NULL value"),
    ("binary garbage", b"\x00\xff\xfe\x01 qid:1\n", {}, 1, "character U+0000 (NUL) outside a '#' comment"),
    ("latin-1 token", "1 qid:1 1:caf\xe9\n".encode("latin-1"), {}, 1, "byte 0xe9 (not ASCII, not UTF-8)"),
]


@pytest.mark.parametrize("name,content,kw,line,text", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_names_file_and_line(write, name, content, kw, line, text):
    p = write("bad.txt", content)
    with pytest.raises(DataFormatError) as info:
        read(p, **kw)
    err = info.value
    assert err.line == line and str(p) in str(err) and f":{line}:" in str(err)
    assert text in str(err)
    assert "\n" not in str(err)


def test_empty_file(write):
    with pytest.raises(DataFormatError, match="no data lines"):
        read(write("empty.txt", ""))
    with pytest.raises(DataFormatError, match="no data lines"):
        read(write("comments.txt", "# only\n\n"))


def test_truncated_gzip(write):
    blob = gzip.compress(("1 qid:1 1:1\n" * 20000).encode())
    p = write("t.txt.gz", blob[: len(blob) // 2])
    with pytest.raises(DataFormatError, match="truncated or corrupt") as info:
        read(p)
    assert info.value.line is not None and info.value.line > 1


def test_group_file_problems(write):
    p = write("g.txt", "1 1:1\n0 2:1\n2 3:1\n")
    write("g.txt.query", "2\n2\n")
    with pytest.raises(DataFormatError, match="declares 4 documents"):
        read(p)
    write("g.txt.query", "1\n1\n")
    with pytest.raises(DataFormatError, match="more data lines") as info:
        read(p)
    assert info.value.line == 3
    write("g.txt.query", "2\nx\n")
    with pytest.raises(DataFormatError, match="not an integer") as info:
        read(p)
    assert info.value.path.endswith("g.txt.query") and info.value.line == 2
    write("g.txt.query", "3\n0\n")
    with pytest.raises(DataFormatError, match="must be positive"):
        read(p)


def test_missing_file(tmp_path):
    with pytest.raises(DataFormatError, match="file not found"):
        read(tmp_path / "nope.txt")
