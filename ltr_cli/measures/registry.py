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

Adding a metric: its reference function and one entry in :data:`KINDS` below; optionally a
kernel (a code in :mod:`ltr_cli.kernels.codes`, a function in
:mod:`ltr_cli.kernels.measures`, a branch in ``round_measures`` and ``stacked_measures``,
and ``doc_values``: what the kernel needs per document, computed by the convention).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr_cli import plugins
from ltr_cli.kernels.codes import MEASURE_AP, MEASURE_ERR, MEASURE_NDCG, MEASURE_PRECISION, MEASURE_RR
from ltr_cli.measures.metrics import eru, neru, parse_cutoff

if TYPE_CHECKING:
    from ltr_cli.measures.conventions import Measure


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


Reference = Callable[[np.ndarray, np.ndarray, "Measure"], "float | None"]


@dataclass(frozen=True)
class MetricKind:
    """One kind of metric.

    ``reference``: the pure function (see the module docstring); ``kernel``: its code in
    the compiled measures (:mod:`ltr_cli.kernels.codes`), None for Python only;
    ``doc_values``: what the compiled evaluation of many queries needs per document, a
    function of each document's label alone (ERR: its stop probability; RR: 1.0 if
    relevant), computed by the convention; ``cutoff``: ``required``, ``optional`` or ``none``; ``params``:
    parameter name -> help; ``labels``: ``graded`` (uses the convention's gains) or
    ``binary`` (its relevance rule) or ``raw`` (the label values); ``normalised``: 1 is a
    perfect ranking's value, so the ``one`` no-relevant policy gives 1 (otherwise it gives
    the value every ranking has, 0)."""

    help: str
    reference: Reference
    cutoff: str = "optional"
    kernel: int | None = None
    doc_values: Callable[[np.ndarray, "Measure"], np.ndarray] | None = None
    params: dict[str, str] = field(default_factory=dict)
    labels: str = "graded"
    normalised: bool = True


# --- reference functions, written against the Convention -------------------------------------

def _cut(meas: Measure, m: int) -> int | None:
    """Positions a cut-off metric covers, or None when the convention does not define it
    (``omit``) or defines it as 0 (``zero``, returned as -1) for k > m."""
    k = meas.k
    if k is not None and k > m and meas.conv.beyond_list != "truncate":
        return None if meas.conv.beyond_list == "omit" else -1
    return m if k is None else min(k, m)


def ndcg(ranking: np.ndarray, labels: np.ndarray, meas: Measure) -> float | None:
    """NDCG@k: DCG of the first min(k, m) positions over the ideal DCG (all m labels sorted
    by gain) of as many, both by the convention's gains and discount. A query whose ideal
    DCG is 0 gets the no-relevant value; k > m follows ``conv.beyond_list``."""
    m = ranking.shape[0]
    n = _cut(meas, m)
    if n is None or n < 0:
        return None if n is None else 0.0
    if m == 0:
        return meas.none_value
    gains = meas.conv.gains(labels)
    ideal = meas.conv.dcg(-np.sort(-gains), n)
    if ideal <= 0.0:
        return meas.none_value
    return meas.conv.dcg(gains[ranking[:n]], n) / ideal


def mean_ndcg(ranking: np.ndarray, labels: np.ndarray, meas: Measure) -> float | None:
    """MeanNDCG (LETOR 4.0 / MSLR scripts): the mean of NDCG@1..NDCG@m; 0 for m = 0."""
    m = ranking.shape[0]
    if m == 0:
        return 0.0
    gains = meas.conv.gains(labels)
    dcg = meas.conv.dcg_prefix(gains[ranking], m)
    ideal = meas.conv.dcg_prefix(-np.sort(-gains), m)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), meas.none_value)
    return float(values.mean())


def average_precision(ranking: np.ndarray, labels: np.ndarray, meas: Measure) -> float | None:
    """AP over the whole list: the mean of precision@j over the positions j of relevant
    documents (the convention's relevance rule); no-relevant value without any."""
    rel = meas.conv.relevance(labels, meas.threshold)[ranking]
    hits = np.cumsum(rel)
    r = int(hits[-1]) if hits.shape[0] else 0
    if r == 0:
        return meas.none_value
    positions = np.arange(1, rel.shape[0] + 1)
    return float((hits[rel] / positions[rel]).sum() / r)


def precision(ranking: np.ndarray, labels: np.ndarray, meas: Measure) -> float | None:
    """P@k: relevant documents in the first min(k, m) positions, divided by k (missing
    positions are not relevant); not defined for k > m under ``omit``."""
    assert meas.k is not None
    if _cut(meas, ranking.shape[0]) is None:
        return None
    rel = meas.conv.relevance(labels, meas.threshold)[ranking[:meas.k]]
    return float(rel.sum() / meas.k)


def _eru(ranking: np.ndarray, labels: np.ndarray, meas: Measure) -> float | None:
    """ERU (:func:`ltr_cli.measures.metrics.eru`) on the raw labels, neutral vote ``eru_d``, half-life ``eru_alpha``."""
    return eru(ranking, labels, meas.eru_d, meas.eru_alpha, meas.k)


def _neru(ranking: np.ndarray, labels: np.ndarray, meas: Measure) -> float | None:
    """NERU (:func:`ltr_cli.measures.metrics.neru`): ERU over the ideal ERU; no-relevant value when that is 0."""
    return neru(ranking, labels, meas.eru_d, meas.eru_alpha, meas.k, meas.no_relevant)


def err_stop_probabilities(labels: np.ndarray, meas: Measure) -> np.ndarray:
    """Each document's stop probability ``R = min(G, 2^gmax - 1) / 2^gmax`` (m,), with ``G``
    the convention's gain (``2^g - 1`` for grade g: Chapelle et al.'s ``(2^g - 1) / 2^gmax``)
    and ``gmax`` the metric's ``gmax`` parameter or the convention's maximum grade; a label
    above ``gmax`` counts as ``gmax``."""
    scale = 2.0 ** meas.max_grade
    return np.minimum(meas.conv.gains(labels), scale - 1.0) / scale


def err(ranking: np.ndarray, labels: np.ndarray, meas: Measure) -> float | None:
    """Expected Reciprocal Rank (Chapelle et al. 2009):
    ``ERR@k = sum_{r=1..min(k,m)} (1/r) R_r prod_{i<r} (1 - R_i)`` with the stop
    probabilities of :func:`err_stop_probabilities`, summed position by position. A list
    shorter than k adds nothing for the missing positions, under every convention
    (``beyond_list`` is the scripts' rule for NDCG@k and P@k).

    A query without relevant documents (every gain 0, as NDCG's rule) has ERR 0 under every
    ranking; the no-relevant policy decides whether it counts: ``skip`` -> NaN (left out of
    averages, as NDCG and AP), ``zero`` and ``one`` -> 0 (ERR is not normalised: every stop
    probability is below 1, so no ranking of any query reaches 1, and 1 would score a query
    that has nothing to find above every real one)."""
    stop = err_stop_probabilities(labels, meas)
    if not (stop > 0.0).any():
        return meas.none_value
    m = ranking.shape[0]
    total, keep = 0.0, 1.0
    for i in range(m if meas.k is None else min(meas.k, m)):  # a missing position adds nothing
        r = float(stop[ranking[i]])
        total += keep * r / (i + 1)
        keep *= 1.0 - r
    return total


def relevance_flags(labels: np.ndarray, meas: Measure) -> np.ndarray:
    """1.0 for the documents the convention's relevance rule calls relevant, else 0.0 (m,)."""
    return meas.conv.relevance(labels, meas.threshold).astype(np.float64)


def rr(ranking: np.ndarray, labels: np.ndarray, meas: Measure) -> float | None:
    """Reciprocal rank ``1 / i`` of the first relevant document (the convention's relevance
    rule), 0 when it is below the cut-off k (under every convention, as ERR); its mean over
    queries is MRR. A query without
    relevant documents gets the no-relevant value (``zero``: 0, ``one``: 1, ``skip``: NaN)."""
    hits = np.flatnonzero(meas.conv.relevance(labels, meas.threshold)[ranking])
    if hits.shape[0] == 0:
        return meas.none_value
    first = int(hits[0])
    return 0.0 if meas.k is not None and first >= meas.k else 1.0 / (first + 1)


# --- the registry ----------------------------------------------------------------------------

KINDS: dict[str, MetricKind] = {
    "ndcg": MetricKind("NDCG at cut-off K (cut-off min(K, m)); without @K over the whole list",
                       ndcg, kernel=MEASURE_NDCG),
    "ap": MetricKind("average precision over the whole list (map is read as ap)", average_precision,
                     cutoff="none", kernel=MEASURE_AP, labels="binary"),
    "p": MetricKind("precision at K (relevant in the top min(K, m), divided by K)", precision,
                    cutoff="required", kernel=MEASURE_PRECISION, labels="binary"),
    "mean_ndcg": MetricKind("mean of NDCG@1..NDCG@m (the LETOR 4.0 and MSLR scripts' MeanNDCG)", mean_ndcg,
                            cutoff="none"),
    "err": MetricKind("expected reciprocal rank (Chapelle et al. 2009) at cut-off K; gmax: the maximum "
                      "grade (default: the convention's)", err, kernel=MEASURE_ERR,
                      doc_values=err_stop_probabilities, params={"gmax": "maximum grade, a positive integer up to 1023"},
                      normalised=False),
    "rr": MetricKind("reciprocal rank of the first relevant document (0 below cut-off K); its mean is MRR",
                     rr, kernel=MEASURE_RR, doc_values=relevance_flags, labels="binary"),
    "eru": MetricKind("expected rank utility (neutral vote eru_d, half-life eru_alpha)", _eru, labels="raw",
                      normalised=False),
    "neru": MetricKind("normalised expected rank utility", _neru, labels="raw"),
}

_ALIASES = {"map": "ap"}  # the batch configs' spelling of AP
_KIND_NAME = re.compile(r"[a-z][a-z0-9_]*\Z", re.ASCII)


@plugins.registrar("metrics")
def _register_plugin(obj: Any, name: str, source: str) -> None:
    """A plugin's entry point names a :class:`MetricKind` without a kernel (compiled metrics
    are built in); its entry point's name is the new kind."""
    if not isinstance(obj, MetricKind):
        raise TypeError(f"expected a MetricKind, got {type(obj).__name__}")
    if not _KIND_NAME.match(name) or name in KINDS or name in _ALIASES:
        raise ValueError(f"metric kind {name!r} is taken or not a lower-case name")
    if obj.kernel is not None or obj.doc_values is not None:
        raise ValueError("a plugin metric has no kernel (kernel and doc_values must be None)")
    if not callable(obj.reference) or obj.cutoff not in ("required", "optional", "none") \
            or obj.labels not in ("graded", "binary", "raw") or not isinstance(obj.help, str):
        raise ValueError("a MetricKind needs a reference function, a cutoff rule (required | optional | none), "
                         "a labels kind (graded | binary | raw) and a help line")
    if not all(_KIND_NAME.match(p) and "_" not in p for p in obj.params):
        raise ValueError("parameter names are lower-case letters and digits")
    KINDS[name] = obj
    SOURCES[name] = source


SOURCES: dict[str, str] = dict.fromkeys(KINDS, "built-in")  # kind -> where it comes from


def _kinds() -> dict[str, MetricKind]:
    """The kinds, plugins' included (loaded on first use)."""
    plugins.load_group("metrics")
    return KINDS


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
    if kind not in _kinds():
        raise ValueError(f"unknown metric {name!r}; known: {known_metrics()} (K a positive integer)")
    info = KINDS[kind]
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
