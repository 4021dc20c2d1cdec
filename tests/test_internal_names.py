"""Names the tool makes up from a user's file name (cache folders, their locks and builds,
temporaries of ``ltr data convert`` and ``ltr data split``) fit the file system's limit of
255 bytes a name, whatever the length of a valid user name; and two ``ltr data convert``
to one output never share a temporary file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.data.formats import open_dataset
from ltr_cli.data.options import ReaderOptions
from ltr_cli.outputs import NAME_MAX, short_name

runner = CliRunner()
DATA = "".join(f"{q % 3} qid:{q} 1:0.{q} 2:0.{9 - q}\n0 qid:{q} 1:0.{q + 1} 2:0.1\n" for q in range(1, 7))


def _name(stem: str, suffix: str, size: int) -> str:
    """A file name of exactly ``size`` bytes on disk: ``stem`` repeated, then ``suffix``."""
    body = (stem * size)[: size - len(suffix.encode())]
    while len((body + suffix).encode()) > size:
        body = body[:-1]
    body += "x" * (size - len((body + suffix).encode()))
    return body + suffix


def test_short_name_keeps_names_that_fit_and_cuts_others_to_distinct_names():
    assert short_name("train.txt", 200) == "train.txt"
    a, b = "é" * 200 + "a", "é" * 200 + "b"  # 401 bytes each, one beginning
    assert len(os.fsencode(short_name(a, 100))) <= 100 and short_name(a, 100) != short_name(b, 100)
    assert short_name(a, 100).startswith("é" * 41 + "~")  # whole characters, never half of one
    raw = os.fsdecode(b"\xff" * 300)  # a name that is not UTF-8
    assert len(os.fsencode(short_name(raw, 120))) <= 120


def test_a_data_file_with_a_251_byte_name_is_run_cached_and_read_again(tmp_path):
    """A valid name of 251 bytes (no room for '.query' beside it, nor for the cache's key)."""
    data = tmp_path / _name("dätä-", ".txt", 251)
    data.write_text(DATA)
    assert len(os.fsencode(data.name)) == 251
    config = tmp_path / "c.yaml"
    config.write_text(f"experiment: longname\ndataset: {{kind: files, files: [{json.dumps(str(data))}], "
                      "features: 2}\nlearners: {slam: {type: slam-perceptron}}\nprotocol: {max_rounds: 6}\n")
    for _ in range(2):  # builds the cache, then reads it
        res = runner.invoke(app, ["run", str(config), "--out", str(tmp_path / "out"), "-q"],
                            env={"LTR_KERNELS": "0"})
        assert res.exit_code == 0, res.stderr
    cache = tmp_path / "out" / ".cache"
    names = [p.name for p in cache.iterdir()]
    assert len(names) == 2 and all(len(os.fsencode(n)) <= NAME_MAX for n in names)  # the folder and its lock
    assert any((cache / n / "meta.json").is_file() for n in names)
    res = runner.invoke(app, ["data", "inspect", str(data), "--features", "2"])
    assert res.exit_code == 0 and "queries: 6" in res.stdout, res.stderr


def test_convert_and_split_write_outputs_with_253_byte_names(tmp_path):
    data = tmp_path / "d.txt"
    data.write_text(DATA)
    out = tmp_path / _name("tablé-", ".parquet", 253)
    res = runner.invoke(app, ["data", "convert", str(data), str(out), "--features", "2"])
    assert res.exit_code == 0, res.stderr
    assert [q.qid for q in open_dataset(out, ReaderOptions(n_features=2))] == [str(q) for q in range(1, 7)]
    folds = tmp_path / _name("folds-", "", 253)
    res = runner.invoke(app, ["data", "split", str(data), "--folds", "3", "--out", str(folds), "--features", "2"])
    assert res.exit_code == 0, res.stderr
    assert sorted(p.name for p in folds.iterdir()) == ["Fold1", "Fold2", "Fold3"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["d.txt", out.name, folds.name])  # no temporaries


def test_two_converts_to_one_output_never_share_a_temporary(tmp_path, monkeypatch):
    """Another ``ltr data convert`` to the same output runs to its end while this one is
    writing: each writes a temporary of its own, so both finish and the output is one
    whole table, the last one renamed into place (a fixed ``.<out>.tmp`` once let the
    second truncate and rename the first's file, which then wrote into the output)."""
    import ltr_cli.data.inspect as inspect

    mine, theirs = tmp_path / "mine.txt", tmp_path / "theirs.txt"
    mine.write_text(DATA)
    theirs.write_text(DATA.replace("qid:", "qid:10"))
    out = tmp_path / "out.parquet"
    real_open = inspect.open_dataset

    def open_then_race(path, options):
        reader = real_open(path, options)

        def queries():
            for i, query in enumerate(reader):
                if i == 1:  # this convert's table is open for writing: the other one runs now
                    other = subprocess.run([sys.executable, "-m", "ltr_cli", "data", "convert", str(theirs), str(out),
                                            "--features", "2"], capture_output=True, text=True)
                    assert other.returncode == 0, other.stderr
                    assert [q.qid for q in open_dataset(out, ReaderOptions(n_features=2))][0] == "101"
                yield query
        return queries()

    monkeypatch.setattr(inspect, "open_dataset", open_then_race)
    res = runner.invoke(app, ["data", "convert", str(mine), str(out), "--features", "2"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["queries"] == 6
    table = pq.read_table(out)  # whole, and the table this convert reported
    assert table.column("qid").to_pylist() == [str(q) for q in range(1, 7) for _ in range(2)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt", "out.parquet", "theirs.txt"]


@pytest.mark.parametrize("suffix", [".csv", ".npz"])
def test_a_failed_convert_leaves_neither_output_nor_temporary(tmp_path, suffix):
    data = tmp_path / "d.txt"
    data.write_text(DATA + "x qid:9 1:1\n")
    res = runner.invoke(app, ["data", "convert", str(data), str(tmp_path / f"o{suffix}"), "--features", "2"])
    assert res.exit_code == 1 and "bad label" in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.txt"]
