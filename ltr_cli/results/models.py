"""Saved ranking models (``models.json`` of a run directory) and their scores.

A batch run saves the model it selected for each fold, an online run its final weights
(key ``final``); ``ltr score`` reads either. Kinds: ``linear`` (weights), ``stumps``
(RankBoost), ``lightgbm`` (LambdaMART: LightGBM's model text in a file of its own beside
``models.json``, :mod:`ltr_cli.results.gbdt`) and ``neural`` (named arrays in a file of their
own, :mod:`ltr_cli.results.neural_files`). Weights are written as the shortest decimals
that read back to the same doubles, NaN as null and infinities as "inf" / "-inf", so the
file is standard JSON and round-trips exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.measures.stacked import linear_scores

OWN_KINDS = ("linear", "stumps")  # the kinds read here; the others: results.gbdt, results.neural_files


@dataclass
class LinearModel:
    w: np.ndarray
    info: dict[str, Any] = field(default_factory=dict)

    def scores(self, X: np.ndarray) -> np.ndarray:
        """``X @ w``, each row summed in one fixed order: identical rows tie exactly
        (:func:`~ltr_cli.measures.stacked.linear_scores`)."""
        return linear_scores(X, self.w)

    def finite(self) -> bool:
        """All weights finite (an authors'-numerics run may end with NaN weights)."""
        return bool(np.isfinite(self.w).all())

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "linear", "features": d, "w": [...]}``; every weight as the shortest
        decimal that reads back to the same double (float32 weights too, exactly), NaN and
        infinities as null / "inf" / "-inf" so the file stays standard JSON."""
        return {"kind": "linear", "features": int(self.w.shape[0]),
                "w": [_json_float(x) for x in self.w.tolist()]}


def _json_float(x: float) -> float | str | None:
    if x != x:
        return None
    if x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    return x


def _from_json_float(x: Any) -> float:
    if x is None:
        return float("nan")
    if isinstance(x, str) and x in ("inf", "-inf"):
        return float(x)
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"a weight must be a number, null (NaN), 'inf' or '-inf', not {x!r}")
    return float(x)


@dataclass
class StumpModel:
    """``H(x) = sum_t alpha_t 1[x_{f_t} > theta_t]`` (linear in the stumps, not in x)."""

    features: list[int]
    thresholds: list[float]
    alphas: list[float]
    info: dict[str, Any] = field(default_factory=dict)

    n_features: int = 0

    def scores(self, X: np.ndarray) -> np.ndarray:
        s = np.zeros(X.shape[0])
        for f, theta, a in zip(self.features, self.thresholds, self.alphas):
            s += a * (X[:, f] > theta)
        return s

    def finite(self) -> bool:
        return bool(np.isfinite(self.thresholds).all() and np.isfinite(self.alphas).all())

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "stumps", "features": self.n_features,
                "stumps": [{"feature": int(f), "threshold": t, "alpha": a}
                           for f, t, a in zip(self.features, self.thresholds, self.alphas)]}


MAX_FEATURES = 10_000_000  # wider than any LTR benchmark (Istella: 220, Yahoo: 700)


def model_from_dict(data: dict[str, Any], folder: Path | None = None) -> Any:
    """Rebuild a saved model (one entry of a run's ``models.json``; ``folder``: the run
    folder, where a LambdaMART model's file is). Raises ValueError, KeyError or TypeError
    on anything that is not a model this tool wrote: a weight count other than
    ``features``, a stump on a feature outside ``[0, features)``; a LambdaMART model file
    that is missing, changed or not a model is a one-line ResultsError naming the file
    (:mod:`ltr_cli.results.gbdt`)."""
    features = data["features"]
    if isinstance(features, bool) or not isinstance(features, int) or not 1 <= features <= MAX_FEATURES:
        raise ValueError(f"features must be an integer from 1 to {MAX_FEATURES}, not {features!r}")
    if data.get("kind") not in OWN_KINDS:
        from ltr_cli.results import gbdt, neural_files

        if data.get("kind") == gbdt.KIND:
            return gbdt.load_model(data, folder)
        if data.get("kind") == neural_files.KIND:
            return neural_files.load_model(data, folder)
    if data.get("kind") == "linear":
        w = np.asarray([_from_json_float(x) for x in data["w"]], dtype=np.float64)
        if w.shape != (features,):
            raise ValueError(f"{w.shape[0]} weights for {features} features")
        return LinearModel(w)
    if data.get("kind") == "stumps":
        st = data["stumps"]
        if any(type(s["feature"]) is not int for s in st):
            raise ValueError("a stump's feature must be an integer")
        model = StumpModel([s["feature"] for s in st], [_from_json_float(s["threshold"]) for s in st],
                           [_from_json_float(s["alpha"]) for s in st], n_features=features)
        if any(not 0 <= f < features for f in model.features):
            raise ValueError(f"a stump's feature is outside 0..{features - 1}")
        return model
    raise ValueError(f"unknown model kind {data.get('kind')!r}")
