"""`ltr sweep`: grid expansion, executors agree, kill and resume, selection, failures."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.measures.metrics import time_average
from ltr_cli.results.folders import find_runs, read_run
from ltr_cli.names import setting
from ltr_cli.sweep.grid import expand

runner = CliRunner()

SWEEP16 = """
experiment: grid
dataset: {{kind: separable, variant: paper, queries: {queries}}}
protocol: {{checkpoint_every: 50}}
metrics: {{names: [ndcg@10], ties: random}}
learners:
  slam: {{type: slam-perceptron, step: {{rule: constant, eta: 1.0}}}}
  topk: {{type: rtopkf, surrogate: kl, schedule: authors-code}}
sweep:
  learners.slam.step.eta: [0.01, 0.1, 1.0, 10.0]
  learners.topk.eta_scale: [0.01, 0.1, 1.0, 10.0]
  seed: [0, 1]
"""


def write_sweep(tmp_path, queries=60):
    cfg = tmp_path / f"sweep{queries}.yaml"
    cfg.write_text(SWEEP16.format(queries=queries))
    return cfg


def digest(root: Path) -> dict[str, str]:
    return {p.parent.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("rounds.parquet"))}


def test_expansion_is_deterministic_and_dedupes(tmp_path):
    cfg = write_sweep(tmp_path)
    tasks = expand(cfg)
    assert len(tasks) == 16  # (4 slam rates + 4 topk rates) x 2 seeds; 4x4x2 points deduplicated
    assert [t.key for t in tasks] == [t.key for t in expand(cfg)]
    assert len({t.key for t in tasks}) == 16


def test_sixteen_runs_identical_with_jobs_1_jobs_2_and_dask(tmp_path):
    pytest.importorskip("distributed")
    cfg = write_sweep(tmp_path)
    outs = {}
    for name, args in (("j1", []), ("j2", ["--jobs", "2"]), ("dask", ["--executor", "dask", "--jobs", "2"])):
        out = tmp_path / name
        res = runner.invoke(app, ["sweep", str(cfg), "--out", str(out), *args])
        assert res.exit_code == 0, res.output
        outs[name] = digest(out)
    assert len(outs["j1"]) == 16
    assert outs["j1"] == outs["j2"] == outs["dask"]


def test_killed_sweep_resumes_and_every_run_completes_once(tmp_path):
    cfg = write_sweep(tmp_path, queries=500)  # long enough to be killed after 3 of its 16 runs
    reference = tmp_path / "reference"
    assert runner.invoke(app, ["sweep", str(cfg), "--out", str(reference), "--jobs", "2"]).exit_code == 0

    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "ltr_cli", "sweep", str(cfg), "--out", str(out), "--jobs", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and len(find_runs([out]) if out.exists() else []) < 3:
        time.sleep(0.05)
    time.sleep(float(np.random.default_rng().uniform(0, 0.5)))
    os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its worker processes
    proc.wait()
    done_before = {p.name: p.stat().st_mtime_ns for p in find_runs([out])}
    if len(done_before) == 16:
        pytest.skip("the sweep finished before it could be killed")
    status = runner.invoke(app, ["sweep", str(cfg), "--out", str(out), "--status"])
    assert "pending" in status.stdout and f"done={len(done_before)}" in status.stdout

    res = runner.invoke(app, ["sweep", str(cfg), "--out", str(out), "--jobs", "2"])
    assert res.exit_code == 0, res.output
    after = {p.name: p.stat().st_mtime_ns for p in find_runs([out])}
    assert len(after) == 16
    assert all(after[name] == mtime for name, mtime in done_before.items())  # not redone
    assert digest(out) == digest(reference)
    leftovers = [p.name for p in (out / "grid").iterdir() if p.name.startswith(".")]
    assert leftovers == []  # no lock, checkpoint or failure record left


def test_learning_rate_selection_matches_brute_force(tmp_path):
    out = tmp_path / "out"
    res = runner.invoke(app, ["sweep", str(Path(__file__).parents[1] / "configs" / "sweep_separable.yaml"),
                              "--out", str(out), "--jobs", "2", "--set", "dataset.queries=150"])
    assert res.exit_code == 0, res.output
    runs = [read_run(d) for d in find_runs([out])]
    window = 50
    for learner, key in (("slam", "learners.slam.step.eta"), ("listnet", "learners.listnet.step.eta")):
        scores: dict[float, list[float]] = {}
        for r in runs:
            if r.summary["learner"] == learner:
                eta = r.config["learners"][learner]["step"]["eta"]
                curve = time_average(r.rounds["ndcg@10"].to_numpy())
                scores.setdefault(eta, []).append(float(np.mean(curve[-window:])))
        top = max(np.mean(v) for v in scores.values())
        argmax = [e for e in scores if np.mean(scores[e]) == top]  # exact ties are possible
        assert len(scores) == 4 and all(len(v) == 3 for v in scores.values())
        rep = runner.invoke(app, ["report", str(out), "--select-by", "ndcg@10", "--window", str(window),
                                  "--format", "csv"])
        assert rep.exit_code == 0, rep.output
        row = next(line for line in rep.stdout.splitlines() if f",{learner}," in line)
        assert any(f"{setting(key, e, learner)}," in row for e in argmax), (row, argmax)
        assert f",{len(argmax) - 1},3," in row  # the tie count, then the seeds
    plot = runner.invoke(app, ["plot", str(out), "--select-by", "ndcg@10", "--window", str(window),
                               "--out", str(tmp_path / "p")])
    assert plot.exit_code == 0 and (tmp_path / "p" / "sweep_separable_ndcg_at_10_best-by-ndcg_at_10.png").is_file()


def test_a_failing_run_is_recorded_and_does_not_stop_the_others(tmp_path):
    cfg = tmp_path / "f.yaml"
    cfg.write_text("""
experiment: fails
dataset: {kind: shaped, like: mslr-web10k, queries: 20, docs_per_query: 5}
learners: {sq: {type: ogd, surrogate: squared, step: {rule: constant, eta: 0.001}}}
sweep:
  learners.sq.step.eta: [0.001, 1.0e+200, 0.01]
""")
    res = runner.invoke(app, ["sweep", str(cfg), "--out", str(tmp_path / "out")])
    assert res.exit_code == 1
    assert "1 failed" not in res.stdout and "2 of 3 runs done" in res.stdout
    assert "NaN or infinite" in res.stderr or "not finite" in res.stderr
    status = runner.invoke(app, ["sweep", str(cfg), "--out", str(tmp_path / "out"), "--status"])
    assert "failed=1" in status.stdout and "done=2" in status.stdout


def test_run_refuses_a_sweep_config(tmp_path):
    cfg = write_sweep(tmp_path)
    res = runner.invoke(app, ["run", str(cfg)])
    assert res.exit_code == 1 and "ltr sweep" in res.stderr


def test_a_zombie_does_not_hold_a_lock(tmp_path):
    """A lock file naming a process that exited but was never reaped holds nothing (the
    kernel dropped the exited process's flock; the file's ``host pid`` is information)."""
    from ltr_cli.runs.locks import RunLock

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.time() + 10
    while time.time() < deadline:  # wait until it has exited (a zombie: not waited for yet)
        with open(f"/proc/{child.pid}/stat", "rb") as fh:
            if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                break
        time.sleep(0.01)
    lock_path = tmp_path / ".run.lock"
    import socket

    lock_path.write_text(f"{socket.gethostname()} {child.pid}\n")
    lock = RunLock(lock_path)
    assert not lock.is_held_elsewhere()
    lock.acquire(wait=0)
    assert lock.held and lock.holder() == (socket.gethostname(), os.getpid())
    lock.release()
    child.wait()
