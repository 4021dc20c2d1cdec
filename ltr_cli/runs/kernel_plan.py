"""Which path a stream's online runs take, planned before anything is compiled.

The learners with a compiled block loop run either on the compiled path (the kernels built
ahead of time at install, :mod:`ltr_cli.kernels.ahead`, loaded in milliseconds; or numba's,
compiled once per machine, tens of seconds, then loaded from the kernel cache in about a
second) or on the reference path (numpy and Python, which gives the same bytes: the tests
compare both). :func:`plan_kernels` estimates both costs from the runs' size (rounds x
documents x features x learners) and from what the kernel cache already holds, and takes
the cheaper: a run too small to repay the compile (or even the loading) takes the reference
path and never imports numba. ``ltr run --kernels`` or ``LTR_KERNELS`` (``compiled``/``1``,
``reference``/``0``) force the choice; the decision, its reason and the estimates go into
every run's manifest (``kernels``).

The costs are estimates in seconds on one idle core of the machine the constants were
measured on; only their ratio matters.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from ltr_cli import kernels
from ltr_cli.runs.plan import PlannedRun

# per learner-round: Python's overhead, and per cell (document x feature) of the query
REFERENCE_ROUND_S = 80e-6
REFERENCE_CELL_S = 12e-9  # numpy per cell, measured on MSLR-shaped queries (136 features)
COMPILED_ROUND_S = 3e-6
COMPILED_CELL_S = 1e-9
LOAD_S = 1.5  # importing numba and loading the cached kernels
AHEAD_LOAD_S = 0.05  # loading the kernels built ahead of time (ltr_cli.kernels.ahead)
COMPILE_SHARED_S = 10.0  # the primitives and round measures every family calls
COMPILE_FAMILY_S = 15.0  # one block family's own kernel
MODES = ("auto", "compiled", "reference")
NOT_COMPILED = "; nothing is compiled ('ltr kernels build' compiles them once, ahead)"


@dataclass
class KernelPlan:
    """The decision for one stream's runs: ``path`` ``compiled`` or ``reference``, ``why``
    in words, ``mode`` as asked (auto, compiled, reference), and the estimates behind it."""

    path: str
    why: str
    mode: str = "auto"
    learner_rounds: int = 0
    cells_per_round: float = 0.0
    families: list[str] = field(default_factory=list)
    uncached: list[str] = field(default_factory=list)
    reference_seconds: float = 0.0
    compiled_seconds: float = 0.0
    background: list[str] = field(default_factory=list)


    @property
    def compiled(self) -> bool:
        return self.path == "compiled"

    def record(self) -> dict[str, Any]:
        """What the manifest keeps (estimates rounded)."""
        out = asdict(self)
        for key in ("cells_per_round", "reference_seconds", "compiled_seconds"):
            out[key] = round(out[key], 3)
        return out

    def worth_building(self) -> list[str]:
        """The families to compile in the background: those the kernel cache lacks, when
        this ``auto`` plan took the reference path only for want of them (with them cached,
        the compiled path would have been the cheaper)."""
        if self.mode != "auto" or self.compiled or not self.uncached:
            return []
        compiling = COMPILE_SHARED_S + COMPILE_FAMILY_S * len(self.uncached)
        return list(self.uncached) if self.compiled_seconds - compiling < self.reference_seconds else []

    def building(self, started: list[str]) -> None:
        """Record the families a background build was started for (none: it was not)."""
        self.background = list(started)
        if started:
            self.why = (self.why.replace(NOT_COMPILED, "")
                        + f"; compiling {', '.join(started)} in the background for later runs (ltr kernels status)")

    def apply(self) -> None:
        """Switch the kernels on or off for the runs this plan is for."""
        kernels.set_enabled(self.compiled)


def plan_kernels(runs: list[PlannedRun], source: Any, mode: str = "auto") -> KernelPlan:
    """The path of ``runs`` (online runs that read ``source``, a
    :class:`~ltr_cli.data.sources.QuerySource`). ``mode``: ``auto`` decides from the
    estimates; ``compiled`` or ``reference`` is the user's choice, kept as such."""
    families = sorted({f for f in (_family(run) for run in runs) if f is not None})  # "rounds": per-round kernels
    rounds = [_rounds(run, source) for run in runs]
    cells = _docs_per_query(source) * max(int(source.n_features), 1)
    of = [_family(run) for run in runs]
    reference_round = REFERENCE_ROUND_S + cells * REFERENCE_CELL_S
    block_rounds = sum(r for f, r in zip(of, rounds) if f is not None and f != ROUNDS)
    round_rounds = sum(r for f, r in zip(of, rounds) if f == ROUNDS)
    reference = (block_rounds + round_rounds) * reference_round
    uncached = uncached_families(families) if families and mode != "reference" else []
    jit = [f for f in families if f not in ahead_families(families)]  # numba is imported for these
    load = (LOAD_S if jit else AHEAD_LOAD_S) if families else 0.0
    setup = load + (COMPILE_SHARED_S if uncached else 0.0) + COMPILE_FAMILY_S * len(uncached)
    fast = (setup + block_rounds * (COMPILED_ROUND_S + cells * COMPILED_CELL_S)
            + round_rounds * reference_round * ROUND_KERNELS_SHARE)
    plan = KernelPlan("reference", "", mode, sum(rounds), cells, families, uncached, reference, fast)
    if mode == "reference":
        plan.why = "asked for (--kernels reference or LTR_KERNELS=0)"
    elif mode == "compiled":
        plan.path, plan.why = "compiled", "asked for (--kernels compiled or LTR_KERNELS=1)"
    elif not families:
        plan.why = "no learner of these runs has compiled kernels"
    elif fast < reference:
        plan.path = "compiled"
        plan.why = (f"about {_seconds(reference)} on the reference path vs {_seconds(fast)} compiled"
                    + (f", compiling {', '.join(uncached)} included" if uncached
                       else ", kernels cached" if jit else ", kernels built ahead"))
    else:
        plan.why = (f"about {_seconds(reference)} on the reference path vs {_seconds(fast)} compiled"
                    + (f" (which would first compile {', '.join(uncached)}){NOT_COMPILED}" if uncached
                       else " (loading the cached kernels included)"))
    return plan


def _seconds(x: float) -> str:
    return f"{x:.1f} s" if x < 100 else f"{x / 60:.0f} min"


def _family(run: PlannedRun) -> str | None:
    """The compiled block family the run's learner would use (the plan's key), ``rounds``
    for a learner with compiled steps that runs round by round (it logs its regret, say),
    else None."""
    if run.family:
        return str(run.family[0])
    return ROUNDS if _round_kernels(run) else None


ROUNDS = "rounds"  # the per-round kernels, for learners outside the block loop
ROUND_KERNELS_SHARE = 0.4  # a round with per-round kernels costs about this share of a reference round


def _round_kernels(run: PlannedRun) -> bool:
    """Whether the run's online learner has compiled per-round steps (scores, ranking, update)."""
    import numpy as np

    spec = run.spec
    if spec.cv is not None:
        return False
    try:  # on one feature, as the plan builds it: only its kind matters
        built = run.learner_spec.build(1, spec.metrics.ties, np.random.default_rng(0), 1, spec.fidelity)
    except Exception:  # it fails in its own run, with its own message
        return False
    return bool(getattr(built, "use_kernels", False))


ROUND_KERNEL = "ltr_cli.kernels.core:score_rank"  # what the per-round kernels' cache check looks for


def _kernel_function(family: str) -> str:
    """The kernel whose presence in the kernel cache means the family is compiled: its
    declared block kernel (``module:function``), or the ranking kernel for ``rounds``."""
    return ROUND_KERNEL if family == ROUNDS else family_named(family).block_kernel


def family_named(name: str) -> Any:
    """The :class:`~ltr_cli.learners.online.family.BlockFamily` called ``name``: one already
    registered in this process, else the one declared in the entry-point group
    ``ltr_cli.families`` (only its module is imported)."""
    from ltr_cli.learners.online.family import declared_family

    family = declared_family(name)
    if family is None:
        raise KeyError(f"no online learner declares a block family named {name!r} "
                       "(entry-point group ltr_cli.families)")
    return family


def ahead_families(families: list[str]) -> list[str]:
    """The families whose block kernel is built ahead of time and fresh
    (:mod:`ltr_cli.kernels.ahead`): they run without numba."""
    from ltr_cli.kernels import ahead

    return [name for name in families if ahead.available(_kernel_function(name))]


def uncached_families(families: list[str]) -> list[str]:
    """The families a compiled run would compile first: neither built ahead nor in the
    kernel cache (as their modules' sources are now)."""
    from ltr_cli.kernels.numba_cache import cached_function

    built = set(ahead_families(families))
    return [name for name in families if name not in built and not cached_function(_kernel_function(name))]


def _rounds(run: PlannedRun, source: Any) -> int:
    """The run's rounds: max_rounds (always, under uniform sampling), or passes x queries per pass x keep-probability
    (queries estimated from the files' size when not known)."""
    protocol = run.spec.protocol
    if protocol.sampling == "uniform" and protocol.max_rounds is not None:
        return protocol.max_rounds
    queries = source.n_queries
    if queries is None:
        queries = _queries_from_size(source)
    total = protocol.passes * queries * protocol.keep_probability
    if protocol.max_rounds is not None:
        total = min(total, protocol.max_rounds)
    return int(math.ceil(total))


def _docs_per_query(source: Any) -> float:
    """Documents per query: a generated stream's parameters, a registry dataset's shape,
    else 100."""
    params = getattr(source, "params", None)
    if isinstance(params, dict):
        if params.get("kind") == "separable":
            return float(params.get("docs") or 20)
        if params.get("docs_per_query"):
            return float(params["docs_per_query"])
    from ltr_cli.data.registry import DATASETS

    name = params.get("like") if isinstance(params, dict) and params.get("like") else getattr(source, "name", "")
    info = DATASETS.get(str(name))
    per = getattr(info, "docs_per_query", None)
    return float(per) if per else 100.0


def _queries_from_size(source: Any) -> int:
    """Queries of a file source estimated from its bytes (about 8 bytes per stored value
    ``index:value``, a dense row of n_features values per document)."""
    total = 0
    for path in getattr(source, "files", []) or []:
        try:
            total += path.stat().st_size
        except OSError:
            pass
    per_query = _docs_per_query(source) * max(int(source.n_features), 1) * 8
    return max(1, int(total / per_query))
