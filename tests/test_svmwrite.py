"""The numpy SVMlight writer writes the bytes of Python's per-value formatting."""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ltr_cli.data.query import Query
from ltr_cli.data.registry import get_dataset
from ltr_cli.data.svmwrite import format_g6
from ltr_cli.data.synthetic import (
    SeparableSpec,
    ShapeSpec,
    reference_svmlight_lines,
    separable_queries,
    shaped_queries,
    write_svmlight,
)


def _texts(values: np.ndarray) -> list[str]:
    return [bytes(row[row != 0]).decode() for row in format_g6(values)]


def test_format_g6_is_pythons_g6():
    rng = np.random.default_rng(7)
    k = rng.integers(100_000, 1_000_000, 3000) + 0.5  # exact decimal halves, and their neighbours
    halves = k * 10.0 ** (rng.integers(-14, 24, 3000) - 5)
    values = np.concatenate([
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-5, 1e-4, 9.9999949e-05, 9.9999951e-05, 0.00099999951,
         -0.000123, -0.00123, 999999.4999, 999999.5, 1234565.0, 1234575.0, 0.1234565, 2.5, 5e-324,
         1.7976931348623157e308, 1e22, 1e23, 100000.0, 1e6, 0.5, 0.1, 0.01, 9.999995],
        halves, np.nextafter(halves, 0), np.nextafter(halves, np.inf), -halves,
        np.round(rng.random(5000) * 4 - 1, 6),  # what the shaped generator writes
        rng.standard_normal(5000) * 10.0 ** rng.integers(-30, 30, 5000),
        rng.integers(-10**9, 10**9, 2000).astype(float),
        np.round(rng.random(5000), rng.integers(0, 9)) * 10.0 ** rng.integers(-6, 8, 5000),
    ])
    assert _texts(values) == [f"{v:.6g}" for v in values.tolist()]


def _queries_with_odd_rows() -> list[Query]:
    """Sparse rows that are all zero, -0.0, fractional labels, a query of one document."""
    X = np.array([[0.0, 0.0, 0.0], [-0.0, 1.5, 0.0], [1e-7, 0.0, -2.25], [0.0, 0.0, 0.0]])
    return [Query("7", X, np.array([0.5, 2.0, -1.0, 0.0])), Query("8", X[1:2], np.array([3.0]))]


CASES = {
    "mslr dense": (lambda: shaped_queries(get_dataset("mslr-web10k"), ShapeSpec(3, 6, seed=1)), "token", False, 1),
    "yahoo sparse": (lambda: shaped_queries(get_dataset("yahoo-set1"), ShapeSpec(4, 5, seed=2)), "token", True, 1),
    "yandex comment": (lambda: shaped_queries(get_dataset("yandex-imat2009"), ShapeSpec(4, 5, seed=3)),
                       "comment", True, 1),
    "separable group": (lambda: separable_queries(SeparableSpec("paper", 3, 6, 20, 0.5, 4)), "group", False, 1),
    "odd rows comment": (_queries_with_odd_rows, "comment", True, 0),
    "odd rows token": (_queries_with_odd_rows, "token", True, 1),
    "odd rows dense": (_queries_with_odd_rows, "group", False, 1),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_writer_writes_the_reference_bytes(tmp_path, case):
    make, style, sparse, base = CASES[case]
    path = tmp_path / "out.txt"
    n = write_svmlight(path, make(), qid_style=style, sparse=sparse, index_base=base)
    expected = "".join(reference_svmlight_lines(make(), qid_style=style, sparse=sparse, index_base=base))
    assert path.read_bytes() == expected.encode()
    assert n == expected.count("\n")


def test_a_large_query_is_written_a_few_rows_at_a_time(tmp_path, monkeypatch):
    from ltr_cli.data import synthetic

    monkeypatch.setattr(synthetic, "_BLOCK_VALUES", 40)  # 136 features: one row per block
    queries = list(shaped_queries(get_dataset("mslr-web10k"), ShapeSpec(2, 5, seed=5)))
    write_svmlight(tmp_path / "out.txt", iter(queries))
    assert (tmp_path / "out.txt").read_text() == "".join(reference_svmlight_lines(queries))


def test_gzip_output_is_what_gzip_open_writes(tmp_path, monkeypatch):
    """The same compressed bytes as writing the reference text through gzip.open(path, "wt")
    (the gzip header's time fixed, as it holds the time of writing)."""
    monkeypatch.setattr("time.time", lambda: 1_700_000_000.0)
    info = get_dataset("yahoo-set1")
    queries = [replace(q, qid=str(100 + int(q.qid))) for q in shaped_queries(info, ShapeSpec(5, 7, seed=1))]
    ours, theirs = tmp_path / "a" / "s.txt.gz", tmp_path / "b" / "s.txt.gz"
    ours.parent.mkdir()
    theirs.parent.mkdir()
    write_svmlight(ours, iter(queries), sparse=True)
    with gzip.open(theirs, "wt", encoding="ascii", newline="\n") as fh:
        fh.writelines(reference_svmlight_lines(queries, sparse=True))
    assert ours.read_bytes() == theirs.read_bytes()


def test_a_failed_write_leaves_no_file(tmp_path):
    """Written to a temporary file and renamed: a generator that fails half-way leaves
    neither a partial file under the final name nor a temporary; an older file stays."""
    def failing():
        yield from shaped_queries(get_dataset("mslr-web10k"), ShapeSpec(3, 50, seed=1))
        raise RuntimeError("disk full")

    path = tmp_path / "out.txt"
    with pytest.raises(RuntimeError, match="disk full"):
        write_svmlight(path, failing())
    assert list(tmp_path.iterdir()) == []
    path.write_text("older\n")
    with pytest.raises(RuntimeError, match="disk full"):
        write_svmlight(path, failing())
    assert list(tmp_path.iterdir()) == [path] and path.read_text() == "older\n"


def test_group_file_sizes(tmp_path):
    queries = list(separable_queries(SeparableSpec("paper", 3, 4, 20, 0.5, 1)))
    write_svmlight(tmp_path / "f.txt", iter(queries), qid_style="group")
    assert Path(tmp_path / "f.txt.query").read_text() == "4\n4\n4\n"


def test_sparse_rows_format_only_their_non_zero_values(tmp_path, monkeypatch):
    """A sparse file formats the values it writes, not every cell of the rows: Yahoo-shaped
    rows are 70% zeros, and formatting them all made sparse output several times slower."""
    from ltr_cli.data import svmwrite

    formatted = []
    real = svmwrite.format_g6_words

    def counting(values, out=None):
        formatted.append(np.size(values))
        return real(values, out)

    monkeypatch.setattr(svmwrite, "format_g6_words", counting)
    make, style, sparse, base = CASES["yahoo sparse"]
    write_svmlight(tmp_path / "out.txt", make(), qid_style=style, sparse=sparse, index_base=base)
    assert sum(formatted) == sum(int(np.count_nonzero(q.X)) for q in make()) > 0
    expected = "".join(reference_svmlight_lines(make(), qid_style=style, sparse=sparse, index_base=base))
    assert (tmp_path / "out.txt").read_bytes() == expected.encode()
