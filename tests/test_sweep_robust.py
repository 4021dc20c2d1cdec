"""`ltr sweep` survives its workers: dead workers become failed runs (local processes and
Dask), run locks are atomic, --jobs and the grid size are bounded, `output` cannot be swept,
scheduler problems are one line, and --status only reads."""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.runs.locks import RunLock, RunLocked
from ltr_cli.results.folders import find_runs
from ltr_cli.sweep.grid import JOBS_PER_CPU, effective_jobs, expand

runner = CliRunner()

SWEEP3 = """
experiment: grid
dataset: {{kind: separable, variant: paper, queries: {queries}}}
protocol: {{checkpoint_every: 50}}
metrics: {{names: [ndcg@10], ties: random}}
learners:
  slam: {{type: slam-perceptron, step: {{rule: constant, eta: 1.0}}}}
sweep:
  learners.slam.step.eta: [0.01, 0.1, 1.0]
"""


def write_sweep(tmp_path: Path, queries: int = 40) -> Path:
    cfg = tmp_path / f"sweep{queries}.yaml"
    cfg.write_text(SWEEP3.format(queries=queries))
    return cfg


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}


def ltr(*args: object, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ltr_cli", *map(str, args)], capture_output=True,
                          text=True, env={**env(), **(extra_env or {})}, timeout=600)


def one_line_errors(stderr: str) -> list[str]:
    """The error lines of stderr, after checking there is no traceback and every line is
    an ltr error or note."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert all(line.startswith(("ltr: error: ", "ltr: note: ")) for line in lines), stderr
    return [line for line in lines if line.startswith("ltr: error: ")]


def hidden_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "grid").iterdir() if p.name.startswith("."))


# --- 1. dead workers --------------------------------------------------------------------------

def _kill_a_lock_holder(out: Path, proc: subprocess.Popen, timeout: float = 300) -> tuple[str, int]:
    """Wait until a worker holds a run's lock, SIGKILL that worker; its (run id, pid)."""
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        for lock_file in (out / "grid").glob(".*.lock") if (out / "grid").is_dir() else []:
            lock = RunLock(lock_file)
            who = lock.holder()
            if who is not None and who[1] != proc.pid and lock.is_held_elsewhere():
                os.kill(who[1], signal.SIGKILL)
                return lock_file.name[1:-len(".lock")], who[1]
        time.sleep(0.005)
    pytest.fail("no worker took a run lock")


def test_a_killed_local_worker_is_a_failed_run_and_a_rerun_completes_it(tmp_path):
    cfg = write_sweep(tmp_path, queries=600)  # runs long enough to be killed while computing
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "ltr_cli", "sweep", str(cfg), "--out", str(out),
                             "--jobs", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env())
    run_id, pid = _kill_a_lock_holder(out, proc)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 1, stderr
    (error,) = one_line_errors(stderr)
    assert error.startswith(f"ltr: error: run grid/{run_id} failed: worker process {pid} was killed by SIGKILL")
    assert "re-run the sweep" in error
    assert "2 of 3 runs done" in stdout  # the other runs went on, on a new worker
    assert len(find_runs([out])) == 2

    status = runner.invoke(app, ["sweep", str(cfg), "--out", str(out), "--status"])  # in this process
    assert status.exit_code == 0
    assert re.search(rf"failed   grid/{run_id} \[step\.eta: [0-9.]+\]: worker process {pid}", status.stdout)
    assert "done=2 failed=1 running=0 pending=0" in status.stdout

    again = runner.invoke(app, ["sweep", str(cfg), "--out", str(out), "--jobs", "2"])
    assert again.exit_code == 0, again.stderr
    assert len(find_runs([out])) == 3
    assert hidden_files(out) == []  # no lock, checkpoint or failure record left


KILLER_SWEEP = """
experiment: grid
dataset: {kind: separable, variant: paper, queries: 40}
metrics: {names: [ndcg@10]}
learners:
  k: {type: killer}
sweep:
  learners.k.eta: [0.01, 0.1, 1.0]
"""


@pytest.fixture
def killer(tmp_path):
    """The sweep config of the killer plugin (:mod:`tests.killer_plugin`) and the environment
    that registers it: ``run(*args, die=ETA|"all"|None, how=...)`` runs ``ltr``."""
    from tests.killer_plugin import install

    cfg = tmp_path / "killer.yaml"
    cfg.write_text(KILLER_SWEEP)
    plugin = install(tmp_path / "plugin")

    def run(*args: object, die: str | None = None, how: str = "sigkill",
            extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        extra = {"PYTHONPATH": os.pathsep.join([env()["PYTHONPATH"], str(plugin)]), **(extra_env or {})}
        if die is not None:
            extra.update(LTR_TEST_KILLER_ETA=die, LTR_TEST_KILLER_HOW=how)
        return ltr(*args, extra_env=extra)

    return cfg, run


def test_a_worker_that_exits_is_a_failed_run(tmp_path, killer):
    cfg, run = killer
    out = tmp_path / "out"
    res = run("sweep", cfg, "--out", out, "--jobs", "2", die="0.1", how="exit")
    assert res.returncode == 1
    (error,) = one_line_errors(res.stderr)
    victim = re.search(r"run grid/(\S+) failed: worker process", error)
    assert victim is not None and "exited with status 3" in error, error
    assert "2 of 3 runs done" in res.stdout
    assert (out / "grid" / f".{victim[1]}.failed.json").is_file()
    status = run("sweep", cfg, "--out", out, "--status")
    assert re.search(rf"failed   grid/{victim[1]} \[eta: 0\.1\]", status.stdout), status.stdout

    again = run("sweep", cfg, "--out", out, "--jobs", "2")
    assert again.returncode == 0, again.stderr
    assert len(find_runs([out])) == 3 and hidden_files(out) == []


def test_every_worker_dying_still_ends_the_sweep(tmp_path, killer):
    cfg, run = killer
    res = run("sweep", cfg, "--out", tmp_path / "out", "--jobs", "2", die="all")
    assert res.returncode == 1
    errors = one_line_errors(res.stderr)
    assert len(errors) == 3 and all("was killed by SIGKILL" in e for e in errors)
    assert "0 of 3 runs done" in res.stdout


def test_a_dask_task_whose_worker_dies_is_reported_failed(tmp_path, killer):
    pytest.importorskip("distributed")
    cfg, run = killer
    out = tmp_path / "out"
    no_retry = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}  # fail at once
    res = run("sweep", cfg, "--out", out, "--executor", "dask", "--jobs", "2", die="0.01", extra_env=no_retry)
    assert res.returncode == 1
    errors = one_line_errors(res.stderr)
    # Dask may have queued another task on the dying worker; it fails with it (no retries here)
    assert errors and all(re.match(r"ltr: error: run grid/\S+ failed: the Dask worker computing this run died", e)
                          for e in errors), errors
    status = run("sweep", cfg, "--out", out, "--status")
    assert re.search(r"failed   grid/\S+ \[eta: 0\.01\]", status.stdout), status.stdout
    assert f"{3 - len(errors)} of 3 runs done" in res.stdout

    again = run("sweep", cfg, "--out", out, "--executor", "dask", "--jobs", "2")
    assert again.returncode == 0, again.stderr
    assert len(find_runs([out])) == 3 and hidden_files(out) == []



def test_a_killed_dask_worker_has_its_task_retried(tmp_path):
    pytest.importorskip("distributed")
    cfg = write_sweep(tmp_path, queries=600)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "ltr_cli", "sweep", str(cfg), "--out", str(out),
                             "--executor", "dask", "--jobs", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    _kill_a_lock_holder(out, proc)
    stdout, stderr = proc.communicate(timeout=600)
    assert one_line_errors(stderr) == []
    assert proc.returncode == 0 and "3 of 3 runs done" in stdout  # the scheduler ran it again
    assert len(find_runs([out])) == 3 and hidden_files(out) == []


# --- 2. atomic run locks ----------------------------------------------------------------------

def _taker(directory: str, trials: int, barrier, holders, violations, wins) -> None:
    me = (socket.gethostname(), os.getpid())
    for t in range(trials):
        lock = RunLock(Path(directory) / f".run{t}.lock")
        barrier.wait()
        try:
            lock.acquire(wait=0.02)
        except RunLocked:
            continue
        with holders.get_lock():
            holders.value += 1
            if holders.value > 1:  # someone else believes they hold a lock of this trial too
                violations.value += 1
        if lock.holder() != me:
            with violations.get_lock():
                violations.value += 1
        time.sleep(0.001)
        with holders.get_lock():
            holders.value -= 1
        with wins.get_lock():
            wins.value += 1
        lock.release()


def test_many_concurrent_takers_of_a_stale_lock_never_both_hold_it(tmp_path):
    """20 processes race for 150 stale locks (left by a dead process); while holding, each
    checks that nobody else holds one and that the file names it. The old unlink-and-
    recreate takeover failed this hundreds of times."""
    takers, trials = 20, 150
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for t in range(trials):
        (tmp_path / f".run{t}.lock").write_text(f"{socket.gethostname()} {dead.pid}\n")
    barrier = mp.Barrier(takers)
    holders, violations, wins = mp.Value("i", 0), mp.Value("i", 0), mp.Value("i", 0)
    procs = [mp.Process(target=_taker, args=(str(tmp_path), trials, barrier, holders, violations, wins))
             for _ in range(takers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
    assert [p.exitcode for p in procs] == [0] * takers
    assert violations.value == 0
    assert wins.value >= trials  # every stale lock was taken over
    assert list(tmp_path.glob(".run*.lock")) == []  # released locks are removed


def test_a_killed_holder_releases_its_lock_at_once(tmp_path):
    path = tmp_path / ".run.lock"
    code = ("import sys, time; from ltr_cli.runs.locks import RunLock; "
            f"RunLock({str(path)!r}).acquire(); print('held', flush=True); time.sleep(600)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env())
    try:
        assert holder.stdout.readline().strip() == "held"
        lock = RunLock(path)
        assert lock.is_held_elsewhere()
        assert lock.holder() == (socket.gethostname(), holder.pid)
        with pytest.raises(RunLocked, match=f"held by pid {holder.pid} on "):
            lock.acquire(wait=0)
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()  # reaped or not (a zombie), the kernel has dropped its lock
        assert not lock.is_held_elsewhere()
        lock.acquire(wait=0)
        assert lock.holder() == (socket.gethostname(), os.getpid())
        lock.release()
        assert not path.exists()
    finally:
        holder.kill()
        holder.wait()


def test_a_second_lock_object_in_the_same_process_is_refused(tmp_path):
    first, second = RunLock(tmp_path / ".r.lock"), RunLock(tmp_path / ".r.lock")
    first.acquire()
    try:
        assert second.is_held_elsewhere() and not first.is_held_elsewhere()
        with pytest.raises(RunLocked):
            second.acquire(wait=0)
    finally:
        first.release()
    second.acquire(wait=0)
    second.release()


# --- 3. --jobs cap ----------------------------------------------------------------------------

def test_jobs_are_capped_at_the_runs_and_the_cpus():
    cpus = os.cpu_count() or 1
    assert effective_jobs(64, 3) == 3
    assert effective_jobs(10**6, 10**6) == JOBS_PER_CPU * cpus
    assert effective_jobs(2, 16) == 2
    assert effective_jobs(1, 0) == 1


def test_capped_jobs_are_noted_unless_quiet(tmp_path):
    cfg = write_sweep(tmp_path)
    res = runner.invoke(app, ["sweep", str(cfg), "--out", str(tmp_path / "a"), "--jobs", "64"])
    assert res.exit_code == 0, res.output
    assert "ltr: note: --jobs 64 capped at 3 (the number of runs)" in res.stderr
    quiet = runner.invoke(app, ["sweep", str(cfg), "--out", str(tmp_path / "b"), "--jobs", "64", "-q"])
    assert quiet.exit_code == 0 and quiet.stderr == ""
    assert "3 of 3 runs done" in quiet.stdout


# --- 4. grid size -----------------------------------------------------------------------------

def test_grid_size_is_announced(tmp_path):
    cfg = write_sweep(tmp_path)
    res = runner.invoke(app, ["sweep", str(cfg), "--out", str(tmp_path / "o")])
    assert res.exit_code == 0
    assert res.stderr.splitlines()[0] == "ltr: note: sweep: 3 grid points (learners.slam.step.eta 3)"


def test_a_huge_grid_is_refused_from_its_axis_lengths(tmp_path):
    """10 axes of 10 values: 10**10 points, refused without expanding (which would never end)."""
    axes = "\n".join(f"  learners.slam.step.eta{i}: [{', '.join(str(v) for v in range(10))}]" for i in range(10))
    cfg = tmp_path / "huge.yaml"
    cfg.write_text(SWEEP3.format(queries=40).split("sweep:")[0] + "sweep:\n" + axes + "\n")
    res = runner.invoke(app, ["sweep", str(cfg), "--out", str(tmp_path / "o")])
    assert res.exit_code == 1
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("ltr: error: ")
    assert "10,000,000,000 points" in res.stderr and "limit of 10,000" in res.stderr
    assert "--max-grid 10000000000" in res.stderr
    status = runner.invoke(app, ["sweep", str(cfg), "--out", str(tmp_path / "o"), "--status"])
    assert status.exit_code == 1 and "--max-grid" in status.stderr
    assert not (tmp_path / "o").exists()


def test_max_grid_sets_the_limit(tmp_path):
    cfg = write_sweep(tmp_path)
    low = runner.invoke(app, ["sweep", str(cfg), "--out", str(tmp_path / "o"), "--max-grid", "2"])
    assert low.exit_code == 1
    assert low.stderr.strip() == (f"ltr: error: {cfg}: sweep: the grid has 3 points (3), over the limit of 2; "
                                  "pass --max-grid 3 to run it anyway, or shorten the value lists")
    ok = runner.invoke(app, ["sweep", str(cfg), "--out", str(tmp_path / "o"), "--max-grid", "3", "-q"])
    assert ok.exit_code == 0, ok.output


def test_each_learner_runs_only_its_own_axes_so_a_sum_not_a_product_meets_the_limit(tmp_path):
    """Two learners with two axes of 100 values each: 10^8 points as a product, but a
    learner's run depends on its own keys only, so the grid is 2 x 10^4 + 1 points (the
    third learner's one), and every task is the run the product would have made."""
    import itertools

    import yaml

    from ltr_cli.config.experiment import apply_overrides, parse_config
    from ltr_cli.runs.plan import planned
    from ltr_cli.sweep.grid import plan

    axes = {f"learners.{name}.{key}": [round(0.01 * (v + 1), 2) for v in range(100)]
            for name in ("a", "b") for key in ("step.eta", "delta")}
    body = ("experiment: own\ndataset: {kind: separable, variant: paper, queries: 20}\nlearners:\n"
            "  a: {type: slam-perceptron, step: {rule: constant, eta: 1.0}}\n"
            "  b: {type: slam-perceptron, step: {rule: constant, eta: 1.0}}\n"
            "  c: {type: slam-perceptron}\nsweep:\n")
    big = tmp_path / "big.yaml"
    big.write_text(body + "".join(f"  {k}: {v}\n" for k, v in axes.items()))
    p = plan(big)
    assert p.points == 2 * 10**2 * 10**2 + 1
    assert p.describe().startswith("20,001 grid points (") and "+ 1 without own axes" in p.describe()
    refused = runner.invoke(app, ["sweep", str(big), "--out", str(tmp_path / "o"), "--max-grid", "20000"])
    assert refused.exit_code == 1 and "the grid has 20,001 points" in refused.stderr
    # the same rule on a grid small enough to expand as a product: the same runs
    small = tmp_path / "small.yaml"
    few = {k: v[:2] for k, v in axes.items()} | {"seed": [0, 1]}
    small.write_text(body + "".join(f"  {k}: {v}\n" for k, v in few.items()))
    tasks = plan(small).tasks()
    assert len(tasks) == 2 * (4 + 4 + 1)
    raw = yaml.safe_load(small.read_text())
    product: dict[str, None] = {}  # the runs of the whole product, in their first point's order
    for values in itertools.product(*few.values()):
        data = {k: v for k, v in raw.items() if k != "sweep"}
        data = apply_overrides(data, [f"{k}={v}" for k, v in zip(few, values)], str(small))
        spec = parse_config(data, str(small))
        for learner in spec.learners:
            product.setdefault(planned(spec.for_seed(spec.seed), learner).run_id)
    assert [t.run.run_id for t in tasks] == list(product)
    for t in tasks:  # a task's point names the shared keys and its own learner's only
        assert all(k == "seed" or k.startswith(f"learners.{t.learner}.") for k in t.point)


# --- 5. output cannot be swept ----------------------------------------------------------------

@pytest.mark.parametrize("key", ["output", "output.sub"])
def test_sweeping_output_is_refused(tmp_path, key):
    cfg = write_sweep(tmp_path)
    cfg.write_text(cfg.read_text() + f"  {key}: [{tmp_path / 'a'}, {tmp_path / 'b'}]\n")
    res = runner.invoke(app, ["sweep", str(cfg), "--out", str(tmp_path / "o")])
    assert res.exit_code == 1
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("ltr: error: ")
    assert f"sweep key '{key}': the results folder cannot be swept" in res.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "o").exists()


# --- 6. scheduler errors ----------------------------------------------------------------------

@pytest.mark.parametrize("address", ["notaurl", "tcp://", "tcp://host:notaport", "tcp://host:0",
                                     "ftp://host:8786", "tcp://:8786"])
def test_a_malformed_scheduler_address_is_one_line(tmp_path, address):
    cfg = write_sweep(tmp_path)
    res = runner.invoke(app, ["sweep", str(cfg), "--executor", "dask", "--scheduler", address,
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 1
    assert res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith(f"ltr: error: --scheduler {address!r}: ")
    assert "tcp://10.0.0.5:8786" in res.stderr and "path" not in res.stderr
    assert not (tmp_path / "o").exists()


def test_scheduler_without_dask_executor_is_one_line(tmp_path):
    res = runner.invoke(app, ["sweep", str(write_sweep(tmp_path)), "--scheduler", "tcp://127.0.0.1:8786"])
    assert res.exit_code == 1 and res.stderr == "ltr: error: --scheduler needs --executor dask\n"


def test_an_unreachable_scheduler_is_one_line(tmp_path):
    pytest.importorskip("distributed")
    res = ltr("sweep", write_sweep(tmp_path), "--executor", "dask", "--scheduler", "tcp://127.0.0.1:1",
              "--connect-timeout", "2", "--out", tmp_path / "o", "-q")
    assert res.returncode == 1
    assert res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("ltr: error: --scheduler tcp://127.0.0.1:1: cannot connect to a Dask scheduler")
    assert "check that the scheduler is running" in res.stderr and "path" not in res.stderr
    assert not (tmp_path / "o").exists()


# --- 7. --status only reads -------------------------------------------------------------------

def snapshot(root: Path) -> dict[str, tuple]:
    out = {}
    for p in sorted(root.rglob("*")):
        st = os.lstat(p)
        content = hashlib.sha256(p.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else None
        out[str(p.relative_to(root))] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns, content)
    return out


def test_status_reads_only_and_survives_odd_files(tmp_path):
    cfg = write_sweep(tmp_path)
    out = tmp_path / "out"
    tasks = expand(cfg)
    done, failed_run, odd_run = (t.run_id for t in tasks)
    assert runner.invoke(app, ["sweep", str(cfg), "--out", str(out), "-q"]).exit_code == 0
    grid = out / "grid"
    import shutil

    shutil.rmtree(grid / failed_run)
    shutil.rmtree(grid / odd_run)
    (grid / f".{failed_run}.failed.json").write_text("[1, 2, 3]")  # valid JSON, not a record
    (grid / f".{failed_run}.lock").mkdir()  # a directory where a lock file belongs
    (grid / f".{failed_run}.checkpoint").write_bytes(b"\x80garbage")
    os.mkfifo(grid / f".{odd_run}.lock")  # reading a FIFO would block
    os.mkfifo(grid / f".{odd_run}.checkpoint")
    (grid / f".{odd_run}.failed.json").symlink_to("/dev/zero")  # reading it would never end
    (grid / odd_run).write_text("a file where a run directory belongs")
    (grid / "notes.txt").write_bytes(b"\xff\xfe not utf-8")
    (grid / ".unrelated.lock").write_text("nonsense")
    (out / "stray-file").write_text("x")
    before = snapshot(out)

    res = runner.invoke(app, ["sweep", str(cfg), "--out", str(out), "--status"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    def line_of(run):
        (line,) = [line for line in lines if f" grid/{run} [" in line]
        return line

    assert line_of(done).startswith(f"done     grid/{done} [step.eta: ")
    assert line_of(failed_run).endswith("]: (unreadable failure record)")
    assert line_of(failed_run).startswith("failed ")
    assert line_of(odd_run).startswith("pending ")
    assert line_of(odd_run).endswith("]: checkpoint unusable (it is not a regular file)")
    assert lines[-1] == "done=1 failed=1 running=0 pending=1 total=3"
    assert snapshot(out) == before  # nothing created, changed or deleted

    missing = tmp_path / "never-written"
    res = runner.invoke(app, ["sweep", str(cfg), "--out", str(missing), "--status"])
    assert res.exit_code == 0 and "pending=3" in res.stdout
    assert not missing.exists()


def test_status_shows_a_running_run(tmp_path):
    cfg = write_sweep(tmp_path)
    out = tmp_path / "out"
    task = expand(cfg)[0]
    lock = RunLock(out / "grid" / f".{task.run_id}.lock")
    code = ("import time; from ltr_cli.runs.locks import RunLock; "
            f"RunLock({str(lock.path)!r}).acquire(); print('held', flush=True); time.sleep(600)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env())
    try:
        assert holder.stdout.readline().strip() == "held"
        res = runner.invoke(app, ["sweep", str(cfg), "--out", str(out), "--status"])
        assert any(line.startswith(f"running  grid/{task.run_id} [") for line in res.stdout.splitlines())
        assert "running=1" in res.stdout
    finally:
        holder.kill()
        holder.wait()
    res = runner.invoke(app, ["sweep", str(cfg), "--out", str(out), "--status"])
    assert "running=0 pending=3" in res.stdout  # the dead holder's lock file holds nothing


def test_a_killed_sweep_leaves_no_worker_behind(tmp_path):
    """SIGKILL of `ltr sweep --jobs 2` takes its workers with it (they would otherwise finish
    their units, hold their runs' locks and make the next sweep record failures)."""
    psutil = pytest.importorskip("psutil")
    cfg = write_sweep(tmp_path, queries=1000)  # each run lasts long enough for its worker to be seen
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "ltr_cli", "sweep", str(cfg), "--out", str(out), "--jobs", "2",
                             "-q"], env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    workers: list = []
    while time.time() < deadline and len(workers) < 2 and proc.poll() is None:
        workers = psutil.Process(proc.pid).children(recursive=True)
        time.sleep(0.05)
    if proc.poll() is not None or len(workers) < 2:
        proc.kill()
        pytest.skip("the sweep ended before its workers could be seen")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    gone, alive = psutil.wait_procs(workers, timeout=10)
    assert alive == []
    again = runner.invoke(app, ["sweep", str(cfg), "--out", str(out), "-q"])  # in this process
    assert again.exit_code == 0, again.stderr
