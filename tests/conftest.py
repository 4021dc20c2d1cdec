from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs the property tests derandomised, so a CI result can be reproduced exactly;
# locally every run explores new examples.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
# The real-data tests read the shared samples (data/yahoo-sample-lightgbm,
# data/mslr-web10k-fold1-5k, reference/authors-code-mslr5k.json) from ../shared beside the
# checkout, or from the folder LTR_SHARED_DATA names; each skips, saying so, when its file
# is absent.
SHARED_ENV = "LTR_SHARED_DATA"
SHARED = Path(os.environ[SHARED_ENV]).expanduser() if os.environ.get(SHARED_ENV) else REPO.parent / "shared"
YAHOO_SAMPLE = SHARED / "data" / "yahoo-sample-lightgbm"
MSLR_SAMPLE = SHARED / "data" / "mslr-web10k-fold1-5k" / "train.txt"
REAL_DATA_SKIP = "real data absent"


def absent(what: str) -> str:
    """The reason a real-data test skips: what is missing and how to point the tests at it."""
    return (f"{REAL_DATA_SKIP}: {what} is not under {SHARED} "
            f"(set {SHARED_ENV}=DIR, a folder holding data/ and reference/)")


@pytest.fixture
def yahoo_sample() -> Path:
    if not (YAHOO_SAMPLE / "rank.train").is_file():
        pytest.skip(absent("data/yahoo-sample-lightgbm"))
    return YAHOO_SAMPLE


def pytest_report_header(config):
    found = [p for p in (YAHOO_SAMPLE / "rank.train", MSLR_SAMPLE) if p.is_file()]
    if len(found) == 2:
        return f"real-data tests: reading the shared samples under {SHARED}"
    return (f"real-data tests: the shared samples are not under {SHARED}, so those tests skip "
            f"(set {SHARED_ENV}=DIR to run them)")


def pytest_terminal_summary(terminalreporter):
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if REAL_DATA_SKIP in str(r.longrepr)]
    if skipped:
        terminalreporter.write_line(f"{len(skipped)} real-data tests skipped: the shared samples are not under "
                                    f"{SHARED} (set {SHARED_ENV}=DIR, a folder holding data/ and reference/)")


@pytest.fixture
def write(tmp_path):
    """write(name, content) -> Path; bytes or str content."""

    def _write(name: str, content) -> Path:
        p = tmp_path / name
        if isinstance(content, str):
            content = content.encode()
        p.write_bytes(content)
        return p

    return _write


# --- the suite leaves the working tree as it found it ------------------------------------------
#
# Only what the tests create counts: an audit hook in this process and, through
# tests/guard_site/sitecustomize.py, in every Python process a test starts, records the paths
# inside the checkout they create (tests/guard_site/write_guard.py). A run of the user's own
# writing into results/ meanwhile is not a test's, and is never blamed.

GUARD_SITE = Path(__file__).resolve().parent / "guard_site"
sys.path.insert(0, str(GUARD_SITE))
import write_guard  # noqa: E402

if not os.environ.get(write_guard.LOG):  # xdist's workers inherit the controller's log
    _fd, _log = tempfile.mkstemp(prefix="ltr-tests-writes-")
    os.close(_fd)
    os.environ[write_guard.LOG], os.environ[write_guard.ROOT] = _log, str(REPO)
    os.environ["LTR_TESTS_GUARD_PID"] = str(os.getpid())  # the session that checks (not xdist's workers)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(GUARD_SITE), *filter(None, [os.environ.get("PYTHONPATH")])])
write_guard.install(os.environ[write_guard.ROOT], os.environ[write_guard.LOG])


def pytest_sessionstart(session: pytest.Session) -> None:
    _start_compile_clock()
    if not hasattr(session.config, "workerinput"):  # once per suite (xdist's controller), not per worker
        _warm_kernel_cache()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if a test left files in the checkout (e.g. results/<experiment>/ of a run
    without --out): tests write under tmp_path only."""
    if _CLOCK is not None:
        _CLOCK.log.unlink(missing_ok=True)
    if os.environ.get("LTR_TESTS_GUARD_PID") != str(os.getpid()):  # a worker, or a session a test started
        return
    log = os.environ[write_guard.LOG]
    left = write_guard.left_behind(str(REPO), write_guard.recorded(log))
    Path(log).unlink(missing_ok=True)
    if left:
        print(f"\nERROR: the tests left files in the working tree: {', '.join(left)}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def load_queries(spec, split: str, fold: int | None) -> list:
    """The queries ``[(X, y), ...]`` of one split (``train``, ``vali``, ``test``) of one fold
    of a batch config, uncached."""
    from ltr_cli.config.experiment import RegistryData
    from ltr_cli.protocols.cv_folds import open_folds, split_queries
    from ltr_cli.runs.plan import folds_plan

    ds = spec.dataset
    assert isinstance(ds, RegistryData)
    one = spec.model_copy(update={"dataset": ds.model_copy(update={"folds": None if fold is None else [fold]})})
    (chosen,) = open_folds(folds_plan(one, None))
    return split_queries(getattr(chosen, split))


def make_learner(type_: str, n_features: int, ties: str = "input-order", rng=None, planned_rounds: int | None = None,
                 fidelity: str = "paper", **settings):
    """An online learner built from its validated config (``{type: type_, **settings}``), as a
    run builds it; ``rng`` its own stream (default: seed 0)."""
    import numpy as np

    from ltr_cli.learners.registry import REGISTRY

    spec = REGISTRY[type_].model_validate({"type": type_, **settings})
    return spec.build(n_features, ties, rng if rng is not None else np.random.default_rng(0), planned_rounds,
                      fidelity)


# The suite's tests of the compiled path run small configs, which `ltr run` would otherwise
# plan onto the reference path (ltr_cli.runs.kernel_plan); tests of the planning itself ask
# for `--kernels auto` (or clear LTR_KERNELS).
os.environ.setdefault("LTR_KERNELS", "1")
# No detached kernel builds behind the suite's back (tests/test_kernel_background.py turns them on).
os.environ.setdefault("LTR_KERNELS_BACKGROUND", "0")


# --- no test's call phase does more than a minute of work ---------------------------------------
#
# The kernels compile once per suite: numba's cache directory is chosen here, before anything
# imports numba, and every ``ltr`` process a test starts inherits it, so a child loads what
# this process (or an earlier child) compiled. Compiling lands on whichever test first needs a
# kernel, on a cold cache only, so the limit leaves it out: a test fails when the CPU seconds of
# its call phase (this process and the child processes it waited for: ``ltr`` subprocesses,
# sweep workers, compile-ahead forks), less the seconds numba spent compiling in them, exceed
# CALL_LIMIT_S. CPU time, not wall time, so a machine loaded by other work does not fail a test.

CALL_LIMIT_S = 60.0


class _CompileClock:
    """A numba event listener adding up the CPU seconds of outermost compiles: this process's
    in ``seconds``, those of forked children (sweep workers, compile-ahead) as lines in ``log``
    (a child leaves with os._exit, so it writes as it goes)."""

    def __init__(self, log: Path):
        self.log, self.pid, self.seconds, self._depth, self._t0 = log, os.getpid(), 0.0, 0, 0.0

    def on_start(self, event) -> None:
        if self._depth == 0:
            self._t0 = time.process_time()
        self._depth += 1

    def on_end(self, event) -> None:
        self._depth -= 1
        if self._depth:
            return
        spent = time.process_time() - self._t0
        if os.getpid() == self.pid:
            self.seconds += spent
        else:
            with open(self.log, "a") as f:
                f.write(f"{spent}\n")

    def total(self) -> float:
        try:
            children = sum(float(x) for x in self.log.read_text().split())
        except (OSError, ValueError):
            children = 0.0
        return self.seconds + children


_CLOCK: _CompileClock | None = None


def _start_compile_clock() -> None:
    global _CLOCK
    from ltr_cli.kernels import numba_cache

    numba_cache.ensure()  # sets NUMBA_CACHE_DIR before numba is imported, for every child too
    from numba.core import event

    fd, log = tempfile.mkstemp(prefix="ltr-tests-compile-")
    os.close(fd)
    clock = _CLOCK = _CompileClock(Path(log))

    class _Forward(event.Listener):
        def on_start(self, event) -> None:
            clock.on_start(event)

        def on_end(self, event) -> None:
            clock.on_end(event)

    event.register("numba:compile", _Forward())


# --- the online kernels compile before the first test, when they are not built ahead ---------
#
# The install compiles the online block families ahead of time (ltr_cli.kernels.ahead): then
# nothing is compiled here. Without that build (LTR_AHEAD=0, or a machine where it failed), on
# a cold kernel cache the first tests to run an online learner would each spend most of a
# minute compiling: two `ltr run`s compile the block families first, side by side, into the
# cache every test process then loads from. Anything else compiles in the test that needs it.

_WARM_UPS = (
    ["configs/simulated_separable.yaml", "--set", "dataset.queries=3"],  # perceptron, ogd (ListNet), rounds
    ["configs/topk_synthetic.yaml", "--set", "dataset.queries=3", "--set", "seeds=[0]",
     "--set", "protocol.passes=1"],  # rtopkf, ListNet on a ball
)


def _warm_kernel_cache() -> None:
    import subprocess
    import sys

    from ltr_cli.runs.kernel_plan import uncached_families

    if not uncached_families(["perceptron", "ogd", "rtopkf"]):  # built ahead, or cached
        return
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ltr-tests-warm-up-") as out:
        children = [subprocess.Popen([sys.executable, "-m", "ltr_cli", "run", *args, "--kernels", "compiled",
                                      "-q", "--out", f"{out}/{i}"], cwd=REPO,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    for i, args in enumerate(_WARM_UPS)]
        codes = [child.wait() for child in children]
    said = "" if not any(codes) else " (a warm-up failed: its tests will say why)"
    print(f"\nkernels compiled for the suite in {time.perf_counter() - start:.0f} s (cold kernel cache){said}")


def _cpu_seconds() -> float:
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    cpu, compiling = _cpu_seconds(), _CLOCK.total() if _CLOCK else 0.0
    result = yield
    compiled = (_CLOCK.total() if _CLOCK else 0.0) - compiling
    work = _cpu_seconds() - cpu - compiled
    if work > CALL_LIMIT_S:
        pytest.fail(f"{item.nodeid} did {work:.0f} s of work in its call phase (CPU seconds, {compiled:.0f} s "
                    f"of numba compiling aside), over the suite's limit of {CALL_LIMIT_S:.0f} s: run it at "
                    "smoke size or share its work through a fixture", pytrace=False)
    return result
