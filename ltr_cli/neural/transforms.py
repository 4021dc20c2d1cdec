"""Feature transforms of the neural learners (``transform:`` of a ``type: neural`` learner),
fitted on the training split only and saved with the model, so ``ltr score`` transforms a
new file as training did.

A transform is a list of steps, applied in order, each fitted on the training queries as
the steps before it left them. Steps (config: a name, ``{kind: NAME, ...}``, or a list):

* ``zscore``: ``(x - mean) / std`` per feature, mean and (population) standard deviation
  over the training documents; a feature constant there is only centred.
* ``allrank``: allRank's ``reproducibility/normalize_features.py``: the features of
  ``features_negative`` negated, then ``log(x + eps_log)`` (``eps_log`` 0.01) for every
  feature not in ``features_without_logarithm`` whose training values are all >= 0, then
  ``(x - mean) / (std + eps)`` (``eps`` 1e-6) on the training statistics. Indices are
  0-based columns, as allRank's; ``auto`` is allRank's WEB30K lists when the data has 136
  features, else none. allRank decides which features to log on train, vali and test
  together; here on train alone, a logged feature's value below 0 elsewhere taken as 0.
* ``log1p``: DASALC's ``sign(x) log1p(|x|)``, clipped to +-``cutoff`` (30); nothing fitted.
* ``query_zscore``: per query and feature ``(x - mean) / std`` over the query's documents
  (PT-Ranking's per-query ``StandardScaler`` for MSLR and Istella); 0 where constant.
* ``query_minmax``: per query and feature ``(x - min) / (max - min)`` (LETOR's
  QueryLevelNorm); 0 where constant.

Shapes: ``X`` (m, d); statistics (d,) float64. Computed in float64, returned as float32
(the dtype the scorers read). Pure numpy: no JAX.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from ltr_cli.errors import LtrError

KINDS = ("zscore", "allrank", "log1p", "query_zscore", "query_minmax")
# allRank's defaults for MSLR-WEB30K (reproducibility/normalize_features.py), 0-based columns
WEB30K_WITHOUT_LOG = (5, 6, 7, 8, 9, 15, 19, 57, 58, 62, 75, 79, 85, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104,
                      121, 122, 127, 129, 130)
WEB30K_NEGATIVE = (110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 123, 124)
WEB30K_WIDTH = 136
_PARAMS: dict[str, dict[str, Any]] = {
    "zscore": {}, "query_zscore": {}, "query_minmax": {},
    "allrank": {"features_without_logarithm": "auto", "features_negative": "auto", "eps_log": 0.01, "eps": 1e-6},
    "log1p": {"cutoff": 30.0},
}
_ARRAYS = {"zscore": ("mean", "std"), "allrank": ("logged", "mean", "std")}
MAX_STEPS = 16


def parse(spec: Any) -> list[dict[str, Any]]:
    """A ``transform:`` value as its steps, each ``{kind, params...}`` with defaults filled
    in. ValueError naming the problem for anything else."""
    if spec is None or spec == "none":
        return []
    items = spec if isinstance(spec, list) else [spec]
    if len(items) > MAX_STEPS:
        raise ValueError(f"at most {MAX_STEPS} steps")
    steps = []
    for item in items:
        if isinstance(item, str):
            item = {"kind": item}
        if not isinstance(item, dict) or item.get("kind") not in KINDS:
            shown = item.get("kind") if isinstance(item, dict) else item
            raise ValueError(f"unknown transform {shown!r}; the transforms are {', '.join(KINDS)} (or a list of them)")
        kind = item["kind"]
        defaults = _PARAMS[kind]
        unknown = sorted(set(item) - {"kind", *defaults})
        if unknown:
            raise ValueError(f"transform {kind} has no key {unknown[0]!r}"
                             + (f"; its keys are {', '.join(defaults)}" if defaults else ""))
        step = {"kind": kind, **defaults, **{k: v for k, v in item.items() if k != "kind"}}
        _check(step)
        steps.append(step)
    return steps


def _check(step: dict[str, Any]) -> None:
    for key in ("features_without_logarithm", "features_negative"):
        if key in step and step[key] != "auto":
            v = step[key]
            if not isinstance(v, list) or any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in v):
                raise ValueError(f"transform {step['kind']}: {key} must be auto or a list of 0-based feature columns")
    for key in ("eps_log", "eps", "cutoff"):
        if key in step:
            v = step[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v <= 0:
                raise ValueError(f"transform {step['kind']}: {key} must be a number > 0")
            step[key] = float(v)


def _columns(step: dict[str, Any], key: str, default: tuple[int, ...], d: int) -> list[int]:
    value = step[key]
    cols = (list(default) if d == WEB30K_WIDTH else []) if value == "auto" else list(value)
    bad = [c for c in cols if c >= d]
    if bad:
        raise LtrError(f"transform {step['kind']}: {key} names column {bad[0]}, but the data has {d} features "
                       "(columns 0 to {d - 1})".replace("{d - 1}", str(d - 1)))
    return sorted(set(cols))


@dataclass
class Step:
    """One fitted step: its settings (JSON) and statistics (named float64 arrays)."""

    settings: dict[str, Any]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return str(self.settings["kind"])

    def apply(self, X: np.ndarray) -> np.ndarray:
        """``X`` (m, d) float64 transformed (a new array)."""
        s, a = self.settings, self.arrays
        if self.kind == "zscore":
            return (X - a["mean"]) / a["std"]
        if self.kind == "allrank":
            return (_allrank_log(s, a["logged"], X) - a["mean"]) / (a["std"] + s["eps"])
        if self.kind == "log1p":
            return np.clip(np.sign(X) * np.log1p(np.abs(X)), -s["cutoff"], s["cutoff"])
        if X.shape[0] == 0:
            return X.copy()
        if self.kind == "query_zscore":
            mean = X.mean(axis=0)
            std = X.std(axis=0)
            return np.where(std > 0, (X - mean) / np.where(std > 0, std, 1.0), 0.0)
        low = X.min(axis=0)
        span = X.max(axis=0) - low
        return np.where(span > 0, (X - low) / np.where(span > 0, span, 1.0), 0.0)


def _allrank_log(settings: dict[str, Any], logged: np.ndarray | None, X: np.ndarray) -> np.ndarray:
    """allRank's steps before the z-score: negate ``features_negative``, then (``logged``
    given) ``log(max(x, 0) + eps_log)`` on the logged features."""
    X = X.copy()
    neg = settings["features_negative"]
    if neg:
        X[:, neg] = -X[:, neg]
    if logged is not None and logged.any():
        X[:, logged] = np.log(np.maximum(X[:, logged], 0.0) + settings["eps_log"])
    return X


def _moments(parts: Iterable[np.ndarray], d: int, again: Iterable[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Mean and population standard deviation per feature over the rows of ``parts`` (two
    passes, float64; ``again`` yields the same rows a second time)."""
    n, total = 0, np.zeros(d)
    for X in parts:
        n += X.shape[0]
        total += X.sum(axis=0)
    mean = total / max(n, 1)
    sq = np.zeros(d)
    for X in again:
        sq += ((X - mean) ** 2).sum(axis=0)
    return mean, np.sqrt(sq / max(n, 1))


def fit(steps: list[dict[str, Any]], train: list[np.ndarray], d: int) -> "Transform":
    """The transform of ``steps`` fitted on the training queries' features ``[X (m, d), ...]``."""
    fitted: list[Step] = []

    def rows() -> Iterable[np.ndarray]:
        for X in train:
            X = np.asarray(X, dtype=np.float64)
            for step in fitted:
                X = step.apply(X)
            yield X

    for settings in steps:
        settings = dict(settings)
        if settings["kind"] == "zscore":
            mean, std = _moments(rows(), d, rows())
            fitted.append(Step(settings, {"mean": mean, "std": np.where(std > 0, std, 1.0)}))
        elif settings["kind"] == "allrank":
            settings["features_without_logarithm"] = _columns(settings, "features_without_logarithm",
                                                              WEB30K_WITHOUT_LOG, d)
            settings["features_negative"] = _columns(settings, "features_negative", WEB30K_NEGATIVE, d)
            low = np.full(d, np.inf)
            for X in rows():
                if X.shape[0]:
                    low = np.minimum(low, _allrank_log(settings, None, X).min(axis=0))
            logged = low >= 0
            logged[settings["features_without_logarithm"]] = False
            mean, std = _moments((_allrank_log(settings, logged, X) for X in rows()), d,
                                 (_allrank_log(settings, logged, X) for X in rows()))
            fitted.append(Step(settings, {"logged": logged, "mean": mean, "std": std}))
        else:
            fitted.append(Step(settings))
    return Transform(fitted, d)


@dataclass
class Transform:
    """Fitted steps for ``d`` features: :meth:`apply` is what training, evaluation and
    ``ltr score`` feed the scorer."""

    steps: list[Step]
    d: int

    def apply(self, X: np.ndarray) -> np.ndarray:
        """``X`` (m, d) transformed, float32."""
        X = np.asarray(X, dtype=np.float64)
        for step in self.steps:
            X = step.apply(X)
        return X.astype(np.float32)

    def describe(self) -> list[dict[str, Any]]:
        """The steps' settings (JSON), as a model file records them."""
        return [dict(s.settings) for s in self.steps]

    def named_arrays(self) -> dict[str, np.ndarray]:
        """The statistics as named arrays: ``transform/<i>/<name>``."""
        return {f"transform/{i}/{name}": arr for i, s in enumerate(self.steps) for name, arr in s.arrays.items()}

    @classmethod
    def restore(cls, settings: Any, arrays: dict[str, np.ndarray], d: int) -> "Transform":
        """A saved transform, checked as untrusted input (ValueError with the reason):
        known steps with their keys, and for each step exactly its statistics, ``(d,)``
        finite float64 (``logged`` bool), standard deviations > 0."""
        if not isinstance(settings, list):
            raise ValueError("its transform is not a list of steps")
        steps = []
        for i, raw in enumerate(settings):
            if not isinstance(raw, dict):
                raise ValueError(f"transform step {i} is not an object")
            (step,) = parse([dict(raw)])
            if step != raw:
                raise ValueError(f"transform step {i} has settings this tool does not write")
            if step["kind"] == "allrank":
                for key in ("features_without_logarithm", "features_negative"):
                    cols = raw[key]
                    if not isinstance(cols, list) or any(c >= d for c in cols):
                        raise ValueError(f"transform step {i}: {key} is not a list of columns below {d}")
            names = _ARRAYS.get(step["kind"], ())
            mine = {n: arrays.get(f"transform/{i}/{n}") for n in names}
            for name, arr in mine.items():
                want = np.bool_ if name == "logged" else np.float64
                if arr is None or arr.shape != (d,) or arr.dtype != want:
                    raise ValueError(f"transform step {i}: {name} is not {d} values of {np.dtype(want).name}")
                if want is np.float64 and not np.isfinite(arr).all():
                    raise ValueError(f"transform step {i}: {name} is not finite")
            std = mine.get("std")
            if std is not None and not bool(np.all(std > 0 if step["kind"] == "zscore" else std >= 0)):
                raise ValueError(f"transform step {i}: a standard deviation is not "
                                 f"{'> 0' if step['kind'] == 'zscore' else '>= 0'}")
            steps.append(Step(dict(raw), {n: np.array(a) for n, a in mine.items() if a is not None}))
        expected = {f"transform/{i}/{n}" for i, s in enumerate(steps) for n in _ARRAYS.get(s.kind, ())}
        extra = sorted(k for k in arrays if k.startswith("transform/") and k not in expected)
        if extra:
            raise ValueError(f"it holds the array {extra[0]!r}, which no transform step reads")
        return cls(steps, d)
