"""The learner registry: one entry per learner, its config model.

Each learner module defines its config model next to its implementation (a subclass of
:class:`ltr_cli.core.schema.OnlineLearnerConfig` or :class:`~ltr_cli.core.schema.BatchLearnerConfig`
whose ``type`` literal is the learner's name). An entry point of the ``ltr_cli.learners``
group names the model (:mod:`ltr_cli.plugins`): the built-ins in this package's
``pyproject.toml``, plugins in theirs, the entry point's name being the type. That is all
it takes to add a learner: the experiment config's union of learner models, the known type
names, ``ltr list``, the online build, the batch CV's fit, the paper role, the legend label,
the manifest's description, the horizon and feedback a learner needs, and the learners
``ltr bench`` times are all derived from it.

The type names come from the entry points' metadata; a learner's module is imported only
when a config names its type or a listing needs every learner: a run pays for the learners
it runs, not for all of them (nor for the plugins installed beside them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union

from pydantic import Field, TypeAdapter

from ltr_cli import plugins
from ltr_cli.core.schema import BatchLearnerConfig, LearnerConfig, OnlineLearnerConfig
from ltr_cli.names import check_name


class _Probe(OnlineLearnerConfig):
    """A model a plugin's model is joined with, to check it can join the config's union of
    learner types without importing the other learners."""

    type: Literal[" probe"]
    summary: ClassVar[str] = "probe"


@plugins.registrar("learners")
def _register(obj: Any, name: str, source: str) -> None:
    """An entry point must name a learner config model whose type is the entry point's name."""
    if not (isinstance(obj, type) and issubclass(obj, (OnlineLearnerConfig, BatchLearnerConfig))):
        raise TypeError(f"expected a subclass of OnlineLearnerConfig or BatchLearnerConfig, got {obj!r}")
    try:
        type_name = obj.type_name()
    except (KeyError, ValueError) as exc:
        raise TypeError(f"{obj.__name__} has no 'type: Literal[\"name\"]' field") from exc
    if type_name != name:
        taken = plugins.declared("learners").get(type_name)
        if taken is not None:
            raise ValueError(f"learner type {type_name!r} is already defined ({taken.source})")
        raise ValueError(f"{obj.__name__} is the learner type {type_name!r}, but its entry point is named {name!r}: "
                         "name the entry point as the type")
    if source == plugins.BUILT_IN:
        return
    check_name(name)
    if not getattr(obj, "summary", ""):
        raise TypeError(f"{obj.__name__} has no summary (the line 'ltr list' shows)")
    try:  # the config's union of learner models must still build with it
        TypeAdapter(Annotated[Union[obj, _Probe], Field(discriminator="type")])
    except Exception as exc:  # noqa: BLE001 - pydantic's schema errors have several types
        raise TypeError(f"{obj.__name__} cannot join the config's learner types: "
                        f"{str(exc).splitlines()[0]}") from None


def config_for(name: str) -> type[LearnerConfig]:
    """The config model of learner type ``name`` (KeyError if none; imports its module)."""
    cls: type[LearnerConfig] | None = plugins.load("learners", name)
    if cls is None:
        raise KeyError(name)
    return cls


class _Sources(Mapping[str, str]):
    """Type name -> where it comes from (``built-in`` or ``plugin <distribution>``), from the
    entry points' metadata."""

    def __getitem__(self, name: str) -> str:
        return plugins.source("learners", name)

    def __iter__(self) -> Iterator[str]:
        return iter(plugins.declared("learners"))

    def __len__(self) -> int:
        return len(plugins.declared("learners"))


SOURCES: Mapping[str, str] = _Sources()
LEARNER_TYPES: tuple[str, ...] = tuple(SOURCES)


def _usable() -> tuple[str, ...]:
    """The types whose model loads (every learner's module imported; broken plugins left out)."""
    return tuple(plugins.load_group("learners"))


class _Registry(Mapping[str, type[LearnerConfig]]):
    """Type name -> config model, every learner (built-in and plugged); a model's module is
    imported when it is looked up."""

    def __getitem__(self, name: str) -> type[LearnerConfig]:
        if name not in SOURCES:
            raise KeyError(name)
        return config_for(name)

    def __iter__(self) -> Iterator[str]:
        return iter(_usable())

    def __len__(self) -> int:
        return len(_usable())


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
    from ltr_cli.learners.presets import expand

    value = {k: expand(v) for k, v in value.items()}
    raw = {k: v for k, v in value.items() if not isinstance(v, LearnerConfig)}
    tags = [v.get("type") if isinstance(v, dict) else None for v in raw.values()]
    known = all(isinstance(t, str) and plugins.load("learners", t) is not None for t in tags)
    names = tuple(sorted(set(tags))) if known else _usable()  # type: ignore[type-var]
    if not raw:
        return value
    checked = _adapter(names).validate_python(raw)
    return {k: checked.get(k, v) for k, v in value.items()}


def __getattr__(name: str) -> Any:
    """Every learner's model, imported on first use: ``BUILT_IN`` and ``CONFIGS`` (tuples of
    config models), ``ONLINE_TYPES`` and ``BATCH_TYPES`` (type names by kind, a learner's kind
    being its model's) and ``LearnerSpec`` (their union, tagged by ``type``)."""
    if name == "BUILT_IN":
        return tuple(config_for(n) for n in _usable() if SOURCES[n] == plugins.BUILT_IN)
    if name == "CONFIGS":
        return tuple(config_for(n) for n in _usable())
    if name == "ONLINE_TYPES":
        return tuple(n for n in _usable() if config_for(n).kind == "online")
    if name == "BATCH_TYPES":
        return tuple(n for n in _usable() if config_for(n).kind == "batch")
    if name == "LearnerSpec":
        return LearnerConfig if TYPE_CHECKING else _union(_usable())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def learner_help() -> dict[str, str]:
    """Type name -> one-line description, for ``ltr list`` (a plugin's says where it comes from)."""
    return {name: cls.summary + ("" if SOURCES[name] == plugins.BUILT_IN else f" [{SOURCES[name]}]")
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
