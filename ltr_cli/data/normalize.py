"""Feature normalisation (``dataset.normalize``), applied to the rows a learner sees and,
from the record saved with a model, by ``ltr score``.

* ``query-level``: LETOR's QueryLevelNorm, per query and feature
  ``(x - min) / (max - min)`` over the query's documents; 0 where the feature is constant
  within the query. Needs no statistics: every query normalises itself.
* ``zscore``: ``(x - mean) / std`` per feature, with mean and standard deviation over the
  documents of the *training* split only (a feature constant there is only centred). The
  statistics are stored with each model.

Shapes: ``X`` (m, d); statistics (d,). Pure functions of their inputs; float64 out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

NORMALIZATIONS = ("none", "query-level", "zscore")


def query_level(X: np.ndarray) -> np.ndarray:
    """One query's features scaled to [0, 1] per feature (0 where constant)."""
    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] == 0:
        return X.copy()
    low = X.min(axis=0)
    span = X.max(axis=0) - low
    safe = np.where(span > 0, span, 1.0)
    return np.where(span > 0, (X - low) / safe, 0.0)


@dataclass(frozen=True)
class Normalizer:
    """A normalisation ready to apply: its kind and, for ``zscore``, the training
    statistics ``mean`` and ``std`` (d,)."""

    kind: str = "none"
    mean: np.ndarray | None = None
    std: np.ndarray | None = None

    @classmethod
    def fit(cls, kind: str, train: list[tuple[np.ndarray, np.ndarray]]) -> Normalizer:
        """The normaliser of ``kind`` fitted on the training queries ``[(X, y), ...]``.
        For ``query-level`` the queries are expected already normalised by the reader."""
        if kind != "zscore":
            return cls(kind)
        X = np.vstack([np.asarray(X, dtype=np.float64) for X, _ in train])
        mean = X.mean(axis=0)
        std = X.std(axis=0)
        return cls(kind, mean, np.where(std > 0, std, 1.0))

    def apply(self, X: np.ndarray) -> np.ndarray:
        """``X`` (m, d) normalised (a copy; unchanged for ``none``)."""
        if self.kind == "query-level":
            return query_level(X)
        if self.kind == "zscore":
            assert self.mean is not None and self.std is not None
            return (np.asarray(X, dtype=np.float64) - self.mean) / self.std
        return X

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "zscore":
            assert self.mean is not None and self.std is not None
            out["mean"] = self.mean.tolist()
            out["std"] = self.std.tolist()
        return out

    @classmethod
    def from_dict(cls, data: Any, features: int) -> Normalizer:
        """Rebuild a saved record; ValueError for anything this tool did not write."""
        if data is None:
            return cls()
        if not isinstance(data, dict) or data.get("kind") not in NORMALIZATIONS:
            raise ValueError(f"normalize must be an object with kind one of {', '.join(NORMALIZATIONS)}")
        if data["kind"] != "zscore":
            return cls(data["kind"])
        stats = []
        for key in ("mean", "std"):
            values = data.get(key)
            if not isinstance(values, list) or any(isinstance(v, bool) or not isinstance(v, (int, float))
                                                   for v in values):
                raise ValueError(f"normalize.{key} must be a list of numbers")
            arr = np.asarray(values, dtype=np.float64)
            if arr.shape != (features,) or not np.isfinite(arr).all():
                raise ValueError(f"normalize.{key} must hold {features} finite numbers")
            stats.append(arr)
        if (stats[1] <= 0).any():
            raise ValueError("normalize.std must be positive")
        return cls("zscore", stats[0], stats[1])


@dataclass
class NormalizedModel:
    """A model fitted on normalised features, scoring raw rows: ``scores(X)`` normalises
    ``X`` first."""

    model: Any
    normalizer: Normalizer

    def scores(self, X: np.ndarray) -> np.ndarray:
        return self.model.scores(self.normalizer.apply(X))

    def finite(self) -> bool:
        return bool(self.model.finite())
