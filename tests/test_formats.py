"""The data format registry: one open_dataset for every reader, and the Parquet table that
``ltr data convert`` writes read back as a dataset, round for round the same run as its
SVMlight source."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import SHARED, absent
from ltr_cli.cli.app import app
from ltr_cli.data.formats import format_for, formats, open_dataset
from ltr_cli.data.options import ReaderOptions
from ltr_cli.errors import DataFormatError

runner = CliRunner()
MSLR_SAMPLE = SHARED / "data" / "mslr-web10k-fold1-5k" / "train.txt"


def _data(path: Path, queries: int = 40, features: int = 7, seed: int = 0) -> Path:
    """An SVMlight file with graded labels, sparse rows (missing features are 0) and ties."""
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(queries):
        for _ in range(int(rng.integers(1, 15))):
            label = int(rng.integers(0, 5))
            feats = rng.integers(0, 4, size=features) / 3.0 + label * 0.1
            tokens = [f"{j + 1}:{v:.4f}" for j, v in enumerate(feats) if rng.random() < 0.8]
            lines.append(f"{label} qid:{1000 - q} " + " ".join(tokens))
    path.write_text("\n".join(lines) + "\n")
    return path


def _convert(src: Path, out: Path, features: int) -> Path:
    res = runner.invoke(app, ["data", "convert", str(src), str(out), "--features", str(features)])
    assert res.exit_code == 0, res.stderr
    return out


def _table(path: Path, columns: dict) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)
    return path


def test_the_registry_knows_both_built_in_formats():
    known = formats()
    assert {"svmlight", "parquet"} <= set(known)
    assert format_for(Path("a.parquet")).name == "parquet"
    assert format_for(Path("a.PQ")).name == "parquet"
    assert format_for(Path("train.txt")).name == "svmlight"
    assert format_for(Path("train.txt.gz")).name == "svmlight"
    assert format_for(Path("rank.train")).name == "svmlight"


def test_a_converted_table_reads_back_as_the_same_queries(tmp_path):
    src = _data(tmp_path / "a.txt")
    table = _convert(src, tmp_path / "a.parquet", 7)
    opts = ReaderOptions(n_features=7)
    text, parquet = list(open_dataset(src, opts)), list(open_dataset(table, opts))
    assert [q.qid for q in text] == [q.qid for q in parquet]
    for a, b in zip(text, parquet):
        assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
    assert open_dataset(table, opts).count_queries() == len(text)
    f32 = next(open_dataset(table, opts).dense_queries(np.float32))
    assert f32.X.dtype == np.float32


@pytest.mark.parametrize("cache", [False, True])
def test_a_parquet_dataset_runs_round_for_round_as_its_source(tmp_path, cache):
    import pandas as pd

    src = _data(tmp_path / "a.txt", queries=60)
    table = _convert(src, tmp_path / "a.parquet", 7)
    runs = {}
    for name, path in (("text", src), ("table", table)):
        cfg = tmp_path / f"{name}.yaml"
        cache_line = f"cache: {{dir: {tmp_path / 'cache'}}}\n" if cache else "cache: {enabled: false}\n"
        cfg.write_text(f"""experiment: {name}
dataset: {{kind: files, features: 7, files: [{path}]}}
protocol: {{passes: 2, shuffle: true}}
metrics: {{names: [ndcg@10, ap], ties: reverse-input}}
{cache_line}learners:
  slam: {{type: slam-perceptron}}
  listnet: {{type: listnet}}
""")
        res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
        assert res.exit_code == 0, res.stderr
        runs[name] = {p.parent.name.split("-")[0]: pd.read_parquet(p)
                      for p in (tmp_path / "out" / name).glob("*/rounds.parquet")}
    assert set(runs["text"]) == {"slam", "listnet"}
    for learner, rounds in runs["text"].items():
        other = runs["table"][learner]
        cols = [c for c in rounds.columns if c != "wall_seconds"]
        pd.testing.assert_frame_equal(rounds[cols], other[cols])


def test_the_real_mslr_sample_as_parquet_gives_the_same_rounds(tmp_path):
    import pandas as pd

    if not MSLR_SAMPLE.is_file():
        pytest.skip(absent("data/mslr-web10k-fold1-5k"))
    table = _convert(MSLR_SAMPLE, tmp_path / "mslr.parquet", 136)
    ndcg = {}
    for name, path in (("text", MSLR_SAMPLE), ("table", table)):
        cfg = tmp_path / f"{name}.yaml"
        cfg.write_text(f"""experiment: {name}
dataset: {{kind: files, features: 136, files: [{path}]}}
protocol: {{passes: 2, shuffle: true}}
metrics: {{names: [ndcg@10], ties: reverse-input}}
learners: {{slam: {{type: slam-perceptron}}}}
""")
        res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
        assert res.exit_code == 0, res.stderr
        (rounds,) = (tmp_path / "out" / name).glob("*/rounds.parquet")
        ndcg[name] = pd.read_parquet(rounds)[["qid", "ndcg@10"]]
    assert len(ndcg["text"]) == 86
    pd.testing.assert_frame_equal(ndcg["text"], ndcg["table"])


def test_eval_and_inspect_read_a_table_as_they_read_its_source(tmp_path):
    src = _data(tmp_path / "a.txt")
    table = _convert(src, tmp_path / "a.parquet", 7)
    n = sum(1 for line in src.read_text().splitlines() if line)
    scores = tmp_path / "s.txt"
    scores.write_text("\n".join(f"{v:.6f}" for v in np.random.default_rng(3).normal(size=n)) + "\n")
    out = {}
    for name, path in (("text", src), ("table", table)):
        res = runner.invoke(app, ["eval", str(path), str(scores), "--json"])
        assert res.exit_code == 0, res.stderr
        out[name] = json.loads(res.stdout)
    assert out["text"]["average"] == out["table"]["average"]
    res = runner.invoke(app, ["data", "inspect", str(table), "--features", "7"])
    assert res.exit_code == 0, res.stderr
    assert "queries: 40\ndocuments: " in res.stdout


@pytest.mark.parametrize("columns, expected", [
    ({"qid": ["1", "1"], "label": [1.0, 0.0], "f1": [0.1, 0.2]}, "has 1 feature columns"),
    ({"label": [1.0], "qid": ["1"], "f1": [0.1], "f2": [0.1]}, "the first columns are ['label', 'qid']"),
    ({"qid": ["1", "2", "1"], "label": [1.0, 0.0, 1.0], "f1": [0.1] * 3, "f2": [0.2] * 3},
     "row 3: qid 1 reappears here after other queries"),
    ({"qid": ["1", "1"], "label": [1.0, float("inf")], "f1": [0.1] * 2, "f2": [0.2] * 2},
     "row 2: label inf is not a finite number"),
    ({"qid": ["1", "1"], "label": [1.0, 2000.0], "f1": [0.1] * 2, "f2": [0.2] * 2}, "row 2: label 2000 is too large"),
    ({"qid": ["1", "1"], "label": [1.0, 0.0], "f1": [0.1, float("nan")], "f2": [0.2] * 2},
     "row 2: non-finite feature value nan in column f1"),
    ({"qid": ["1", "1"], "label": [1.0, 0.0], "f1": [0.1, None], "f2": [0.2] * 2}, "row 2: feature f1 is missing"),
    ({"qid": ["1", None], "label": [1.0, 0.0], "f1": [0.1] * 2, "f2": [0.2] * 2}, "row 2: the qid is missing"),
    ({"qid": ["1", "a b"], "label": [1.0, 0.0], "f1": [0.1] * 2, "f2": [0.2] * 2}, "row 2: qid 'a b' is not an integer"),
    ({"qid": ["1", "q2"], "label": [1.0, 0.0], "f1": [0.1] * 2, "f2": [0.2] * 2}, "row 2: qid 'q2' is not an integer"),
    ({"qid": ["1"], "label": ["x"], "f1": [0.1], "f2": [0.2]}, "the label column has type string"),
])
def test_a_bad_table_is_one_line_naming_the_file_and_row(tmp_path, columns, expected):
    path = _table(tmp_path / "bad.parquet", columns)
    with pytest.raises(DataFormatError) as err:
        list(open_dataset(path, ReaderOptions(n_features=2)))
    assert str(err.value).startswith(f"{path}: ") and expected in str(err.value), str(err.value)


def test_missing_features_take_the_null_value_when_one_is_set(tmp_path):
    path = _table(tmp_path / "n.parquet", {"qid": [7, 7], "label": [1, 0], "f1": [0.5, None]})
    (q,) = list(open_dataset(path, ReaderOptions(n_features=1, null_value=-1.0)))
    assert q.qid == "7" and q.X[:, 0].tolist() == [0.5, -1.0] and q.y.tolist() == [1.0, 0.0]


def test_a_query_larger_than_the_bound_is_refused(tmp_path):
    path = _table(tmp_path / "big.parquet", {"qid": ["1"] * 40, "label": [0.0] * 40, "f1": [0.0] * 40})
    opts = ReaderOptions(n_features=1, max_query_mb=8 * 10 / (1 << 20))  # 10 documents of one feature
    with pytest.raises(DataFormatError, match="query"):
        list(open_dataset(path, opts))


def test_a_run_on_a_file_that_is_not_a_table_exits_1_with_one_line(tmp_path):
    fake = tmp_path / "fake.parquet"
    fake.write_text("1 qid:1 1:0.5\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"""experiment: fake
dataset: {{kind: files, features: 1, files: [{fake}]}}
learners: {{slam: {{type: slam-perceptron}}}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 1
    assert res.stderr.strip().count("\n") == 0 and "not a readable Parquet table" in res.stderr
    assert "Traceback" not in res.stderr
    assert not list((tmp_path / "out").glob("fake/*/summary.json"))


def test_table_qids_are_integers_compared_by_value_as_in_text(tmp_path):
    path = _table(tmp_path / "q.parquet", {"qid": ["1", "01", "+1", "2"], "label": [1.0, 0.0, 2.0, 1.0],
                                           "f1": [0.1, 0.2, 0.3, 0.4]})
    reader = open_dataset(path, ReaderOptions(n_features=1))
    assert [(q.qid, q.m) for q in reader] == [("1", 3), ("2", 1)]
    assert reader.respelt == [(2, "01", "1"), (3, "+1", "1")]


def test_a_damaged_table_is_one_line_never_a_traceback(tmp_path):
    src = _data(tmp_path / "a.txt")
    table = _convert(src, tmp_path / "a.parquet", 7)
    raw = bytearray(table.read_bytes())
    rng = np.random.default_rng(0)
    outcomes = set()
    for trial in range(40):
        damaged = bytearray(raw)
        for pos in rng.integers(4, len(raw) - 8, size=3):
            damaged[int(pos)] ^= 0xFF
        bad = tmp_path / f"bad{trial}.parquet"
        bad.write_bytes(bytes(damaged))
        try:
            list(open_dataset(bad, ReaderOptions(n_features=7)))
            outcomes.add("read")
        except DataFormatError as exc:
            assert str(exc).startswith(str(bad)) and "\n" not in str(exc)
            outcomes.add("refused")
    assert "refused" in outcomes


def test_inspect_checks_every_value_of_a_table_and_counts_non_zeros(tmp_path):
    path = _table(tmp_path / "z.parquet", {"qid": ["1", "1"], "label": [1.0, 0.0], "f1": [0.0, 0.5],
                                           "f2": [0.0, 0.0]})
    (summary,) = list(open_dataset(path, ReaderOptions(n_features=2)).summaries())
    assert summary[3:] == (1, 0)  # one non-zero value, in the first column
    nan = _table(tmp_path / "nan.parquet", {"qid": ["1"], "label": [1.0], "f1": [float("nan")]})
    res = runner.invoke(app, ["data", "inspect", str(nan), "--features", "1"])
    assert res.exit_code == 1 and "non-finite feature value nan" in res.stderr


def test_a_table_refuses_other_qid_sources_and_binary_qids(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = _table(tmp_path / "t.parquet", {"qid": ["1"], "label": [1.0], "f1": [0.5]})
    with pytest.raises(DataFormatError, match="carries its qids in the qid column"):
        list(open_dataset(path, ReaderOptions(n_features=1, qid_source="group")))
    binary = tmp_path / "b.parquet"
    pq.write_table(pa.table({"qid": pa.array([b"1"]).dictionary_encode(), "label": [1.0], "f1": [0.5]}), binary)
    with pytest.raises(DataFormatError, match="expected strings or integers"):
        list(open_dataset(binary, ReaderOptions(n_features=1)))


def test_a_format_cannot_take_over_a_suffix_another_format_reads():
    from ltr_cli.data.formats import DataFormat, check_format
    from ltr_cli.data.formats.parquet_table import ParquetReader

    formats()
    for fmt, reason in ((DataFormat("mine", (".txt",), "x", ParquetReader), "already read as svmlight"),
                        (DataFormat("mine", (".PQX",), "x", ParquetReader), "lower-case"),
                        (DataFormat("svmlight", (".new",), "x", ParquetReader), "already registered"),
                        (DataFormat("mine", (), "x", ParquetReader), "non-empty")):
        with pytest.raises(ValueError, match=reason):
            check_format(fmt)
    assert format_for(Path("a.txt")).name == "svmlight"


def test_the_cache_key_names_the_format_of_a_table(tmp_path):
    from ltr_cli.data.cache import cache_key

    opts = ReaderOptions(n_features=1)
    assert cache_key(tmp_path / "a.txt", opts, "float64") != cache_key(tmp_path / "a.parquet", opts, "float64")


def test_a_table_that_expands_past_the_bound_is_refused_before_reading(tmp_path):
    """A small file whose pages decompress to hundreds of times its size is refused as a
    compressed text file is (dataset.max_decompression_ratio), before anything is read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 2_000_000
    bomb = tmp_path / "bomb.parquet"
    pq.write_table(pa.table({"qid": pa.array(np.ones(n, dtype=np.int64)), "label": np.zeros(n), "f1": np.zeros(n)}),
                   bomb, compression="zstd", use_dictionary=False)
    assert bomb.stat().st_size * 20 < n * 24  # pages 20+ times smaller than what they expand to
    with pytest.raises(DataFormatError, match="raise dataset.max_decompression_ratio"):
        list(open_dataset(bomb, ReaderOptions(n_features=1, max_decompression_ratio=10)))
    (q,) = list(open_dataset(bomb, ReaderOptions(n_features=1, max_decompression_ratio=1e6)))
    assert q.m == n


def _dictionary_bomb(path: Path, row_groups: int) -> Path:
    """A table of ``row_groups`` x 2^20 rows of one qid, one label and five equal features,
    every column dictionary-encoded: each column chunk is a one-entry dictionary and runs of
    index 0, a few hundred bytes that decode to 8 MB."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 1 << 20
    table = pa.table({"qid": pa.array(["1"]).take(pa.array(np.zeros(n, dtype=np.int32))), "label": np.ones(n),
                      **{f"f{j}": np.full(n, 0.5) for j in range(1, 6)}})
    with pq.ParquetWriter(path, table.schema, use_dictionary=True, compression="zstd") as writer:
        for _ in range(row_groups):
            writer.write_table(table)
    return path


def test_a_dictionary_bomb_is_refused_from_its_row_counts_in_little_memory(tmp_path):
    """Dictionary and run-length encoding make a table's encoded pages tiny: the bound counts
    the rows the columns decode to (from the metadata), so ``ltr data inspect`` refuses a
    250 KB table that decodes to half a gigabyte in one line, before reading any page (it
    once read it whole, to 1.3 GB of memory); its peak memory is measured in a process of
    its own."""
    import subprocess
    import sys

    bomb = _dictionary_bomb(tmp_path / "bomb.parquet", 8)
    assert bomb.stat().st_size * 1000 < 8 * (1 << 20) * 7 * 8
    probe = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
             "print(r.returncode); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
             "sys.stdout.write(r.stderr)")
    out = subprocess.run([sys.executable, "-c", probe, sys.executable, "-m", "ltr_cli", "data", "inspect", str(bomb)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    status, peak_kb, errors = int(out[0]), int(out[1]), out[2:]
    assert status == 1 and len(errors) == 1, out
    assert errors[0].startswith(f"ltr: error: {bomb}: the table decodes to ") and "max_decompression_ratio" in errors[0]
    assert peak_kb < 600 * 1024, peak_kb
    small = _dictionary_bomb(tmp_path / "small.parquet", 1)  # allowed with a raised bound: same queries
    (q,) = list(open_dataset(small, ReaderOptions(n_features=5, max_decompression_ratio=1e6)))
    assert q.qid == "1" and q.m == 1 << 20 and np.all(q.X == 0.5)
    with pytest.raises(DataFormatError, match="decodes to"):
        list(open_dataset(small, ReaderOptions(n_features=5)))


def test_a_long_qid_repeated_on_every_row_is_held_once(tmp_path):
    """A dictionary-encoded qid is read as a dictionary: each distinct spelling is checked
    once and the rows share it (a 100 KB qid on 1,000 rows is not 100 MB of strings); a
    respelt one is still reported on its row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    long_qid = "7" * 100_000
    n = 1000
    qids = pa.array([long_qid, "0" + long_qid, "2"]).take(pa.array(np.repeat([0, 1, 2], [n - 2, 1, 1]).astype(np.int32)))
    path = tmp_path / "q.parquet"
    pq.write_table(pa.table({"qid": qids, "label": np.ones(n), "f1": np.zeros(n)}), path, compression="zstd")
    reader = open_dataset(path, ReaderOptions(n_features=1, max_decompression_ratio=1e6))
    queries = list(reader)
    assert [(q.qid, q.m) for q in queries] == [(long_qid, n - 1), ("2", 1)]
    assert reader.respelt == [(n - 1, "0" + long_qid, long_qid)]


def test_a_string_feature_column_is_refused_from_the_schema_before_it_is_decoded(tmp_path, monkeypatch):
    """A feature column of strings, dictionary-encoded with one long entry on every row,
    decodes to rows x its length: refused from the schema, before any page is read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 2000
    long_value = "9" * 100_000
    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"qid": ["1"] * n, "label": np.ones(n),
                             "f1": pa.array([long_value]).take(pa.array(np.zeros(n, dtype=np.int32)))}),
                   path, compression="zstd")
    options = ReaderOptions(n_features=1, max_decompression_ratio=1e9)
    reader = open_dataset(path, options)
    decoded: list[int] = []
    real_batches = type(reader)._batches

    def counting(self, file, columns):
        for batch in real_batches(self, file, columns):
            decoded.append(batch.nbytes)
            yield batch

    monkeypatch.setattr(type(reader), "_batches", counting)
    with pytest.raises(DataFormatError, match="column f1 has type string; expected numbers"):
        list(reader)
    with pytest.raises(DataFormatError, match="column f1 has type string"):
        list(reader.labelled_queries())
    assert decoded == []  # refused before the first batch
