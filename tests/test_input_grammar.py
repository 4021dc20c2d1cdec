"""Issue 31, items 1-2: one grammar for separators, numbers and qids in data, group and
score files (both readers agree), and score files read only in their documented formats."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.data.options import ReaderOptions
from ltr_cli.data.svmlight import SVMLightReader
from ltr_cli.errors import DataFormatError

runner = CliRunner()


def _read(path, engine, **kw):
    opts = ReaderOptions(n_features=kw.pop("n_features", 3), engine=engine, **kw)
    return [(q.qid, q.y.tolist(), q.X.tolist()) for q in SVMLightReader(path, opts)]


def _both(path, **kw):
    """The queries (or the error) of both readers, which must agree."""
    out = []
    for engine in ("auto", "reference"):
        try:
            out.append(_read(path, engine, **dict(kw)))
        except DataFormatError as exc:
            out.append(str(exc))
    assert out[0] == out[1], out
    return out[0]


@pytest.mark.parametrize("sep,name", [
    (b"\xc2\xa0", "character U+00A0 (no-break space)"),
    (b"\x0b", "character U+000B (vertical tab)"),
    (b"\x0c", "character U+000C (form feed)"),
    (b"\r", "character U+000D (lone carriage return)"),
    (b"\xe2\x80\x83", "character U+2003 (em space)"),
    (b"\xa0", "byte 0xa0 (not ASCII, not UTF-8)"),
])
def test_a_separator_other_than_space_or_tab_is_an_error_naming_it(tmp_path, sep, name):
    """A no-break space after the qid once glued '1:0.9' into the qid and dropped the feature."""
    path = tmp_path / "d.txt"
    path.write_bytes(b"1 qid:7 1:0.5 2:1\n0 qid:7" + sep + b"1:0.9 2:0.1\n")
    err = _both(path)
    assert isinstance(err, str) and f"{path}:2: {name} outside a '#' comment" in err
    res = runner.invoke(app, ["data", "inspect", str(path), "--features", "3"])
    assert res.exit_code == 1 and name in res.stderr and ":2:" in res.stderr


def test_crlf_tabs_and_any_comment_are_still_accepted(tmp_path):
    path = tmp_path / "d.txt"
    path.write_bytes("2\tqid:7 1:0.5 # docid = caf\u00e9\xa0x\r\n0 qid:7\t2:1\r\n1 qid:8 3:2\r".encode())
    assert _both(path) == [("7", [2.0, 0.0], [[0.5, 0, 0], [0, 1, 0]]), ("8", [1.0], [[0, 0, 2]])]


@pytest.mark.parametrize("line,message", [
    (b"1_0 qid:1 1:1", "bad label"),
    (b"1 qid:1 1:0_5", "bad feature value"),
    (b"1 qid:1 1_0:1", "bad feature index"),
    (b"1 qid:1 1:0x10", "bad feature value"),
])
def test_underscores_are_not_numbers(tmp_path, line, message):
    """Python's float() reads '0_5' as 5.0 and '1_0' as 10; SVMlight's strtod does not."""
    path = tmp_path / "d.txt"
    path.write_bytes(b"0 qid:1 2:1\n" + line + b"\n")
    err = _both(path, n_features=20)
    assert isinstance(err, str) and f"{path}:2: {message}" in err


def test_group_sizes_are_ascii_digits(tmp_path):
    path = tmp_path / "d.txt"
    path.write_bytes(b"1 1:1\n" * 11)
    (tmp_path / "d.txt.query").write_bytes(b"1\n1_0\n")  # int() reads 10: 11 documents
    err = _both(path, qid_source="group")
    assert isinstance(err, str) and "d.txt.query:2: group size '1_0' is not an integer" in err


def test_qids_are_integers_compared_by_value(tmp_path):
    path = tmp_path / "d.txt"
    path.write_bytes(b"1 qid:1 1:1\n0 qid:01 1:2\n2 qid:+1 1:3\n0 qid:10 1:1\n1 qid:-0 1:1\n")
    got = _both(path)
    assert [(q, y) for q, y, _ in got] == [("1", [1.0, 0.0, 2.0]), ("10", [0.0]), ("0", [1.0])]
    res = runner.invoke(app, ["data", "inspect", str(path), "--features", "3", "--json"])
    assert res.exit_code == 0, res.output
    problems = json.loads(res.stdout)["problems"]
    assert [p for p in problems if "read as qid" in p] == [
        "line 2: qid '01' is read as qid 1 (qids are integers compared by value)",
        "line 3: qid '+1' is read as qid 1 (qids are integers compared by value)",
        "line 5: qid '-0' is read as qid 0 (qids are integers compared by value)"]


def test_qid_split_by_spelling_is_still_a_split_query(tmp_path):
    path = tmp_path / "d.txt"
    path.write_bytes(b"1 qid:1 1:1\n0 qid:2 1:1\n0 qid:001 1:1\n")
    err = _both(path)
    assert isinstance(err, str) and ":3: qid 1 reappears" in err


@pytest.mark.parametrize("qid", [b"abc", b"1.0", b"1_0", b"0x1"])
def test_a_qid_that_is_not_an_integer_is_refused(tmp_path, qid):
    path = tmp_path / "d.txt"
    path.write_bytes(b"1 qid:" + qid + b" 1:1\n")
    err = _both(path)
    assert isinstance(err, str) and f"{path}:1: qid" in err and "is not an integer" in err


def test_comment_qids_follow_the_same_rule(tmp_path):
    path = tmp_path / "d.txt"
    path.write_bytes(b"1 1:1 # 05 extra\n0 1:2 # 5\n1 1:1 #\t6\r\n")
    assert [(q, y) for q, y, _ in _both(path, qid_source="comment")] == [("5", [1.0, 0.0]), ("6", [1.0])]


# --- score files -------------------------------------------------------------------------

DATA = ("2 qid:10 1:1 #docid = a\n0 qid:10 1:2 #docid = b\n1 qid:10 1:3 #docid = c\n"
        "0 qid:2 1:1 #docid = a\n1 qid:2 1:2 #docid = d\n")
PLAIN = [0.9, 0.5, 0.1, 0.2, 0.3]


def _eval(tmp_path, scores: str, data: str = DATA):
    (tmp_path / "data.txt").write_text(data)
    (tmp_path / "s.txt").write_text(scores)
    return runner.invoke(app, ["eval", str(tmp_path / "data.txt"), str(tmp_path / "s.txt"),
                               "--json", "--per-query"])


@pytest.fixture
def plain(tmp_path):
    res = _eval(tmp_path, "".join(f"{s}\n" for s in PLAIN))
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_ranklib_score_output_is_read_by_its_score_column(tmp_path, plain):
    """Once, the qid column (10, 10, 10, 2, 2) was evaluated as the score."""
    lines = [f"10\t{j}\t{s}" for j, s in enumerate(PLAIN[:3])] + [f"2\t{j}\t{s}" for j, s in enumerate(PLAIN[3:])]
    res = _eval(tmp_path, "\n".join(lines) + "\n")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == plain


@pytest.mark.parametrize("lines,line,message", [
    (["10\t0\t0.9", "10\t1\t0.5", "10\t2\t0.1", "2\t0\t0.2", "3\t1\t0.3"], 5, "document 1 of qid 2"),
    (["10\t0\t0.9", "10\t2\t0.5", "10\t1\t0.1", "2\t0\t0.2", "2\t1\t0.3"], 2, "document 1 of qid 10"),
    (["10\t0\t0.9", "10\t1\t0.5", "10\t2\t0.1", "2\t0\t0.2", "2 1 0.3"], 5, "makes this a RankLib score file"),
    (["10\t0\t0.9", "10\t1\t0_5", "10\t2\t0.1", "2\t0\t0.2", "2\t1\t0.3"], 2, "bad score '0_5'"),
    (["10\t-1\t0.9"], 1, "not a non-negative integer"),
])
def test_ranklib_files_are_checked_against_the_data(tmp_path, lines, line, message):
    res = _eval(tmp_path, "\n".join(lines) + "\n")
    assert res.exit_code == 1
    assert f"s.txt:{line}:" in res.stderr and message in res.stderr and len(res.stderr.splitlines()) == 1


def test_a_trec_run_is_matched_by_docno_in_any_order(tmp_path, plain):
    docs = [("10", "a"), ("10", "b"), ("10", "c"), ("2", "a"), ("2", "d")]
    lines = [f"{q} Q0 {d} {r} {s} run" for r, ((q, d), s) in enumerate(zip(docs, PLAIN), 1)]
    res = _eval(tmp_path, "\n".join(reversed(lines)) + "\n")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == plain


@pytest.mark.parametrize("edit,message", [
    (lambda ls: ls[:-1], "no line for qid 2 docno d"),
    (lambda ls: ls[:-1] + ["2 Q0 x 5 0.3 run"], "qid 2 docno 'x' is not a document"),
    (lambda ls: ls + [ls[0]], "appears twice"),
    (lambda ls: ls[:-1] + ["2 Q0 d five 0.3 run"], "rank 'five' is not an integer"),
    (lambda ls: ls[:-1] + ["2 Q1 d 5 0.3 run"], "makes this a TREC run file"),
])
def test_trec_runs_are_checked_against_the_data(tmp_path, edit, message):
    docs = [("10", "a"), ("10", "b"), ("10", "c"), ("2", "a"), ("2", "d")]
    lines = [f"{q} Q0 {d} {r} {s} run" for r, ((q, d), s) in enumerate(zip(docs, PLAIN), 1)]
    res = _eval(tmp_path, "\n".join(edit(lines)) + "\n")
    assert res.exit_code == 1 and message in res.stderr and len(res.stderr.splitlines()) == 1


def test_a_trec_run_needs_docids_in_the_data(tmp_path):
    res = _eval(tmp_path, "10 Q0 a 1 0.5 run\n", data="1 qid:10 1:1\n")
    assert res.exit_code == 1 and "data.txt:1: no '# docid = ...' comment" in res.stderr


@pytest.mark.parametrize("text,line,message", [
    ("0.9 10\n", 1, "a line of 2 fields"),  # once: the first token was read, the rest ignored
    ("0.9\n0.5 # x\n", 2, "a line of 3 fields"),
    ("0.9\n0.5\n0.1\n0.2\n0.3\xa0\n", 5, "U+00A0 (no-break space)"),
    ("0.9\n0.5\n0.1\n0_2\n0.3\n", 4, "bad score '0_2'"),
    ("10\t0\n", 1, "a line of 2 fields"),
])
def test_anything_else_is_one_file_line_error(tmp_path, text, line, message):
    res = _eval(tmp_path, text)
    assert res.exit_code == 1 and f"s.txt:{line}:" in res.stderr and message in res.stderr


def test_the_fast_plain_reader_equals_the_reference(tmp_path):
    from ltr_cli.data.score_files import read_scores, read_scores_reference

    path = tmp_path / "s.txt"
    path.write_bytes(b" 0.5\t\r\n-1\n3e2 \n1e-300\n0.12345678901234567890123")
    assert read_scores(path).tolist() == read_scores_reference(path).tolist() == [0.5, -1, 300, 1e-300,
                                                                                   0.12345678901234568]
    assert read_scores(path).dtype == np.float64


_SEPARATORS = st.sampled_from([b" ", b"  ", b"\t", b" \t"])


@st.composite
def _dense_ish_file(draw) -> bytes:
    """Lines whose indices run k, k+1, ... (as dense files write them) or not (a gap, a
    repeat, 01, +1), with any spacing, trailing blanks and the odd malformed token."""
    lines = []
    for q in range(draw(st.integers(1, 3))):
        start = draw(st.sampled_from([0, 1, 2]))
        for _ in range(draw(st.integers(1, 3))):
            keys = [str(start + i).encode() for i in range(draw(st.integers(0, 4)))]
            if keys and draw(st.booleans()):
                keys[draw(st.integers(0, len(keys) - 1))] = draw(st.sampled_from([b"01", b"+1", b"3", b"9", b"1.0"]))
            tokens = [k + b":" + draw(st.sampled_from([b"0.5", b"1", b"-2e3", b"7"])) for k in keys]
            if tokens and draw(st.integers(0, 9)) == 0:
                tokens[-1] = draw(st.sampled_from([b"1:2:3", b"4", b"5:", b":6"]))
            sep = draw(_SEPARATORS)
            lines.append(sep.join([b"1", b"qid:%d" % (q + 1), *tokens]) + draw(st.sampled_from([b"", b" ", b"\t"])))
    return b"\n".join(lines) + b"\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_dense_ish_file())
def test_the_reference_parse_of_any_spacing_and_index_runs_equals_the_compiled_scanner(tmp_path, text):
    """The reference parser's shortcuts (token counts from single spaces, index runs taken
    without converting each token) give what converting every token gives: the compiled
    scanner's queries, or the same error."""
    path = tmp_path / "d.txt"
    path.write_bytes(text)
    _both(path, n_features=6, index_base=0)
