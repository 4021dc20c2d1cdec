"""Compiled block families: how the compiled block loop (:mod:`ltr_cli.protocols.online_blocks`)
runs whole blocks of rounds of a group of learners of one family.

A :class:`BlockFamily` is a plain declaration, made next to its learners (``perceptron.py``,
``ogd.py``, ``rtopkf.py``, or a plugin's module) and returned by their ``block_kernel()``;
:func:`register` lets the kernel plan find it by name. It holds everything the block runner
and the kernel plan need of its learners, so they talk to families only through it:

* ``round_kernel`` and ``block_kernel``: the family's compiled round kernel and its block
  kernel (the generic block driver of :mod:`ltr_cli.kernels.loop` around the round kernel),
  each named ``module:function``. The loader imports them by these names (numba first, on
  first use); the kernel plan asks the kernel cache about the block kernel by its name,
  without importing anything. A family's kernels may live in any module: the kernel cache
  keeps each module's kernels in a folder of its own;
* ``slots``: the parameter slots its round kernel reads (a numba-free module or object with
  ``SIZE`` and the slot indices), which its learners pack their settings into;
* ``draws(learner, t0, sizes)``: the learner's own random draws for a block, made in round
  order from its generator (None: the family draws nothing);
* ``not_finite(learner)``: the error of a step that left the reals;
* ``counts_rounds``: whether its learners keep a round counter ``t``.

A learner's ``block_kernel()`` returns ``(family, parameter vector)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ltr_cli import plugins
from ltr_cli.errors import LtrError


@dataclass
class BlockCall:
    """The arguments of a block kernel, for one block of rounds of a group of L learners:
    the unit's rows ``X`` (N, d), labels ``y`` (N,), query bounds ``starts``/``ends``, the
    block's query indices ``order``, the weights ``W`` (L, d), parameters ``P`` (L, p),
    round counters ``t0`` (L,), which learners still run (``active``), the tie direction,
    the measures' spec, the discount table, which learners check finiteness and may keep NaN
    weights, the output columns ``cols``, scratch scores and the learners' draws (``explore``,
    ``perms``, ``perm_starts``, ``gammas``, ``etas``: see :mod:`ltr_cli.kernels.loop`)."""

    X: np.ndarray
    y: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    order: np.ndarray
    W: np.ndarray
    P: np.ndarray
    t0: np.ndarray
    active: np.ndarray
    reverse: bool
    spec: np.ndarray
    disc: np.ndarray
    check_finite: np.ndarray
    nan_allowed: np.ndarray
    cols: tuple[np.ndarray, ...]
    scores: np.ndarray
    draws: tuple[np.ndarray, ...]

    def arguments(self) -> tuple[Any, ...]:
        """The block kernel's positional arguments."""
        return (self.X, self.y, self.starts, self.ends, self.order, self.W, self.P, self.t0, self.active,
                self.reverse, self.spec, self.disc, self.check_finite, self.nan_allowed, *self.cols, self.scores,
                np.empty(self.W.shape[1]), *self.draws)


Draws = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class BlockFamily:
    """One compiled block family (see the module docstring)."""

    name: str  # unique: learners of one family (and parameter count, tie rule) share block calls
    round_kernel: str  # "module:function", the round kernel the block driver runs
    block_kernel: str  # "module:function", kernels.loop.block_kernel(round kernel)
    slots: Any = None  # the round kernel's parameter slots (SIZE and the indices), None: no parameters
    draws: Callable[[Any, int, np.ndarray], Draws] | None = None
    not_finite: Callable[[Any], LtrError] | None = None
    counts_rounds: bool = True

    def kernel(self) -> Callable[..., None]:
        """The compiled block kernel: the one built ahead of time when it is there and fresh
        (:mod:`ltr_cli.kernels.ahead`; numba is not imported), else numba's (imported, with
        the kernel's module, on first use)."""
        from ltr_cli import kernels
        from ltr_cli.kernels import ahead

        built = ahead.kernel(self.block_kernel)
        if built is not None:
            return built

        block = kernels.function(self.block_kernel)
        bound = getattr(getattr(block, "py_func", None), "__globals__", {}).get("_ROUND_KERNEL")
        if bound is not kernels.function(self.round_kernel):
            raise LtrError(f"block family {self.name!r}: {self.block_kernel} is not the block driver around "
                           f"{self.round_kernel}; make it with ltr_cli.kernels.loop.block_kernel(round kernel)")
        return block

    def parameters(self) -> np.ndarray:
        """A zero parameter vector of the family's size (its learners fill in the slots)."""
        return np.zeros(getattr(self.slots, "SIZE", 1))


FAMILIES: dict[str, BlockFamily] = {}


def register(family: BlockFamily) -> BlockFamily:
    """Add a family (its name must be new), so the kernel plan finds it by name."""
    for ref in (family.round_kernel, family.block_kernel):
        module, _, function = ref.partition(":")
        if not module or not function:
            raise ValueError(f"block family {family.name!r}: kernel {ref!r} is not 'module:function'")
    if family.name in FAMILIES and FAMILIES[family.name] is not family:
        raise ValueError(f"a block family named {family.name!r} is already registered")
    FAMILIES[family.name] = family
    return family


@plugins.registrar("families")
def _declared(obj: Any, name: str, source: str) -> None:
    """An entry point of the group ``ltr_cli.families``: a :class:`BlockFamily` named as
    the entry point (its module registers it when imported; a plugin's may leave that to
    this)."""
    if not isinstance(obj, BlockFamily):
        raise TypeError(f"{name} is a {type(obj).__name__}, not a BlockFamily")
    if obj.name != name:
        raise ValueError(f"the entry point {name!r} names the block family {obj.name!r}; name them alike")
    register(obj)


def declared_family(name: str) -> BlockFamily | None:
    """The family ``name`` declared in the entry-point group ``ltr_cli.families`` (built-ins
    and plugins), importing only the module that declares it; None when none does."""
    if name in FAMILIES:
        return FAMILIES[name]
    obj = plugins.load("families", name)
    return obj if isinstance(obj, BlockFamily) else None
