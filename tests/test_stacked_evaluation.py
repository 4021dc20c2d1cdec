"""The compiled evaluation of many queries equals the per-query reference bit for bit: every
convention, tie policy and no-relevant policy, queries shorter and longer than the
cut-offs, no relevant documents, ties in scores."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltr_cli.measures.conventions import CONVENTIONS, average_metrics, evaluate_query
from ltr_cli.measures.stacked import evaluate_stacked

queries_st = st.lists(
    st.lists(st.tuples(st.integers(0, 4), st.integers(-3, 3)), min_size=0, max_size=25), min_size=1, max_size=8)


@settings(max_examples=150, deadline=None)
@given(queries_st, st.sampled_from(sorted(CONVENTIONS)), st.sampled_from(["input-order", "reverse-input",
                                                                          "pessimistic"]),
       st.sampled_from([None, "zero", "one", "skip"]), st.sampled_from([0.0, 1.0]))
def test_stacked_equals_reference(queries, convention, ties, no_relevant, threshold):
    conv = CONVENTIONS[convention]
    if not conv.letor_style and any(len(q) == 0 for q in queries):
        queries = [q for q in queries if q] or [[(1, 0)]]
    y = np.array([float(lab) for q in queries for lab, _ in q])
    s = np.array([score / 2 for q in queries for _, score in q])  # coarse scores: many ties
    offsets = np.zeros(len(queries) + 1, dtype=np.int64)
    np.cumsum([len(q) for q in queries], out=offsets[1:])
    table = evaluate_stacked(s, y, offsets, conv, ties, no_relevant, threshold)
    reference = [evaluate_query(s[a:b], y[a:b], conv, ties, no_relevant, threshold)
                 for a, b in zip(offsets[:-1], offsets[1:])]
    for q, ref in enumerate(reference):
        got = table.row(q)
        assert list(got) == list(ref)
        for key, want in ref.items():
            if want is None or np.isnan(want):
                assert got[key] is None if want is None else np.isnan(got[key]), key
            else:
                assert got[key] == want, key  # the same bits: LTR_KERNELS=0 writes the same tables
    avg, ref_avg = table.average(conv), average_metrics(reference, conv)
    for key, want in ref_avg.items():
        if want is None:
            assert avg[key] is None
        else:
            assert avg[key] == want, key


def test_random_ties_take_the_reference_path_with_its_draws():
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    y = np.array([1.0, 0.0, 2.0, 0.0, 1.0])
    s = np.zeros(5)
    offsets = np.array([0, 2, 5])
    table = evaluate_stacked(s, y, offsets, CONVENTIONS["paper"], "random", rng=rng_a)
    ref = [evaluate_query(s[a:b], y[a:b], CONVENTIONS["paper"], "random", rng=rng_b) for a, b in ((0, 2), (2, 5))]
    assert [table.row(q) for q in range(2)] == ref


SCORE_FILES = [
    "0.5\n-1\n3e2\n",
    "0.5\n-1\n3e2",  # no final newline
    "  7 extra tokens\n\t1.25\r\n",  # a second token on a line: an error at line 1
    "0.1234567890123456789012\n1e-300\n1e300\n",  # numbers outside the exact fast path
    "\ufeff1\n2\n",  # byte-order mark
    "1\n\n2\n",  # a blank line: an error at line 2
    "1\nnan\n",  # not finite: an error at line 2
    "1\n1.5abc\n",  # not a number
    "1\n1_000\n",  # Python's float() accepts underscores
    "",
]


@pytest.mark.parametrize("text", SCORE_FILES)
def test_score_reader_equals_the_reference_or_names_the_same_line(tmp_path, text):
    from ltr_cli.errors import DataFormatError
    from ltr_cli.results.file_eval import read_scores, read_scores_reference

    path = tmp_path / "scores.txt"
    path.write_text(text, encoding="utf-8")
    try:
        want = read_scores_reference(path)
    except DataFormatError as exc:
        with pytest.raises(DataFormatError) as got:
            read_scores(path)
        assert str(got.value) == str(exc)
        return
    got = read_scores(path)
    assert got.dtype == np.float64 and got.tolist() == want.tolist()


@pytest.mark.parametrize("text", [
    "2 qid:10 1:1 #docid = a\n0 qid:10 1:2\n1 qid:2 1:1 3:0.5\n0 qid:2\n",
    "1 qid:1 1:1\n0 qid:2 1:1\n1 qid:1 5:2\n",  # a qid split in two runs
    "1 qid:1 1:NULL\n0 qid:1 1:2\n",  # NULL features: the reference parse takes over
    "1 qid:1 2:1 1:1\n",  # unsorted indices: the reference decides
    "3 qid:7 123456:1\n1 qid:7 1:1\n",  # wide indices need no width
])
def test_label_reader_equals_the_reference(tmp_path, text):
    from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader

    path = tmp_path / "d.txt"
    path.write_text(text)
    opts = ReaderOptions(n_features=None, null_value=0.0, split_qids="new-query")
    reader = SVMLightReader(path, opts)
    fast = [(q, y.tolist(), line) for q, y, line in reader.labelled_queries()]
    ref = [(q.qid, q.y.tolist(), q.line) for q in reader.sparse_queries()]
    assert fast == ref


def test_label_reader_reports_bad_lines_like_the_reference(tmp_path):
    from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader
    from ltr_cli.errors import DataFormatError

    path = tmp_path / "d.txt"
    path.write_text("1 qid:1 1:1\n0 qid:1 1:x\n")
    reader = SVMLightReader(path, ReaderOptions(n_features=None, null_value=0.0, split_qids="new-query"))
    with pytest.raises(DataFormatError) as fast:
        list(reader.labelled_queries())
    with pytest.raises(DataFormatError) as ref:
        list(reader.sparse_queries())
    assert str(fast.value) == str(ref.value) and ":2:" in str(fast.value)


def test_batch_bench_structure(tmp_path):
    """Structure only: timings are never asserted in unit tests."""
    from ltr_cli.bench.batch import bench_fit, bench_ranksvm, shaped

    qs = shaped("mslr-web10k", 4, docs=12)
    row = bench_ranksvm(qs)
    assert row["pairs"] > 0 and row["ours_iterations"] >= 1
    if "sklearn_s" in row:
        assert abs(row["objective_rel_diff"]) < 1e-4
    assert bench_fit("svmmap", qs)["converged"] in (True, False)
