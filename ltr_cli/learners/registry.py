"""The learner registry: one entry per learner, its config model.

Each learner module defines its config model next to its implementation (a subclass of
:class:`ltr_cli.config.schema.OnlineLearnerConfig` or :class:`~ltr_cli.config.schema.BatchLearnerConfig`
whose ``type`` literal is the learner's name). Listing the model in :data:`BUILT_IN` (or a plugin's ``ltr_cli.learners`` entry point,
:mod:`ltr_cli.plugins`) is all it takes to add a learner: the experiment config's union of learner models, the known
type names, ``ltr list``, the online build, the batch CV's fit, the paper role, the legend
label, the manifest's description, the horizon and feedback a learner needs, and the
learners ``ltr bench`` times are all derived from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import Field, TypeAdapter

from ltr_cli.learners.batch.boosting import AdaRankSpec, RankBoostSpec
from ltr_cli.learners.batch.coordinate_ascent import CoordinateAscentSpec
from ltr_cli.learners.batch.lambdamart import LambdaMARTSpec
from ltr_cli.learners.batch.neru import BMRMNERUSpec
from ltr_cli.learners.batch.permurank import PermuRankSpec
from ltr_cli.learners.batch.ranksvm import RankSVMSpec
from ltr_cli.learners.batch.structural import BMRMNDCGSpec, BMRMSpec, SVMmapSpec
from ltr_cli.learners.online.ogd import ListNetSpec, OGDSpec, RandomSpec
from ltr_cli.learners.online.perceptron import MaxPairPerceptronSpec, SlamPerceptronSpec
from ltr_cli.learners.online.rtopkf import RTopKFSpec
from ltr_cli import plugins
from ltr_cli.config.schema import BatchLearnerConfig, LearnerConfig, OnlineLearnerConfig
from ltr_cli.names import check_name

BUILT_IN: tuple[type[LearnerConfig], ...] = (
    # online (perceptron paper, top-k paper)
    SlamPerceptronSpec, MaxPairPerceptronSpec, OGDSpec, ListNetSpec, RTopKFSpec, RandomSpec,
    # batch (direct-optimisation paper, ranking-losses supplement)
    SVMmapSpec, RankSVMSpec, BMRMNDCGSpec, BMRMSpec, AdaRankSpec, RankBoostSpec, PermuRankSpec,
    BMRMNERUSpec,
    # batch baselines beside the direct-optimisation methods (not in the papers)
    LambdaMARTSpec, CoordinateAscentSpec,
)
_PLUGGED: list[type[LearnerConfig]] = []
SOURCES: dict[str, str] = {cls.type_name(): "built-in" for cls in BUILT_IN}  # type name -> where it comes from


@plugins.registrar("learners")
def _register_plugin(obj: Any, name: str, source: str) -> None:
    """A plugin's entry point must name a learner config model with a new type name."""
    if not (isinstance(obj, type) and issubclass(obj, (OnlineLearnerConfig, BatchLearnerConfig))):
        raise TypeError(f"expected a subclass of OnlineLearnerConfig or BatchLearnerConfig, got {obj!r}")
    try:
        name = obj.type_name()
    except (KeyError, ValueError) as exc:
        raise TypeError(f"{obj.__name__} has no 'type: Literal[\"name\"]' field") from exc
    if name in SOURCES:
        raise ValueError(f"learner type {name!r} is already defined ({SOURCES[name]})")
    check_name(name)
    if not getattr(obj, "summary", ""):
        raise TypeError(f"{obj.__name__} has no summary (the line 'ltr list' shows)")
    try:  # the config's union of learner models must still build with it
        union: Any = Annotated[Union[BUILT_IN + tuple(_PLUGGED) + (obj,)], Field(discriminator="type")]
        TypeAdapter(union)
    except Exception as exc:  # noqa: BLE001 - pydantic's schema errors have several types
        raise TypeError(f"{obj.__name__} cannot join the config's learner types: "
                        f"{str(exc).splitlines()[0]}") from None
    _PLUGGED.append(obj)
    SOURCES[name] = source


plugins.load_group("learners")
CONFIGS: tuple[type[LearnerConfig], ...] = BUILT_IN + tuple(_PLUGGED)

REGISTRY: dict[str, type[LearnerConfig]] = {cls.type_name(): cls for cls in CONFIGS}
assert len(REGISTRY) == len(CONFIGS), "two learner config models share a type name"

LEARNER_TYPES: tuple[str, ...] = tuple(REGISTRY)
ONLINE_TYPES: tuple[str, ...] = tuple(t for t, cls in REGISTRY.items() if cls.kind == "online")
BATCH_TYPES: tuple[str, ...] = tuple(t for t, cls in REGISTRY.items() if cls.kind == "batch")

# the ``learners:`` values of a config: the model whose ``type`` tag matches (to a type
# checker, any learner config)
if TYPE_CHECKING:
    LearnerSpec = LearnerConfig
else:
    LearnerSpec = Annotated[Union[CONFIGS], Field(discriminator="type")]


def learner_help() -> dict[str, str]:
    """Type name -> one-line description, for ``ltr list`` (a plugin's says where it comes from)."""
    return {name: cls.summary + ("" if SOURCES[name] == "built-in" else f" [{SOURCES[name]}]")
            for name, cls in REGISTRY.items()}


def bench_learners() -> dict[str, dict[str, Any]]:
    """The online learner configs ``ltr bench`` times (paper role -> raw config)."""
    out = {}
    for t, cls in REGISTRY.items():
        for variant in getattr(cls, "bench_variants", ()):
            raw = {"type": t, **variant}
            out[cls.model_validate(raw).paper_role()] = raw
    return out


def partial_feedback_types() -> list[str]:
    """Online learners that can learn from the top-K labels only (they define ``feedback_k``)."""
    return [t for t, cls in REGISTRY.items()
            if issubclass(cls, OnlineLearnerConfig) and cls.feedback_k is not OnlineLearnerConfig.feedback_k]
