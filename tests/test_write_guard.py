"""The suite's guard that it leaves the working tree as it found it blames only what the
tests create (tests/guard_site/write_guard.py), never a run of the user's own writing into
results/ meanwhile."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import write_guard
from write_guard import LOG, ROOT, created_path, left_behind, recorded

from tests.conftest import GUARD_SITE, REPO

WRITES = """
import os, sys
root = sys.argv[1]
os.makedirs(os.path.join(root, "results", "run-a"))
with open(os.path.join(root, "results", "run-a", "summary.json"), "w") as f:
    f.write("{}")
with open(os.path.join(root, "left.txt"), "w") as f:
    f.write("x")
tmp = os.path.join(sys.argv[2], "part")
with open(tmp, "w") as f:
    f.write("x")
os.replace(tmp, os.path.join(root, "results", "run-b.parquet"))
with open(os.path.join(root, "results", "README.md"), "w") as f:  # was there: changed, not created
    f.write("changed")
with open(os.path.join(root, "gone.txt"), "w") as f:
    f.write("x")
os.remove(os.path.join(root, "gone.txt"))
os.makedirs(os.path.join(root, "__pycache__"))  # a tool's cache
open(os.path.join(root, ".coverage"), "w").close()  # a hidden top-level entry (pytest-cov's data)
"""

USERS_RUN = """
import os, sys
os.makedirs(os.path.join(sys.argv[1], "results", "users-experiment", "run-1"))
open(os.path.join(sys.argv[1], "results", "users-experiment", "run-1", "rounds.parquet"), "w").close()
"""


def test_what_an_operation_creates():
    assert created_path("open", ("a.txt", "w", 0)) == "a.txt"
    assert created_path("open", ("a.txt", "rb", 0)) is None
    assert created_path("open", ("a.txt", "r+", 0)) == "a.txt"
    assert created_path("open", ("a.txt", None, os.O_WRONLY | os.O_CREAT)) == "a.txt"
    assert created_path("open", ("a.txt", None, os.O_RDONLY)) is None
    assert created_path("open", (3, "w", 0)) is None  # a file descriptor: nothing new
    assert created_path("os.mkdir", ("d", 0o777, -1)) == "d"
    assert created_path("os.replace", ("tmp", "dst", -1, -1)) == "dst"
    assert created_path("os.symlink", ("target", "link", -1)) == "link"
    assert created_path("import", ("os", None, [], [], [])) is None


def test_only_what_the_tests_processes_create_is_blamed(tmp_path):
    """A test process (the guard inherited through PYTHONPATH) leaves a file and two run
    outputs; the user's own run, a process the suite did not start, writes into results/ at
    the same time. Only the test's are left behind; the old guard compared the tree's
    entries before and after, and blamed the user's run too."""
    root = tmp_path / "checkout"
    (root / "results").mkdir(parents=True)
    (root / "results" / "README.md").write_text("results")
    log = tmp_path / "writes.log"
    env = {**os.environ, LOG: str(log), ROOT: str(root), "PYTHONPATH": str(GUARD_SITE)}
    subprocess.run([sys.executable, "-c", WRITES, str(root), str(tmp_path)], env=env, check=True)
    users = {k: v for k, v in os.environ.items() if k not in (LOG, ROOT, "PYTHONPATH")}
    subprocess.run([sys.executable, "-c", USERS_RUN, str(root)], env=users, check=True)
    assert (root / "results" / "users-experiment" / "run-1" / "rounds.parquet").is_file()
    assert left_behind(str(root), recorded(str(log))) == ["left.txt", "results/run-a", "results/run-b.parquet"]


def test_this_session_records_its_own_and_its_childrens_creations():
    """The hook is installed in the pytest process, and a Python process a test starts
    inherits it (the suite's log and checkout in its environment)."""
    assert write_guard._installed and os.environ[ROOT] == str(REPO)
    here, child = REPO / f"guard-probe-{os.getpid()}", REPO / f"guard-probe-child-{os.getpid()}"
    try:
        here.write_text("x")
        subprocess.run([sys.executable, "-c", f"open({str(child)!r}, 'w').close()"], check=True)
        assert child.is_file()
    finally:
        here.unlink(missing_ok=True)
        child.unlink(missing_ok=True)
    created = recorded(os.environ[LOG])
    assert here.name in created and child.name in created
    assert not {here.name, child.name} & set(left_behind(str(REPO), created))  # removed: not left behind
    assert not Path(REPO / here.name).exists()
