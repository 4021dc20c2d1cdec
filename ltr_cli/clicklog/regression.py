"""The direct method's regression model: a logistic model of a document's relevance R_d on
its features, fitted on the clicks with an unbiased cross-entropy, as the doubly-robust
paper fits its regression (Oosterhuis 2023; here with a linear model, its code's
``linear_DM`` variant, instead of an MLP).

On the documents with E[alpha_d] > 0 of the queries with sessions (:mod:`ltr_cli.clicklog.docwise`'s
conventions), with a_d = max(E[alpha_d], floor), the loss is

    L(w, b) = -1/n sum_d [ pos_d log sigma(x_d w + b) + neg_d log(1 - sigma(x_d w + b)) ]
              + lam/2 |w|^2,
    pos_d = (ctr_d - E[beta_d]) / a_d,   neg_d = (E[alpha_d] - ctr_d + E[beta_d]) / a_d,

whose expectation (unclipped) is the cross-entropy of sigma against the true R_d. Under
``clicks.propensity: logged`` E[alpha_d] is the mean of the logged propensities p_r of the
rows showing d (``Exposure.examined``) and E[beta_d] is 0: each click at row r has
expectation p_r R_d, so the same loss stays unbiased. The
features are standardised on those documents first; ``lam`` (:data:`L2`) keeps the fit
bounded when a noisy pos_d or neg_d is negative. Fitted by L-BFGS (scipy), deterministic.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.clicklog.docwise import Exposure

#: the L2 penalty on the standardised features' weights
L2 = 1e-3
#: L-BFGS iterations at most
MAX_ITER = 500


def fit_predict(features: list[np.ndarray], ex: Exposure, alpha: np.ndarray, beta: np.ndarray,
                floor: float) -> list[np.ndarray]:
    """The fitted model's sigma(x_d w + b) for every document, float (m_q,) per query of
    ``features`` (float (m_q, n_features) each); all 0.5 when no document is examinable."""
    from scipy.optimize import minimize

    rows, pos, neg = [], [], []
    for q, (X, clicks) in enumerate(zip(features, ex.clicks)):
        n = int(ex.sessions[q])
        if n == 0:
            continue
        ea, eb = ex.means(q, alpha, beta)
        keep = ea > 0
        a = np.maximum(ea[keep], floor)
        ctr = clicks[keep] / n
        rows.append(X[keep])
        pos.append((ctr - eb[keep]) / a)
        neg.append((ea[keep] - ctr + eb[keep]) / a)
    if not rows or not sum(len(r) for r in rows):
        return [np.full(len(X), 0.5) for X in features]
    Xs = np.concatenate(rows)
    p, q_ = np.concatenate(pos), np.concatenate(neg)
    mu, sd = Xs.mean(axis=0), Xs.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    Z = (Xs - mu) / sd
    n_docs = len(Z)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        z = Z @ w + b
        log_p = -np.logaddexp(0.0, -z)      # log sigma(z)
        log_1p = -np.logaddexp(0.0, z)      # log (1 - sigma(z))
        value = -(p @ log_p + q_ @ log_1p) / n_docs + 0.5 * L2 * (w @ w)
        sig = np.exp(log_p)
        dz = -(p * (1.0 - sig) - q_ * sig) / n_docs
        return float(value), np.concatenate((Z.T @ dz + L2 * w, [dz.sum()]))

    found = minimize(loss, np.zeros(Z.shape[1] + 1), jac=True, method="L-BFGS-B",
                     options={"maxiter": MAX_ITER})
    w, b = found.x[:-1], found.x[-1]
    return [1.0 / (1.0 + np.exp(-(((np.asarray(X, dtype=float) - mu) / sd) @ w + b))) for X in features]
