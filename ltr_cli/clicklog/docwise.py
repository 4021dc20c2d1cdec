"""Document-level counterfactual estimates of relevance from a fold's click log: the
per-document estimators (naive, IPS, policy-aware, affine, DM, DR) a listwise learner
trains on.

Conventions. The click model is affine in the relevance R_d of a document:
P(click d at position k) = alpha_k R_d + beta_k (a position-based model: beta = 0; the
trust-bias model has both). For each training query q with n_q > 0 logged sessions and
each of its m_q documents d:

* ``displays[q]``, float (m_q, shown): how many of q's sessions showed d at position k;
  P(k|d) = displays / n_q, the share of the sessions that put d at k (for a deterministic
  logging policy this is the policy's 0/1 probability; for a stochastic one, such as
  ``plackett-luce``, the frequency estimate of it, as the doubly-robust paper's code
  does when the bias is given); a document below the cutoff ``shown`` is never examined;
* E[alpha_d] = sum_k P(k|d) alpha_k and E[beta_d] likewise, float (m_q,);
* ctr_d = clicks on d / n_q.

The estimates, float (m_q,) per query, with E[alpha_d] clipped from below at
``floor = 1 / clicks.clip`` (no clip: floor 0) and E[beta_d] at 0, the rule of the
doubly-robust reference code (there ``alpha_clip = min(10 / sqrt(sessions), 1)``, that
is ``clip = sqrt(sessions) / 10``):

* naive: ctr_d;
* ips: the mean over q's sessions of click / alpha_k at d's position k, each term's weight
  min(1 / alpha_k, clip) (Joachims et al. 2017, per document; biased when a stochastic
  logger shows d in some sessions only);
* policy-aware: ctr_d / max(E[alpha_d], floor), the exposure of d under the logging policy
  (Oosterhuis & de Rijke 2020), unbiased under top-k cutoffs and stochastic logging when
  beta = 0;
* affine: (ctr_d - E[beta_d]) / max(E[alpha_d], floor) (Vardasbi et al. 2020), unbiased
  under trust bias;
* dm: the prediction of a regression model of R_d on the features (:mod:`ltr_cli.clicklog.regression`);
* dr: DM_d + (ctr_d - E[beta_d] - E[alpha_d] DM_d) / max(E[alpha_d], floor) for a
  document with E[alpha_d] > 0 or a floor > 0, DM_d otherwise (Oosterhuis 2023): unclipped
  it equals the affine estimate, clipped it keeps the DM's share the clip removes.

Documents of a query without sessions get 0 (nothing was logged), as do documents never
examinable under IPS, policy-aware and affine (E[alpha_d] = 0: ctr_d = 0). Unclipped,
IPS, policy-aware, affine and DR are unbiased for R_d on the documents with E[alpha_d] > 0
under the conditions above (DR: under the affine model, whatever the DM).

The click model's alpha and beta (:func:`ltr_cli.learners.batch.click_targets.affine_bias`):
``clicks.propensity: true`` reads them from the model's description (absolute: the estimates are then in the units of R, the
model's P(click | examined) per grade, or P(relevant | grade) under trust bias);
``estimated`` and a propensity file give relative propensities p_k / p_1 and beta = 0 (the
estimates are R up to a constant factor); a JSON file ``{"alpha": [...], "beta": [...]}``
gives both. ``logged`` (ips, policy-aware, dm and dr) gives each row's own propensity p_r,
as recorded by the logging system, and beta = 0: ips sums min(1 / p_r, clip) over d's
clicks, and E[alpha_d] is the mean over q's sessions of p_r at the row showing d (0 where it
is not shown), so each estimate (and the DM's regression) reads the examination the logging
policy gave that display. Affine with beta = 0 is policy-aware, so it is not offered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr_cli.errors import LtrError

if TYPE_CHECKING:
    from ltr_cli.clicklog.simulate import Sessions

KINDS = ("naive", "ips", "policy-aware", "affine", "dm", "dr")


@dataclass(frozen=True)
class Exposure:
    """What the estimators read of a log, per training query q (m_q its documents):
    ``sessions`` int (queries,) n_q; ``displays[q]`` float (m_q, shown) the sessions
    showing d at position k; ``clicks[q]`` float (m_q,) the clicks on d; ``inverse[q]``
    float (m_q,) the sum over d's clicks of min(1 / alpha_k, clip) (the per-click IPS);
    ``examined[q]`` float (m_q,), given the rows' own propensities p_r
    (``clicks.propensity: logged``): the sum of p_r over the rows showing d, so that
    E[alpha_d] = examined / n_q (and ``inverse`` sums min(1 / p_r, clip)); None otherwise."""

    sessions: np.ndarray
    displays: list[np.ndarray]
    clicks: list[np.ndarray]
    inverse: list[np.ndarray]
    examined: list[np.ndarray] | None = None

    def means(self, q: int, alpha: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(E[alpha_d], E[beta_d]) of query q's documents, float (m_q,) each: under the logged
        displays and ``alpha``, ``beta`` (float (shown,)); or, given the rows' own
        propensities (``examined``), their mean over q's sessions and beta 0."""
        n = max(int(self.sessions[q]), 1)
        if self.examined is not None:
            return self.examined[q] / n, np.zeros(len(self.clicks[q]))
        return expected(self.displays[q], n, alpha), expected(self.displays[q], n, beta)


def exposure(s: Sessions, sizes: list[int], shown: int, alpha: np.ndarray, clip: float | None,
             row_alpha: np.ndarray | None = None) -> Exposure:
    """The counts of :class:`Exposure` from the sessions ``s`` (``query`` indexing the
    queries of ``sizes``, their numbers of documents), with ``alpha`` float (shown,), or
    each row's own ``row_alpha`` float (rows,) in (0, 1] (``alpha`` then unused)."""
    queries = len(sizes)
    first = np.ones(len(s.session), dtype=bool)
    first[1:] = s.session[1:] != s.session[:-1]
    n_q = np.bincount(s.query[first], minlength=queries).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    row = offsets[s.query] + s.doc
    total = int(offsets[-1])
    pos = s.position.astype(np.int64) - 1
    disp = np.bincount(row * shown + pos, minlength=total * shown).astype(float).reshape(total, shown)
    click = s.click.astype(float)
    clicks = np.bincount(row, weights=click, minlength=total)
    with np.errstate(divide="ignore"):
        w = np.where(alpha > 0, 1.0 / np.where(alpha > 0, alpha, 1.0), 0.0)
    if clip is not None:
        w = np.minimum(w, clip)
    examined = None
    if row_alpha is None:
        inverse = np.bincount(row, weights=click * w[pos], minlength=total)
    else:
        wr = 1.0 / row_alpha
        inverse = np.bincount(row, weights=click * (wr if clip is None else np.minimum(wr, clip)), minlength=total)
        examined = np.bincount(row, weights=row_alpha, minlength=total)
    cut = [slice(int(offsets[q]), int(offsets[q + 1])) for q in range(queries)]
    return Exposure(n_q, [disp[c] for c in cut], [clicks[c] for c in cut], [inverse[c] for c in cut],
                    None if examined is None else [examined[c] for c in cut])


def expected(displays: np.ndarray, n: int, values: np.ndarray) -> np.ndarray:
    """E[values_d] = sum_k P(k|d) values_k, float (m,), P(k|d) = displays / n (0 when n = 0)."""
    return displays @ values / max(n, 1)


def estimates(kind: str, ex: Exposure, alpha: np.ndarray, beta: np.ndarray, floor: float,
              dm: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """The estimates of ``kind`` (:data:`KINDS`), one float (m_q,) per query; ``dm``: the
    regression's predictions per query (dm and dr)."""
    out = []
    for q, (disp, clicks) in enumerate(zip(ex.displays, ex.clicks)):
        n = int(ex.sessions[q])
        m = disp.shape[0]
        if n == 0:
            out.append(np.zeros(m))
            continue
        ctr = clicks / n
        ea, eb = ex.means(q, alpha, beta)
        eb = np.maximum(eb, 0.0)
        ca = np.maximum(ea, floor)
        safe = np.where(ca > 0, ca, 1.0)
        if kind == "naive":
            r = ctr
        elif kind == "ips":
            r = ex.inverse[q] / n
        elif kind == "policy-aware":
            r = np.where(ca > 0, ctr / safe, 0.0)
        elif kind == "affine":
            r = np.where(ca > 0, (ctr - eb) / safe, 0.0)
        elif kind in ("dm", "dr"):
            assert dm is not None
            pred = np.asarray(dm[q], dtype=float)
            r = pred if kind == "dm" else np.where(ca > 0, (ctr - eb - (ea - ca) * pred) / safe, pred)
        else:
            raise ValueError(f"unknown document estimator {kind!r}")
        out.append(np.asarray(r, dtype=float))
    return out


# --- the click model's alpha and beta --------------------------------------------------

def examination_of(model_meta: dict[str, Any], shown: int, where: str) -> tuple[str, np.ndarray]:
    """(the click model's kind, its examination of positions 1..shown, absolute) from its
    description (:meth:`ClickModel.describe`); a model that does not examine by position
    alone (a cascade) is refused in one line naming ``where``."""
    from ltr_cli.clicks.base import CLICK_MODELS

    kind, eta = model_meta.get("kind"), model_meta.get("eta")
    examination = None
    if isinstance(kind, str) and kind in CLICK_MODELS.names() and kind in CLICK_MODELS:
        examination = CLICK_MODELS[kind].examination
    if examination is None or not isinstance(eta, (int, float)):
        by_position = ", ".join(n for n, k in CLICK_MODELS.items() if k.examination is not None)
        raise LtrError(f"{where}: propensity: true needs a click model that examines by position ({by_position}); "
                       f"this log's is {model_meta.get('model')!r}: use propensity: estimated or a file")
    return str(kind), np.asarray(examination(shown, float(eta)), dtype=float)


def model_bias(model_meta: dict[str, Any], shown: int, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(alpha, beta), float (shown,) each, absolute, from a click model's description: a
    position-based model's examination (beta 0); trust bias's e_k^eta (eps+_k - eps-_k) and
    e_k^eta eps-_k. A model that does not examine by position alone (a cascade) is refused."""
    kind, e = examination_of(model_meta, shown, where)
    if kind != "trust-bias":
        return e, np.zeros(shown)
    from ltr_cli.clicks.trust import DEFAULT_NEGATIVE, trust_rates

    said = str(model_meta.get("eps_minus", f"{DEFAULT_NEGATIVE}/i"))
    try:
        negative = float(said.split("/")[0])
    except ValueError:
        raise LtrError(f"{where}: the trust-bias model's eps_minus {said!r} is not 'RATE/i'") from None
    plus, minus = trust_rates(shown, negative)
    return e * (plus - minus), e * minus


def short(v: np.ndarray) -> list[float]:
    return [float(f"{x:.12g}") for x in v]


def alpha_beta_file(path: Any, shown: int) -> tuple[np.ndarray, np.ndarray] | None:
    """A JSON file ``{"alpha": [...], "beta": [...]}`` (at least ``shown`` values each,
    alpha > 0, beta >= 0), or None when the file is another propensity file."""
    from ltr_cli.core.bounded import Unreadable, read_json

    try:
        raw = read_json(path, 1 << 20)
    except (OSError, Unreadable):
        return None  # said by the propensity file's reader
    if not isinstance(raw, dict) or "alpha" not in raw:
        return None
    parts = []
    for key, low in (("alpha", 0.0), ("beta", None)):
        values = raw.get(key, [0.0] * shown)
        if not isinstance(values, list) or len(values) < shown or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                and (v > 0 if low is not None else v >= 0) for v in values[:shown]):
            rule = "positive" if low is not None else "non-negative"
            raise LtrError(f"clicks.propensity: {path}: {key!r} must list at least {shown} {rule} numbers, one per "
                           "shown position")
        parts.append(np.asarray(values[:shown], dtype=float))
    return parts[0], parts[1]


def floor_of(clip: float | None) -> float:
    """The clip on E[alpha_d] from below: 1 / ``clicks.clip`` (no clip: 0)."""
    return 0.0 if clip is None else 1.0 / clip
