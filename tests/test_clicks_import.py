"""``ltr clicks import``: an outside click log (Parquet or CSV) checked row by row against the
data file, written in the tool's format, and trained on by a counterfactual learner."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.clicklog.logfile import read_log
from tests.conftest import REPO

runner = CliRunner()
HEADER = ["session", "qid", "doc", "position", "click", "propensity"]
ROWS = [[5, "7", 1, 2, 0, 0.5], [5, "7", 0, 1, 1, 1.0], [3, "9", 1, 1, 1, 0.9], [3, "9", 0, 2, 0, 0.45]]


def _data(path: Path) -> Path:
    path.write_text("2 qid:7 1:0.1\n0 qid:7 1:0.2\n1 qid:7 1:0.3\n0 qid:9 1:0.5\n1 qid:9 1:0.6\n")
    return path


def _csv(path: Path, rows, header=HEADER) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def _import(log: Path, data: Path, out: Path):
    return runner.invoke(app, ["clicks", "import", str(log), "--data", str(data), "--out", str(out)])


def test_a_csv_log_is_sorted_renumbered_and_fingerprinted(tmp_path):
    data = _data(tmp_path / "d.txt")
    res = _import(_csv(tmp_path / "a.csv", ROWS), data, tmp_path / "log.parquet")
    assert res.exit_code == 0, res.output
    assert "2 sessions, 4 shown documents, 2 clicks, 2 queries, with propensities" in res.output
    log = read_log(tmp_path / "log.parquet")
    assert log.session.tolist() == [0, 0, 1, 1]  # session 3 first, then 5
    assert [log.qids[q] for q in log.query] == ["9", "9", "7", "7"]
    assert log.doc.tolist() == [1, 0, 0, 1] and log.position.tolist() == [1, 2, 1, 2]
    assert log.click.tolist() == [True, False, True, False]
    assert log.propensity is not None and log.propensity.tolist() == [0.9, 0.45, 1.0, 0.5]
    assert log.meta["policy"] == "logged" and log.meta["shown"] == 2 and log.meta["sessions"] == 2


def test_a_parquet_log_with_integer_qids_and_bool_clicks(tmp_path):
    data = _data(tmp_path / "d.txt")
    table = pa.table({"session": pa.array([0, 0, 1], pa.int32()), "qid": pa.array([7, 7, 9], pa.int64()),
                      "doc": pa.array([2, 0, 1], pa.int64()), "position": pa.array([1, 2, 1], pa.int8()),
                      "click": pa.array([False, True, True])})
    pq.write_table(table, tmp_path / "in.parquet")
    res = _import(tmp_path / "in.parquet", data, tmp_path / "log.parquet")
    assert res.exit_code == 0, res.output
    log = read_log(tmp_path / "log.parquet")
    assert log.propensity is None and log.click.tolist() == [False, True, True]
    assert log.qids == ["7", "9"]
    # the fingerprint covers the propensities: a log with them differs from one without
    res = _import(_csv(tmp_path / "b.csv", [[0, 7, 2, 1, 0, 1], [0, 7, 0, 2, 1, 1], [1, 9, 1, 1, 1, 1]]), data,
                  tmp_path / "with.parquet")
    assert res.exit_code == 0 and read_log(tmp_path / "with.parquet").meta["fingerprint"] != log.meta["fingerprint"]


BAD = [
    (lambda r: [x[:4] for x in r], ["session", "qid", "doc", "position"], "column 'click' is missing"),
    (lambda r: [x + [1] for x in r], HEADER + ["extra"], "unknown column 'extra'"),
    (lambda r: [r[0], r[1][:3] + ["2.5"] + r[1][4:]] + r[2:], None, "row 2 (line 3): column 'position' holds '2.5'"),
    (lambda r: [r[0][:1] + ["8"] + r[0][2:]] + r[1:], None, "row 1 (line 2): column 'qid' holds '8'; not a query"),
    (lambda r: [r[0][:2] + [3] + r[0][3:]] + r[1:], None, "row 1 (line 2): column 'doc' holds 3; beyond its query"),
    (lambda r: [r[0][:4] + [2] + r[0][5:]] + r[1:], None, "row 1 (line 2): column 'click' holds 2; a click is 0 or 1"),
    (lambda r: [r[0][:5] + [0]] + r[1:], None, "column 'propensity' holds 0.0; a logging propensity is"),
    (lambda r: [r[0][:5] + [1.5]] + r[1:], None, "column 'propensity' holds 1.5"),
    (lambda r: [r[0][:3] + [1] + r[0][4:]] + r[1:], None, "session 5 shows position 1 a second time"),
    (lambda r: r[:2] + [[5, "9", 1, 3, 0, 1]], None, "session 5 spans two queries"),
    (lambda r: [r[0][:3] + [3] + r[0][4:]] + r[1:], None, "session 5 shows position 3 without position 2"),
    (lambda r: r + [[5, "7", 2, 3, 0, 1], [5, "7", 2, 4, 0, 1]], None, "position 4 is beyond the list"),
    (lambda r: r + [[5, "7", 0, 3, 0, 1]], None, "session 5 shows document 0 a second time"),
    (lambda r: [["", *r[0][1:]]] + r[1:], None, "row 1 (line 2): column 'session' is empty"),
    (lambda r: [[-1, *r[0][1:]]] + r[1:], None, "column 'session' holds '-1'"),
]


@pytest.mark.parametrize("change,header,words", BAD)
def test_bad_rows_are_refused_in_one_line_naming_the_row(tmp_path, change, header, words):
    data = _data(tmp_path / "d.txt")
    rows = [list(r) for r in ROWS]
    log = _csv(tmp_path / "a.csv", change(rows), header or HEADER)
    out = tmp_path / "log.parquet"
    res = _import(log, data, out)
    assert res.exit_code == 1 and words in res.output, res.output
    assert res.output.count("\n") == 1 and "Traceback" not in res.output and not out.exists()


def test_files_that_are_not_logs_are_refused(tmp_path):
    data = _data(tmp_path / "d.txt")
    for path, words in ((tmp_path / "x.json", "give a .parquet or .csv"), (tmp_path / "none.csv", "no such"),
                        (tmp_path / "dir.csv", "not a regular file")):
        if path.name == "x.json":
            path.write_text("{}")
        if path.name == "dir.csv":
            path.mkdir()
        res = _import(path, data, tmp_path / "log.parquet")
        assert res.exit_code == 1 and words in res.output, res.output
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    res = _import(tmp_path / "bad.parquet", data, tmp_path / "log.parquet")
    assert res.exit_code == 1 and "not a readable Parquet click log" in res.output
    res = _import(_csv(tmp_path / "a.csv", ROWS), data, tmp_path / "a.csv")
    assert res.exit_code == 1 and "that is the imported log" in res.output


def _queries(path: Path) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        out.setdefault(parts[1].split(":")[1], []).append(int(parts[0]))
    return out


def test_a_counterfactual_learner_trains_on_an_imported_log(tmp_path):
    """An outside log of position-biased clicks on shuffled lists, imported, trained on by
    ranksvm-ips with propensities estimated from it, and fitted by ltr clicks fit."""
    root = tmp_path / "mslr"
    res = runner.invoke(app, ["data", "synth", str(root), "--like", "mslr-web10k", "--folds", "--queries", "30",
                              "--docs-per-query", "12"])
    assert res.exit_code == 0, res.output
    train = next(root.rglob("Fold1/train.txt"))
    rng = np.random.default_rng(0)
    rows = []
    session = 0
    for qid, labels in _queries(train).items():
        for _ in range(150):
            shown = rng.permutation(len(labels))[:8]
            for pos, doc in enumerate(shown, start=1):
                p_click = (1.0 / pos) * (0.1 + 0.9 * labels[doc] / 4)
                rows.append([session, qid, int(doc), pos, int(rng.random() < p_click), 1.0 / pos])
            session += 1
    rng.shuffle(rows)
    logs = tmp_path / "logs"
    logs.mkdir()
    res = _import(_csv(tmp_path / "outside.csv", rows), train, logs / "fold1.parquet")
    assert res.exit_code == 0, res.output
    out = tmp_path / "out"
    res = runner.invoke(app, ["run", str(REPO / "configs" / "counterfactual_synthetic.yaml"), "--set",
                              f"dataset.root={root}", "--set", "dataset.folds=[1]", "--learner", "ranksvm-ips",
                              "--set", f"learners.ranksvm-ips.clicks.log={logs}", "--set",
                              "learners.ranksvm-ips.clicks.generate=null", "--set",
                              "learners.ranksvm-ips.clicks.propensity=estimated", "--set",
                              "learners.ranksvm-ips.grid={C: [0.1]}", "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    models = json.loads(next(out.rglob("ranksvm-ips-*/models.json")).read_text())
    clicks = next(iter(models.values()))["clicks"]
    assert clicks["fingerprint"] == read_log(logs / "fold1.parquet").meta["fingerprint"]
    assert clicks["propensity"][1] == pytest.approx(0.5, abs=0.15)  # examination 1/rank, estimated
    fit = runner.invoke(app, ["clicks", "fit", str(logs / "fold1.parquet"), "--model", "pbm", "--json"])
    assert fit.exit_code == 0, fit.output
    exam = json.loads(fit.output)["parameters"]["examination"]
    assert exam[1] / exam[0] == pytest.approx(0.5, abs=0.1)
