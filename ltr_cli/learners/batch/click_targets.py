"""The per-document estimators (entry points of ``ltr_cli.estimators``): each gives, for a
fold's click log, one estimate of relevance per (training query, document)
(:mod:`ltr_cli.clicklog.docwise`'s formulas and conventions), which a listwise learner
(``type: neural`` with ``clicks:``) trains on, and RankSVM and LambdaMART on their pairs
(:mod:`ltr_cli.clicklog.target_pairs`).

``naive`` and ``ips`` give both kinds: their per-position weights (which RankSVM and
LambdaMART read) and their per-document targets (which ``type: neural`` reads).
``policy-aware``, ``affine``, ``dm`` and ``dr`` give targets only: RankSVM and LambdaMART
train on their pairs; a learner that reads per-position weights only refuses them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ltr_cli.clicklog import docwise
from ltr_cli.clicklog.estimators import ClickLog, Estimator
from ltr_cli.learners.batch import click_data


def affine_bias(log: ClickLog) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """(alpha, beta, record): float (shown,) each, as ``clicks.propensity`` names them:
    ``true``: the click model's description, absolute (trust bias has beta > 0); a JSON file
    ``{"alpha": [...], "beta": [...]}``: both; ``estimated`` or another propensity file:
    the relative propensities p_k / p_1 as alpha, beta 0."""
    signal, shown = log.signal, log.shown
    source = signal.propensity_file()
    if source is not None:
        both = docwise.alpha_beta_file(source, shown)
        if both is not None:
            return both[0], both[1], {"alpha": docwise.short(both[0]), "beta": docwise.short(both[1])}
    elif signal.propensity is True:
        alpha, beta = docwise.model_bias(log.meta.get("model") or {}, shown,
                                         str(log.meta.get("path", "clicks.generate")))
        return alpha, beta, {"alpha": docwise.short(alpha), "beta": docwise.short(beta)}
    p, extra, _ = click_data.position_propensities(log)
    return p, np.zeros(shown), {"alpha": docwise.short(p), "beta": [0.0] * shown, **extra}


def log_targets(kind: str, log: ClickLog, regression: Any = None) -> list[np.ndarray]:
    """The targets of estimator ``kind`` (:data:`ltr_cli.clicklog.docwise.KINDS`) on a
    fold's log: one float (m_q,) per training query of ``log.train``, in its documents'
    order. ``regression(features, exposure, alpha, beta, floor)``: the DM's predictions per
    query (default :func:`ltr_cli.clicklog.regression.fit_predict`)."""
    sizes = [len(y) for _, y in log.train]
    row_alpha = log.propensity if log.signal.propensity == "logged" else None
    if kind == "naive" or row_alpha is not None:  # logged: each row's own alpha, beta 0
        alpha, beta = np.ones(log.shown), np.zeros(log.shown)
    else:
        alpha, beta, _ = affine_bias(log)
    clip = log.signal.clip
    ex = docwise.exposure(log.sessions, sizes, log.shown, alpha, clip, row_alpha)
    floor = docwise.floor_of(clip)
    dm = None
    if kind in ("dm", "dr"):
        if regression is None:
            from ltr_cli.clicklog.regression import fit_predict

            regression = fit_predict
        dm = regression([np.asarray(X, dtype=float) for X, _ in log.train], ex, alpha, beta, floor)
    return docwise.estimates(kind, ex, alpha, beta, floor, dm)


def _targets(kind: str) -> Any:
    def targets(log: ClickLog) -> list[np.ndarray]:
        return log_targets(kind, log)

    targets.__name__ = f"{kind.replace('-', '_')}_targets"
    return targets


NAIVE = dataclasses.replace(click_data.NAIVE, targets=_targets("naive"))
IPS = dataclasses.replace(click_data.IPS, targets=_targets("ips"))
POLICY_AWARE = Estimator(
    "policy-aware IPS per document: clicks on d per session over d's expected examination under the logging "
    "policy, E[alpha_d] clipped at 1/clip (Oosterhuis & de Rijke 2020); targets only", "policy-aware estimates",
    None, weighs=True, unbiased=True, targets=_targets("policy-aware"))
AFFINE = Estimator(
    "affine correction per document: (ctr_d - E[beta_d]) / E[alpha_d] under an affine (trust-bias) click model "
    "(Vardasbi et al. 2020); targets only", "affine-corrected estimates", None, weighs=True, unbiased=True,
    targets=_targets("affine"))
DM = Estimator(
    "direct method: a logistic regression of relevance on the features, fitted on the clicks with an unbiased "
    "cross-entropy (Oosterhuis 2023); targets only", "direct-method estimates", None, weighs=True,
    targets=_targets("dm"))
DR = Estimator(
    "doubly robust: DM_d + (ctr_d - E[beta_d] - E[alpha_d] DM_d) / E[alpha_d], E[alpha_d] clipped at 1/clip "
    "(Oosterhuis 2023); targets only", "doubly-robust estimates", None, weighs=True, unbiased=True,
    targets=_targets("dr"))
