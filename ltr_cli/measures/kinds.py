"""The built-in metric kinds: each reference function, written once against the
:class:`~ltr_cli.measures.conventions.Convention`, with its :class:`MetricKind` declared
beside it. The package's ``pyproject.toml`` names each kind as an entry point of the
``ltr_cli.metrics`` group (entry point name = the kind, as in ``ndcg@10``), as a plugin
names its own; :mod:`ltr_cli.measures.registry` reads them from there.

A reference function is ``f(ranking (m,), labels (m,), meas) -> float | None`` (see
:mod:`ltr_cli.measures.registry`); ``None``: the convention does not define the value.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.core.codes import MEASURE_AP, MEASURE_ERR, MEASURE_NDCG, MEASURE_PRECISION, MEASURE_RR
from ltr_cli.measures.metrics import eru, neru
from ltr_cli.measures.registry import Measure, MetricKind


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


NDCG = MetricKind("NDCG at cut-off K (cut-off min(K, m)); without @K over the whole list",
                  ndcg, kernel=MEASURE_NDCG)


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


AP = MetricKind("average precision over the whole list (map is read as ap)", average_precision,
                cutoff="none", kernel=MEASURE_AP, labels="binary")


def precision(ranking: np.ndarray, labels: np.ndarray, meas: Measure) -> float | None:
    """P@k: relevant documents in the first min(k, m) positions, divided by k (missing
    positions are not relevant); not defined for k > m under ``omit``."""
    assert meas.k is not None
    if _cut(meas, ranking.shape[0]) is None:
        return None
    rel = meas.conv.relevance(labels, meas.threshold)[ranking[:meas.k]]
    return float(rel.sum() / meas.k)


PRECISION = MetricKind("precision at K (relevant in the top min(K, m), divided by K)", precision,
                       cutoff="required", kernel=MEASURE_PRECISION, labels="binary", no_relevant=False)


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


MEAN_NDCG = MetricKind("mean of NDCG@1..NDCG@m (the LETOR 4.0 and MSLR scripts' MeanNDCG)", mean_ndcg,
                       cutoff="none")


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


ERR = MetricKind("expected reciprocal rank (Chapelle et al. 2009) at cut-off K; gmax: the maximum "
                 "grade (default: the convention's)", err, kernel=MEASURE_ERR,
                 doc_values=err_stop_probabilities, params={"gmax": "maximum grade, a positive integer up to 1023"},
                 normalised=False)


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


RR = MetricKind("reciprocal rank of the first relevant document (0 below cut-off K); its mean is MRR",
                rr, kernel=MEASURE_RR, doc_values=relevance_flags, labels="binary")


def _eru(ranking: np.ndarray, labels: np.ndarray, meas: Measure) -> float | None:
    """ERU (:func:`ltr_cli.measures.metrics.eru`) on the raw labels, neutral vote ``eru_d``, half-life ``eru_alpha``."""
    return eru(ranking, labels, meas.eru_d, meas.eru_alpha, meas.k)


ERU = MetricKind("expected rank utility (neutral vote eru_d, half-life eru_alpha)", _eru, labels="raw",
                 normalised=False)


def _neru(ranking: np.ndarray, labels: np.ndarray, meas: Measure) -> float | None:
    """NERU (:func:`ltr_cli.measures.metrics.neru`): ERU over the ideal ERU; no-relevant value when that is 0."""
    return neru(ranking, labels, meas.eru_d, meas.eru_alpha, meas.k, meas.no_relevant)


NERU = MetricKind("normalised expected rank utility", _neru, labels="raw")
