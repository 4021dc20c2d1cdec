"""A fitted click model (the JSON of ``ltr clicks fit --json``) as a click model that
simulates: ``ltr clicks simulate-log --fitted FIT``.

The fitted parameters are per (query, document), not per grade, so the model's "labels"
are pair indices: :func:`fitted_model` numbers the pairs of the data file's queries (those
the fit does not know take index P, whose parameters are 1/2, as a fitted model gives a
pair no training session informed). Each fitted model but UBM is a browsing walk
(:mod:`ltr_cli.clicks.law`) on them, with position i the shown list's:

- ``pbm``: P(click) = alpha gamma_i, no stops; ``cascade``: P(click) = alpha, a click
  always stops; ``dcm``: a click at i stops with 1 - lambda_i; ``sdbn``: a click stops
  with sigma; ``dbn``: a click stops with 1 - gamma (1 - sigma), no click with 1 - gamma;
  ``ccm``: a click stops with 1 - (tau2 (1 - alpha) + tau3 alpha), no click with 1 - tau1.

Positions beyond the fitted ranks take the last rank's parameter. UBM's examination depends
on the rank of the last click above, which a walk's one state cannot carry: a fitted UBM is a
:class:`~ltr_cli.clicks.browsing.BrowsingModel` (:class:`FittedUBM`), P(click) = alpha
gamma_(r, j), a rank beyond the fitted ones taking the last rank's row and a last click above
beyond that row's columns the last of them.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.clicks.base import ClickModel
from ltr_cli.clicks.browsing import BrowsingModel
from ltr_cli.errors import LtrError

#: the models a fitted JSON may simulate
WALKS = ("pbm", "cascade", "dcm", "sdbn", "dbn", "ccm")
#: the largest fitted JSON read
MAX_BYTES = 256 << 20


def _probability(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and 0 <= value <= 1):
        raise LtrError(f"{where}: {value!r} is not a probability in [0, 1]; give the JSON of ltr clicks fit --json")
    return float(value)


def _rows(params: dict[str, Any], key: str, where: str) -> dict[tuple[str, int], float]:
    rows = params.get(key)
    if not isinstance(rows, list):
        raise LtrError(f"{where}: parameters.{key} is missing; give the JSON of ltr clicks fit --json")
    out: dict[tuple[str, int], float] = {}
    for k, row in enumerate(rows):
        if not (isinstance(row, dict) and isinstance(row.get("qid"), str) and isinstance(row.get("doc"), int)):
            raise LtrError(f"{where}: parameters.{key}[{k}] is not {{qid, doc, value}}")
        out[(row["qid"], row["doc"])] = _probability(row.get("value"), f"{where}: parameters.{key}[{k}].value")
    return out


def _ranked(params: dict[str, Any], key: str, where: str) -> np.ndarray:
    values = params.get(key)
    if not isinstance(values, list) or not values:
        raise LtrError(f"{where}: parameters.{key} is missing; give the JSON of ltr clicks fit --json")
    return np.array([_probability(v, f"{where}: parameters.{key}[{i}]") for i, v in enumerate(values)])


class FittedModel(ClickModel):
    """A fitted model over pair indices 0..P (P: a pair the fit does not know): per pair
    ``attr`` and ``sat`` float (P + 1,), per rank ``by_rank`` float (K,) (PBM's examination,
    DCM's continuation), and the scalars ``gamma`` (DBN) and ``tau`` (CCM's three)."""

    def __init__(self, kind: str, attr: np.ndarray, sat: np.ndarray, by_rank: np.ndarray, gamma: float,
                 tau: tuple[float, float, float], digest: str):
        self.name, self.kind = f"fitted-{kind}", kind
        self.attr, self.sat, self.by_rank, self.gamma, self.tau = attr, sat, by_rank, gamma, tau
        self.grades = len(attr)
        self.hint = "--fitted"
        self.digest = digest

    def _rank(self, n: int) -> np.ndarray:
        return self.by_rank[np.minimum(np.arange(n), len(self.by_rank) - 1)]

    def walk(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a = self.attr[labels]
        zero, one = np.zeros(a.shape), np.ones(a.shape)
        n = labels.shape[-1]
        if self.kind == "pbm":
            return a * self._rank(n), zero, zero
        if self.kind == "cascade":
            return a, one, zero
        if self.kind == "dcm":
            return a, np.broadcast_to(1.0 - self._rank(n), a.shape), zero
        if self.kind == "sdbn":
            return a, self.sat[labels], zero
        if self.kind == "dbn":
            return a, 1.0 - self.gamma * (1.0 - self.sat[labels]), np.full(a.shape, 1.0 - self.gamma)
        t1, t2, t3 = self.tau
        return a, 1.0 - (t2 * (1.0 - a) + t3 * a), np.full(a.shape, 1.0 - t1)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.name, "kind": "fitted", "fitted": self.kind, "pairs": len(self.attr) - 1,
                               "fit_sha256": self.digest}
        if self.kind == "dbn":
            out["gamma"] = self.gamma
        if self.kind == "ccm":
            out["tau1"], out["tau2"], out["tau3"] = self.tau
        if self.kind in ("pbm", "dcm") and len(self.by_rank) <= 1000:
            out["by_rank"] = self.by_rank.tolist()
        return out


class FittedUBM(BrowsingModel):
    """A fitted UBM over pair indices 0..P: ``attr`` float (P + 1,), ``gamma`` float
    (K, K + 1) as the fit keeps it (row r the rank, column j < r the last click above,
    column K none)."""

    def __init__(self, attr: np.ndarray, gamma: np.ndarray, digest: str):
        self.name, self.kind = "fitted-ubm", "ubm"
        self.attr, self.gamma = attr, gamma
        self.grades = len(attr)
        self.hint = "--fitted"
        self.digest = digest

    def attractiveness(self, labels: np.ndarray) -> np.ndarray:
        return self.attr[labels]

    def exam(self, n: int) -> np.ndarray:
        k = self.gamma.shape[0]
        out = np.zeros((n, n + 1))
        for r in range(n):
            row = min(r, k - 1)
            out[r, n] = self.gamma[row, k]
            for j in range(r):
                out[r, j] = self.gamma[row, min(j, row - 1)] if row > 0 else self.gamma[row, k]
        return out

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.name, "kind": "fitted", "fitted": "ubm", "pairs": len(self.attr) - 1,
                               "fit_sha256": self.digest}
        if self.gamma.size <= 1000:
            out["examination"] = self.gamma.ravel().tolist()
        return out


def _ubm_gamma(params: dict[str, Any], where: str) -> np.ndarray:
    """UBM's examination table (K, K + 1) from ``parameters.examination`` (per rank r:
    ``no_click_above`` and ``last_click_at``, r - 1 values)."""
    rows = params.get("examination")
    if not isinstance(rows, list) or not rows:
        raise LtrError(f"{where}: parameters.examination is missing; give the JSON of ltr clicks fit --json")
    k = len(rows)
    gamma = np.zeros((k, k + 1))
    for r, row in enumerate(rows):
        at = f"{where}: parameters.examination[{r}]"
        above = row.get("last_click_at") if isinstance(row, dict) else None
        if not isinstance(above, list) or len(above) != r:
            raise LtrError(f"{at} is not {{rank, no_click_above, last_click_at: [{r} values]}}")
        gamma[r, k] = _probability(row.get("no_click_above"), f"{at}.no_click_above")
        for j, v in enumerate(above):
            gamma[r, j] = _probability(v, f"{at}.last_click_at[{j}]")
    return gamma


def fitted_model(path: Path, qids: list[str], sizes: list[int]) -> tuple[ClickModel, list[np.ndarray]]:
    """The model of the fit at ``path`` and, per query of the data (``qids``, each with
    ``sizes`` documents), its documents' pair indices (the "labels" the model takes)."""
    from ltr_cli.core.bounded import Unreadable, read_json

    where = str(path)
    try:
        rec = read_json(path, MAX_BYTES, 32)
    except FileNotFoundError:
        raise LtrError(f"{where}: no such fitted model; write it with ltr clicks fit --json") from None
    except (Unreadable, OSError) as exc:
        raise LtrError(f"{where}: not a fitted model's JSON ({exc})") from None
    if not isinstance(rec, dict) or not isinstance(rec.get("parameters"), dict):
        raise LtrError(f"{where}: no parameters; give the JSON of ltr clicks fit --json")
    kind = rec.get("model")
    if kind not in WALKS and kind != "ubm":
        raise LtrError(f"{where}: model {kind!r}: a fitted model to simulate is one of {', '.join(WALKS)}, ubm")
    params = rec["parameters"]
    attr = _rows(params, "attractiveness", where)
    ubm_gamma = _ubm_gamma(params, where) if kind == "ubm" else None
    sat = _rows(params, "satisfaction", where) if kind in ("sdbn", "dbn") else {}
    by_rank = _ranked(params, {"pbm": "examination", "dcm": "continuation"}[str(kind)], where) \
        if kind in ("pbm", "dcm") else np.ones(1)
    gamma = _probability(params.get("continuation"), f"{where}: parameters.continuation") if kind == "dbn" else 1.0
    taus = [_probability(params.get(k), f"{where}: parameters.{k}") for k in ("tau1", "tau2", "tau3")] \
        if kind == "ccm" else [1.0, 1.0, 1.0]
    tau = (taus[0], taus[1], taus[2])
    index: dict[tuple[str, int], int] = {}
    labels = []
    for qid, n in zip(qids, sizes):
        ids = [index.setdefault((qid, j), len(index)) if (qid, j) in attr else -1 for j in range(n)]
        labels.append(np.array(ids, dtype=np.int64))
    if not index:
        raise LtrError(f"{where}: none of the fit's (qid, doc) pairs is a document of the data file; fit on a log "
                       "of this data")
    unknown = len(index)
    labels = [np.where(ids < 0, unknown, ids) for ids in labels]
    pairs = list(index)
    a = np.array([attr[p] for p in pairs] + [0.5])
    s = np.array([sat[p] if p in sat else 0.5 for p in pairs] + [0.5])
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if ubm_gamma is not None:
        return FittedUBM(a, ubm_gamma, digest), labels
    return FittedModel(str(kind), a, s, by_rank, gamma, tau, digest), labels
