"""The learner registry: one entry per learner, its config model.

Each learner module defines its config model next to its implementation (a subclass of
:class:`ltr_cli.config.schema.OnlineLearnerConfig` or :class:`~ltr_cli.config.schema.BatchLearnerConfig`
whose ``type`` literal is the learner's name). Listing the model in :data:`BUILT_IN_TYPES`
(type name, kind and ``module:Model``) or a plugin's ``ltr_cli.learners`` entry point
(:mod:`ltr_cli.plugins`) is all it takes to add a learner: the experiment config's union of learner models, the known
type names, ``ltr list``, the online build, the batch CV's fit, the paper role, the legend
label, the manifest's description, the horizon and feedback a learner needs, and the
learners ``ltr bench`` times are all derived from it.

A built-in learner's module is imported only when a config names its type or a listing
needs every learner: a run pays for the learners it runs, not for all of them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import Field, TypeAdapter

from ltr_cli import plugins
from ltr_cli.config.schema import BatchLearnerConfig, LearnerConfig, OnlineLearnerConfig
from ltr_cli.names import check_name

# type name -> (kind, "module:ConfigModel"): a learner's module is imported when a config
# names it (or a listing needs every learner), so a run imports only the learners it runs
BUILT_IN_TYPES: dict[str, tuple[str, str]] = {
    # online (perceptron paper, top-k paper)
    "slam-perceptron": ("online", "ltr_cli.learners.online.perceptron:SlamPerceptronSpec"),
    "alg3": ("online", "ltr_cli.learners.online.perceptron:MaxPairPerceptronSpec"),
    "ogd": ("online", "ltr_cli.learners.online.ogd:OGDSpec"),
    "listnet": ("online", "ltr_cli.learners.online.ogd:ListNetSpec"),
    "rtopkf": ("online", "ltr_cli.learners.online.rtopkf:RTopKFSpec"),
    "random": ("online", "ltr_cli.learners.online.ogd:RandomSpec"),
    # batch (direct-optimisation paper, ranking-losses supplement)
    "svmmap": ("batch", "ltr_cli.learners.batch.structural:SVMmapSpec"),
    "ranksvm": ("batch", "ltr_cli.learners.batch.ranksvm:RankSVMSpec"),
    "bmrm-ndcg": ("batch", "ltr_cli.learners.batch.structural:BMRMNDCGSpec"),
    "bmrm": ("batch", "ltr_cli.learners.batch.structural:BMRMSpec"),
    "adarank": ("batch", "ltr_cli.learners.batch.boosting:AdaRankSpec"),
    "rankboost": ("batch", "ltr_cli.learners.batch.boosting:RankBoostSpec"),
    "permurank": ("batch", "ltr_cli.learners.batch.permurank:PermuRankSpec"),
    "bmrm-neru": ("batch", "ltr_cli.learners.batch.neru:BMRMNERUSpec"),
    # batch baselines beside the direct-optimisation methods (not in the papers)
    "lambdamart": ("batch", "ltr_cli.learners.batch.lambdamart:LambdaMARTSpec"),
    "coordinate-ascent": ("batch", "ltr_cli.learners.batch.coordinate_ascent:CoordinateAscentSpec"),
}
_PLUGGED: dict[str, type[LearnerConfig]] = {}
SOURCES: dict[str, str] = {name: "built-in" for name in BUILT_IN_TYPES}  # type name -> where it comes from


@cache
def _built_in(name: str) -> type[LearnerConfig]:
    kind, where = BUILT_IN_TYPES[name]
    module, attr = where.split(":")
    cls: type[LearnerConfig] = getattr(importlib.import_module(module), attr)
    assert cls.type_name() == name and cls.kind == kind, f"{where} is not the {kind} learner {name!r}"
    return cls


def config_for(name: str) -> type[LearnerConfig]:
    """The config model of learner type ``name`` (KeyError if none; imports its module)."""
    if name in _PLUGGED:
        return _PLUGGED[name]
    return _built_in(name)


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
        joined: Any = Annotated[Union[tuple(config_for(n) for n in (*BUILT_IN_TYPES, *_PLUGGED)) + (obj,)],
                                Field(discriminator="type")]
        TypeAdapter(joined)
    except Exception as exc:  # noqa: BLE001 - pydantic's schema errors have several types
        raise TypeError(f"{obj.__name__} cannot join the config's learner types: "
                        f"{str(exc).splitlines()[0]}") from None
    _PLUGGED[name] = obj
    SOURCES[name] = source


plugins.load_group("learners")

LEARNER_TYPES: tuple[str, ...] = tuple(SOURCES)
ONLINE_TYPES: tuple[str, ...] = tuple(t for t in LEARNER_TYPES if (
    BUILT_IN_TYPES[t][0] if t in BUILT_IN_TYPES else _PLUGGED[t].kind) == "online")
BATCH_TYPES: tuple[str, ...] = tuple(t for t in LEARNER_TYPES if t not in ONLINE_TYPES)


class _Registry(Mapping[str, type[LearnerConfig]]):
    """Type name -> config model, every learner (built-in and plugged); a model's module is
    imported when it is looked up."""

    def __getitem__(self, name: str) -> type[LearnerConfig]:
        if name not in SOURCES:
            raise KeyError(name)
        return config_for(name)

    def __iter__(self) -> Iterator[str]:
        return iter(LEARNER_TYPES)

    def __len__(self) -> int:
        return len(LEARNER_TYPES)


REGISTRY: Mapping[str, type[LearnerConfig]] = _Registry()


@cache
def _union(names: tuple[str, ...]) -> Any:
    return Annotated[Union[tuple(config_for(n) for n in names)], Field(discriminator="type")]


@cache
def _adapter(names: tuple[str, ...]) -> TypeAdapter[Any]:
    union: Any = _union(names)
    return TypeAdapter(dict[str, union])


def validate_learners(value: Any) -> Any:
    """A config's ``learners:`` mapping with each entry validated by the model its ``type``
    selects (pydantic's errors, located ``<name>.<type>.<key>``). Only the named learners'
    modules are imported; when a type is missing or unknown, the error lists every type.
    Anything but a mapping is returned as it is, for the field's own type check."""
    if not isinstance(value, dict):
        return value
    raw = {k: v for k, v in value.items() if not isinstance(v, LearnerConfig)}
    tags = [v.get("type") if isinstance(v, dict) else None for v in raw.values()]
    known = all(isinstance(t, str) and t in SOURCES for t in tags)
    names = tuple(sorted(set(tags))) if known else LEARNER_TYPES  # type: ignore[type-var]
    if not raw:
        return value
    checked = _adapter(names).validate_python(raw)
    return {k: checked.get(k, v) for k, v in value.items()}


def __getattr__(name: str) -> Any:
    """Every learner's model, imported on first use: ``BUILT_IN`` and ``CONFIGS`` (tuples of
    config models) and ``LearnerSpec`` (their union, tagged by ``type``)."""
    if name == "BUILT_IN":
        return tuple(config_for(n) for n in BUILT_IN_TYPES)
    if name == "CONFIGS":
        return tuple(config_for(n) for n in LEARNER_TYPES)
    if name == "LearnerSpec":
        return LearnerConfig if TYPE_CHECKING else _union(LEARNER_TYPES)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
