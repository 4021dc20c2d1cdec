"""Every kind of dataset opens into a source that keeps the one contract
(:class:`ltr_cli.data.sources.QuerySource`): units, each unit's queries, the same queries
as arrays, queries per pass and identity agree with each other, whatever the data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import numpy as np
import pytest
from pydantic import TypeAdapter

from ltr_cli.config.datasets import DatasetSpec
from ltr_cli.data.formats.parquet_table import write_table
from ltr_cli.data.options import ReaderOptions
from ltr_cli.data.formats import open_dataset
from ltr_cli.data.registry import get_dataset
from ltr_cli.data.sources import (
    FileSource,
    GeneratedSource,
    StreamStats,
    open_source,
    register_kind,
    source_kinds,
    stream_rounds,
)
from ltr_cli.data.synthetic import ShapeSpec, shaped_queries, write_svmlight

MQ = get_dataset("letor4-mq2007")  # 46 features, qid tokens, Fold{n}/{split}.txt


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sources")
    write_svmlight(root / "a.txt", shaped_queries(MQ, ShapeSpec(9, 6, seed=1)))
    write_svmlight(root / "b.txt", shaped_queries(MQ, ShapeSpec(5, 4, seed=2)))
    write_svmlight(root / "g.txt", shaped_queries(MQ, ShapeSpec(4, 3, seed=3)), qid_style="group")
    for fold in (1, 2):
        (root / "mq" / f"Fold{fold}").mkdir(parents=True)
        write_svmlight(root / "mq" / f"Fold{fold}" / "vali.txt", shaped_queries(MQ, ShapeSpec(6, 5, seed=fold)))
    write_table(iter(open_dataset(root / "a.txt", ReaderOptions(n_features=46))), root / "a.parquet", 46, 1)
    return root


def _specs(root: Path) -> dict[str, dict]:
    return {
        "separable": {"kind": "separable", "variant": "authors", "queries": 6, "docs": 20},
        "shaped": {"kind": "shaped", "like": "mslr-web10k", "queries": 5, "docs_per_query": 7},
        "registry": {"kind": "registry", "name": "letor4-mq2007", "root": str(root / "mq"), "split": "vali",
                     "folds": [1, 2]},
        "files": {"kind": "files", "files": [str(root / "a.txt")], "features": 46},
        "files-several": {"kind": "files", "files": [str(root / "g.txt"), str(root / "b.txt")], "features": 46,
                          "normalize": "query-level", "storage": "float32"},
        "parquet": {"kind": "files", "files": [str(root / "a.parquet")], "features": 46},
    }


KINDS = ["separable", "shaped", "registry", "files", "files-several", "parquet"]


def _open(data: Path, name: str, cache: Path | None):
    spec = TypeAdapter(DatasetSpec).validate_python(_specs(data)[name])
    return open_source(spec, 7, cache)


@pytest.mark.parametrize("cached", [False, True], ids=["parsed", "cached"])
@pytest.mark.parametrize("name", KINDS)
def test_every_kind_keeps_the_contract(data, tmp_path, name, cached):
    source = _open(data, name, tmp_path / "cache" if cached else None)
    generated = name in ("separable", "shaped")
    assert isinstance(source, GeneratedSource if generated else FileSource)
    assert isinstance(source.n_features, int) and source.n_features > 0
    assert source.description and source.name and source.normalize in ("none", "query-level")
    assert (source.ranker is not None) == (name == "separable")
    if source.ranker is not None:
        assert source.ranker.shape == (source.n_features,)
    units = source.units()
    assert units == list(range(len(units))) and units

    seen = []
    for unit in units:
        queries = list(source.queries(unit))
        assert queries and [q.qid for q in source.queries(unit)] == [q.qid for q in queries]  # re-readable
        for q in queries:
            assert q.X.shape == (q.m, source.n_features) and q.y.shape == (q.m,) and q.y.dtype == np.float64
        arrays = source.unit_arrays(unit)
        # generated data and cached files map as arrays; parsed files stream
        assert (arrays is not None) == (generated or cached)
        if arrays is not None:
            assert source.unit_arrays(unit) is arrays  # built once per source
            assert arrays.qids == [q.qid for q in queries]
            assert arrays.starts.dtype == arrays.ends.dtype == np.int64
            assert arrays.X.shape == (int(arrays.ends[-1]), source.n_features) and arrays.y.shape == arrays.X.shape[:1]
            for j, q in enumerate(queries):
                rows = slice(int(arrays.starts[j]), int(arrays.ends[j]))
                assert np.array_equal(arrays.X[rows], q.X) and arrays.X.dtype == q.X.dtype
                assert np.array_equal(arrays.y[rows], q.y)
        seen.extend(q.qid for q in queries)
    if len(units) > 1:  # several files: qids namespaced by file, 1-based
        assert all(qid.split(":", 1)[0] in {str(u + 1) for u in units} for qid in seen)
        assert len(set(seen)) == len(seen)

    assert source.queries_per_pass() == len(seen)
    assert source.n_queries in (None, len(seen))
    assert [q.qid for _, q in stream_rounds(source, 1, False, 1.0, np.random.default_rng(0), False,
                                            StreamStats())] == seen

    identity = source.identity()
    json.dumps(identity)  # goes into manifests as is
    assert identity == _open(data, name, tmp_path / "cache" if cached else None).identity()
    if generated:
        assert list(identity) == ["generator", "sha256"] and identity["generator"]["kind"] == name
    else:
        paths = [i["path"] for i in identity["files"]]
        assert all(Path(p).exists() for p in paths) and len(paths) >= len(units)


def test_the_kinds_registered_are_the_configs_kinds():
    union = get_args(get_args(DatasetSpec)[0])
    assert set(source_kinds()) == {get_args(m.model_fields["kind"].annotation)[0] for m in union}


def test_a_kind_is_registered_once_and_an_unknown_spec_is_refused():
    with pytest.raises(ValueError, match="'files' is already registered"):
        register_kind("files")(lambda spec, seed, cache_dir=None: None)
    with pytest.raises(TypeError, match="unsupported dataset spec object"):
        open_source(object(), 0)


@pytest.mark.parametrize("kept", [True, False])
def test_a_generated_stream_reads_the_same_queries_kept_or_generated_again(monkeypatch, kept):
    """Kept as arrays (read-only views every pass) or generated again on each read (a large
    stream read once), a generated source yields the queries its generator yields."""
    from ltr_cli.data.sources import generated

    monkeypatch.setattr(generated, "_GENERATED", generated.OrderedDict())
    monkeypatch.setattr(generated, "KEEP_GENERATED", False)  # (a sweep test may have set it)
    if not kept:
        monkeypatch.setattr(generated, "SMALL_STREAM", 0)
    spec = TypeAdapter(DatasetSpec).validate_python({"kind": "separable", "variant": "paper", "queries": 30})
    source = open_source(spec, 0)
    source.reads = 1
    fresh = list(source.generator())
    for _ in range(2):
        read = list(source.queries(0))
        assert [q.qid for q in read] == [q.qid for q in fresh]
        assert all(np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y) for a, b in zip(read, fresh))
        assert all(q.X.flags.writeable is not kept for q in read)
    assert (source.unit_arrays(0) is not None) is kept
