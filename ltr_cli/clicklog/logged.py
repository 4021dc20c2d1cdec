"""``clicks.propensity: logged``: the logging propensities an imported log carries, one per
shown row, as the inverse-propensity weights of its clicks.

A log imported by ``ltr clicks import`` with a ``propensity`` column holds, for each shown
row r, p_r in (0, 1]: the probability that the user examined the row under the logging
policy (as Baidu-ULTR- or ULTRA-style logs record it). Under ``logged`` a click at row r
weighs ``min(1 / p_r, clicks.clip)``, p_r as given (absolute, not divided by position 1's):
the per-row form of IPS. When every row at position k carries the same p_r = p_k with
p_1 = 1, the weights are exactly those of ``propensity: true`` (or a file) on p_k, so a
learner trains on the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ltr_cli.errors import LtrError

#: the largest click weight 1/p a run accepts unclipped (per row or per position)
MAX_WEIGHT = 1e6


def row_propensity(propensity: np.ndarray | None, rows: int, where: str) -> np.ndarray:
    """The log's propensity column, float (rows,), or a one-line error naming ``where`` (the
    log's file) when the log has none."""
    if propensity is None:
        raise LtrError(f"clicks.propensity: logged: {where} has no propensity column; import the log with its "
                       "logging propensities (ltr clicks import, a 'propensity' column in (0, 1]), or give "
                       "propensity: estimated or a propensity file")
    p = np.asarray(propensity, dtype=float)
    if p.shape != (rows,):
        raise LtrError(f"clicks.propensity: logged: {where}: {p.size} propensities for {rows} shown rows")
    return p


def inverse_weights(p: np.ndarray, clip: float | None, bad: Callable[[int], str],
                    large: Callable[[int, float], str]) -> np.ndarray:
    """The IPS weights min(1/p_i, clip), float like ``p``, checked: every propensity finite
    and above 0 (else ``bad(i)``, i the first offending index, is raised as a one-line
    error), and every weight finite and at most :data:`MAX_WEIGHT` (else ``large(i, w_i)``):
    a tiny propensity, unclipped, would swamp every other click, or overflow."""
    p = np.asarray(p, dtype=float)
    wrong = np.flatnonzero(~(np.isfinite(p) & (p > 0)))
    if wrong.size:
        raise LtrError(bad(int(wrong[0])))
    with np.errstate(over="ignore", divide="ignore"):
        weights = 1.0 / p
    if clip is not None:
        weights = np.minimum(weights, clip)
    over = np.flatnonzero(~np.isfinite(weights) | (weights > MAX_WEIGHT))
    if over.size:
        i = int(over[0])
        raise LtrError(large(i, float(weights[i])))
    return weights


def row_weights(p: np.ndarray, clip: float | None, where: str) -> np.ndarray:
    """The IPS weights min(1/p_r, clip), float (rows,), of row propensities ``p`` (each in
    (0, 1], as the log's reader checked); refused in one line when a weight is above
    :data:`MAX_WEIGHT` unclipped."""
    return inverse_weights(
        p, clip,
        lambda r: f"clicks.propensity: logged: {where}: row {r + 1}'s propensity is {p[r]:g}; each must be in (0, 1]",
        lambda r, w: f"clicks.propensity: logged: {where}: row {r + 1}'s propensity {p[r]:g} gives a click weight "
                     f"of {w:g}, above {MAX_WEIGHT:g}; set clicks.clip (say 10)")


def position_means(weights: np.ndarray, position: np.ndarray, shown: int) -> np.ndarray:
    """The mean row weight at each position 1..shown, float (shown,) (1 where no row is)."""
    pos = position.astype(np.int64) - 1
    total = np.bincount(pos, weights=weights, minlength=shown)[:shown]
    count = np.bincount(pos, minlength=shown)[:shown]
    return np.where(count > 0, total / np.maximum(count, 1), 1.0)


def summary(values: np.ndarray, clip: float | None = None) -> dict[str, Any]:
    """What a record keeps of per-row values: their number, least, mean and largest (and how
    many the clip capped)."""
    out: dict[str, Any] = {"rows": int(values.size)}
    if values.size:
        out.update(min=float(f"{values.min():.12g}"), mean=float(f"{values.mean():.12g}"),
                   max=float(f"{values.max():.12g}"))
    if clip is not None:
        out["clipped"] = int(np.count_nonzero(values >= clip))
    return out
