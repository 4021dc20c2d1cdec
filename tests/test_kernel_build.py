"""``ltr kernels build`` / ``status``: the kernel cache filled ahead of any run."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.kernels import ahead
from ltr_cli.kernels.numba_cache import cached_function
from ltr_cli.runs.kernel_build import EVALUATION_KERNEL, families
from ltr_cli.runs.kernel_plan import family_named

runner = CliRunner()


@pytest.fixture
def jit_only(monkeypatch):
    """numba's kernels only: the kernels built ahead of time are not used (LTR_AHEAD=0)."""
    monkeypatch.setenv(ahead.SWITCH, "0")
    ahead.reset()
    yield
    monkeypatch.undo()
    ahead.reset()


def test_dry_run_lists_every_declared_family_with_the_examples_that_run_it():
    res = runner.invoke(app, ["kernels", "build", "--dry-run"])
    assert res.exit_code == 0, res.output
    lines = dict(line.split(": ", 1) for line in res.output.splitlines())
    assert list(lines) == families() and {"perceptron", "ogd", "random", "rtopkf", "rounds", "evaluation"} <= set(lines)
    assert "rtopkf0" in lines["rtopkf"].split(", ") and "slam-perceptron0" in lines["perceptron"].split(", ")
    assert "listnet0" in lines["rounds"].split(", ")  # logging its regret, ListNet runs round by round


def test_build_one_family_fills_the_cache_and_a_second_build_compiles_nothing(jit_only):
    res = runner.invoke(app, ["kernels", "build", "--family", "rtopkf"])
    assert res.exit_code == 0, res.output
    assert "rtopkf: building (rtopkf0" in res.output and "ogd:" not in res.output
    assert cached_function(family_named("rtopkf").block_kernel)
    again = runner.invoke(app, ["kernels", "build", "--family", "rtopkf"])
    assert again.exit_code == 0, again.output
    assert "rtopkf: nothing to compile (cached)" in again.output
    assert "nothing to compile: the kernel cache already holds 1 family" in again.output
    status = runner.invoke(app, ["kernels", "status"])
    assert status.exit_code == 0 and "rtopkf: cached" in status.output


def test_an_unknown_family_is_a_one_line_error():
    res = runner.invoke(app, ["kernels", "build", "--family", "nope", "--dry-run"])
    assert res.exit_code == 1
    assert res.output.strip().count("\n") == 0 and "--family nope: no block family" in res.output


def test_a_build_on_an_empty_cache_compiles_the_family_and_a_second_compiles_nothing(tmp_path, monkeypatch, jit_only):
    """In a process of its own, on a fresh private kernel cache: one small family."""
    cache = tmp_path / "cache" / "by-module"
    cache.mkdir(mode=0o700, parents=True)
    (tmp_path / "cache").chmod(0o700)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(cache))
    kernel = family_named("random").block_kernel
    assert not cached_function(kernel) and not cached_function(EVALUATION_KERNEL)

    env = _counting_compiles(tmp_path)

    def build() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ltr_cli", "kernels", "build", "--family", "random",
                               "--family", "evaluation"],
                              capture_output=True, text=True, cwd=tmp_path, env=env)

    first = build()
    assert first.returncode == 0, first.stderr
    assert "random: compiled" in first.stderr and first.stdout.startswith("compiled ")
    assert cached_function(kernel) and cached_function(EVALUATION_KERNEL)
    assert "evaluation: compiled" in first.stderr
    second = build()
    assert second.returncode == 0, second.stderr
    assert "random: nothing to compile (cached)" in second.stderr
    assert "evaluation: nothing to compile (cached)" in second.stderr
    assert second.stdout.startswith("nothing to compile")
    status = subprocess.run([sys.executable, "-c", _STATUS_WITHOUT_NUMBA], capture_output=True, text=True,
                            cwd=tmp_path, env=os.environ.copy())
    assert status.returncode == 0, status.stderr
    assert "random: cached" in status.stdout and "evaluation: cached" in status.stdout
    assert "ogd: not cached" in status.stdout and status.stdout.rstrip().endswith("numba not imported")


_COMPILE_LISTENER = """
import os, time
from numba.core import event


class _Clock(event.Listener):
    depth, t0 = 0, 0.0

    def on_start(self, e):
        if _Clock.depth == 0:
            _Clock.t0 = time.process_time()
        _Clock.depth += 1

    def on_end(self, e):
        _Clock.depth -= 1
        if _Clock.depth == 0:
            with open(os.environ["LTR_TESTS_COMPILE_LOG"], "a") as f:
                f.write(f"{time.process_time() - _Clock.t0}\\n")


event.register("numba:compile", _Clock())
"""


def _counting_compiles(tmp_path):
    """The environment of a child ``ltr`` whose numba compiles the suite's time limit leaves
    out, as it does a forked child's: a ``sitecustomize`` that writes each outermost
    compile's CPU seconds to the suite's compile log."""
    from tests import conftest

    hook = tmp_path / "compile-hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_COMPILE_LISTENER)
    env = os.environ.copy()
    env["PYTHONPATH"] = os.pathsep.join([str(hook), *filter(None, [env.get("PYTHONPATH")])])
    if conftest._CLOCK is not None:
        env["LTR_TESTS_COMPILE_LOG"] = str(conftest._CLOCK.log)
    else:  # no clock in this session: the child's compiles go nowhere
        env["LTR_TESTS_COMPILE_LOG"] = os.devnull
    return env


_STATUS_WITHOUT_NUMBA = """
import sys
import pytest
from typer.testing import CliRunner
from ltr_cli.cli.app import app
from ltr_cli.kernels import ahead
print(CliRunner().invoke(app, ["kernels", "status"]).output)
print("numba imported" if "numba" in sys.modules else "numba not imported")
"""
