"""The learner registry: one entry per learner, its config model.

Each learner module defines its config model next to its implementation (a subclass of
:class:`ltr_cli.schema.OnlineLearnerConfig` or :class:`~ltr_cli.schema.BatchLearnerConfig`
whose ``type`` literal is the learner's name). Listing the model in :data:`CONFIGS` is all
it takes to add a learner: the experiment config's union of learner models, the known
type names, ``ltr list``, the online build, the batch CV's fit, the paper role, the legend
label, the manifest's description, the horizon and feedback a learner needs, and the
learners ``ltr bench`` times are all derived from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import Field

from ltr_cli.batch.boosting import AdaRankSpec, RankBoostSpec
from ltr_cli.batch.neru import BMRMNERUSpec
from ltr_cli.batch.permurank import PermuRankSpec
from ltr_cli.batch.ranksvm import RankSVMSpec
from ltr_cli.batch.structural import BMRMNDCGSpec, BMRMSpec, SVMmapSpec
from ltr_cli.learners.ogd import ListNetSpec, OGDSpec, RandomSpec
from ltr_cli.learners.perceptron import MaxPairPerceptronSpec, SlamPerceptronSpec
from ltr_cli.learners.rtopkf import RTopKFSpec
from ltr_cli.schema import LearnerConfig, OnlineLearnerConfig

CONFIGS: tuple[type[LearnerConfig], ...] = (
    # online (perceptron paper, top-k paper)
    SlamPerceptronSpec, MaxPairPerceptronSpec, OGDSpec, ListNetSpec, RTopKFSpec, RandomSpec,
    # batch (direct-optimisation paper, ranking-losses supplement)
    SVMmapSpec, RankSVMSpec, BMRMNDCGSpec, BMRMSpec, AdaRankSpec, RankBoostSpec, PermuRankSpec,
    BMRMNERUSpec,
)

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
    """Type name -> one-line description, for ``ltr list``."""
    return {name: cls.summary for name, cls in REGISTRY.items()}


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
