"""Sweep points that share a data stream run as one task (issue 19, item 2): their learners
read each query once, in one compiled block group, yet every point writes its own run folder
whose rounds.parquet and model are byte-identical to a separate run of that point; a point
that fails does so alone, and a group killed inside a block resumes byte-identically."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.sweep.grid import expand
from ltr_cli.sweep.tasks import MAX_GROUP, Task, group_tasks
from tests.test_blocks import _KILL_IN_BLOCK, _data

runner = CliRunner()

BASE = """experiment: groups
seed: 2
dataset: {{kind: files, features: 12, files: [{data}]}}
protocol: {{passes: 3, shuffle: true, checkpoint_every: 74}}
metrics: {{names: [ndcg@10, ap], ties: reverse-input}}
learners:
  ogd: {{type: ogd, surrogate: squared, step: {{rule: constant, eta: 0.001}}}}
  rtopkf: {{type: rtopkf, surrogate: ranksvm, schedule: authors-code, gamma_scale: 1.0}}
"""
ETAS = [0.001, 0.01, 1e6]  # the last sends the weights to infinity: an error (numerics: stable)
GAMMAS = [1.0, 3.0]
SWEEP = f"""sweep:
  learners.ogd.step.eta: {json.dumps(ETAS)}
  learners.rtopkf.gamma_scale: {json.dumps(GAMMAS)}
"""


def _configs(tmp_path: Path) -> tuple[Path, Path]:
    data = _data(tmp_path / "a.txt", queries=80)
    base = tmp_path / "base.yaml"
    base.write_text(BASE.format(data=data))
    grid = tmp_path / "grid.yaml"
    grid.write_text(BASE.format(data=data) + SWEEP)
    return base, grid


def _separate(base: Path, out: Path) -> dict[str, Path]:
    """Every point of the grid as its own `ltr run` of one learner: run id -> folder."""
    points = [("ogd", f"learners.ogd.step.eta={eta}") for eta in ETAS[:2]]
    points += [("rtopkf", f"learners.rtopkf.gamma_scale={g}") for g in GAMMAS]
    for learner, setting in points:
        res = runner.invoke(app, ["run", str(base), "--learner", learner, "--set", setting, "--out", str(out), "-q"])
        assert res.exit_code == 0, res.stderr
    return {p.name: p for p in (out / "groups").iterdir() if not p.name.startswith(".")}


def _spy_groups(monkeypatch) -> list[int]:
    from ltr_cli.protocols import online_blocks

    sizes: list[int] = []
    real = online_blocks.BlockRunner.run
    monkeypatch.setattr(online_blocks.BlockRunner, "run",
                        lambda self, *a, **k: (sizes.append(len(self.learners)), real(self, *a, **k))[1])
    return sizes


def _same_runs(separate: dict[str, Path], swept: Path) -> None:
    assert len(separate) == 4
    for run_id, folder in separate.items():
        for file in ("rounds.parquet", "models.json"):
            assert (folder / file).read_bytes() == (swept / run_id / file).read_bytes(), (run_id, file)


def test_points_sharing_a_stream_run_together_and_write_what_separate_runs_write(tmp_path, monkeypatch):
    base, grid = _configs(tmp_path)
    separate = _separate(base, tmp_path / "separate")
    sizes = _spy_groups(monkeypatch)
    res = runner.invoke(app, ["sweep", str(grid), "--out", str(tmp_path / "swept"), "-q"])
    assert res.exit_code == 1  # the diverging point
    assert sizes == [3, 2]  # OGD's three rates in one pass, RTop-kF's two in another
    errors = [line for line in res.stderr.splitlines() if line.startswith("ltr: error:")]
    alone = runner.invoke(app, ["run", str(base), "--learner", "ogd", "--set", f"learners.ogd.step.eta={ETAS[2]}",
                                "--out", str(tmp_path / "alone"), "-q"])
    message = "round 39: the squared gradient step is not finite"
    assert alone.exit_code == 1 and alone.stderr.startswith(f"ltr: error: {message}")
    assert len(errors) == 1 and errors[0].endswith(alone.stderr.strip().removeprefix("ltr: error: ")), res.stderr
    assert "4 of 5 runs done" in res.stdout
    _same_runs(separate, tmp_path / "swept" / "groups")
    summary = json.loads(next((tmp_path / "swept" / "groups").glob("ogd-*/manifest.json")).read_text())
    assert summary["timings"]["runs_in_one_pass"] == 3
    status = runner.invoke(app, ["sweep", str(grid), "--out", str(tmp_path / "swept"), "--status"])
    assert "done=4 failed=1 running=0 pending=0 total=5" in status.stdout  # per point




def test_a_group_killed_inside_a_block_resumes_every_point_byte_identically(tmp_path):
    base, grid = _configs(tmp_path)
    separate = _separate(base, tmp_path / "separate")
    swept = tmp_path / "swept"
    proc = subprocess.run([sys.executable, "-c", _KILL_IN_BLOCK, "sweep", str(grid), str(swept)], capture_output=True,
                          text=True)
    assert proc.returncode == 9, proc.stderr
    checkpoints = sorted((swept / "groups").glob(".*.checkpoint"))
    assert len(checkpoints) == 2  # the first group's finite points, each at round 148 (the third stopped at 39)
    res = runner.invoke(app, ["sweep", str(grid), "--out", str(swept)])
    assert res.exit_code == 1 and "4 of 5 runs done" in res.stdout
    _same_runs(separate, swept / "groups")
    assert not list((swept / "groups").glob(".*.checkpoint"))


def _task(i: int, stream: str | None) -> Task:
    """A task whose planned run has only what grouping reads: its id and its group."""
    from types import SimpleNamespace

    return Task(SimpleNamespace(learner="l", experiment="e", run_id=f"r{i}", group=stream), {"i": i})


def test_units_group_shared_streams_and_split_for_parallel_workers():
    tasks = [_task(0, "a"), _task(1, None), _task(2, "a"), _task(3, "b"), _task(4, "a"), _task(5, None)]
    assert [[t.run_id for t in u] for u in group_tasks(tasks)] == [["r0", "r2", "r4"], ["r1"], ["r3"], ["r5"]]
    # two workers, one stream: the group is halved so both work
    same = [_task(i, "a") for i in range(5)]
    assert [len(u) for u in group_tasks(same, jobs=2)] == [3, 2]
    assert [len(u) for u in group_tasks(same, jobs=8)] == [1] * 5
    many = [_task(i, "a") for i in range(MAX_GROUP + 1)]
    assert [len(u) for u in group_tasks(many)] == [MAX_GROUP, 1]


def test_only_points_with_a_compiled_block_family_share(tmp_path):
    base, grid = _configs(tmp_path)
    tasks = expand(grid)
    streams = {t.learner: t.stream for t in tasks}
    assert all(t.stream is not None for t in tasks) and streams["ogd"] != streams["rtopkf"]
    random_ties = tmp_path / "random.yaml"
    random_ties.write_text(grid.read_text().replace("ties: reverse-input", "ties: random"))
    assert all(t.stream is None for t in expand(random_ties))  # ranked round by round: alone


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_executors_distribute_groups(tmp_path, executor):
    if executor == "dask":
        pytest.importorskip("distributed")
    base, grid = _configs(tmp_path)
    res = runner.invoke(app, ["sweep", str(grid), "--out", str(tmp_path / "swept"), "--executor", executor,
                              "--jobs", "2", "-q"])
    assert res.exit_code == 1 and "4 of 5 runs done" in res.stdout, res.output
    _same_runs(_separate(base, tmp_path / "separate"), tmp_path / "swept" / "groups")


def test_the_reader_threads_work_in_a_process_forked_after_reading(tmp_path):
    """A sweep worker forked from a process that had read a file (its scanner pool's threads
    are not in the child) reads files again instead of waiting forever."""
    import multiprocessing as mp

    from ltr_cli.data.fastread import _executor

    assert _executor().submit(int, "1").result() == 1
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=lambda: queue.put(_executor().submit(int, "2").result()))
    child.start()
    assert queue.get(timeout=60) == 2
    child.join(timeout=60)
    assert child.exitcode == 0
