"""Propensities drawn from their estimate's error, so that repeated logs carry it.

A log that ``clicks.generate`` simulates with ``propensity: estimated`` has its own estimate,
from its own shuffled log, so the logs of a sweep over ``clicks.generate.seed`` already
differ by the estimate's error. One estimate used for every log (a propensity file, or the
estimate of a log read from ``clicks.log``) would count it as 0; for it, an IPS run on
estimated propensities p_k (relative to position 1) with standard errors
se_k (the bootstrap's of ``ltr clicks propensity``) trains, under ``clicks.propensity_draw``,
on one draw per log and fold, p~_k = p_k exp(z_k se_k / p_k) with z_k independent standard
normals: the log-normal whose log has the delta method's standard deviation se_k / p_k, so
that every draw is positive and, to first order, has mean p_k and standard deviation se_k.
Position 1 has se 0 and stays 1. The generator is seeded by the log's seed and the fold, a
stream apart from the log's sessions, so a rerun draws the same propensities and logs of
other seeds draw independent ones: the spread of their results then counts the propensity
estimate's error with the clicks'.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.errors import LtrError

#: bytes of a propensity file at most
LIMIT = 1 << 20


def _checked(values: Any, shown: int, where: str) -> np.ndarray:
    if not isinstance(values, list) or len(values) < shown:
        raise LtrError(f"{where}: clicks.propensity_draw needs a standard error for each of the {shown} positions "
                       "(the stderr of ltr clicks propensity --json); give more sessions or drop propensity_draw")
    out = np.full(shown, np.nan)
    for k, v in enumerate(values[:shown]):
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0:
            out[k] = float(v)
    bad = np.flatnonzero(np.isnan(out))
    if bad.size:
        raise LtrError(f"{where}: position {bad[0] + 1} has no standard error to draw from (null or not a number); "
                       "log more sessions or drop clicks.propensity_draw")
    return out


def stderr_of(signal: Any, source: Path | None, log_estimate: dict[str, Any] | None, extra: dict[str, Any],
              shown: int) -> np.ndarray:
    """The standard errors (shown,) of the propensities an IPS run uses: a file's
    ``stderr`` list, the estimate of the log itself (``log_estimate``), or that of the
    shuffled log ``clicks.generate`` simulated (``extra["estimated_from"]``)."""
    if source is not None:
        from ltr_cli.core.bounded import Unreadable, read_json

        try:
            raw = read_json(source, LIMIT)
        except (OSError, Unreadable) as exc:
            raise LtrError(f"clicks.propensity: {source}: not a JSON propensity file ({exc})") from None
        values = raw.get("stderr") if isinstance(raw, dict) else None
        return _checked(values, shown, f"clicks.propensity: {source}")
    if log_estimate:
        return _checked(log_estimate.get("stderr"), shown, "clicks.propensity: estimated from the log")
    return _checked((extra.get("estimated_from") or {}).get("stderr"), shown,
                    "clicks.propensity: estimated from the shuffled log")


def draw_propensity(p: np.ndarray, stderr: np.ndarray, seed: int, fold: int | None, where: str) -> np.ndarray:
    """One draw p~ (shown,) of the propensities ``p`` with standard errors ``stderr``
    (both float (shown,)), seeded by (``seed``, ``fold``) (the module docstring)."""
    p = np.asarray(p, dtype=float)
    if not np.all(np.isfinite(p) & (p > 0)):
        raise LtrError(f"{where}: clicks.propensity_draw needs positive propensities to draw around")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0 if fold is None else fold, 2]))
    z = rng.standard_normal(len(p))
    drawn = p * np.exp(z * np.asarray(stderr, dtype=float) / p)
    drawn[0] = 1.0
    return drawn
