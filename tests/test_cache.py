"""Binary cache: same queries as the parser, stale and corrupt caches rebuilt (never
used), float32 storage leaving the learning curves unchanged."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from ltr_cli.data.cache import CacheInvalid, open_cached
from ltr_cli.data.registry import get_dataset
from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader
from ltr_cli.data.synthetic import ShapeSpec, shaped_queries, write_svmlight
from ltr_cli.errors import DataFormatError

OPTS = ReaderOptions(n_features=136)


@pytest.fixture
def mslr_file(tmp_path):
    path = tmp_path / "train.txt"
    write_svmlight(path, shaped_queries(get_dataset("mslr-web10k"), ShapeSpec(12, seed=3)))
    return path


def same_queries(a, b, dtype=np.float64):
    a, b = list(a), list(b)
    assert len(a) == len(b)
    for qa, qb in zip(a, b):
        assert (qa.qid, qa.line) == (qb.qid, qb.line)
        assert qa.X.dtype == dtype and np.array_equal(qa.X, qb.X.astype(dtype)) and np.array_equal(qa.y, qb.y)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cache_gives_the_parsed_queries(tmp_path, mslr_file, dtype):
    cache = open_cached(mslr_file, OPTS, tmp_path / "c", dtype)
    again = open_cached(mslr_file, OPTS, tmp_path / "c", dtype)
    assert again.directory == cache.directory and again.n_queries == 12
    reference = SVMLightReader(mslr_file, ReaderOptions(n_features=136, engine="reference"))
    same_queries(again.queries(window_bytes=1 << 12), reference, np.dtype(dtype))
    first = list(again.queries())[0]
    # read-only plain arrays (np.memmap slices would slow every kernel call)
    assert not first.X.flags.writeable and type(first.X) is np.ndarray


def test_changed_source_is_stale(tmp_path, mslr_file):
    first = open_cached(mslr_file, OPTS, tmp_path / "c")
    write_svmlight(mslr_file, shaped_queries(get_dataset("mslr-web10k"), ShapeSpec(5, seed=4)))
    messages = []
    second = open_cached(mslr_file, OPTS, tmp_path / "c", log=messages.append)
    assert second.n_queries == 5 and first.n_queries == 12
    assert len(messages) == 1 and "changed since its cache was built" in messages[0]
    same_queries(second.queries(), SVMLightReader(mslr_file, OPTS))
    other = open_cached(mslr_file, ReaderOptions(n_features=137), tmp_path / "c")  # other options: own cache
    assert other.directory != second.directory and second.directory.exists()


def _flip(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_same_size_and_mtime_edit_is_seen(tmp_path, mslr_file):
    """An edit that keeps size and mtime (relabel one document, restore the mtime) is a
    new stat key (ctime), the content digest differs: rebuilt, never served stale."""
    first = open_cached(mslr_file, OPTS, tmp_path / "c")
    st = mslr_file.stat()
    data = bytearray(mslr_file.read_bytes())
    i = data.index(b"\n") + 1  # the second line's label
    data[i:i + 1] = b"4" if data[i:i + 1] != b"4" else b"3"
    mslr_file.write_bytes(bytes(data))
    os.utime(mslr_file, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert mslr_file.stat().st_size == st.st_size and mslr_file.stat().st_mtime_ns == st.st_mtime_ns
    messages = []
    second = open_cached(mslr_file, OPTS, tmp_path / "c", log=messages.append)
    assert messages and "changed" in messages[0]
    assert first.meta["source"]["xxh3_128"] != second.meta["source"]["xxh3_128"]
    same_queries(second.queries(), SVMLightReader(mslr_file, OPTS))


def test_touched_source_keeps_its_cache(tmp_path, mslr_file):
    first = open_cached(mslr_file, OPTS, tmp_path / "c")
    os.utime(mslr_file, ns=(1, 1))
    again = open_cached(mslr_file, OPTS, tmp_path / "c", log=pytest.fail)  # same bytes: no rebuild
    assert again.meta["source"]["stat"]["mtime_ns"] == 1
    assert again.meta["source"]["xxh3_128"] == first.meta["source"]["xxh3_128"]


@pytest.mark.parametrize("field,value", [("dtype", "float32"), ("dtype", "int8"), ("dtype", ["x"]),
                                         ("n_features", 272), ("n_features", "136"), ("documents", -1)])
def test_crafted_meta_never_reaches_a_kernel(tmp_path, mslr_file, field, value):
    """meta.json edited with a consistent story (X.bin reinterpreted as float32 of twice
    the width: same bytes) is refused at open: dtype and width come from the run."""
    cache = open_cached(mslr_file, OPTS, tmp_path / "c")
    meta = json.loads((cache.directory / "meta.json").read_text())
    meta[field] = value
    if field == "dtype" and value == "float32":
        meta["n_features"] = 272
    (cache.directory / "meta.json").write_text(json.dumps(meta))
    messages = []
    rebuilt = open_cached(mslr_file, OPTS, tmp_path / "c", log=messages.append)
    assert len(messages) == 1 and "invalid" in messages[0]
    assert rebuilt.meta["dtype"] == "float64" and rebuilt.meta["n_features"] == 136


@pytest.mark.parametrize("damage", ["truncate-X", "flip-X-first", "flip-y", "meta", "qids", "missing-X",
                                    "blocks", "symlink"])
def test_corrupt_cache_is_rebuilt_not_used(tmp_path, mslr_file, damage):
    cache = open_cached(mslr_file, OPTS, tmp_path / "c")
    d = cache.directory
    if damage == "truncate-X":
        os.truncate(d / "X.bin", (d / "X.bin").stat().st_size - 8)
    elif damage == "flip-X-first":
        _flip(d / "X.bin", 0)
        _flip(d / "blocks.bin", 0)
    elif damage == "flip-y":
        _flip(d / "y.bin", 9)
    elif damage == "meta":
        (d / "meta.json").write_text("{")
    elif damage == "qids":
        (d / "qids.json").write_text(json.dumps(["x"] * 12))
    elif damage == "blocks":
        _flip(d / "blocks.bin", 3)
    elif damage == "symlink":
        import shutil

        shutil.rmtree(d)
        d.symlink_to(tmp_path)
    else:
        (d / "X.bin").unlink()
    messages = []
    rebuilt = open_cached(mslr_file, OPTS, tmp_path / "c", log=messages.append)
    assert len(messages) == 1 and "invalid" in messages[0] and "rebuilding" in messages[0]
    same_queries(rebuilt.queries(), SVMLightReader(mslr_file, OPTS))


@pytest.mark.parametrize("where", [0.0, 0.37, 0.999])
def test_any_corrupted_byte_of_x_is_caught_before_a_learner_sees_it(tmp_path, where):
    """One corrupted double anywhere in X.bin: the open succeeds (X is verified as it is
    mapped), reading the window that holds it raises, before its query is yielded;
    --verify finds it at once."""
    path = tmp_path / "train.txt"
    write_svmlight(path, shaped_queries(get_dataset("mslr-web10k"), ShapeSpec(40, seed=6)))
    cache = open_cached(path, OPTS, tmp_path / "c")
    size = (cache.directory / "X.bin").stat().st_size
    assert size > 2 * (1 << 20)  # several blocks
    offset = int(size * where) // 8 * 8
    _flip(cache.directory / "X.bin", offset)
    reopened = open_cached(path, OPTS, tmp_path / "c", log=pytest.fail)
    row = offset // (136 * 8)
    seen = []
    with pytest.raises(CacheInvalid, match="X.bin block"):
        for q in reopened.queries(window_bytes=1 << 16):
            seen.append(q)
    assert sum(q.m for q in seen) <= row  # the damaged row never came out
    with pytest.raises(CacheInvalid, match="X.bin"):
        open_cached(path, OPTS, tmp_path / "c", log=pytest.fail).verify()


def test_parse_error_leaves_no_cache(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:1 1:0.5\n0 qid:1 1:x\n")
    with pytest.raises(DataFormatError, match=":2:"):
        open_cached(bad, ReaderOptions(n_features=3), tmp_path / "c")
    assert [p.name for p in (tmp_path / "c").iterdir() if not p.name.endswith(".lock")] == []


def test_float32_storage_leaves_curves_unchanged(tmp_path):
    """The perceptron paper's learners on MSLR-shaped files, features stored as float32
    vs float64: time-averaged NDCG@10 and AP curves agree to 1e-6."""
    from ltr_cli.config.experiment import parse_config
    from ltr_cli.measures.metrics import time_average
    from ltr_cli.runs.runner import run_experiment

    path = tmp_path / "train.txt"
    write_svmlight(path, shaped_queries(get_dataset("mslr-web10k"), ShapeSpec(60, seed=5)))
    curves = {}
    for storage in ("float64", "float32"):
        spec = parse_config({
            "experiment": f"s-{storage}", "dataset": {"kind": "files", "files": [str(path)], "features": 136,
                                                      "storage": storage},
            "protocol": {"passes": 2, "checkpoint_every": 0},
            "metrics": {"names": ["ndcg@10", "ap"], "no_relevant": "one", "ties": "reverse-input"},
            "cache": {"dir": str(tmp_path / "cache")},
            "learners": {
                "slam-ndcg": {"type": "slam-perceptron", "measure": "ndcg", "mistake": "ndcg@10",
                              "weights": "level-averaged", "margin": "label-difference",
                              "step": {"rule": "inv-sqrt", "eta": 1.0}},
                "alg3": {"type": "alg3", "mistake": "ndcg@10", "margin": "label-difference",
                         "step": {"rule": "constant", "eta": 1.0, "loss_scaled": True}}}})
        for outcome in run_experiment(spec, out=tmp_path / storage, quiet=True):
            curves[(storage, outcome.learner)] = pd.read_parquet(outcome.path / "rounds.parquet")
    for learner in ("slam-ndcg", "alg3"):
        a, b = curves[("float64", learner)], curves[("float32", learner)]
        assert len(a) == 120  # 60 queries, 2 passes
        for metric in ("ndcg@10", "ap"):
            diff = np.abs(time_average(a[metric].to_numpy()) - time_average(b[metric].to_numpy()))
            assert diff.max() <= 1e-6, (learner, metric, diff.max())


def test_ltr_run_builds_then_reuses_the_cache(tmp_path, mslr_file):
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    config = tmp_path / "c.yaml"
    config.write_text(f"""
experiment: cached
dataset: {{kind: files, files: [{mslr_file}], features: 136}}
protocol: {{passes: 2}}
learners: {{slam: {{type: slam-perceptron}}}}
""")
    runner = CliRunner()
    res = runner.invoke(app, ["run", str(config), "--quiet", "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.stderr
    (built,) = [p for p in (tmp_path / "a" / ".cache").iterdir() if p.is_dir()]
    stamp = (built / "X.bin").stat().st_mtime_ns
    res = runner.invoke(app, ["run", str(config), "--quiet", "--out", str(tmp_path / "b"),
                              "--set", f"cache.dir={tmp_path / 'a' / '.cache'}"])
    assert res.exit_code == 0, res.stderr
    assert (built / "X.bin").stat().st_mtime_ns == stamp and not (tmp_path / "b" / ".cache").exists()
    frames = [pd.read_parquet(next((tmp_path / r / "cached").glob("*/rounds.parquet"))) for r in ("a", "b")]
    pd.testing.assert_frame_equal(frames[0], frames[1])
    res = runner.invoke(app, ["run", str(config), "--quiet", "--out", str(tmp_path / "c"),
                              "--set", "cache.enabled=false"])
    assert res.exit_code == 0 and not (tmp_path / "c" / ".cache").exists()
    res = runner.invoke(app, ["data", "cache", str(mslr_file), "--dataset", "mslr-web10k", "--verify",
                              "--cache-dir", str(tmp_path / "pre")])
    assert res.exit_code == 0 and json.loads(res.stdout)["queries"] == 12
