"""Issue 31, item 3: a batch run's fold checkpoint names its run, its learner config and its
data; a foreign, renamed, edited or damaged one is a one-line error on ``--resume``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.config.experiment import load_config
from ltr_cli.runs.runner import run_name
from tests.test_batch_protocol import make_letor

runner = CliRunner()


def _config(root: Path, name: str, C: float) -> Path:
    cfg = root / f"{name}.yaml"
    cfg.write_text(f"""experiment: scale
dataset: {{kind: registry, name: letor3-ohsumed, root: {root / 'OHSUMED'}, folds: [1, 2, 3]}}
cv: {{select_by: map}}
learners:
  r: {{type: ranksvm, grid: {{C: [{C}]}}}}
""")
    return cfg


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """A run of config ``a`` interrupted in fold 3: its checkpoint holds folds 1 and 2."""
    from ltr_cli.protocols import batch

    root = tmp_path_factory.mktemp("folds")
    make_letor(root / "OHSUMED", queries=4, docs=8)
    cfg = _config(root, "a", 1)
    real = batch._fit_grid

    def stop_at_fold_3(fold, *args, **kwargs):
        if fold.number == 3:
            raise KeyboardInterrupt
        return real(fold, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batch, "_fit_grid", stop_at_fold_3)
        res = runner.invoke(app, ["run", str(cfg), "--out", str(root / "out"), "-q"])
    assert res.exit_code != 0 and "folds 1, 2 saved in" in res.stderr
    (ckpt,) = (root / "out" / "scale").glob(".*.folds.json")
    data = json.loads(ckpt.read_text())
    assert data["run"] == run_name(load_config(cfg), "r") and len(data["learner"]) == 64
    return root, cfg, ckpt


def _resume(cfg: Path, out: Path):
    res = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q", "--resume"])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


def _one_line(res) -> str:
    assert res.exit_code == 1 and "Traceback" not in res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ltr: error:"), res.stderr
    return lines[0]


def test_an_untouched_checkpoint_resumes(tmp_path, interrupted):
    root, cfg, ckpt = interrupted
    out = tmp_path / "out"
    shutil.copytree(root / "out", out)
    res = _resume(cfg, out)
    assert res.exit_code == 0, res.stderr
    assert not list((out / "scale").glob(".*.folds.json"))
    from ltr_cli.results.folders import find_runs, read_run
    from ltr_cli.results.query_values import read_test_queries

    (run,) = [read_run(d) for d in find_runs([out])]
    table = read_test_queries(run)  # folds 1 and 2 from the checkpoint, 3 computed: all average to the table
    assert table is not None and table["fold"].tolist() == [1] * 4 + [2] * 4 + [3] * 4


def test_another_runs_checkpoint_renamed_to_this_run_is_refused(tmp_path, interrupted):
    """Once accepted: the folds of learner config a became the folds of config b."""
    root, _, ckpt = interrupted
    other = _config(tmp_path, "b", 10)
    other.write_text(other.read_text().replace(str(tmp_path / "OHSUMED"), str(root / "OHSUMED")))
    folder = tmp_path / "out" / "scale"
    folder.mkdir(parents=True)
    mine = folder / f".{run_name(load_config(other), 'r')}.folds.json"
    shutil.copy(ckpt, mine)
    line = _one_line(_resume(other, tmp_path / "out"))
    assert mine.name in line and "another run" in line and "delete it" in line
    data = json.loads(mine.read_text())  # renamed and its run id edited to match: the learner differs
    data["run"] = mine.name[1:-len(".folds.json")]
    mine.write_text(json.dumps(data))
    line = _one_line(_resume(other, tmp_path / "out"))
    assert "another learner config" in line and "delete it" in line


def _edit(change):
    def edit(data):
        change(data)
        return data
    return edit


DAMAGE = {
    "row-lacks-a-test-metric": _edit(lambda d: d["folds"]["1"]["row"].pop("ndcg@10")),  # once a KeyError
    "row-lacks-the-vali-score": _edit(lambda d: d["folds"]["2"]["row"].pop("vali_ap")),
    "row-extra-column": _edit(lambda d: d["folds"]["1"]["row"].update({"x": 1})),
    "metric-string": _edit(lambda d: d["folds"]["1"]["row"].update({"ap": "0.5"})),
    "fold-not-of-this-run": _edit(lambda d: d["folds"].update({"7": d["folds"]["1"]})),
    "fold-number-string": _edit(lambda d: d["folds"]["1"]["row"].update({"fold": "1"})),
    "grid-entry-without-params": _edit(lambda d: d["folds"]["1"]["grid"]["tried"][0].pop("params")),
    "grid-empty": _edit(lambda d: d["folds"]["1"]["grid"].update({"tried": []})),
    "count-negative": _edit(lambda d: d["folds"]["1"].update({"test_queries": -1})),
    "query-value-string": _edit(lambda d: d["folds"]["1"]["queries"]["ap"].__setitem__(0, "0.5")),
    "query-values-lack-a-metric": _edit(lambda d: d["folds"]["2"]["queries"].pop("ndcg@10")),
    "query-ids-one-too-many": _edit(lambda d: d["folds"]["1"]["queries"]["qid"].append("x")),
    "no-query-values": _edit(lambda d: d["folds"]["1"].pop("queries")),
    "old-format": _edit(lambda d: (d.update({"format": "ltr-cv-folds/1"}), d.pop("run"), d.pop("learner"))),
    "no-run": _edit(lambda d: d.pop("run")),
    "learner-digest-edited": _edit(lambda d: d.update({"learner": "0" * 64})),
    "other-data": _edit(lambda d: d.update({"data": {"files": []}})),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_or_crafted_fold_checkpoint_is_one_line(tmp_path, interrupted, damage):
    root, cfg, ckpt = interrupted
    out = tmp_path / "out"
    shutil.copytree(root / "out", out)
    mine = out / "scale" / ckpt.name
    mine.write_text(json.dumps(DAMAGE[damage](json.loads(mine.read_text()))))
    line = _one_line(_resume(cfg, out))
    assert mine.name in line and ("delete it" in line or "delete the checkpoint" in line)
    assert not [p for p in (out / "scale").iterdir() if not p.name.startswith(".")]  # no run written


@pytest.mark.parametrize("plant", ["deep", "fifo", "zero", "dir"])
def test_a_fold_checkpoint_that_is_not_a_small_file_is_one_line(tmp_path, plant):
    """Deeply nested JSON, a FIFO, a link to /dev/zero or a folder in the checkpoint's place
    is refused in one line: never a traceback, never a hang, never an unbounded read."""
    import os

    from ltr_cli.errors import LtrError
    from ltr_cli.protocols.cv_checkpoint import FoldCheckpoint

    checkpoint = FoldCheckpoint(tmp_path / "run-1", {}, "digest")
    path = checkpoint.path
    if plant == "deep":
        path.write_text("[" * 200000)
    elif plant == "fifo":
        os.mkfifo(path)
    elif plant == "zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    with pytest.raises(LtrError) as err:
        checkpoint.load()
    assert "\n" not in str(err.value) and "delete it" in str(err.value)
