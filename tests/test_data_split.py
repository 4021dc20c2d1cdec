"""``ltr data split``: one file into K folds in LETOR's rotation, lines copied as they are,
test files partitioning the queries, and the folds usable as a registry dataset's layout."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.data.formats import open_dataset
from ltr_cli.data.options import ReaderOptions
from tests.conftest import SHARED, absent

runner = CliRunner()
MSLR = SHARED / "data" / "mslr-web10k-fold1-5k" / "train.txt"


def _qids(path: Path, **options) -> list[str]:
    return [qid for qid, _, _ in open_dataset(path, ReaderOptions(**options)).labelled_queries()]


def _lines(path: Path) -> Counter:
    return Counter(path.read_bytes().splitlines())


def test_split_of_the_mslr_sample_rotates_like_letor_and_partitions_the_queries(tmp_path):
    if not MSLR.is_file():
        pytest.skip(absent("data/mslr-web10k-fold1-5k"))
    out = tmp_path / "mslr"
    res = runner.invoke(app, ["data", "split", str(MSLR), "--folds", "5", "--out", str(out), "--dataset", "mslr-web10k",
                              "--json"])
    assert res.exit_code == 0, res.stderr
    info = json.loads(res.stdout)
    assert info["queries"] == 43 and info["documents"] == 5000 and sum(info["subsets"]) == 43
    tests = [_qids(out / f"Fold{i}" / "test.txt", n_features=136) for i in range(1, 6)]
    assert sorted(q for t in tests for q in t) == sorted(_qids(MSLR, n_features=136))  # a partition
    for i in range(1, 6):
        fold = out / f"Fold{i}"
        nxt = out / f"Fold{i % 5 + 1}"
        assert (fold / "test.txt").read_bytes() == (nxt / "vali.txt").read_bytes()
        # train + vali + test of a fold: every line of the file, once, byte for byte
        assert _lines(fold / "train.txt") + _lines(fold / "vali.txt") + _lines(fold / "test.txt") == _lines(MSLR)
    cfg = tmp_path / "cv.yaml"
    cfg.write_text(f"""experiment: split
dataset: {{kind: registry, name: mslr-web10k, root: {out}, folds: [1, 2, 3, 4, 5]}}
cv: {{select_by: ndcg@10}}
learners:
  ranksvm: {{type: ranksvm, grid: {{C: [1]}}}}
""")
    run = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "res"), "-q"])
    assert run.exit_code == 0, run.stderr


def test_a_group_file_layout_gets_group_files_and_the_seed_decides_the_subsets(tmp_path):
    rows, sizes = [], [3, 2, 4, 1, 3, 2]
    for q, m in enumerate(sizes):
        rows += [f"{(q + d) % 3} 1:{q}.{d} 2:{d}  # doc {q}-{d}" for d in range(m)]
    data = tmp_path / "g.txt"
    data.write_text("\n".join(rows) + "\n")
    (tmp_path / "g.txt.query").write_text("".join(f"{m}\n" for m in sizes))
    first, again, other = (tmp_path / name for name in ("a", "b", "c"))
    for out, seed in ((first, 0), (again, 0), (other, 7)):
        res = runner.invoke(app, ["data", "split", str(data), "--folds", "3", "--out", str(out), "--features", "2",
                                  "--seed", str(seed)])
        assert res.exit_code == 0, res.stderr
    for split in ("train", "vali", "test"):
        assert (first / "Fold1" / f"{split}.txt").read_bytes() == (again / "Fold1" / f"{split}.txt").read_bytes()
        group = tmp_path / "a" / "Fold1" / f"{split}.txt.query"
        lines = (first / "Fold1" / f"{split}.txt").read_text().splitlines()
        assert sum(int(n) for n in group.read_text().split()) == len(lines)
        assert all("# doc" in line for line in lines)  # comments kept
    assert any((first / "Fold1" / f"{s}.txt").read_bytes() != (other / "Fold1" / f"{s}.txt").read_bytes()
               for s in ("train", "vali", "test"))


@pytest.mark.parametrize("argv, expected", [
    (["--folds", "2"], "--folds"), (["--folds", "9"], "cannot fill 9 folds"),
])
def test_split_refusals_are_one_line(tmp_path, argv, expected):
    data = tmp_path / "d.txt"
    data.write_text("".join(f"1 qid:{q} 1:0.5\n0 qid:{q} 1:0.1\n" for q in range(1, 5)))
    res = runner.invoke(app, ["data", "split", str(data), "--out", str(tmp_path / "o"), "--features", "1", *argv])
    assert res.exit_code in (1, 2) and expected in res.stderr and "Traceback" not in res.output
    assert not (tmp_path / "o").exists()
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("x")
    res = runner.invoke(app, ["data", "split", str(data), "--out", str(tmp_path / "taken"), "--features", "1"])
    assert res.exit_code == 1 and "not an empty folder" in res.stderr


def test_split_says_what_it_wrote_in_words_unless_asked_for_json(tmp_path):
    data = tmp_path / "d.txt"
    data.write_text("".join(f"{q % 3} qid:{q} 1:{q}\n" for q in range(1, 7)))
    res = runner.invoke(app, ["data", "split", str(data), "--folds", "3", "--out", str(tmp_path / "o"),
                              "--features", "1"])
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("wrote 3 folds of 6 queries (6 documents) to ") and "{" not in res.stdout
    again = runner.invoke(app, ["data", "split", str(data), "--folds", "3", "--out", str(tmp_path / "j"),
                                "--features", "1", "--json"])
    assert json.loads(again.stdout)["queries"] == 6
