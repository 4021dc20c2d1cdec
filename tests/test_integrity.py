"""Integrity: crafted checkpoints never run code, caches cannot lie or crash a kernel,
changed data is never mixed with old results, and inputs are bounded."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.sweep.grid import expand

runner = CliRunner()


class _Exploit:
    """Unpickling this creates the file ``target``."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


SWEEP = """
experiment: grid
dataset: {kind: separable, variant: paper, queries: 30}
metrics: {names: [ndcg@10]}
learners:
  slam: {type: slam-perceptron}
sweep:
  learners.slam.step.eta: [0.1, 1.0]
"""


def test_sweep_status_never_unpickles_a_planted_checkpoint(tmp_path):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(SWEEP)
    out = tmp_path / "out"
    owned = tmp_path / "OWNED"
    for task in expand(cfg, []):
        base = out / task.experiment
        base.mkdir(parents=True, exist_ok=True)
        (base / f".{task.run_id}.checkpoint").write_bytes(pickle.dumps(_Exploit(str(owned))))
    res = runner.invoke(app, ["sweep", str(cfg), "--out", str(out), "--status"])
    assert res.exit_code == 0, res.output
    assert not owned.exists()
    assert "checkpoint unusable" in res.output and "pending=2" in res.output


# --- data identity ----------------------------------------------------------------------

FILES = """
experiment: ident
dataset: {{kind: files, files: [{data}], features: 5}}
protocol: {{passes: {passes}, checkpoint_every: {every}}}
metrics: {{names: [ndcg@10]}}
cache: {{enabled: {cache}}}
learners:
  slam: {{type: slam-perceptron}}
"""


def _data(path: Path, queries: int = 40, relabel: bool = False, seed: int = 0) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    lines = []
    for q in range(queries):
        for _ in range(6):
            label = int(rng.integers(0, 3))
            feats = " ".join(f"{j + 1}:{rng.random():.4f}" for j in range(5))
            lines.append(f"{(2 - label) if relabel else label} qid:{q + 1} {feats}")
    path.write_text("\n".join(lines) + "\n")


def _config(tmp_path, data, passes=1, every=0, cache=True):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(FILES.format(data=data, passes=passes, every=every, cache=str(cache).lower()))
    return cfg


def _final_ndcg(out):
    import json

    (summary,) = list(out.rglob("summary.json"))
    return json.loads(summary.read_text())["metrics"]["ndcg@10"]["final_time_average"]


@pytest.mark.parametrize("cache", [True, False])
def test_relabelled_file_with_restored_mtime_is_never_served_stale(tmp_path, cache):
    """A same-size, same-mtime relabelling gives the numbers of the new labels (the cache
    is rebuilt), and --resume refuses to count the old finished run as done."""
    import os

    data = tmp_path / "d.txt"
    _data(data)
    cfg = _config(tmp_path, data, cache=cache)
    first = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "a"), "-q"])
    assert first.exit_code == 0, first.output
    st = data.stat()
    _data(data, relabel=True)
    assert data.stat().st_size == st.st_size
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))
    fresh = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "fresh"), "-q",
                                "--set", f"cache.dir={tmp_path / 'other-cache'}"])
    assert fresh.exit_code == 0
    again = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "b"), "-q",
                                "--set", f"cache.dir={tmp_path / 'a' / '.cache'}"])
    assert again.exit_code == 0, again.output
    assert _final_ndcg(tmp_path / "b") == _final_ndcg(tmp_path / "fresh") != _final_ndcg(tmp_path / "a")
    resumed = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "a"), "-q", "--resume"])
    assert resumed.exit_code == 1
    line = resumed.stderr.strip().splitlines()[-1]
    assert line.startswith("ltr: error:") and "other data" in line and "remove the run directory" in line


# a run that dies (os._exit) right after its checkpoint at round 100, as a kill would leave it
_KILL_AFTER_SAVE = (
    "import sys\n"
    "from ltr_cli.protocols.checkpoint import Checkpointer\n"
    "orig = Checkpointer.save\n"
    "def save(self, state):\n"
    "    orig(self, state)\n"
    "    if state.t >= 100: import os; os._exit(9)\n"
    "Checkpointer.save = save\n"
    "from ltr_cli.cli.app import main\n"
    "sys.argv = ['ltr', 'run', sys.argv[1], '--out', sys.argv[2], '-q']\n"
    "main()\n")


def test_resume_refuses_a_checkpoint_taken_on_other_data(tmp_path):
    import subprocess
    import sys

    from ltr_cli.protocols.checkpoint import Checkpointer

    data = tmp_path / "d.txt"
    _data(data, queries=300)
    cfg = _config(tmp_path, data, passes=3, every=50)
    out = tmp_path / "out"
    # a checkpoint as a killed run leaves it: run to the end, then plant the last state
    res = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q", "--set", "protocol.max_rounds=120"])
    assert res.exit_code == 0
    killed = tmp_path / "killed"
    proc = subprocess.run([sys.executable, "-c", _KILL_AFTER_SAVE, str(cfg), str(killed)], capture_output=True)
    assert proc.returncode == 9, proc.stderr
    (ckpt,) = list((killed / "ident").glob(".*.checkpoint"))
    assert Checkpointer(ckpt, ckpt.name[1:-len(".checkpoint")], 0).round() == 100
    _data(data, queries=300, seed=1)  # the data is replaced
    res = runner.invoke(app, ["run", str(cfg), "--out", str(killed), "-q", "--resume"])
    assert res.exit_code == 1
    line = res.stderr.strip().splitlines()[-1]
    assert "data changed since this checkpoint" in line and ckpt.name in line


def test_file_changed_while_its_cache_is_built_fails_clearly(tmp_path, monkeypatch):
    from ltr_cli.data import cache as cache_mod
    from ltr_cli.data.identity import DataChanged
    from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader

    data = tmp_path / "d.txt"
    _data(data, queries=50)
    original = data.read_bytes()
    real = SVMLightReader.dense_queries

    def truncating(self, dtype):
        for i, q in enumerate(real(self, dtype)):
            if i == 3:  # truncated mid-parse, then restored
                data.write_bytes(original[:1000])
                data.write_bytes(original)
            yield q

    monkeypatch.setattr(SVMLightReader, "dense_queries", truncating)
    with pytest.raises(DataChanged, match="changed while it was being read"):
        cache_mod.open_cached(data, ReaderOptions(n_features=5), tmp_path / "c")
    assert not [p for p in (tmp_path / "c").iterdir() if not p.name.endswith(".lock")]


def test_corrupt_cache_byte_during_a_run_is_one_line_and_the_cache_is_removed(tmp_path):
    import numpy as np

    data = tmp_path / "d.txt"
    _data(data, queries=40)
    cfg = _config(tmp_path, data)
    out = tmp_path / "out"
    assert runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"]).exit_code == 0
    (xbin,) = list((out / ".cache").rglob("X.bin"))
    raw = bytearray(xbin.read_bytes())
    raw[len(raw) // 2] ^= 0x40
    xbin.write_bytes(bytes(raw))
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out2"), "-q",
                              "--set", f"cache.dir={out / '.cache'}"])
    assert res.exit_code == 1
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith("ltr: error:") and "corrupt" in line and "X.bin block" in line
    assert not xbin.exists() and not list((tmp_path / "out2").rglob("summary.json"))
    del np


# --- numba's cache on a read-only install -----------------------------------------------

def test_numba_cache_falls_back_to_a_user_directory_then_to_a_private_temporary_one(tmp_path, monkeypatch,
                                                                                      capsys):
    import os
    import tempfile

    from ltr_cli.kernels import numba_cache

    readonly_pkg = tmp_path / "site-packages" / "ltr_cli"  # no writable kernels/ or data/
    env = {"HOME": str(tmp_path / "home")}
    assert numba_cache.configure(readonly_pkg, env) == "user-cache"
    assert env["NUMBA_CACHE_DIR"] == str(tmp_path / "home" / ".cache" / "ltr-cli" / "numba" / "by-module")

    env = {"HOME": "/dev/null/no-home"}  # HOME unusable: a private temp directory
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    assert numba_cache.configure(readonly_pkg, env) == "temp"
    temp = tmp_path / "tmp" / f"ltr-cli-numba-{os.getuid()}"
    assert env["NUMBA_CACHE_DIR"] == str(temp / "by-module") and not temp.stat().st_mode & 0o077

    temp.chmod(0o777)  # someone else could plant pickled index files there: not used
    env = {"HOME": "/dev/null/no-home"}
    assert numba_cache.configure(readonly_pkg, env) == "private-temp"
    fresh = Path(env["NUMBA_CACHE_DIR"])
    assert fresh.parent == tmp_path / "tmp" and fresh != temp and not fresh.stat().st_mode & 0o077
    assert numba_cache.CACHE is True
    assert "kernels compile into a temporary directory" in capsys.readouterr().err
    mine = tmp_path / "mine"
    assert numba_cache.configure(readonly_pkg, {"NUMBA_CACHE_DIR": str(mine)}) == "user"


def test_the_kernel_cache_keeps_each_module_in_a_folder_named_by_its_sources(tmp_path):
    """numba checks a cached kernel against its own file only; a kernel also carries the code
    of the kernels it calls, from other files: each module's folder is named by a digest of
    its sources and theirs (tests/test_block_families.py edits one), inside the chosen place."""
    from ltr_cli.kernels import numba_cache

    pkg = tmp_path / "ltr_cli"
    (pkg / "kernels").mkdir(parents=True)
    (pkg / "data").mkdir()
    env: dict[str, str] = {}
    assert numba_cache.configure(pkg, env) == "package"
    assert env["NUMBA_CACHE_DIR"] == str(pkg / "__pycache__" / "numba" / "by-module")
    folder = numba_cache.module_cache_dir("ltr_cli.kernels.perceptron")
    assert folder.name == f"ltr_cli.kernels.perceptron-{numba_cache.module_digest('ltr_cli.kernels.perceptron')}"
    assert len(folder.name.rpartition("-")[2]) == 16
    assert [name for name, _ in numba_cache.module_sources("ltr_cli.data.fastscan")] == [
        "ltr_cli.core.codes", "ltr_cli.data.fastscan"]  # the scanner's codes are compiled in
    inherited = dict(env)  # a child process keeps its parent's cache
    assert numba_cache.configure(pkg, inherited) == "user" and inherited == env


def test_a_path_that_is_not_utf8_is_refused_before_any_work(tmp_path):
    import subprocess
    import sys

    from tests.conftest import REPO

    out = bytes(tmp_path) + b"/\xff\xfe-out"
    res = subprocess.run([sys.executable.encode(), b"-m", b"ltr_cli", b"run",
                          bytes(REPO / "configs" / "simulated_separable.yaml"), b"--out", out, b"-q"],
                         capture_output=True)
    err = res.stderr.decode()
    assert res.returncode == 1 and err.startswith("ltr: error: argument 4") and "UTF-8" in err
    assert len(err.strip().splitlines()) == 1
    import os

    assert not os.path.exists(out)


def test_batch_resume_refuses_a_finished_cv_run_whose_files_changed(tmp_path):
    from tests.conftest import REPO
    from tests.test_batch_protocol import make_letor

    root = tmp_path / "OHSUMED"
    make_letor(root, queries=4, docs=6)
    args = ["run", str(REPO / "configs" / "letor_ohsumed.yaml"), "--out", str(tmp_path / "out"), "-q",
            "--learner", "ranksvm", "--set", f"dataset.root={root}", "--set", "learners.ranksvm.grid={C: [1]}"]
    assert runner.invoke(app, args).exit_code == 0
    again = runner.invoke(app, [*args, "--resume"])
    assert again.exit_code == 0  # unchanged data: counted as done
    test3 = next(root.rglob("Fold3/test*.txt"))
    test3.write_bytes(test3.read_bytes().replace(b"\n0 qid", b"\n2 qid", 1))
    res = runner.invoke(app, [*args, "--resume"])
    assert res.exit_code == 1
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith("ltr: error:") and "other data" in line


def test_sweep_never_counts_a_run_on_changed_data_as_done(tmp_path):
    data = tmp_path / "d.txt"
    _data(data, queries=30)
    cfg = tmp_path / "s.yaml"
    cfg.write_text(FILES.format(data=data, passes=1, every=0, cache="true")
                   + "sweep:\n  learners.slam.step.eta: [0.5, 1.0]\n")
    out = tmp_path / "out"
    first = runner.invoke(app, ["sweep", str(cfg), "--out", str(out), "-q"])
    assert first.exit_code == 0, first.output
    _data(data, queries=30, relabel=True)
    again = runner.invoke(app, ["sweep", str(cfg), "--out", str(out), "-q"])
    assert again.exit_code == 1
    assert "0 of 2 runs done" in again.stdout
    errors = [line for line in again.stderr.splitlines() if line.startswith("ltr: error:")]
    assert len(errors) == 2 and all("other data" in line for line in errors)


@pytest.mark.parametrize("cache", [True, False])
def test_an_implicit_group_file_is_part_of_the_data_identity(tmp_path, cache):
    """A group file picked up next to the data file (<file>.group) is keyed and recorded:
    editing it (same size, same mtime) rebuilds the cache and refuses the old run."""
    import os

    import numpy as np

    rng = np.random.default_rng(3)
    data = tmp_path / "g.txt"
    data.write_text("".join(f"{int(rng.integers(0, 3))} 1:{rng.random():.3f} 2:{rng.random():.3f}\n"
                            for _ in range(240)))
    group = tmp_path / "g.txt.group"
    group.write_text("8\n" * 30)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"experiment: g\ndataset: {{kind: files, files: [{data}], features: 2}}\n"
                   f"cache: {{enabled: {str(cache).lower()}}}\nlearners: {{s: {{type: slam-perceptron}}}}\n")
    out = tmp_path / "out"
    assert runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"]).exit_code == 0
    st = group.stat()
    group.write_text("7\n9\n" + "8\n" * 28)
    os.utime(group, ns=(st.st_atime_ns, st.st_mtime_ns))
    res = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q", "--resume"])
    assert res.exit_code == 1 and "other data" in res.stderr
    fresh = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "b"), "-q",
                                "--set", f"cache.dir={out / '.cache'}"])
    truth = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "t"), "-q",
                                "--set", "cache.enabled=false"])
    assert fresh.exit_code == truth.exit_code == 0
    assert _final_ndcg(tmp_path / "b") == _final_ndcg(tmp_path / "t")




def _records(ckpt):
    """The payloads of a checkpoint file (format 3: magic, then length + SHA-256 + payload)."""
    raw = ckpt.read_bytes()
    assert raw[:8] == b"LTRCKPT3"
    payloads, at = [], 8
    while at < len(raw):
        n = int.from_bytes(raw[at:at + 8], "little")
        payloads.append(raw[at + 40:at + 40 + n])
        at += 40 + n
    return payloads


def _write_records(ckpt, payloads):
    """A checkpoint file of these payloads, each with a correct digest (so a crafted
    payload reaches the field checks)."""
    import hashlib

    ckpt.write_bytes(b"LTRCKPT3" + b"".join(len(p).to_bytes(8, "little") + hashlib.sha256(p).digest() + p
                                           for p in payloads))


def _rewrite(ckpt, change):
    """Change the last record's state and arrays with ``change(meta, arrays)``."""
    import io
    import json

    import numpy as np

    payloads = _records(ckpt)
    with np.load(io.BytesIO(payloads[-1]), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays["state.json"].tobytes())
    change(meta, arrays)
    if meta is not None:
        arrays["state.json"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    _write_records(ckpt, payloads[:-1] + [buf.getvalue()])


CRAFTED = {
    "other-learner-class": lambda m, a: m["learner"].update({"class": "ListNet"}),
    "rng-for-a-learner-without-one": lambda m, a: m["learner"].update({"rng": m["tie_rng"]}),
    "weights-of-other-width": lambda m, a: a.update({"learner.w": a["learner.w"][:-1].copy()}),
    "weights-missing": lambda m, a: a.pop("learner.w"),
    "huge-learner-counter": lambda m, a: m["learner"].update({"t": 10 ** 20}),
    "nan-weights": lambda m, a: a.update({"learner.w": a["learner.w"] * float("nan")}),
    "inf-metric": lambda m, a: a.update({"col.ndcg@10": a["col.ndcg@10"] + float("inf")}),
    "format-float": lambda m, a: m.update({"format": 3.0}),
    "gap-between-records": lambda m, a: m.update({"from": m["from"] + 1}),
    "rows-of-other-length": lambda m, a: a.update({"col.m": a["col.m"][:-1].copy()}),
}


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory):
    import subprocess
    import sys

    tmp = tmp_path_factory.mktemp("killed")
    data = tmp / "d.txt"
    _data(data, queries=300)
    cfg = _config(tmp, data, passes=3, every=50)
    killed = tmp / "killed"
    proc = subprocess.run([sys.executable, "-c", _KILL_AFTER_SAVE, str(cfg), str(killed)], capture_output=True)
    assert proc.returncode == 9, proc.stderr
    (ckpt,) = list((killed / "ident").glob(".*.checkpoint"))
    return cfg, killed, ckpt


@pytest.mark.parametrize("craft", sorted(CRAFTED) + ["deep-json", "huge-header", "damaged-record", "compressed-record"])
def test_crafted_checkpoint_fields_are_one_line_errors(tmp_path, killed_run, craft):
    import shutil
    import struct
    import zipfile

    cfg, killed, ckpt = killed_run
    out = tmp_path / "out"
    shutil.copytree(killed, out)
    mine = out / "ident" / ckpt.name
    import io

    if craft == "deep-json":
        zipped = io.BytesIO()
        with zipfile.ZipFile(zipped, "w") as z:
            import numpy as np

            buf = io.BytesIO()
            np.save(buf, np.frombuffer(b"[" * 200_000, dtype=np.uint8))
            z.writestr("state.json.npy", buf.getvalue())
        _write_records(mine, [zipped.getvalue()])
    elif craft == "huge-header":
        hdr = "{'descr': '|u1', 'fortran_order': False, 'shape': (1000000000000000,), }"
        hdr += " " * ((64 - (11 + len(hdr)) % 64) % 64) + "\n"
        zipped = io.BytesIO()
        with zipfile.ZipFile(zipped, "w") as z:
            z.writestr("state.json.npy", b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        _write_records(mine, [zipped.getvalue()])
    elif craft == "compressed-record":
        import numpy as np

        zipped = io.BytesIO()
        np.savez_compressed(zipped, **{"state.json": np.zeros(10, np.uint8)})
        _write_records(mine, [zipped.getvalue()])
    elif craft == "damaged-record":
        raw = bytearray(mine.read_bytes())
        raw[60] ^= 0xFF  # inside the first record's payload: its digest no longer matches
        mine.write_bytes(bytes(raw))
    else:
        _rewrite(mine, CRAFTED[craft])
    res = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q", "--resume"])
    assert res.exit_code == 1, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith("ltr: error:") and mine.name in line and "delete it" in line


@pytest.mark.parametrize("argv", [["run"], ["run", "x.yaml", "--bogus"], ["sweep", "x.yaml", "--jobs", "0"],
                                  ["plot", "x", "--max-rounds", "0"], ["nosuch"]])
def test_usage_errors_are_one_line_with_status_1(argv):
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "ltr_cli", *argv], capture_output=True, text=True)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ltr: error:") and "--help" in lines[0], res.stderr


def test_a_cache_rebuilt_under_a_running_run_does_not_change_what_it_reads(tmp_path):
    """A run reads one version of its data: once its cache is open, another process that
    relabels the file and rebuilds the cache changes neither the labels nor the rows the
    run reads (window by window, or as the block loop's arrays)."""
    import numpy as np

    from ltr_cli.data.cache import open_cached
    from ltr_cli.data.svmlight import ReaderOptions

    data = tmp_path / "d.txt"
    _data(data, queries=60)
    opts = ReaderOptions(n_features=5)
    running = open_cached(data, opts, tmp_path / "c")
    first = [q.y.copy() for q in running.queries(window_bytes=256)]
    _data(data, queries=60, relabel=True)  # relabelled, and the cache rebuilt by "another command"
    rebuilt = open_cached(data, opts, tmp_path / "c")
    assert rebuilt.directory == running.directory
    assert [q.y.tolist() for q in rebuilt.queries()] != [y.tolist() for y in first]
    again = [q.y for q in running.queries(window_bytes=256)]
    assert all(np.array_equal(a, b) for a, b in zip(first, again)) and len(again) == len(first)
    X, y = running.arrays()
    assert np.array_equal(y, np.concatenate(first))


def test_a_cache_whose_labels_the_readers_refuse_is_rebuilt(tmp_path):
    """A crafted y.bin (a label of 5000, NaN) with a matching digest is not trusted: the
    cache is rebuilt from the source and the run reads the source's labels."""
    import json

    import numpy as np
    import xxhash

    from ltr_cli.data.cache import open_cached
    from ltr_cli.data.svmlight import ReaderOptions

    data = tmp_path / "d.txt"
    _data(data, queries=10)
    opts = ReaderOptions(n_features=5)
    first = open_cached(data, opts, tmp_path / "c", log=lambda m: None)
    original = first.labels.copy()
    for bad in (5000.0, float("nan")):
        y = original.copy()
        y[3] = bad
        (first.directory / "y.bin").write_bytes(y.tobytes())
        meta = json.loads((first.directory / "meta.json").read_text())
        meta["digests"]["y.bin"] = xxhash.xxh3_128_hexdigest(y.tobytes())
        (first.directory / "meta.json").write_text(json.dumps(meta))
        notes: list[str] = []
        again = open_cached(data, opts, tmp_path / "c", log=notes.append)
        assert np.array_equal(again.labels, original) and "invalid" in notes[0]


def test_select_by_never_takes_a_nan_score_for_the_best(tmp_path):
    import json

    import pandas as pd

    from ltr_cli.reports.selection import select
    from ltr_cli.results.folders import find_runs, read_run
    from tests.conformance import write_config, write_data

    data = write_data(tmp_path / "a.txt", queries=30)
    out = tmp_path / "out"
    for eta in (0.5, 1.0):
        cfg = write_config(tmp_path / f"c{eta}.yaml", [data],
                           {"slam": {"type": "slam-perceptron", "step": {"rule": "constant", "eta": eta}}})
        assert runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"]).exit_code == 0
    runs = [read_run(d) for d in find_runs([out])]
    nan_run = runs[0]
    rounds = pd.read_parquet(nan_run.path / "rounds.parquet")
    rounds["ap"] = float("nan")
    rounds.to_parquet(nan_run.path / "rounds.parquet", index=False)
    summary = json.loads((nan_run.path / "summary.json").read_text())  # consistent with it
    summary["metrics"]["ap"] = {key: None for key in summary["metrics"]["ap"]}
    (nan_run.path / "summary.json").write_text(json.dumps(summary))
    (choice,) = select([read_run(d) for d in find_runs([out])], "ap", 10)
    assert nan_run.path not in [r.path for r in choice.runs] and choice.score == choice.score


def test_running_out_of_memory_is_one_line(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app
    from ltr_cli.runs import runner as run_module

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(run_module, "run_experiment", exhausted)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("experiment: oom\ndataset: {kind: separable, queries: 5}\nlearners: {s: {type: slam-perceptron}}\n")
    res = CliRunner().invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out")])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit)
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("ltr: error: out of memory:")
