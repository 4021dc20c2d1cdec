"""The building blocks of config models, shared by the experiment config and every
learner's own config model (a leaf: it imports only pydantic and the name rules).

* :class:`Strict` - unknown keys are errors and types are strict.
* :class:`LearnerConfig` - what every learner's config model declares: its ``type`` tag
  (a one-value ``Literal``, the only place a learner's type name is written), whether it
  is an online or a batch learner, its one-line help, and how it describes itself to the
  results (paper role, default legend label, conventions for the manifest).
  :class:`OnlineLearnerConfig` adds ``build`` (the learner object), the feedback it
  needs and whether it needs the stream's length; :class:`BatchLearnerConfig` adds the
  hyper-parameter grid and ``fit`` (one setting on the training queries -> a model with
  ``scores(X)``).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from ltr_cli.names import check_label, check_name

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


class Strict(BaseModel):
    """Unknown keys are errors, and types are strict: an int field takes a YAML integer only
    (not true/false, 3.0 or "3"), a float field a YAML number (an integer too), a bool field
    true or false, a string field a string."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)


# paths are written as strings in YAML (strict mode would want a Path object)
LaxPath = Annotated[Path, Field(strict=False)]
# experiment and learner names become directory and file names
Name = Annotated[str, AfterValidator(check_name)]
Label = Annotated[str, AfterValidator(check_label)]


def not_bool(value: Any) -> Any:
    """Validator (before): a YAML boolean is not the integer 0 or 1."""
    if isinstance(value, bool):
        raise ValueError("expected 0 or 1, not a boolean")
    return value


class LearnerConfig(Strict):
    """A learner's config model. Subclasses declare ``type: Literal["name"]`` and the
    class variables below; the learner registry (:mod:`ltr_cli.learners.registry`) derives
    everything else (the config union, ``ltr list``, the CV dispatch) from them."""

    kind: ClassVar[Literal["online", "batch"]]
    summary: ClassVar[str]  # one line for ``ltr list``
    # settings added after runs were first recorded: left out of the run id while they hold
    # these values, so the ids of existing runs do not change
    id_defaults: ClassVar[dict[str, Any]] = {}
    # the version of the learner's algorithm: raised when the same settings would now compute
    # something else, so a finished run or checkpoint of the older algorithm is never taken
    # for this one (run ids do not change; ``ltr run --resume`` refuses the old folder)
    implementation: ClassVar[int] = 1
    label: Label | None = Field(None, description="legend label (default: the paper's name)")

    @classmethod
    def type_name(cls) -> str:
        """The ``type:`` tag that selects this model in a config."""
        (name,) = get_args(cls.model_fields["type"].annotation)
        return str(name)

    def paper_role(self) -> str:
        """Which curve or table row of the papers this learner is."""
        return self.type_name()

    def default_label(self) -> str:
        """The legend label in the paper's style, unless the config gives ``label``."""
        return self.label or self.paper_role()

    def describe(self) -> dict[str, Any]:
        """The learner's conventions, for the manifest (with ``implementation`` once it is
        past its first version)."""
        described: dict[str, Any] = {"type": self.type_name(), "role": self.paper_role()}
        if self.implementation != 1:
            described["implementation"] = self.implementation
        return described

    def missing(self) -> str | None:
        """What the learner needs that is not installed, as one line that says how to
        install it (``ltr run`` stops on it before computing anything), or None."""
        return None


class OnlineLearnerConfig(LearnerConfig):
    """An online learner (``rank`` / ``update`` every round)."""

    kind: ClassVar[Literal["online", "batch"]] = "online"
    # the settings ``ltr bench`` times (config keys besides ``type``; each is named by its
    # paper role)
    bench_variants: ClassVar[tuple[dict[str, Any], ...]] = ()
    # the settings the conformance suite (ltr_cli/testing/online.py) runs this learner with
    # (config keys besides ``type``): one per code path worth checking
    examples: ClassVar[tuple[dict[str, Any], ...]] = ({},)

    # "labels": learns from labels (all, or the top feedback_k()); under protocol.feedback:
    # clicks it gets the clicked documents as label 1. "clicks": learns only from clicks.
    feedback_kind: ClassVar[Literal["labels", "clicks"]] = "labels"

    def feedback_k(self) -> int | None:
        """How many top labels of the shown ranking the learner needs (None: all labels)."""
        return None

    def needs_horizon(self) -> bool:
        """True when the learner must know the stream's length T before round 1."""
        return False

    def build(self, n_features: int, ties: str, rng: "np.random.Generator",
              planned_rounds: int | None = None, fidelity: str = "paper") -> Any:
        """The learner object: ``rng`` is its own random stream, ``planned_rounds`` the
        stream's length when known, ``fidelity`` the experiment's."""
        raise NotImplementedError


# a batch learner's grid: hyper-parameter -> values; integers stay integers (rounds: 50, not 50.0)
Grid = dict[str, list[Union[int, float]]]


class BatchLearnerConfig(LearnerConfig):
    """A batch learner of the k-fold protocol: one fit per grid point."""

    kind: ClassVar[Literal["online", "batch"]] = "batch"
    hyper_parameters: ClassVar[tuple[str, ...]] = ("C",)  # the keys a grid may have
    integer_parameters: ClassVar[tuple[str, ...]] = ()  # of those, the ones counted in whole numbers
    grid: Grid = Field(description="hyper-parameter -> values to try (positive numbers): every combination is "
                       "fitted on train, the best on vali kept")

    @field_validator("grid")
    @classmethod
    def _grid(cls, grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
        return grid_values(grid, cls.hyper_parameters, cls.type_name(), cls.integer_parameters)

    def grid_points(self) -> list[dict[str, Any]]:
        """Every hyper-parameter setting of the grid, in the grid's key order."""
        keys = list(self.grid)
        return [dict(zip(keys, vals)) for vals in itertools.product(*(self.grid[k] for k in keys))] or [{}]

    def fit(self, train: list[tuple["np.ndarray", "np.ndarray"]], params: dict[str, Any],
            context: Any = None) -> Any:
        """Fit one setting on the training queries ``[(X (m, d), y (m,)), ...]``; the
        model has ``scores(X) -> (m,)``, ``to_dict()`` and ``info`` (its ``convergence``
        record, :class:`ltr_cli.learners.batch.convergence.Convergence`, when the fit iterates to a
        tolerance). ``context``: a :class:`ltr_cli.learners.batch.convergence.FitContext` (warm
        start, progress callback) or None."""
        raise NotImplementedError


def grid_values(grid: dict[str, list[Any]], allowed: tuple[str, ...], spec: str,
                integers: tuple[str, ...] = ()) -> dict[str, list[Any]]:
    """Validator body: a batch grid names only the learner's hyper-parameters, each with
    at least one positive number (a whole number for ``integers``)."""
    for key, values in grid.items():
        if key not in allowed:
            raise ValueError(f"{spec} has no hyper-parameter {key!r}; it has {', '.join(allowed)}")
        if not values:
            raise ValueError(f"grid {key!r} has no values")
        for v in values:
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"grid {key!r}: values must be positive numbers (got {v!r})")
            if key in integers and not isinstance(v, int):
                raise ValueError(f"grid {key!r}: values must be whole numbers, written without a "
                                 f"decimal point (got {v!r})")
    return grid


__all__ = ["BatchLearnerConfig", "Grid", "Label", "LaxPath", "LearnerConfig", "Name", "OnlineLearnerConfig",
           "Strict", "grid_values", "not_bool"]
