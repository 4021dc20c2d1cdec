"""Generators: the separable set really is margin-separable; shaped files round-trip."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_cli.data.registry import DATASETS, get_dataset
from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader
from ltr_cli.data.synthetic import (
    AUTHORS_RELEVANCE,
    SeparableSpec,
    ShapeSpec,
    separable_queries,
    separable_ranker,
    shaped_queries,
    write_svmlight,
)


def min_margin(queries, u):
    worst = np.inf
    for q in queries:
        s = q.X @ u
        for i in range(q.m):
            lower = q.y < q.y[i]
            if lower.any():
                worst = min(worst, s[i] - s[lower].max())
    return worst


def test_authors_variant():
    spec = SeparableSpec("authors", queries=50, seed=3)
    qs = list(separable_queries(spec))
    assert all(q.X.shape == (20, 10) for q in qs)
    assert all((q.y == AUTHORS_RELEVANCE).all() for q in qs)
    np.testing.assert_array_equal(separable_ranker(spec), np.ones(10))
    assert min_margin(qs, np.ones(10)) > 1.0
    # same seed, same data
    again = list(separable_queries(spec))
    assert all((a.X == b.X).all() for a, b in zip(qs, again))


def test_paper_variant_margin_with_unit_ranker():
    spec = SeparableSpec("paper", queries=50, features=20, margin=0.5, seed=1)
    qs = list(separable_queries(spec))
    u = separable_ranker(spec)
    assert np.linalg.norm(u) == pytest.approx(1.0)
    assert min_margin(qs, u) > 0.5
    labels = np.concatenate([q.y for q in qs])
    assert set(np.unique(labels)) <= {0, 1, 2, 3, 4} and len(np.unique(labels)) == 5


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_shaped_files_round_trip(tmp_path, name):
    info = get_dataset(name)
    qs = list(shaped_queries(info, ShapeSpec(queries=6, docs_per_query=8, seed=2)))
    style = info.qid_source
    path = tmp_path / f"{name}.txt.gz"
    write_svmlight(path, iter(qs), qid_style=style, sparse=info.sparse)
    back = list(SVMLightReader(path, ReaderOptions(n_features=info.n_features, qid_source=style)))
    assert [q.qid for q in back] == [q.qid for q in qs]
    for a, b in zip(qs, back):
        np.testing.assert_allclose(a.X, b.X, rtol=1e-5)
        np.testing.assert_array_equal(a.y, b.y)
    labels = np.concatenate([q.y for q in qs])
    assert set(labels) <= set(info.label_levels)


def test_group_style_file(tmp_path):
    info = get_dataset("yahoo-set1")
    qs = list(shaped_queries(info, ShapeSpec(queries=5, seed=0)))
    path = tmp_path / "rank.train"
    write_svmlight(path, iter(qs), qid_style="group", sparse=True)
    assert (tmp_path / "rank.train.query").read_text().split() == [str(q.m) for q in qs]
    back = list(SVMLightReader(path, ReaderOptions(n_features=700)))
    assert [q.m for q in back] == [q.m for q in qs]


def test_fold_layout_rotates_subsets_like_letor(tmp_path):
    """Fold1 trains on S1-S3, validates on S4, tests on S5; Fold2 trains on S2-S4, validates
    on S5, tests on S1; ... so each fold's test file is the next fold's vali file."""
    from ltr_cli.data.synthetic import rotation, write_fold_layout
    from ltr_cli.errors import LtrError

    assert rotation(5) == [([0, 1, 2], 3, 4), ([1, 2, 3], 4, 0), ([2, 3, 4], 0, 1), ([3, 4, 0], 1, 2),
                           ([4, 0, 1], 2, 3)]
    info = get_dataset("letor2-td2003")
    written = write_fold_layout(tmp_path, info, ShapeSpec(12, 5, seed=1))
    assert written["subsets"] == [2, 3, 2, 3, 2] and written["features"] == 44
    files = {(f, s): info.path_for(tmp_path, s, f).read_bytes() for f in info.folds for s in ("train", "vali", "test")}
    for f in info.folds:
        nxt = f % 5 + 1
        assert files[(f, "test")] == files[(nxt, "vali")]
        assert len({files[(f, s)] for s in ("train", "vali", "test")}) == 3
    # a training file is its three subsets in order, each written as in the other folds
    assert files[(1, "train")] == files[(2, "test")] + files[(3, "test")] + files[(4, "test")]
    qids = [line.split()[1] for f in info.folds for line in files[(f, "test")].decode().splitlines()]
    assert len(dict.fromkeys(qids)) == 12  # qids unique over the dataset
    with pytest.raises(LtrError, match="no train/vali/test fold layout"):
        write_fold_layout(tmp_path / "y", get_dataset("yahoo-set1"), ShapeSpec(10))
    with pytest.raises(LtrError, match="at least 5"):
        write_fold_layout(tmp_path / "z", info, ShapeSpec(4))


def test_synth_folds_needs_a_registry_dataset_and_a_directory(tmp_path):
    from ltr_cli.data.synthetic import synthesize
    from ltr_cli.errors import LtrError

    with pytest.raises(LtrError, match="give --like NAME"):
        synthesize(tmp_path / "d", None, "authors", 10, None, 0, None, folds=True)
    (tmp_path / "f").write_text("")
    with pytest.raises(LtrError, match="writes a directory"):
        synthesize(tmp_path / "f", "letor2-ohsumed", None, 10, None, 0, None, folds=True)
    out = synthesize(tmp_path / "d", "letor2-ohsumed", None, 10, 4, 0, None, folds=True)
    assert out["root"] == str(tmp_path / "d") and (tmp_path / "d" / "Fold5" / "testset.txt").is_file()


@pytest.mark.parametrize("mean", ["1e300", "inf", "600000"])
def test_synth_refuses_a_mean_it_cannot_draw(tmp_path, mean):
    """One line and status 1, and no output file (not even an empty one)."""
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    out = tmp_path / "out.txt"
    res = CliRunner().invoke(app, ["data", "synth", str(out), "--like", "mslr-web10k", "--queries", "2",
                                   "--docs-per-query", mean])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.exception
    assert res.stderr.count("\n") == 1 and "--docs-per-query" in res.stderr and "493,448" in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_synth_folds_that_fail_leave_no_partial_files(tmp_path, monkeypatch):
    """A fold layout is written beside the root and moved in when complete: a disk that
    fills up on the third file leaves no file under the root (a new root is not created,
    an older layout there is kept) and no temporary folder."""
    from ltr_cli.data import synthetic

    real = synthetic.write_svmlight
    calls = []

    def filling_up(path, queries, **kw):
        calls.append(path)
        if len(calls) == 3:
            path.write_text("1 qid:1 1:0.5\n")  # a part of the file, then the disk is full
            raise OSError(28, "No space left on device")
        return real(path, queries, **kw)

    monkeypatch.setattr(synthetic, "write_svmlight", filling_up)
    info = get_dataset("letor2-ohsumed")
    with pytest.raises(OSError, match="No space"):
        synthetic.write_fold_layout(tmp_path / "d", info, ShapeSpec(10, 4, seed=1))
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(synthetic, "write_svmlight", real)
    synthetic.write_fold_layout(tmp_path / "d", info, ShapeSpec(10, 4, seed=1))
    before = {p: p.read_bytes() for p in (tmp_path / "d").rglob("*") if p.is_file()}
    assert len(before) == 15
    calls.clear()
    monkeypatch.setattr(synthetic, "write_svmlight", filling_up)
    with pytest.raises(OSError, match="No space"):
        synthetic.write_fold_layout(tmp_path / "d", info, ShapeSpec(10, 4, seed=2))
    assert {p: p.read_bytes() for p in (tmp_path / "d").rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["d"]


def test_synth_folds_into_an_existing_layout_replaces_its_files(tmp_path):
    from ltr_cli.data.synthetic import write_fold_layout

    info = get_dataset("letor2-td2003")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "README").write_text("mine\n")
    write_fold_layout(tmp_path / "d", info, ShapeSpec(10, 3, seed=1))
    first = info.path_for(tmp_path / "d", "test", 1).read_bytes()
    write_fold_layout(tmp_path / "d", info, ShapeSpec(10, 3, seed=2))
    assert info.path_for(tmp_path / "d", "test", 1).read_bytes() != first
    assert (tmp_path / "d" / "README").read_text() == "mine\n"
    assert [p.name for p in tmp_path.iterdir()] == ["d"]
