"""Paired significance tests between two learners' values on the same units (test queries
of a batch run, seeds of online runs), as scipy computes them, the adjustments for several
comparisons (Holm's step-down, Benjamini and Hochberg's step-up) and the t interval of a
mean.

Every test is two-sided on the differences ``a - b``:

* ``t``: the paired t-test (:func:`scipy.stats.ttest_rel`);
* ``wilcoxon``: the Wilcoxon signed-rank test (:func:`scipy.stats.wilcoxon`, zero
  differences dropped, its default);
* ``randomization``: Fisher's paired randomization test (:func:`scipy.stats.permutation_test`
  with ``permutation_type="samples"``: each pair's two values swapped or not, i.e. the sign
  of its difference flipped) on the mean difference, with :data:`RESAMPLES` random swaps
  drawn from a generator seeded with :data:`SEED` (every swap pattern, exactly, when there
  are no more of them than that: then p is the share of the 2^n sign patterns whose mean
  difference is at least as far from 0 as the observed one).

A p-value is a number in [0, 1] or None with the reason: fewer than two pairs, every
difference zero (no test has anything to test), differences all equal (the t statistic is
undefined), or a result scipy could not give.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

TESTS = {"t": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test",
         "randomization": "Fisher's paired randomization test"}
ADJUSTMENTS = {"holm": "Holm's step-down adjustment", "bh": "Benjamini-Hochberg adjustment (false discovery rate)",
               "none": "no adjustment"}
LEVEL = 0.95
RESAMPLES = 10_000
SEED = 0
ALPHA = 0.05


@dataclass(frozen=True)
class Paired:
    """One test: ``n`` pairs, the mean of ``a - b``, the test's statistic and p-value
    (None with ``note`` saying why)."""

    test: str
    n: int
    mean_difference: float | None
    statistic: float | None
    p: float | None
    note: str = ""

    def better(self, alpha: float = ALPHA) -> bool:
        """``a`` is significantly better than ``b`` (higher values) at level ``alpha``."""
        return self.p is not None and self.p < alpha and (self.mean_difference or 0.0) > 0


def paired_test(a: np.ndarray, b: np.ndarray, test: str = "t", resamples: int = RESAMPLES,
                seed: int = SEED) -> Paired:
    """The two-sided paired ``test`` of ``a`` against ``b`` (equal lengths, finite values)."""
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r} (one of {', '.join(TESTS)})")
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("a and b must be vectors of the same length")
    n = int(a.size)
    d = a - b
    mean = float(d.mean()) if n else None
    if n < 2:
        return Paired(test, n, mean, None, None, f"{n} pair{'s' * (n != 1)}: a test needs at least 2")
    if not np.any(d):
        # the learners agree on every pair: no evidence of a difference under any test (p = 1),
        # and the pair still counts as one of the comparisons Holm's adjustment allows for
        return Paired(test, n, mean, None, 1.0, f"all {n} differences are zero: equal on every pair, p = 1")
    if test == "t" and np.all(d == d[0]):
        return Paired(test, n, mean, None, None, f"all {n} differences are equal ({d[0]:+.4g}): "
                      "no spread, the t statistic is undefined")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy's notes on ties, zeros and precision
        try:
            statistic, p = _scipy(test, a, b, d, resamples, seed)
        except (ValueError, FloatingPointError, ZeroDivisionError) as exc:
            return Paired(test, n, mean, None, None, f"no p-value: {' '.join(str(exc).split())[:100]}")
    note = ""
    if test == "wilcoxon" and (zeros := int(np.sum(d == 0))):
        note = f"{zeros} zero difference{'s' * (zeros != 1)} dropped"
    if not math.isfinite(p) or not -1e-12 <= p <= 1 + 1e-9:
        return Paired(test, n, mean, _finite(statistic), None, f"no p-value: scipy gave {p!r}")
    return Paired(test, n, mean, _finite(statistic), min(max(p, 0.0), 1.0), note)


def _scipy(test: str, a: np.ndarray, b: np.ndarray, d: np.ndarray, resamples: int,
           seed: int) -> tuple[float, float]:
    from scipy import stats

    if test == "t":
        res = stats.ttest_rel(a, b)
    elif test == "wilcoxon":
        res = stats.wilcoxon(d)
    else:
        res = stats.permutation_test((a, b), _mean_difference, permutation_type="samples", vectorized=True,
                                     n_resamples=resamples, alternative="two-sided",
                                     **_generator(stats.permutation_test, seed))
    return float(res.statistic), float(res.pvalue)


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def _generator(function: object, seed: int) -> dict[str, np.random.Generator]:
    """The seeded generator, under the keyword this scipy takes (``rng`` since 1.15)."""
    import inspect

    name = "rng" if "rng" in inspect.signature(function).parameters else "random_state"  # type: ignore[arg-type]
    return {name: np.random.default_rng(seed)}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def holm(ps: list[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of the p-values that are not None (their count is the
    number of comparisons): the i-th smallest becomes max over j <= i of (m - j + 1) p_(j),
    at most 1. None stays None."""
    order = sorted((p, i) for i, p in enumerate(ps) if p is not None)
    m = len(order)
    out: list[float | None] = [None] * len(ps)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def benjamini_hochberg(ps: list[float | None]) -> list[float | None]:
    """Benjamini and Hochberg's step-up adjustment of the p-values that are not None (their
    count m is the number of comparisons): the i-th smallest becomes min over j >= i of
    m p_(j) / j, at most 1. None stays None."""
    order = sorted((p, i) for i, p in enumerate(ps) if p is not None)
    m = len(order)
    out: list[float | None] = [None] * len(ps)
    running = 1.0
    for rank in range(m - 1, -1, -1):
        p, i = order[rank]
        running = min(running, m * p / (rank + 1))
        out[i] = running
    return out


def adjust(ps: list[float | None], method: str) -> list[float | None]:
    """``ps`` adjusted by ``method`` (a key of :data:`ADJUSTMENTS`; ``none`` keeps them)."""
    if method == "holm":
        return holm(ps)
    if method == "bh":
        return benjamini_hochberg(ps)
    if method == "none":
        return list(ps)
    raise ValueError(f"unknown adjustment {method!r} (one of {', '.join(ADJUSTMENTS)})")


@dataclass(frozen=True)
class Interval:
    """A mean over ``n`` values and its two-sided t interval at ``level`` (``low``,
    ``high`` None for fewer than two values)."""

    n: int
    mean: float | None
    low: float | None
    high: float | None
    level: float = LEVEL


def mean_interval(values: np.ndarray, level: float = LEVEL) -> Interval:
    """The mean of ``values`` (finite, (n,)) with its ``level`` t interval:
    ``mean +- t_{n-1, (1 + level) / 2} s / sqrt(n)``, s the sample standard deviation
    (:func:`scipy.stats.t`); a zero spread gives the mean as both ends."""
    from scipy import stats

    v = np.asarray(values, dtype=np.float64)
    n = int(v.size)
    if n == 0:
        return Interval(0, None, None, None, level)
    mean = float(v.mean())
    if n < 2:
        return Interval(n, mean, None, None, level)
    half = float(stats.t.ppf((1 + level) / 2, n - 1)) * float(v.std(ddof=1)) / math.sqrt(n)
    return Interval(n, mean, mean - half, mean + half, level)
