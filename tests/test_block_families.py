"""A compiled learner family declared outside ``ltr_cli/kernels``: a margin perceptron whose
slots, round kernel and block kernel live in a package of their own (written here into a
temporary folder), declared by a :class:`BlockFamily` that names its kernels. One compile
runs it in the block loop; after that the kernel plan sees it cached and plans its runs
compiled, beside ``alg3`` on the same stream, as ``alg3`` alone. The kernel cache keys
each module by its own sources and those of the kernels it imports."""

from __future__ import annotations

import dataclasses
import shutil
import sys
import textwrap
import uuid
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ltr_cli.errors import LtrError
from ltr_cli.kernels import numba_cache
from ltr_cli.learners.online.base import Feedback, LinearRanker, UpdateInfo
from ltr_cli.learners.online.family import FAMILIES, BlockFamily, register
from ltr_cli.learners.online.schedules import StepSpec

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "configs" / "simulated_separable.yaml"

SLOTS = '''
"""The margin perceptron's parameter slots (numba-free)."""
ETA, MARGIN, SIZE = 0, 1, 2
'''

KERNEL = '''
"""The margin perceptron's round kernel and its block kernel."""
import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit
from ltr_cli.core.codes import UNCHANGED, UPDATED
from ltr_cli.kernels.loop import block_kernel
from {pkg}.slots import ETA, MARGIN


@njit(cache=_CACHE)
def margin_step(X, y, ranking, shown, s, w, P, t, gamma, eta, reverse, disc, out):
    """When the shown top document is less relevant than the first most relevant one and
    not ahead of it by the margin: w + eta (x_best - x_top)."""
    m = y.shape[0]
    if m == 0:
        return UNCHANGED, False, 0.0
    best = 0
    for i in range(m):
        if y[i] > y[best]:
            best = i
    top = shown[0]
    if y[best] <= y[top] or s[best] - s[top] >= P[MARGIN]:
        return UNCHANGED, False, 0.0
    for j in range(w.shape[0]):
        out[j] = w[j] + P[ETA] * (np.float64(X[best, j]) - np.float64(X[top, j]))
    return UPDATED, True, 1.0


margin_block = block_kernel(margin_step, "margin_block")
'''


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """The scratch package (a new name each time, so its kernels start uncached) and its
    family; its cache folder and modules are removed afterwards."""
    name = f"ltr_scratch_margin_{uuid.uuid4().hex[:12]}"
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "slots.py").write_text(SLOTS)
    (pkg / "kernel.py").write_text(textwrap.dedent(KERNEL.format(pkg=name)))
    monkeypatch.syspath_prepend(str(tmp_path))
    slots = SimpleNamespace(ETA=0, MARGIN=1, SIZE=2)
    family = register(BlockFamily(name, f"{name}.kernel:margin_step", f"{name}.kernel:margin_block", slots))
    yield SimpleNamespace(name=name, package=pkg, family=family, slots=slots)
    FAMILIES.pop(name, None)
    shutil.rmtree(numba_cache.module_cache_dir(f"{name}.kernel"), ignore_errors=True)
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


class MarginPerceptron(LinearRanker):
    """The scratch learner: the compiled ranking, the update in numpy (the block path's
    arithmetic, element by element)."""

    def __init__(self, family: BlockFamily, slots, n_features: int, eta: float = 0.5, margin: float = 1.0):
        super().__init__(n_features, StepSpec().schedule(), "input-order")
        self.family, self.slots, self.eta, self.margin = family, slots, eta, margin

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        self.t += 1
        y, top = feedback.labels, int(feedback.ranking[0])
        assert y is not None
        s = self._scores_fast(X)
        best = int(np.argmax(y))
        if y[best] <= y[top] or s[best] - s[top] >= self.margin:
            return UpdateInfo(False, False, ranking_loss=0.0)
        self.w = self.w + self.eta * (X[best].astype(np.float64) - X[top].astype(np.float64))
        return UpdateInfo(True, True, ranking_loss=1.0)

    def block_kernel(self):
        return (self.family, self.kernel_params()) if self.fast else None

    def _make_params(self) -> np.ndarray:
        P = self.family.parameters()
        P[self.slots.ETA], P[self.slots.MARGIN] = self.eta, self.margin
        return P


def _unit(queries: int = 30, docs: int = 8, d: int = 6, seed: int = 3):
    from ltr_cli.data.sources import UnitArrays

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(queries * docs, d))
    y = rng.integers(0, 3, size=queries * docs).astype(np.float64)
    starts = np.arange(queries, dtype=np.int64) * docs
    return UnitArrays(X, y, starts, starts + docs, [str(q) for q in range(queries)])


def _run_blocks(learners: list, unit) -> list:
    """The learners' rounds over every query of ``unit`` in the compiled block loop; their rows."""
    from ltr_cli.data.sources.rounds import Segment
    from ltr_cli.protocols.online_blocks import BlockRunner
    from ltr_cli.core.round_log import RoundLog
    from ltr_cli.protocols.round_measures import RoundMeasures

    measures = _demo_alg3().spec.metrics.measures()
    plan = [Segment(0, 0, np.arange(len(unit.qids), dtype=np.int64))]
    runner = BlockRunner(learners, RoundMeasures(measures), plan, {0: unit}, [False] * len(learners))
    logs = [RoundLog([m.name for m in measures]) for _ in learners]
    outcomes = runner.run(logs, 0, [None] * len(learners), None, (), lambda *a: None, lambda *a: None,
                          [f"l{i}" for i in range(len(learners))])
    assert all(o.error is None for o in outcomes)
    return logs


def _demo_alg3():
    from ltr_cli.config.experiment import load_config
    from ltr_cli.runs.plan import plan_experiment

    (runs,) = plan_experiment(load_config(DEMO, []))
    (alg3,) = [r for r in runs if r.learner_spec.type_name() == "alg3"]
    return alg3


def test_a_family_declared_in_its_own_module_is_planned_compiled_once_cached(scratch):
    from ltr_cli.protocols.online_blocks import group_key
    from ltr_cli.runs import kernel_plan
    from tests.conftest import make_learner

    learner = MarginPerceptron(scratch.family, scratch.slots, 6)
    alg3 = _demo_alg3()
    margin = dataclasses.replace(alg3, run_id="margin", family=group_key(learner))  # the same stream
    stream = SimpleNamespace(n_queries=50_000, n_features=10, name="separable-authors",
                             params={"kind": "separable", "docs": 20})
    assert kernel_plan.uncached_families([scratch.name]) == [scratch.name]
    before = kernel_plan.plan_kernels([alg3, margin], stream)
    assert before.path == "reference" and scratch.name in before.uncached

    # one compile: the margin learner and alg3 in the block loop (alg3's kernel is usually cached)
    unit = _unit()
    twin = MarginPerceptron(scratch.family, scratch.slots, 6)
    (rows,) = _run_blocks([learner], unit)
    _run_blocks([make_learner("alg3", 6)], unit)
    assert rows.columns["updated"][:30].any()
    for q in range(len(unit.qids)):  # the block path takes the per-round path's steps
        X, y = unit.X[unit.starts[q]:unit.ends[q]], unit.y[unit.starts[q]:unit.ends[q]]
        twin.update(X, Feedback(twin.rank(X, np.random.default_rng(0)), y))
    np.testing.assert_array_equal(learner.w, twin.w)

    assert kernel_plan.uncached_families([scratch.name, "perceptron"]) == []
    both, alone = kernel_plan.plan_kernels([alg3, margin], stream), kernel_plan.plan_kernels([alg3], stream)
    assert both.path == alone.path == "compiled" and both.uncached == [] and "kernels cached" in both.why
    assert both.families == sorted(["perceptron", scratch.name])


def test_the_loader_checks_the_block_kernel_wraps_the_declared_round_kernel(scratch):
    wrong = dataclasses.replace(scratch.family, round_kernel="ltr_cli.kernels.loop:no_step")
    with pytest.raises(LtrError, match="not the block driver around ltr_cli.kernels.loop:no_step"):
        wrong.kernel()
    with pytest.raises(ValueError, match="not 'module:function'"):
        register(dataclasses.replace(scratch.family, name="x-" + scratch.name, block_kernel="nowhere"))


def test_a_module_is_cached_by_its_own_sources_and_those_of_the_kernels_it_imports(scratch):
    """Editing one family's kernel changes that family's cache folder only; a family's
    folder covers the driver and primitives it calls, not the other families."""
    sources = dict(numba_cache.module_sources("ltr_cli.kernels.perceptron"))
    assert {"ltr_cli.kernels.loop", "ltr_cli.kernels.core", "ltr_cli.kernels.measures", "ltr_cli.core.codes",
            "ltr_cli.kernels.perceptron_slots"} <= set(sources)
    assert not {"ltr_cli.kernels.ogd", "ltr_cli.kernels.rtopkf", "ltr_cli.kernels.numba_cache"} & set(sources)
    mine = f"{scratch.name}.kernel"
    assert {f"{scratch.name}.slots", "ltr_cli.kernels.loop"} <= set(dict(numba_cache.module_sources(mine)))
    before = {name: numba_cache.module_digest(name) for name in (mine, "ltr_cli.kernels.perceptron")}
    kernel = scratch.package / "kernel.py"
    kernel.write_text(kernel.read_text() + "\n# edited\n")
    numba_cache.module_digest.cache_clear()
    try:
        after = {name: numba_cache.module_digest(name) for name in before}
    finally:
        numba_cache.module_digest.cache_clear()
    assert after[mine] != before[mine] and after["ltr_cli.kernels.perceptron"] == before["ltr_cli.kernels.perceptron"]
