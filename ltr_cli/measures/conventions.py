"""Metric conventions: one :class:`Convention` per named preset, the single source of the
gain, discount, relevance rule, behaviour for k beyond the list, maximum grade,
no-relevant value and tie order that online rounds, ``ltr eval``, the batch CV and the
manifests use. :class:`Measure` binds a metric of the registry
(:mod:`ltr_cli.measures.registry`) to a convention; :func:`evaluate_query` computes a list of
them on one query.

Presets (``../shared/METRIC-CONVENTIONS.md``):

* ``paper`` - perceptron paper Eq. 1/2: gain 2^r - 1 for any real label, discount
  1/log2(i+1), NDCG@k over min(k, m) positions, relevant = label > threshold for AP and
  P@k, P@k divided by k, no-relevant value by policy (default 0).
* ``letor4`` - LETOR 4.0 ``Eval-Score-4.0.pl``: gains {0: 0, 1: 1, 2: 3}, other labels
  gain 0 and are not relevant (a warning is printed); discount 1 at positions 1 and 2,
  1/log2(i) from position 3; NDCG@k = 0 when the ideal DCG@k is 0 and for k > m; P@k with
  relevant = label 1 or 2, missing positions not relevant, divided by k; AP over the whole
  list, 0 without relevant documents; MeanNDCG = mean of NDCG@1..NDCG@m; ties keep file
  order; averages are plain means of the unrounded per-query values.
* ``letor3`` - ``Eval-Score-3.0.pl``: as letor4 but positions 1..16, and NDCG@k / P@k only
  for k <= m (omitted from the query's row; they add nothing to the average, whose
  denominator is still the number of queries); no MeanNDCG.
* ``mslr`` - ``Eval-Score-MSLR.pl``: as letor4 with gains {0, 1, 3, 7, 15} for labels 0-4
  and relevant = label >= 2 for P@k and AP.
* ``lightgbm`` - LightGBM's ``ndcg`` and ``map`` metrics: as paper, but a query without
  relevant documents counts as 1 (its NDCG and AP); ties in file order (its stable sort).
* ``allrank`` - allRank's ``ndcg``: the same rules as lightgbm (computed in float32 there).
* ``trec_eval`` and ``ranx`` - trec_eval's ``ndcg_cut``, ``map``, ``P`` and ranx's ``ndcg``,
  ``map``, ``precision``: gain r (the label itself), discount 1/log2(i+1), NDCG@k over
  min(k, m) positions, relevant = label > threshold, 0 without relevant documents.

:meth:`Convention.summary` says the rules in one short line for tables and captions
(``gain 2^r-1, discount 1/log2(i+1), @k beyond the list: over the list, no relevant: 0``).

The maximum grade (ERR's g_max) is 4 for paper and mslr (MSLR and Yahoo grade 0-4) and 2
for letor3 and letor4 (OHSUMED, MQ2007/8 grade 0-2); a metric's ``gmax`` parameter
overrides it. ERR and RR (not in the scripts) use the convention's gains and relevance
rule and cover min(k, m) positions under every preset.

The LETOR scripts read integer labels only (their line pattern is ``^(\\d+) qid:``), so
the letor/mslr presets refuse other labels. Queries are grouped by qid (lines of one qid
anywhere in the file form one query, in file order) and reported in numeric qid order
where all qids are numeric.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ltr_cli.core.convention_table import BEYOND_LIST, GAIN_RULES, PRESETS, SOURCES
from ltr_cli.measures.registry import KINDS, MetricSpec, none_value_for, parse_metric
from ltr_cli.measures.metrics import exp2_gain, log2_discount, no_relevant_value, rank_from_scores


@dataclass(frozen=True)
class Convention:
    """A metric convention.

    ``gain_table``: integer label -> gain (other labels gain 0 and are not relevant), or
    None for ``gain_rule`` on real labels (``exp2``: ``2^r - 1``, ``linear``: ``r``;
    negative labels gain 0); ``relevant``: the relevant labels, or
    None for ``label > threshold``; ``positions``: the cut-offs reported (1..positions);
    ``beyond_list``: a key of :data:`BEYOND_LIST`; ``mean_ndcg``: report MeanNDCG;
    ``max_grade``: the highest grade of the labels (ERR's ``g_max``);
    ``ties``, ``no_relevant``: the default policies (:data:`ltr_cli.measures.metrics.TIE_POLICIES`,
    :data:`~ltr_cli.measures.metrics.NO_RELEVANT_POLICIES`). The discount is the paper's
    ``1/log2(i + 1)`` without a gain table and the LETOR scripts' ``1, 1, 1/log2(i)`` with one.
    """

    name: str
    gain_table: dict[int, float] | None
    gain_rule: str
    relevant: frozenset[int] | None
    positions: int
    beyond_list: str
    mean_ndcg: bool
    max_grade: int
    ties: str = "input-order"
    no_relevant: str = "zero"

    @property
    def letor_style(self) -> bool:
        """True for the official scripts' presets (integer labels, gain table)."""
        return self.gain_table is not None

    def gains(self, labels: np.ndarray) -> np.ndarray:
        """Gain of each label (m,)."""
        if self.gain_table is None:
            if self.gain_rule == "linear":
                return np.maximum(np.asarray(labels, dtype=np.float64), 0.0)
            return exp2_gain(labels)
        ints = np.asarray(labels, dtype=np.float64).astype(np.int64)
        out = np.zeros(ints.shape[0])
        for label, gain in self.gain_table.items():  # labels outside the table keep gain 0
            out[ints == label] = gain
        return out

    def outside_gain_table(self, labels: np.ndarray) -> int:
        """How many of ``labels`` the gain table does not list (they get gain 0 and are not
        relevant, as in the official scripts); 0 for a convention without a table."""
        if self.gain_table is None:
            return 0
        ints = np.asarray(labels, dtype=np.float64).astype(np.int64)  # int(): truncation, as gains()
        return int((~np.isin(ints, np.fromiter(self.gain_table, dtype=np.int64))).sum())

    def outside_gain_table_warning(self, count: int, where: str = "documents") -> str:
        """The one warning line for ``count`` labels outside the gain table."""
        return (f"{count} {where} have labels outside the {self.name} gain table; like the official script "
                "they get gain 0 and count as not relevant")

    def discounts(self, n: int) -> np.ndarray:
        """Discounts of positions 1..n (n,)."""
        return letor_discounts(n) if self.letor_style else log2_discount(n)

    def relevance(self, labels: np.ndarray, threshold: float = 0.0) -> np.ndarray:
        """Which documents are relevant (m,) bool: the convention's relevant labels, or
        ``label > threshold`` without a list (the paper's rule)."""
        y = np.asarray(labels, dtype=np.float64)
        if self.relevant is None:
            return y > threshold
        return np.isin(y.astype(np.int64), np.fromiter(self.relevant, dtype=np.int64))

    def dcg(self, gains_in_order: np.ndarray, n: int) -> float:
        """DCG of the first n positions (n <= len) of gains in rank order, summed as the
        convention's reference does: the paper's one dot product, the scripts' running sum."""
        if self.letor_style:
            return float(self.dcg_prefix(gains_in_order, n)[-1]) if n else 0.0
        return float(np.ascontiguousarray(gains_in_order[:n]) @ log2_discount(n))

    def dcg_prefix(self, gains_in_order: np.ndarray, n: int) -> np.ndarray:
        """DCG@1..n (n,) of gains in rank order (n <= len)."""
        if self.letor_style:
            return np.cumsum(gains_in_order[:n] * letor_discounts(n))
        return np.array([self.dcg(gains_in_order, i) for i in range(1, n + 1)])

    @property
    def paper_gain(self) -> bool:
        """True when the gain is ``2^r - 1`` on real labels and the discount ``1/log2(i+1)``
        (what the online kernels compute)."""
        return self.gain_table is None and self.gain_rule == "exp2"

    def with_policies(self, ties: str | None = None, no_relevant: str | None = None) -> Convention:
        """This convention with other default policies (None keeps the preset's)."""
        return replace(self, ties=ties or self.ties, no_relevant=no_relevant or self.no_relevant)

    def gain_text(self) -> str:
        """The gain in a few characters: ``2^r-1``, ``r``, ``0,1,3 for labels 0-2``."""
        if self.gain_table is None:
            return GAIN_RULES[self.gain_rule]
        labels = sorted(self.gain_table)
        return ",".join(f"{self.gain_table[k]:g}" for k in labels) + f" for labels {labels[0]}-{labels[-1]}"

    def discount_text(self) -> str:
        return "1,1,1/log2(i)" if self.letor_style else "1/log2(i+1)"

    def summary(self, no_relevant: str | None = None) -> str:
        """The rules in one short line, for tables, captions and ``ltr eval``: ``gain 2^r-1,
        discount 1/log2(i+1), @k beyond the list: over the list, no relevant: 0`` (under
        ``no_relevant``, default the convention's)."""
        policy = no_relevant or self.no_relevant
        return (f"gain {self.gain_text()}, discount {self.discount_text()}, @k beyond the list: "
                f"{_BEYOND_TEXT[self.beyond_list]}, no relevant: {_NO_RELEVANT_TEXT[policy]}")

    def title(self, no_relevant: str | None = None) -> str:
        """``paper (gain 2^r-1, ...)``: the name with :meth:`summary`."""
        return f"{self.name} ({self.summary(no_relevant)})"

    @property
    def source(self) -> str:
        """What the preset reproduces (the tool or script and its file)."""
        return SOURCES.get(self.name, "")

    def describe(self) -> dict[str, Any]:
        """The convention as the manifest records it."""
        return {
            "convention": self.name,
            "gain": ("2^r - 1" if self.gain_rule == "exp2" else "r") if self.gain_table is None
            else {str(k): v for k, v in self.gain_table.items()},
            "discount": "1/log2(i+1)" if not self.letor_style else "1 at positions 1-2, then 1/log2(i)",
            "relevant": "label > threshold" if self.relevant is None else sorted(self.relevant),
            "k_beyond_list": BEYOND_LIST[self.beyond_list],
            "max_grade": self.max_grade, "ties": self.ties, "no_relevant": self.no_relevant,
        }


CONVENTIONS: dict[str, Convention] = {name: Convention(name, **preset) for name, preset in PRESETS.items()}

_BEYOND_TEXT = {"truncate": "over the list", "zero": "0", "omit": "left out"}
_NO_RELEVANT_TEXT = {"zero": "0", "one": "1", "skip": "dropped"}


def letor_discounts(n: int) -> np.ndarray:
    """LETOR scripts' discounts for positions 1..n: 1, 1, then 1/log2(i) for i >= 3."""
    i = np.arange(1, n + 1, dtype=np.float64)
    d = np.ones(n)
    d[2:] = np.log(2.0) / np.log(i[2:])
    return d


def default_metric_names(conv: Convention) -> list[str]:
    """The columns the convention's script reports: ``ndcg@1..P``, ``ap``, ``p@1..P`` and,
    for letor4 / mslr, ``mean_ndcg`` (``ltr eval``'s and the batch tables' defaults)."""
    P = conv.positions
    names = [f"ndcg@{k}" for k in range(1, P + 1)] + ["ap"] + [f"p@{k}" for k in range(1, P + 1)]
    return names + (["mean_ndcg"] if conv.letor_style and conv.mean_ndcg else [])


class Measure:
    """A metric of the registry (:mod:`ltr_cli.measures.registry`) bound to a convention, a
    no-relevant policy and a relevance threshold: ``Measure("err@10")(ranking, labels)``.

    ``name`` is parsed by :func:`~ltr_cli.measures.registry.parse_metric`; ``conv`` defaults
    to the ``paper`` preset; ``no_relevant`` defaults to the convention's policy; the ERU
    parameters are used by ``eru`` and ``neru`` only. The settings are fixed at
    construction, so every round and every query uses the same convention.
    """

    def __init__(self, name: str | MetricSpec, no_relevant: str | None = None, relevance_threshold: float = 0.0,
                 eru_d: float = 0.0, eru_alpha: float = 5.0, conv: Convention | None = None):
        self.spec = name if isinstance(name, MetricSpec) else parse_metric(name)
        self.info = KINDS[self.spec.kind]
        self.conv = conv or CONVENTIONS["paper"]
        self.no_relevant = no_relevant or self.conv.no_relevant
        self.none_value = none_value_for(self.spec.kind, no_relevant_value(self.no_relevant))
        self.threshold = float(relevance_threshold)
        self.eru_d, self.eru_alpha = eru_d, eru_alpha

    @property
    def name(self) -> str:
        """The metric's one spelling, e.g. ``ndcg@10``."""
        return self.spec.name

    @property
    def kind(self) -> str:
        """The registry kind, e.g. ``ndcg``."""
        return self.spec.kind

    @property
    def k(self) -> int | None:
        """The cut-off, None for the whole list."""
        return self.spec.k

    @property
    def title(self) -> str:
        """Upper-case label used in plots, e.g. ``NDCG@10``."""
        return self.name.upper()

    @property
    def max_grade(self) -> int:
        """ERR's ``gmax``: the metric's ``gmax`` parameter, else the convention's maximum grade."""
        return self.spec.param("gmax") or self.conv.max_grade

    def kernel_row(self) -> tuple[float, float, float, float, float] | None:
        """This measure as a row of the compiled measures (``round_measures``,
        ``stacked_measures``): (kind code, cut-off (-1: whole list), threshold, no-relevant
        value, 2^gmax); None when its kind has no kernel or the convention's gain is not the
        paper's (the online kernels compute the paper's gain and relevance rule)."""
        if self.info.kernel is None or not self.conv.paper_gain:
            return None
        k = -1.0 if self.k is None else float(self.k)
        return (float(self.info.kernel), k, self.threshold, self.none_value, 2.0 ** self.max_grade)

    def __call__(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        """The value on one query (NaN where the convention does not define it)."""
        value = self.info.reference(np.asarray(ranking), np.asarray(labels, dtype=np.float64), self)
        return float("nan") if value is None else value

    def value(self, ranking: np.ndarray, labels: np.ndarray) -> float | None:
        """The reference value on one query; None where the convention does not define it."""
        return self.info.reference(np.asarray(ranking), np.asarray(labels, dtype=np.float64), self)


def bind(names: list[str] | None, conv: Convention, no_relevant: str | None = None, threshold: float = 0.0,
         eru_d: float = 0.0, eru_alpha: float = 5.0) -> list[Measure]:
    """Measures of ``names`` (default: :func:`default_metric_names`) under ``conv``."""
    return [Measure(n, no_relevant, threshold, eru_d, eru_alpha, conv) for n in (names or default_metric_names(conv))]


def evaluate_query(
    scores: np.ndarray,
    labels: np.ndarray,
    conv: Convention,
    ties: str | None = None,
    no_relevant: str | None = None,
    threshold: float = 0.0,
    rng: np.random.Generator | None = None,
    measures: list[Measure] | None = None,
) -> dict[str, float | None]:
    """Per-query values of ``measures`` (default: the convention's columns ``ndcg@1..``,
    ``ap``, ``p@1..`` and ``mean_ndcg`` under ``no_relevant`` and ``threshold``) on the
    ranking of ``scores`` by the tie policy (``ties``, default the preset's). Values the
    convention does not define for this query (letor3, k > m) are ``None``.
    """
    y = np.asarray(labels, dtype=np.float64)
    ranking = rank_from_scores(scores, ties or conv.ties, rng, labels=y)
    return {meas.name: meas.value(ranking, y) for meas in (measures or bind(None, conv, no_relevant, threshold))}


def average_metrics(per_query: list[dict[str, float | None]], conv: Convention) -> dict[str, float | None]:
    """Average per-query values the way the convention's script does: letor-style presets
    sum what exists (a missing k > m value adds 0) and divide by the number of queries;
    NaN (``--no-relevant skip``) leaves numerator and denominator; the paper preset takes
    the mean of the defined values."""
    average: dict[str, float | None] = {}
    for key in per_query[0]:
        vals = [v[key] for v in per_query]
        if conv.letor_style:
            kept = [v for v in vals if v is None or not math.isnan(v)]
            average[key] = float(sum(v for v in kept if v is not None) / len(kept)) if kept else None
        else:
            arr = np.array([np.nan if v is None else v for v in vals], dtype=np.float64)
            average[key] = None if np.isnan(arr).all() else float(np.nanmean(arr))
    return average
