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
    from ltr_cli import numba_cache

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


def test_a_numba_cache_others_can_write_is_never_loaded(tmp_path):
    """The kernels' real cache files, copied to a world-writable folder with every index file
    replaced by a pickle that creates OWNED: ltr compiles afresh and nothing runs."""
    from ltr_cli.data.options import ReaderOptions
    from ltr_cli.data.svmlight import SVMLightReader

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
