"""The state of an online learner as a checkpoint keeps it: weights ``w``, round counter
``t``, its own generator ``rng``, and every other field it declares in ``state_fields``
(:class:`ltr_cli.learners.online.base.OnlineLearner`), validated when put back into a
freshly built learner (:mod:`ltr_cli.protocols.checkpoint` stores it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


class CheckpointInvalid(Exception):
    """A checkpoint that must not be used (the message says why)."""


# the state fields every learner of the built-in families may have; a learner declares
# more in ``state_fields`` (:class:`ltr_cli.learners.online.base.OnlineLearner`)
_CORE_FIELDS = ("w", "t", "rng")


def state_fields(learner: Any) -> tuple[str, ...]:
    """The names of the attributes that are a learner's whole mutable state: its declared
    ``state_fields``, else the core fields it has (weights, round counter, own generator)."""
    declared = getattr(learner, "state_fields", None)
    if declared is None:
        return tuple(n for n in _CORE_FIELDS if getattr(learner, n, None) is not None)
    return tuple(declared)


@dataclass
class LearnerState:
    """The mutable part of an online learner: weights ``w``, round counter ``t``, its own
    generator ``rng``, and ``extra``: any other state it declares in ``state_fields``
    (float64/int64/bool arrays, ints, floats, bools or numpy Generators, by name)."""

    cls: str
    w: np.ndarray | None
    t: int | None
    rng: dict[str, Any] | None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, learner: Any) -> "LearnerState":
        names = state_fields(learner)
        w = getattr(learner, "w", None) if "w" in names else None
        rng = getattr(learner, "rng", None) if "rng" in names else None
        extra = {name: _snapshot(name, getattr(learner, name)) for name in names if name not in _CORE_FIELDS}
        return cls(type(learner).__name__,
                   None if w is None else np.array(w, dtype=np.float64),
                   getattr(learner, "t", None) if "t" in names else None,
                   None if rng is None else rng.bit_generator.state, extra)

    def restore(self, learner: Any) -> None:
        """Put this state into a freshly built ``learner`` of the same config (validated:
        class, field names, weight and array shapes and kinds, counter, generator kind)."""
        if type(learner).__name__ != self.cls:
            raise CheckpointInvalid(f"it holds a {self.cls} learner, the config builds a "
                                    f"{type(learner).__name__}")
        names = state_fields(learner)
        for name, saved in (("w", self.w), ("t", self.t), ("rng", self.rng)):
            has = name in names and getattr(learner, name, None) is not None
            if has != (saved is not None):
                raise CheckpointInvalid(f"learner field {name!r} does not match the learner's state")
        if set(self.extra) != {n for n in names if n not in _CORE_FIELDS}:
            raise CheckpointInvalid(f"it holds the learner fields {sorted(self.extra)}, the learner has "
                                    f"{sorted(n for n in names if n not in _CORE_FIELDS)}")
        if self.w is not None:
            if self.w.shape != learner.w.shape:
                raise CheckpointInvalid(f"weights have shape {self.w.shape}, the learner has "
                                        f"{learner.w.shape}")
            learner.w = self.w
        if self.t is not None:
            learner.t = self.t
        if self.rng is not None:
            set_rng(learner.rng, self.rng, "learner.rng")
        for name, saved in self.extra.items():
            setattr(learner, name, _restored(name, saved, getattr(learner, name)))


def _snapshot(name: str, value: Any) -> Any:
    """A copy of one extra state field as the checkpoint stores it: an array (float, int,
    unsigned or bool), a number or bool (numpy scalars as Python values), None, or a numpy
    Generator's state."""
    if value is None:
        return None
    if isinstance(value, np.random.Generator):
        return {"generator": value.bit_generator.state}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "fiub" or value.dtype.hasobject:
            raise TypeError(f"learner state field {name!r}: arrays must be float, int or bool, not {value.dtype}")
        return np.array(value, copy=True)
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        return value.item() if isinstance(value, np.generic) else value
    raise TypeError(f"learner state field {name!r} is a {type(value).__name__}; a checkpoint keeps arrays, "
                    "numbers, booleans, None and numpy Generators")


def _restored(name: str, saved: Any, current: Any) -> Any:
    """``saved`` checked against the freshly built learner's value of the field, and given
    that value's type (a numpy scalar stays one)."""
    what = f"learner.{name}"
    if isinstance(current, np.random.Generator):
        if not (isinstance(saved, dict) and isinstance(saved.get("generator"), dict)):
            raise CheckpointInvalid(f"{what} must be a generator state")
        set_rng(current, saved["generator"], what)
        return current
    if isinstance(current, np.ndarray):
        if not isinstance(saved, np.ndarray) or saved.shape != current.shape or saved.dtype != current.dtype:
            raise CheckpointInvalid(f"{what} must be a {current.dtype} array of shape {current.shape}")
        return saved
    if current is None or saved is None:  # a field set later (or unset): kept as saved
        if isinstance(saved, np.ndarray) and (saved.dtype.kind not in "fiub" or saved.dtype.hasobject):
            raise CheckpointInvalid(f"{what} must be a number array")
        if isinstance(saved, dict):
            raise CheckpointInvalid(f"{what} must not be a generator state")
        return saved
    try:
        if isinstance(current, (bool, np.bool_)):
            if type(saved) is not bool:
                raise CheckpointInvalid(f"{what} must be true or false")
            return type(current)(saved)
        if isinstance(current, (int, np.integer)):
            if type(saved) is not int:
                raise CheckpointInvalid(f"{what} must be an integer")
            return type(current)(saved)
        if isinstance(current, (float, np.floating)):
            if type(saved) not in (int, float):
                raise CheckpointInvalid(f"{what} must be a number")
            return type(current)(saved)
    except (OverflowError, ValueError):
        raise CheckpointInvalid(f"{what} is out of range") from None
    raise CheckpointInvalid(f"{what} has a type a checkpoint does not keep")


def set_rng(rng: np.random.Generator, state: Any, what: str) -> None:
    bg = rng.bit_generator
    if not isinstance(state, dict) or state.get("bit_generator") != type(bg).__name__:
        raise CheckpointInvalid(f"{what} is not a {type(bg).__name__} state")
    try:
        bg.state = state
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise CheckpointInvalid(f"{what} is not a valid generator state ({exc})") from None
