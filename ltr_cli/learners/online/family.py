"""Compiled block families: how the compiled block loop (:mod:`ltr_cli.protocols.online_blocks`)
runs whole blocks of rounds of a group of learners of one family.

A :class:`BlockFamily` is declared next to its learners (``perceptron.py``, ``ogd.py``,
``rtopkf.py``) and registered here by :func:`register`. It holds everything the block
runner needs of its learners, so the runner talks to families only through it:

* ``kernel()``: the compiled block function (imports its kernel module, and numba, on
  first use);
* ``call(kernel, block, learners, draws)``: the call, from the block's common arguments
  (:class:`BlockCall`) and the family's own extra arguments;
* ``draws(learner, t0, sizes)``: the learner's own random draws for a block, made in round
  order from its generator (None: the family draws nothing);
* ``not_finite(learner)``: the error of a step that left the reals;
* ``counts_rounds``: whether its learners keep a round counter ``t``.

A learner's ``block_kernel()`` returns ``(family, parameter vector)``: the parameter vector
packs its validated settings into the slots the kernel reads (:mod:`ltr_cli.kernels.codes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ltr_cli.errors import LtrError


@dataclass
class BlockCall:
    """The arguments every family's block kernel shares, for one block of rounds of a group
    of L learners: the unit's rows ``X`` (N, d), labels ``y`` (N,), query bounds
    ``starts``/``ends``, the block's query indices ``order``, the weights ``W`` (L, d),
    parameters ``P`` (L, p), round counters ``t0`` (L,), which learners still run
    (``active``), the tie direction, the measures' spec, the discount table, which learners
    check finiteness and may keep NaN weights, the output columns ``cols`` and scratch
    buffers."""

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

    def common(self) -> tuple[Any, ...]:
        """The shared positional arguments of the linear families' block kernels."""
        return (self.X, self.y, self.starts, self.ends, self.order, self.W, self.P, self.t0, self.active,
                self.reverse, self.spec, self.disc, self.check_finite, self.nan_allowed, *self.cols, self.scores,
                np.empty(self.W.shape[1]))


Draws = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class BlockFamily:
    """One compiled block family (see the module docstring)."""

    name: str  # unique: learners of one family (and parameter count, tie rule) share block calls
    kernel: Callable[[], Callable[..., None]]  # through kernels.load(), which times the loading
    call: Callable[[Callable[..., None], BlockCall, list[Any], "tuple[np.ndarray, ...] | None"], None]
    draws: Callable[[Any, int, np.ndarray], Draws] | None = None
    not_finite: Callable[[Any], LtrError] | None = None
    counts_rounds: bool = True


FAMILIES: dict[str, BlockFamily] = {}


def register(family: BlockFamily) -> BlockFamily:
    """Add a family (its name must be new)."""
    if family.name in FAMILIES and FAMILIES[family.name] is not family:
        raise ValueError(f"a block family named {family.name!r} is already registered")
    FAMILIES[family.name] = family
    return family


def linear_call(kernel: Callable[..., None], block: BlockCall, learners: list[Any],
                draws: tuple[np.ndarray, ...] | None) -> None:
    """The call of a family whose kernel takes only the shared arguments."""
    kernel(*block.common())
