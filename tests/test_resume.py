"""Killed runs resume exactly; same seed, same bytes; other seeds differ."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

CONFIG = """
experiment: resume
seed: {seed}
dataset: {{kind: separable, variant: paper, queries: {queries}}}
protocol: {{passes: {passes}, keep_probability: 0.9, checkpoint_every: 97}}
metrics: {{names: [ndcg@10, ap], ties: random}}
learners:
  slam: {{type: slam-perceptron, step: {{rule: inv-sqrt, eta: 1.0}}}}
  topk: {{type: rtopkf, surrogate: ranksvm, schedule: authors-code}}
"""


def ltr(*args, **kw):
    return subprocess.run([sys.executable, "-m", "ltr_cli", *map(str, args)], capture_output=True,
                          text=True, **kw)


def in_process(*args):
    """``ltr ARGS`` through Typer's runner, in this process."""
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    return CliRunner().invoke(app, [str(a) for a in args])


def write_config(tmp_path, seed=0, queries=1500, passes=2):
    cfg = tmp_path / f"c{seed}-{queries}-{passes}.yaml"
    cfg.write_text(CONFIG.format(seed=seed, queries=queries, passes=passes))
    return cfg


def run_dir(out: Path, learner: str) -> Path:
    (d,) = [p for p in (out / "resume").iterdir() if p.name.startswith(learner + "-")]
    return d


@pytest.mark.parametrize("learner", ["slam", "topk"])
def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path, learner):
    # 8,000 rounds, long enough to be killed after the first checkpoint; few queries over
    # many passes, since generating the separable queries costs more than learning from them
    cfg = write_config(tmp_path, queries=1000, passes=8)
    reference = tmp_path / "reference"  # uninterrupted, in this process (the other runs are killed or resumed)
    assert in_process("run", cfg, "--out", reference, "-q", "--learner", learner).exit_code == 0

    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "ltr_cli", "run", str(cfg), "--out", str(killed),
                             "-q", "--learner", learner],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rng = np.random.default_rng()
    deadline = time.time() + 60
    while time.time() < deadline and not list((killed / "resume").glob(".*.checkpoint")):
        time.sleep(0.01)
    time.sleep(float(rng.uniform(0.0, 0.3)))  # a random round after the first checkpoint
    finished_already = proc.poll() is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    completed = any(p.is_dir() and not p.name.startswith(".") for p in (killed / "resume").iterdir())
    if finished_already or completed:  # it finished between the last check and the kill
        pytest.skip("the run finished before it could be killed (machine too fast)")

    res = ltr("run", cfg, "--out", killed, "--learner", learner, "--resume")
    assert res.returncode == 0, res.stderr
    assert "resuming after round" in res.stderr
    a = run_dir(reference, learner) / "rounds.parquet"
    b = run_dir(killed, learner) / "rounds.parquet"
    pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b), check_exact=True)
    assert a.read_bytes() == b.read_bytes()
    assert not list((killed / "resume").glob(".*.checkpoint"))  # removed once complete

    again = in_process("run", cfg, "--out", killed, "--learner", learner, "--resume")
    assert again.exit_code == 0 and "complete, skipped" in again.stderr


def test_same_seed_same_bytes_across_processes_and_seeds_differ(tmp_path):
    cfg0 = write_config(tmp_path, seed=0, queries=300)
    for out in ("a", "b"):
        assert ltr("run", cfg0, "--out", tmp_path / out, "-q").returncode == 0
    for learner in ("slam", "topk"):
        a = run_dir(tmp_path / "a", learner) / "rounds.parquet"
        b = run_dir(tmp_path / "b", learner) / "rounds.parquet"
        assert a.read_bytes() == b.read_bytes()
    cfg1 = write_config(tmp_path, seed=1, queries=300)
    assert in_process("run", cfg1, "--out", tmp_path / "c", "-q").exit_code == 0  # another seed, any process
    r0 = pd.read_parquet(run_dir(tmp_path / "a", "topk") / "rounds.parquet")
    r1 = pd.read_parquet(run_dir(tmp_path / "c", "topk") / "rounds.parquet")
    assert not r0.equals(r1)


class _Exploit:
    """Unpickling this runs code: creates the file named in the test."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


@pytest.fixture(scope="module")
def slam_reference(tmp_path_factory):
    """A config of 200 queries and its uninterrupted slam run (its results root), shared by the
    tests that only read it."""
    tmp = tmp_path_factory.mktemp("slam-reference")
    cfg = write_config(tmp, queries=200)
    reference = tmp / "ref"
    assert ltr("run", cfg, "--out", reference, "-q", "--learner", "slam").returncode == 0
    return cfg, reference


@pytest.mark.parametrize("content", ["garbage", "pickle", "npy", "compressed"])
def test_damaged_or_crafted_checkpoint_is_refused_in_one_line_and_never_executed(tmp_path, content, slam_reference):
    import io
    import pickle

    cfg, reference = slam_reference
    out = tmp_path / "out"
    (out / "resume").mkdir(parents=True)
    run_id = run_dir(reference, "slam").name
    owned = tmp_path / "OWNED"
    ckpt = out / "resume" / f".{run_id}.checkpoint"
    if content == "garbage":
        ckpt.write_bytes(b"not a checkpoint")
    elif content == "pickle":
        ckpt.write_bytes(pickle.dumps({"format": 1, "state": _Exploit(str(owned))}))
    elif content == "npy":  # an object array: loading it would unpickle
        buf = io.BytesIO()
        np.save(buf, np.array([_Exploit(str(owned))], dtype=object), allow_pickle=True)
        ckpt.write_bytes(buf.getvalue())
    else:
        with open(ckpt, "wb") as fh:
            np.savez_compressed(fh, **{"state.json": np.zeros(10, np.uint8)})
    res = ltr("run", cfg, "--out", out, "--learner", "slam", "--resume")
    assert res.returncode == 1 and not owned.exists()
    err = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(err) <= 2 and err[-1].startswith("ltr: error:") and ckpt.name in err[-1], res.stderr
    assert "Traceback" not in res.stderr and "delete it" in err[-1]
    ckpt.unlink()
    res = in_process("run", cfg, "--out", out, "--learner", "slam", "--resume")
    assert res.exit_code == 0 and "resuming" not in res.stderr
    a = run_dir(reference, "slam") / "rounds.parquet"
    assert a.read_bytes() == (run_dir(out, "slam") / "rounds.parquet").read_bytes()


def test_stale_temporaries_of_a_killed_write_are_removed(tmp_path):
    cfg = write_config(tmp_path, queries=100)
    out = tmp_path / "out"
    assert in_process("run", cfg, "--out", out, "-q", "--learner", "slam").exit_code == 0
    run = run_dir(out, "slam")
    # what a kill during write_run / a checkpoint save would leave behind
    (run.parent / f".{run.name}.tmp-abc123").mkdir()
    (run.parent / f".{run.name}.tmp-abc123" / "rounds.parquet").write_bytes(b"partial")
    (run.parent / f".{run.name}.checkpoint.tmp-999").write_bytes(b"partial")
    assert in_process("run", cfg, "--out", out, "-q", "--learner", "slam").exit_code == 0
    assert sorted(p.name for p in run.parent.iterdir()) == [run.name]


def test_an_interrupted_run_keeps_its_checkpoint_until_told_what_to_do(tmp_path, monkeypatch):
    """Ctrl-C: the finished learner's line is printed, the interrupted one says what is kept
    and how to continue. Without --resume the checkpoint is neither resumed nor discarded
    silently: one line says how to continue or start over (--fresh)."""
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app
    from ltr_cli.protocols import online

    runner = CliRunner()
    cfg = write_config(tmp_path, queries=600)
    out = tmp_path / "out"
    reference = tmp_path / "ref"
    assert runner.invoke(app, ["run", str(cfg), "--out", str(reference), "-q"]).exit_code == 0

    real_run_online = online.run_online
    calls = []

    def interrupted_second_learner(*args, **kwargs):
        calls.append(kwargs.get("name"))
        if kwargs.get("name") != "topk":
            return real_run_online(*args, **kwargs)
        return _interrupt_after_checkpoint(real_run_online, args, kwargs)

    monkeypatch.setattr("ltr_cli.protocols.online_run.run_online", interrupted_second_learner)
    argv = ["ltr", "run", str(cfg), "--out", str(out)]
    monkeypatch.setattr("sys.argv", argv)
    res = runner.invoke(app, argv[1:])
    assert res.exit_code != 0
    assert res.stdout.startswith("slam: ")  # the finished learner's line was not lost
    assert calls == ["slam", "topk"] and "its last checkpoint is kept in" in res.stderr
    assert f"continue with: ltr run {cfg} --out {out} --resume" in res.stderr
    (checkpoint,) = (out / "resume").glob(".topk-*.checkpoint")

    monkeypatch.setattr("ltr_cli.protocols.online_run.run_online", real_run_online)
    again = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"])
    assert again.exit_code == 1 and checkpoint.exists()
    line = again.stderr.strip()
    assert len(line.splitlines()) == 1 and "start over with --fresh" in line and "--resume" in line
    both = runner.invoke(app, ["run", str(cfg), "--out", str(out), "--resume", "--fresh"])
    assert both.exit_code == 1 and "give one of them" in both.stderr
    fresh = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q", "--fresh"])
    assert fresh.exit_code == 0, fresh.stderr
    assert not checkpoint.exists()
    for learner in ("slam", "topk"):
        assert (run_dir(out, learner) / "rounds.parquet").read_bytes() == \
            (run_dir(reference, learner) / "rounds.parquet").read_bytes()


def _interrupt_after_checkpoint(run_online, args, kwargs):
    """Run until the first checkpoint is on disk, then raise KeyboardInterrupt (as Ctrl-C
    would) from the checkpointer's save."""
    checkpointer = kwargs["checkpointer"]
    real_save = checkpointer.save

    def save_then_stop(state):
        real_save(state)
        raise KeyboardInterrupt

    checkpointer.save = save_then_stop
    return run_online(*args, **kwargs)


def test_each_save_appends_only_the_new_rounds_and_a_torn_save_is_ignored(tmp_path):
    """Format 3: every record holds the rounds since the previous save (so a save costs
    the same after 100 rounds as after 10,000), and a record cut short by a kill is
    ignored on resume, which continues from the record before it, byte-identical."""
    import hashlib
    import io
    import json

    from ltr_cli.protocols.checkpoint import Checkpointer

    cfg = write_config(tmp_path, queries=300)
    reference = tmp_path / "reference"
    assert in_process("run", cfg, "--out", reference, "-q", "--learner", "slam").exit_code == 0
    run_id = run_dir(reference, "slam").name
    # the checkpoint as a kill right after the fifth save (round 485) leaves it
    code = ("import sys; from ltr_cli.cli import app as cli; from ltr_cli.protocols.checkpoint import Checkpointer\n"
            "real = Checkpointer.save\n"
            "def save(self, state):\n"
            "    real(self, state)\n"
            "    if state.t >= 485: import os; os._exit(9)\n"
            "Checkpointer.save = save\n"
            "sys.argv = ['ltr', 'run', sys.argv[1], '--out', sys.argv[2], '-q', '--learner', 'slam']\n"
            "cli.main()\n")
    killed = tmp_path / "killed"
    proc = subprocess.run([sys.executable, "-c", code, str(cfg), str(killed)], capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr
    ckpt = killed / "resume" / f".{run_id}.checkpoint"
    raw = ckpt.read_bytes()
    assert raw[:8] == b"LTRCKPT3"
    spans, at = [], 8
    while at < len(raw):
        n = int.from_bytes(raw[at:at + 8], "little")
        payload = raw[at + 40:at + 40 + n]
        assert hashlib.sha256(payload).digest() == raw[at + 8:at + 40]
        with np.load(io.BytesIO(payload), allow_pickle=False) as z:
            meta = json.loads(z["state.json"].tobytes())
            assert z["col.t"].tolist() == list(range(meta["from"] + 1, meta["t"] + 1))
        spans.append((meta["from"], meta["t"]))
        at += 40 + n
    assert spans == [(0, 97), (97, 194), (194, 291), (291, 388), (388, 485)]
    assert Checkpointer(ckpt, run_id, 0).round() == 485
    # a save cut short: a record header promising more bytes than follow
    with open(ckpt, "ab") as fh:
        fh.write((10_000).to_bytes(8, "little") + b"\0" * 32 + b"PK\3\4partial")
    assert Checkpointer(ckpt, run_id, 0).round() == 485
    res = in_process("run", cfg, "--out", killed, "--learner", "slam", "--resume")
    assert res.exit_code == 0 and "resuming after round 485" in res.stderr, res.stderr
    a = run_dir(reference, "slam") / "rounds.parquet"
    assert a.read_bytes() == (run_dir(killed, "slam") / "rounds.parquet").read_bytes()
