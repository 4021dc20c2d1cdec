"""The metric registry: what a metric name means, parsed by one parser and looked up in one
table.

A metric is a **kind**, an optional **cut-off** and optional **parameters**, written
``KIND[@K][-PARAM=VALUE]...``: ``ndcg@10``, ``ap``, ``p@5``, ``err@10``, ``err@10-gmax=2``,
``rr``. :func:`parse_metric` is the only parser of metric names (configs, ``ltr eval
--metric``, ``cv.select_by``, run folders read back); it gives a :class:`MetricSpec` with
one canonical spelling (``map`` is read as ``ap``; parameters in name order).

:data:`KINDS` maps each kind to a :class:`MetricKind`: its reference function, its compiled
kernel code (``None``: Python only), the labels it needs, and whether 1 is a perfect
ranking's value. A reference function is ``f(ranking (m,), labels (m,), meas) -> float |
None`` where ``meas`` is a :class:`ltr_cli.measures.conventions.Measure` (the metric bound to a
:class:`~ltr_cli.measures.conventions.Convention`, a no-relevant policy and a relevance threshold):
every metric is written once against the convention's gain (``conv.gains``), discount and
summation (``conv.dcg``), relevance rule (``conv.relevance``), cut-offs beyond the list
(``conv.beyond_list``) and maximum grade (``conv.max_grade``). The ranking comes from the
convention's tie policy. ``None`` means the convention does not define the value for this
query (letor3's NDCG@k and P@k for k > m).

The kinds are entry points of the ``ltr_cli.metrics`` group (:mod:`ltr_cli.plugins`): the
built-ins (:mod:`ltr_cli.measures.kinds`, each declared beside its reference function) in
this package's ``pyproject.toml``, plugins in theirs. A kind's module is imported when a
name uses it. Adding a metric: its reference function and its :class:`MetricKind` beside it,
and an entry point naming it; optionally a kernel (a code in :mod:`ltr_cli.core.codes`,
a function in :mod:`ltr_cli.kernels.measures`, a branch in ``round_measures`` and
``stacked_measures``, and ``doc_values``: what the kernel needs per document, computed by
the convention). A kind may not be named like a column of the online round table
(:mod:`ltr_cli.core.round_log`), where its values are written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ltr_cli import plugins
from ltr_cli.measures.metrics import parse_cutoff
from ltr_cli.core.round_log import reserved_columns, reserved_prefixes



@dataclass(frozen=True)
class MetricSpec:
    """A parsed metric name: ``kind``, cut-off ``k`` (None: the whole list) and
    ``params`` (name, value) in name order."""

    kind: str
    k: int | None = None
    params: tuple[tuple[str, int], ...] = ()

    @property
    def name(self) -> str:
        """The one spelling of this metric, e.g. ``err@10-gmax=2``."""
        cut = "" if self.k is None else f"@{self.k}"
        return self.kind + cut + "".join(f"-{p}={v}" for p, v in self.params)

    def param(self, name: str) -> int | None:
        """A parameter's value, None when the name does not set it."""
        return dict(self.params).get(name)


class Measure(Protocol):
    """What a metric's reference function reads of the measure it computes: a
    :class:`ltr_cli.measures.conventions.Measure` (the metric bound to a convention ``conv``,
    a no-relevant policy and its value, a relevance threshold and the ERU parameters)."""

    conv: Any
    no_relevant: str
    none_value: float
    threshold: float
    eru_d: float
    eru_alpha: float

    @property
    def k(self) -> int | None: ...

    @property
    def max_grade(self) -> int: ...


Reference = Callable[[np.ndarray, np.ndarray, Measure], "float | None"]


@dataclass(frozen=True)
class MetricKind:
    """One kind of metric.

    ``reference``: the pure function (see the module docstring); ``kernel``: its code in
    the compiled measures (:mod:`ltr_cli.core.codes`), None for Python only;
    ``doc_values``: what the compiled evaluation of many queries needs per document, a
    function of each document's label alone (ERR: its stop probability; RR: 1.0 if
    relevant), computed by the convention; ``cutoff``: ``required``, ``optional`` or ``none``; ``params``:
    parameter name -> help; ``labels``: ``graded`` (uses the convention's gains) or
    ``binary`` (its relevance rule) or ``raw`` (the label values); ``normalised``: 1 is a
    perfect ranking's value, so the ``one`` no-relevant policy gives 1 (otherwise it gives
    the value every ranking has, 0); ``no_relevant``: a query without relevant documents
    gets the no-relevant policy's value (False: the kind defines that value itself, as
    P@k's 0)."""

    help: str
    reference: Reference
    cutoff: str = "optional"
    kernel: int | None = None
    doc_values: Callable[[np.ndarray, "Measure"], np.ndarray] | None = None
    params: dict[str, str] = field(default_factory=dict)
    labels: str = "graded"
    normalised: bool = True
    no_relevant: bool = True


_ALIASES = {"map": "ap"}  # the batch configs' spelling of AP
_KIND_NAME = re.compile(r"[a-z][a-z0-9_]*\Z", re.ASCII)


@plugins.name_check("metrics")
def _check_name(name: str) -> str | None:
    """Why a metric kind may not be called ``name`` (None: it may): its values are written
    in the round table under its name, beside that table's own columns."""
    if not _KIND_NAME.match(name):
        return f"metric kind {name!r} is not a lower-case name ([a-z][a-z0-9_]*); rename the entry point"
    if name in _ALIASES:
        return f"metric kind {name!r} is taken (read as {_ALIASES[name]}); rename the entry point"
    taken = name in reserved_columns() or name.startswith(reserved_prefixes())
    if taken:
        return (f"metric kind {name!r} collides with the round table's columns "
                f"({', '.join(reserved_columns())}, {'*, '.join(reserved_prefixes())}*); rename the entry point")
    return None


@plugins.registrar("metrics")
def _register(obj: Any, name: str, source: str) -> None:
    """An entry point names a :class:`MetricKind` (a plugin's without a kernel: compiled
    metrics are built in); its entry point's name is the kind."""
    if not isinstance(obj, MetricKind):
        raise TypeError(f"expected a MetricKind, got {type(obj).__name__}")
    if source != plugins.BUILT_IN and (obj.kernel is not None or obj.doc_values is not None):
        raise ValueError("a plugin metric has no kernel (kernel and doc_values must be None)")
    if not callable(obj.reference) or obj.cutoff not in ("required", "optional", "none") \
            or obj.labels not in ("graded", "binary", "raw") or not isinstance(obj.help, str):
        raise ValueError("a MetricKind needs a reference function, a cutoff rule (required | optional | none), "
                         "a labels kind (graded | binary | raw) and a help line")
    if not all(_KIND_NAME.match(p) and "_" not in p for p in obj.params):
        raise ValueError("parameter names are lower-case letters and digits")


def _kind(name: str) -> MetricKind | None:
    """The kind ``name`` (its module imported on first use), None when there is none."""
    obj: MetricKind | None = plugins.load("metrics", name)
    return obj


class _Kinds(Mapping[str, MetricKind]):
    """Kind -> :class:`MetricKind`, every declared kind (built-in and plugged in); a kind's
    module is imported when it is looked up (iterating imports them all)."""

    def __getitem__(self, name: str) -> MetricKind:
        info = _kind(name)
        if info is None:
            raise KeyError(name)
        return info

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in plugins.declared("metrics") and _kind(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(_kinds())

    def __len__(self) -> int:
        return len(plugins.load_group("metrics"))


KINDS: Mapping[str, MetricKind] = _Kinds()


class _Sources(Mapping[str, str]):
    """Kind -> where it comes from (``built-in`` or ``plugin <distribution>``), from the
    entry points' metadata."""

    def __getitem__(self, name: str) -> str:
        return plugins.source("metrics", name)

    def __iter__(self) -> Iterator[str]:
        return iter(plugins.declared("metrics"))

    def __len__(self) -> int:
        return len(plugins.declared("metrics"))


SOURCES: Mapping[str, str] = _Sources()


def _declaration_order(item: tuple[str, MetricKind]) -> tuple[int, str, int]:
    """Built-ins in the order their module declares them (the entry points' metadata is
    alphabetical), then plugins in the metadata's order."""
    name, info = item
    if SOURCES[name] != plugins.BUILT_IN:
        return (1, "", 0)
    code = getattr(info.reference, "__code__", None)
    return (0, getattr(info.reference, "__module__", ""), code.co_firstlineno if code is not None else 0)


def _kinds() -> Mapping[str, MetricKind]:
    """The kinds, plugins' included (all imported), built-ins first in declaration order."""
    return dict(sorted(plugins.load_group("metrics").items(), key=_declaration_order))


def _usage(kind: str) -> str:
    info = KINDS[kind]
    cut = {"required": "@K", "optional": "[@K]", "none": ""}[info.cutoff]
    return kind + cut + "".join(f"[-{p}=N]" for p in info.params)


def metric_help() -> dict[str, str]:
    """``ltr list``'s metric lines: usage -> help (a plugin's says where it comes from)."""
    return {_usage(kind): info.help + ("" if SOURCES[kind] == "built-in" else f" [{SOURCES[kind]}]")
            for kind, info in _kinds().items()}


def known_metrics() -> str:
    """The known metric forms, for error messages."""
    return ", ".join(_usage(kind) for kind in _kinds())


_PARAM = re.compile(r"([a-z]+)=(.*)", re.ASCII)
# the largest value a kind's parameter may take, and why
_PARAM_MAX = {("err", "gmax"): (1023, "ERR divides each gain by 2^gmax; float64 holds powers of two up to 2^1023")}


def parse_metric(name: object) -> MetricSpec:
    """Parse a metric name (``ndcg@10``, ``ap``, ``err@10-gmax=2``, ...). ValueError with the
    known forms when it is not one. Cut-offs and parameter values are positive integers in
    ASCII digits without a leading zero (one spelling per metric)."""
    if not isinstance(name, str):
        raise ValueError(f"a metric name must be a string, not {name!r}")
    head, *parts = name.split("-")
    head = _ALIASES.get(head, head)
    kind, at, cut = head.partition("@")
    found = _kind(kind)
    if found is None:
        raise ValueError(f"unknown metric {name!r}; known: {known_metrics()} (K a positive integer)")
    info = found
    k: int | None = None
    if at:
        k = parse_cutoff(cut)
        if k is None:
            raise ValueError(f"metric {name!r}: the cut-off after '@' must be a positive integer "
                             "in ASCII digits without a leading zero (e.g. ndcg@10)")
    if info.cutoff == "required" and k is None:
        raise ValueError(f"metric {name!r} needs a cut-off, e.g. {kind}@10")
    if info.cutoff == "none" and k is not None:
        raise ValueError(f"metric {kind!r} takes no cut-off (write {kind})")
    params: dict[str, int] = {}
    for part in parts:
        match = _PARAM.fullmatch(part)
        if match is None or match.group(1) not in info.params:
            allowed = ", ".join(info.params) or "none"
            raise ValueError(f"metric {name!r}: unknown parameter {part!r}; {kind} parameters: {allowed} "
                             f"(written {_usage(kind)})")
        value = parse_cutoff(match.group(2))
        if value is None or match.group(1) in params:
            raise ValueError(f"metric {name!r}: parameter {match.group(1)} needs one positive integer "
                             "value (e.g. gmax=4)")
        bound = _PARAM_MAX.get((kind, match.group(1)))
        if bound is not None and value > bound[0]:
            raise ValueError(f"metric {name!r}: {match.group(1)} must be at most {bound[0]} ({bound[1]})")
        params[match.group(1)] = value
    return MetricSpec(kind, k, tuple(sorted(params.items())))


def is_metric_name(name: object) -> bool:
    """``name`` is a valid metric name in its one spelling (``ndcg@10``, ``ap``, ...)."""
    if not isinstance(name, str):
        return False
    head = name.split("-")[0].partition("@")[0]
    if _ALIASES.get(head, head) not in plugins.declared("metrics"):
        return False  # without building the error message, which lists (and imports) every kind
    try:
        spec = parse_metric(name)
    except ValueError:
        return False
    return spec.name == name or (name in _ALIASES)


# how a metric is typeset in tables and figures: the papers' names for the mean over queries
_DISPLAY = {"ap": "MAP", "rr": "MRR", "mean_ndcg": "MeanNDCG"}
# prefixes and suffixes of column names built from a metric name
_PREFIXES = ("vali_", "test_", "heldout_", "paper_")
_SUFFIXES = ("_std", "_min", "_max")


def canonical_name(name: str) -> str:
    """The one spelling of a metric name (``map`` -> ``ap``, ``err@10-gmax=2`` as is);
    ``name`` unchanged when it is not a metric name."""
    try:
        return parse_metric(name).name
    except ValueError:
        return name


def canonical_column(column: str) -> str:
    """A column named after a metric, with the metric in its one spelling: ``map`` -> ``ap``,
    ``vali_map`` -> ``vali_ap``, ``map_std`` -> ``ap_std``, ``paper_map`` -> ``paper_ap``;
    any other column unchanged (results written by older versions are read through this)."""
    prefix = next((p for p in _PREFIXES if column.startswith(p)), "")
    rest = column[len(prefix):]
    suffix = next((x for x in _SUFFIXES if rest.endswith(x) and not is_metric_name(rest)), "")
    core = rest[:len(rest) - len(suffix)] if suffix else rest
    return prefix + canonical_name(core) + suffix if is_metric_name(core) else column


def display_name(name: str) -> str:
    """How a metric is typeset (LaTeX tables, figure labels, ``ltr run``'s line): the mean
    over queries under the papers' names: ``ap`` -> ``MAP``, ``rr`` -> ``MRR``,
    ``ndcg@10`` -> ``NDCG@10``, ``p@5`` -> ``P@5``, ``err@10-gmax=2`` -> ``ERR@10 (gmax=2)``;
    a name that is not a metric's is returned unchanged."""
    try:
        spec = parse_metric(name)
    except ValueError:
        return name
    head = _DISPLAY.get(spec.kind, spec.kind.upper()) + ("" if spec.k is None else f"@{spec.k}")
    return head + (" (" + ", ".join(f"{p}={v}" for p, v in spec.params) + ")" if spec.params else "")


def none_value_for(kind: str, policy_value: float) -> float:
    """The value a ``kind`` metric gives a query without relevant documents, from the
    policy's value (0, 1 or NaN): an unnormalised metric gets 0 for ``one``."""
    if not KINDS[kind].normalised and not math.isnan(policy_value):
        return 0.0
    return policy_value
