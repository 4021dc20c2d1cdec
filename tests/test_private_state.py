"""Issue 31, items 4 and 6: numba's kernel cache is used only where nobody else can write
(its index files are pickles), and nothing a killed process leaves behind lingers."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


class _Exploit:
    """Unpickling this creates the file ``target``."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


def test_a_world_writable_home_is_not_a_cache(tmp_path):
    from ltr_cli.kernels import numba_cache

    home = tmp_path / "home"
    (home / ".cache" / "ltr-cli" / "numba" / "src-none").mkdir(parents=True)
    home.chmod(0o777)  # anyone may replace .cache (and what is below it)
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    assert numba_cache.configure(tmp_path / "ro" / "ltr_cli", env) in ("temp", "private-temp")
    assert not env["NUMBA_CACHE_DIR"].startswith(str(home))
    assert numba_cache.private(home / ".cache") is False
    home.chmod(0o755)
    assert numba_cache.private(home / ".cache" / "ltr-cli" / "numba" / "src-none")
    (home / ".cache" / "ltr-cli").chmod(0o775)  # group-writable on the way: not private
    assert not numba_cache.private(home / ".cache" / "ltr-cli" / "numba" / "src-none")
    link = tmp_path / "link"
    link.symlink_to(home / ".cache" / "ltr-cli" / "numba")  # a link is followed and its target checked
    assert not numba_cache.private(link / "src-none")
    (home / ".cache" / "ltr-cli").chmod(0o755)
    assert numba_cache.private(link / "src-none")


def test_a_numba_cache_others_can_write_is_never_loaded(tmp_path, monkeypatch):
    """The kernels' real cache files, copied to a world-writable folder with every index file
    replaced by a pickle that creates OWNED: ltr compiles afresh and nothing runs. (numba's
    kernels: the scanner built ahead of time is switched off, LTR_AHEAD=0.)"""
    from ltr_cli.data.options import ReaderOptions
    from ltr_cli.data.svmlight import SVMLightReader
    from ltr_cli.kernels import ahead

    monkeypatch.setenv(ahead.SWITCH, "0")
    ahead.reset()
    monkeypatch.setattr(ahead, "_STATE", {})  # looked up afresh here, and again after the test
    monkeypatch.setattr(ahead, "_KERNELS", {})

    data = tmp_path / "d.txt"
    data.write_text("1 qid:1 1:0.5 2:1\n0 qid:1 1:0.25\n2 qid:2 2:3\n")
    assert len(list(SVMLightReader(data, ReaderOptions(n_features=2)))) == 2  # compiled and cached here
    mine = Path(os.environ["NUMBA_CACHE_DIR"])
    assert list(mine.rglob("*fastscan*.nbi"))
    planted = tmp_path / "shared"
    planted.mkdir()
    planted.chmod(0o777)
    shutil.copytree(mine, planted / mine.name)
    owned = tmp_path / "OWNED"
    indexes = list((planted / mine.name).rglob("*.nbi"))
    for index in indexes:
        index.write_bytes(pickle.dumps(_Exploit(str(owned))))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(planted)}
    res = subprocess.run([sys.executable, "-m", "ltr_cli", "data", "inspect", str(data), "--features", "2"],
                         capture_output=True, text=True, env=env, cwd=REPO)
    assert res.returncode == 0, res.stderr
    assert not owned.exists()
    # the same files in a private folder are loaded (so the test would see code run)
    planted.chmod(0o700)
    res = subprocess.run([sys.executable, "-m", "ltr_cli", "data", "inspect", str(data), "--features", "2"],
                         capture_output=True, text=True, env=env, cwd=REPO)
    assert owned.exists()


def _owned_by_another_user(path: Path, monkeypatch) -> None:
    """Make ``path`` (a link) another user's: truly when running as root, else as ``lstat``
    reports it (what the privacy check reads)."""
    if os.getuid() == 0:
        os.lchown(path, 4242, 4242)
        return
    real = os.lstat

    def lstat(p, *args, **kwargs):
        st = real(p, *args, **kwargs)
        if os.fspath(p) == str(path):
            fields = list(st)
            fields[4] = os.getuid() + 4242  # st_uid
            return os.stat_result(fields)
        return st

    monkeypatch.setattr(os, "lstat", lstat)


def test_another_users_link_behind_a_link_of_ones_own_is_refused_and_cannot_be_swapped(tmp_path, monkeypatch):
    """~/.cache -> /tmp/x, x another user's link aimed at a directory of ours: x is refused
    wherever it is met, and the place handed to numba holds no link, so repointing x at a
    folder of planted pickles after the check changes nothing."""
    import tempfile

    from ltr_cli.kernels import numba_cache

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp
    home, good, evil = tmp_path / "home", tmp_path / "good", shared / "evil"
    home.mkdir(mode=0o700)
    good.mkdir(mode=0o700)
    evil.mkdir()
    x = shared / "x"
    x.symlink_to(good)
    (home / ".cache").symlink_to(x)
    _owned_by_another_user(x, monkeypatch)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir(mode=0o700)
    env = {"HOME": str(home)}
    word = numba_cache.configure(tmp_path / "ro" / "ltr_cli", env)
    chosen = env["NUMBA_CACHE_DIR"]
    x.unlink()
    x.symlink_to(evil)  # the swap (the other user owns x)
    assert not os.path.realpath(chosen).startswith(str(evil))
    assert word == "temp" and chosen == str(tmp_path / "tmp" / f"ltr-cli-numba-{os.getuid()}" / "by-module")
    assert not numba_cache.private(home / ".cache" / "ltr-cli")


def test_the_cache_place_handed_to_numba_is_resolved_through_ones_own_links(tmp_path):
    from ltr_cli.kernels import numba_cache

    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "hop").symlink_to(real)
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / ".cache").symlink_to(tmp_path / "hop")  # two links of ours
    env = {"HOME": str(home)}
    assert numba_cache.configure(tmp_path / "ro" / "ltr_cli", env) == "user-cache"
    assert env["NUMBA_CACHE_DIR"] == str(real / "ltr-cli" / "numba" / "by-module")
    assert os.path.realpath(env["NUMBA_CACHE_DIR"]) == env["NUMBA_CACHE_DIR"]
    assert numba_cache.resolve_private(home / ".cache" / "ltr-cli" / ".." / "ltr-cli" / "numba") == \
        real / "ltr-cli" / "numba"


def test_relative_cache_variables_never_name_a_folder_of_the_working_directory(tmp_path, monkeypatch, capsys):
    """A received folder (the user's own, so private) with planted caches in rel/ and .cache/:
    a relative NUMBA_CACHE_DIR is ignored with a note, a relative XDG_CACHE_HOME or HOME is
    ignored (the XDG specification), so neither is chosen."""
    from ltr_cli.kernels import numba_cache

    received = tmp_path / "received"
    for planted in ("rel/by-module", ".cache/ltr-cli/numba/by-module", "home/.cache/ltr-cli/numba/by-module"):
        (received / planted).mkdir(parents=True, mode=0o700)
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.chdir(received)
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir(mode=0o700)
    for env in ({"NUMBA_CACHE_DIR": "rel", "HOME": str(home)}, {"XDG_CACHE_HOME": ".cache", "HOME": str(home)},
                {"NUMBA_CACHE_DIR": "rel", "XDG_CACHE_HOME": ".cache", "HOME": "home"}):
        word = numba_cache.configure(tmp_path / "ro" / "ltr_cli", env)
        chosen = env["NUMBA_CACHE_DIR"]
        assert os.path.isabs(chosen) and not chosen.startswith(str(received)), (env, word)
    assert capsys.readouterr().err.count("NUMBA_CACHE_DIR=rel is a relative path") == 2


# --- item 6: nothing left behind ------------------------------------------------------------

_DIE_WHILE_CACHING = """
import os, signal, sys
from pathlib import Path
from ltr_cli.data import cache as c
from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader
real = SVMLightReader.dense_queries
def dying(self, dtype):
    for i, q in enumerate(real(self, dtype)):
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        yield q
SVMLightReader.dense_queries = dying
c.open_cached(Path(sys.argv[1]), ReaderOptions(n_features=5), Path(sys.argv[2]))
"""


def _letor(path: Path, queries: int = 20, seed: int = 0) -> Path:
    import numpy as np

    rng = np.random.default_rng(seed)
    path.write_text("".join(f"{int(rng.integers(0, 3))} qid:{q + 1} "
                            + " ".join(f"{j + 1}:{rng.random():.3f}" for j in range(5)) + "\n"
                            for q in range(queries) for _ in range(4)))
    return path


def test_a_cache_build_killed_by_sigkill_leaves_no_temporary(tmp_path):
    import fcntl

    from ltr_cli.data.cache import open_cached
    from ltr_cli.data.svmlight import ReaderOptions

    cache = tmp_path / "cache"
    left = []
    for name in ("a.txt", "b.txt"):
        data = _letor(tmp_path / name)
        proc = subprocess.run([sys.executable, "-c", _DIE_WHILE_CACHING, str(data), str(cache)],
                              capture_output=True, cwd=REPO)
        assert proc.returncode == -9, proc.stderr
        left.append(sorted(p.name for p in cache.glob(".*.tmp-*")))
    # a's dead build is left; b's builder (another key) removed it, then died itself
    assert len(left[0]) == 1 and left[0][0].startswith(".a.txt-")
    assert len(left[1]) == 1 and left[1][0].startswith(".b.txt-")
    (tmp_path / "a.txt").write_text((tmp_path / "a.txt").read_text() + "1 qid:99 1:1\n")
    proc = subprocess.run([sys.executable, "-c", _DIE_WHILE_CACHING, str(tmp_path / "a.txt"), str(cache)],
                          capture_output=True, cwd=REPO)
    assert proc.returncode == -9 and len(list(cache.glob(".*.tmp-*"))) == 1  # b's removed, a's (new key) left
    live = cache / ".c.txt-0123.tmp-1"  # a build in progress (its key's lock is held): kept
    live.mkdir()
    with open(cache / ".c.txt-0123.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        open_cached(tmp_path / "a.txt", ReaderOptions(n_features=5), cache)  # builds a; clears a's and b's
        assert sorted(p.name for p in cache.glob(".*.tmp-*")) == [live.name]
    open_cached(tmp_path / "a.txt", ReaderOptions(n_features=5), cache)  # a cache hit clears too
    assert not list(cache.glob(".*.tmp-*"))


_DIE_AT_SECOND_FINISH = """
import os, sys
from ltr_cli.runs import online as online_runs
orig = online_runs._finish
calls = []
def finish(*a, **k):
    calls.append(1)
    if len(calls) == 2:
        os._exit(9)
    return orig(*a, **k)
online_runs._finish = finish
from ltr_cli.cli.app import main
sys.argv = ['ltr', 'run', sys.argv[1], '--out', sys.argv[2], '-q']
main()
"""


def test_locks_of_complete_runs_do_not_outlive_a_killed_run(tmp_path):
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    cfg, sweep = tmp_path / "c.yaml", tmp_path / "s.yaml"
    cfg.write_text("experiment: locks\ndataset: {kind: separable, queries: 30}\nprotocol: {checkpoint_every: 0}\n"
                   "learners: {a: {type: slam-perceptron}, b: {type: slam-perceptron, step: {eta: 0.5}}}\n")
    sweep.write_text(cfg.read_text() + "sweep: {seed: [0]}\n")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", _DIE_AT_SECOND_FINISH, str(cfg), str(out)],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 9, proc.stderr
    folder = out / "locks"
    (done,) = [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
    locks = sorted(p.name for p in folder.glob(".*.lock"))
    assert f".{done.name}.lock" not in locks and len(locks) == 1  # the written run's lock went with it
    stale = folder / f".{done.name}.lock"  # as a kill between writing and releasing would leave it
    stale.write_text("somehost 999999\n")
    status = CliRunner().invoke(app, ["sweep", str(sweep), "--out", str(out), "--status"])
    assert status.exit_code == 0, status.output
    assert sorted(line.split()[0] for line in status.stdout.splitlines()[:2]) == ["done", "pending"], status.stdout
    import fcntl

    with open(stale) as held:  # even a lock some process holds: a finished run is done, not running
        fcntl.flock(held, fcntl.LOCK_EX)
        status = CliRunner().invoke(app, ["sweep", str(sweep), "--out", str(out), "--status"])
        assert f"done     locks/{done.name}" in status.stdout and "running=0" in status.stdout
    res = CliRunner().invoke(app, ["run", str(cfg), "--out", str(out), "-q", "--resume"])
    assert res.exit_code == 0, res.output
    assert not list(folder.glob(".*.lock"))  # the complete run's leftover lock is removed too


def test_a_metadata_refresh_killed_midway_leaves_nothing_behind(tmp_path):
    """A touched source file makes the next open refresh meta.json through a temporary; one
    left by a killed process (only the key's lock holder writes it) is removed."""
    import os

    from ltr_cli.data.cache import open_cached
    from ltr_cli.data.svmlight import ReaderOptions

    data = _letor(tmp_path / "a.txt")
    cache = tmp_path / "cache"
    first = open_cached(data, ReaderOptions(n_features=5), cache)
    (first.directory / ".meta.json.tmp-999999").write_text("{")
    os.utime(data, ns=(1, 1))  # same bytes, another stat key: the record is refreshed
    again = open_cached(data, ReaderOptions(n_features=5), cache)
    assert again.directory == first.directory
    assert not list(again.directory.glob(".meta.json.tmp-*"))


def test_the_kernel_cache_is_named_by_the_compiled_sources_of_this_package():
    """The default package is ltr_cli itself (not kernels/, where this module lives): each
    kernel module's folder is named by its own sources and those of the kernels it imports,
    found in this package."""
    from ltr_cli.kernels import numba_cache

    assert (numba_cache.PACKAGE / "kernels" / "loop.py").is_file()
    sources = dict(numba_cache.module_sources("ltr_cli.kernels.loop"))
    assert sources["ltr_cli.kernels.loop"] == numba_cache.PACKAGE / "kernels" / "loop.py"
    assert sources["ltr_cli.kernels.measures"] == numba_cache.PACKAGE / "kernels" / "measures.py"
    assert numba_cache.module_digest("ltr_cli.kernels.loop") != "none"
    assert numba_cache.module_digest("no_such_module_anywhere") == "none"


def test_temporaries_are_never_written_through_planted_links(tmp_path):
    """The cache's metadata refresh and a sweep's failure record create their temporaries
    exclusively: a link planted under any name they might use is never written through."""
    import os

    from ltr_cli.data.cache import open_cached
    from ltr_cli.data.svmlight import ReaderOptions
    from ltr_cli.outputs import replace_text

    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    data = _letor(tmp_path / "a.txt")
    first = open_cached(data, ReaderOptions(n_features=5), tmp_path / "cache")
    for pid in range(os.getpid(), os.getpid() + 50):
        (first.directory / f".meta.json.tmp-{pid}").symlink_to(victim)
    os.utime(data, ns=(1, 1))
    open_cached(data, ReaderOptions(n_features=5), tmp_path / "cache")
    target = tmp_path / "record.json"
    (tmp_path / f".record.json.tmp-{os.getpid()}").symlink_to(victim)
    replace_text(target, "{}")
    assert victim.read_text() == "untouched" and target.read_text() == "{}"


def test_a_checkpoint_left_beside_a_complete_run_is_removed_by_resume(tmp_path):
    """A kill between writing a run and deleting its checkpoint leaves the checkpoint beside
    a complete run: --resume skips the run and removes it, so a plain run does not stop on
    it again and again."""
    import shutil

    from typer.testing import CliRunner

    from ltr_cli.cli.app import app
    from tests.conformance import write_config, write_data

    cli = CliRunner()
    cfg = write_config(tmp_path / "c.yaml", [write_data(tmp_path / "a.txt", queries=30)],
                       {"slam": {"type": "slam-perceptron"}}, protocol="{passes: 2, checkpoint_every: 20}")
    out = tmp_path / "out"
    assert cli.invoke(app, ["run", str(cfg), "--out", str(out), "-q"]).exit_code == 0
    (run_dir,) = [p for p in (out / "conformance").iterdir() if not p.name.startswith(".")]
    leftover = out / "conformance" / f".{run_dir.name}.checkpoint"
    shutil.copy(__file__, leftover)  # any file: its content is never read for a complete run
    assert cli.invoke(app, ["run", str(cfg), "--out", str(out), "-q"]).exit_code == 1
    res = cli.invoke(app, ["run", str(cfg), "--out", str(out), "--resume"])
    assert res.exit_code == 0 and "complete, skipped" in res.stderr
    assert not leftover.exists()
    assert cli.invoke(app, ["run", str(cfg), "--out", str(out), "-q"]).exit_code == 0
