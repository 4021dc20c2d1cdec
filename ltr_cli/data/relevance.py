"""The hidden relevance of generated data shaped like a benchmark.

Two rules, named by ``relevance`` in ``ltr data synth --relevance`` and ``kind: shaped``:

* ``linear`` (the default): each document's grade is drawn from the dataset's label
  distribution first, and its features are uniform noise plus ``signal * grade`` along one
  direction fixed per dataset (:func:`ltr_cli.data.synthetic.shaped_queries`). The best
  ranker is that direction: a linear ranker is well specified.
* ``nonlinear``: the features come first, uniform on [0, 1] (sparse datasets zero a share of
  each row, as for ``linear``), and a hidden scorer fixed per dataset gives each document a
  score; the grade is the dataset's label level whose band of that score it falls in, the
  bands cut at the quantiles of the dataset's label distribution. A linear ranker is
  misspecified.

The hidden scorer (:class:`HiddenScorer`) reads the features centred and scaled to unit
variance, ``u = (x - mean) / sd`` (per feature, over the reference sample below), projected on ``K = 8`` random unit directions
``z = P^T u`` (each ``z_j`` about N(0, 1)), and sums four parts, each of about unit spread
but the first two::

    f(x) = 0.5 z_1                                   a linear part
         + (z_2 z_3 + z_4 z_5 + z_6 z_7) / sqrt(3)    pairwise interactions
         + 0.5 tanh(z A + b) . c                      a small hidden layer (16 units)
         + (1 - z_8^2) / sqrt(2)                      a bump: middling values of z_8 are best

plus Gaussian noise of standard deviation 0.25 per document. ``P``, ``A``, ``b`` and ``c``
and the band edges are drawn once per dataset from a generator seeded by the dataset's name
(whatever the data seed, so every split and fold of a generated dataset shares its ground
truth); the edges are the quantiles of ``f`` over a reference sample of 20,000 documents drawn
the same way as the data. On MSLR- and Yahoo-shaped data a least-squares linear fit of the
grades reaches a rank correlation of about 0.4 to 0.5 with them (about 0.8 under ``linear``),
the hidden scorer about 0.9. Everything is a deterministic function of the dataset's name
and the data seed.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

#: the relevance rules of generated data shaped like a benchmark
RELEVANCE: tuple[str, ...] = ("linear", "nonlinear")
DEFAULT_RELEVANCE = "linear"

_LATENT = 8  # projections z_1..z_8
_HIDDEN = 16  # units of the hidden layer
_NOISE = 0.25
_REFERENCE_DOCS = 20_000
_SALT = 0x6E6C  # the hidden scorer's generator is not the linear rule's direction generator


@dataclass(frozen=True)
class HiddenScorer:
    """The nonlinear rule's hidden scorer of one dataset: the features' ``mean`` and ``sd``
    (d,), ``P`` (d, K) unit columns, the hidden layer ``A`` (K, H), ``b`` (H,), ``c`` (H,), and
    ``edges`` (levels - 1,), increasing: the score at which each grade above the lowest begins."""

    mean: np.ndarray
    sd: np.ndarray
    P: np.ndarray
    A: np.ndarray
    b: np.ndarray
    c: np.ndarray
    edges: np.ndarray

    def score(self, X: np.ndarray) -> np.ndarray:
        """The noise-free hidden score of each row of ``X`` (m, d) -> (m,)."""
        z = ((np.asarray(X, float) - self.mean) / self.sd) @ self.P
        interactions = (z[:, 1] * z[:, 2] + z[:, 3] * z[:, 4] + z[:, 5] * z[:, 6]) / np.sqrt(3.0)
        hidden = np.tanh(z @ self.A + self.b) @ self.c
        bump = (1.0 - z[:, 7] ** 2) / np.sqrt(2.0)
        return 0.5 * z[:, 0] + interactions + 0.5 * hidden + bump

    def grades(self, X: np.ndarray, levels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The grade of each row of ``X`` (m, d): its noisy hidden score's band among ``levels``
        (ascending); the noise is drawn from ``rng``, one normal per row."""
        noisy = self.score(X) + _NOISE * rng.standard_normal(X.shape[0])
        return np.asarray(levels, float)[np.searchsorted(self.edges, noisy, side="right")]


def draw_features(rng: np.random.Generator, m: int, d: int, density: float | None) -> np.ndarray:
    """``m`` rows of ``d`` features uniform on [0, 1); with ``density`` (sparse datasets), each
    value kept with that probability and zeroed otherwise."""
    X = rng.random((m, d))
    if density is not None:
        X[rng.random((m, d)) > density] = 0.0
    return X


@lru_cache(maxsize=8)
def hidden_scorer(name: str, d: int, probs: tuple[float, ...], density: float | None) -> HiddenScorer:
    """The hidden scorer of the dataset ``name`` (``d`` features, label distribution ``probs``
    over its ascending levels, ``density`` for a sparse dataset's rows, else None)."""
    rng = np.random.default_rng([zlib.crc32(name.encode()), _SALT])
    P = rng.standard_normal((d, _LATENT))
    P /= np.linalg.norm(P, axis=0)
    A = rng.standard_normal((_LATENT, _HIDDEN)) / np.sqrt(_LATENT)
    b = 0.5 * rng.standard_normal(_HIDDEN)
    c = rng.standard_normal(_HIDDEN)
    reference = draw_features(rng, _REFERENCE_DOCS, d, density)
    mean, sd = reference.mean(axis=0), np.maximum(reference.std(axis=0), 1e-12)
    # the hidden layer scaled to unit spread, like the interactions
    layer = np.tanh(((reference - mean) / sd) @ P @ A + b) @ c
    c = c / max(float(layer.std()), 1e-12)
    partial = HiddenScorer(mean, sd, P, A, b, c, np.empty(0))
    noisy = partial.score(reference) + _NOISE * rng.standard_normal(_REFERENCE_DOCS)
    p = np.asarray(probs, float)
    cuts = np.cumsum(p / p.sum())[:-1]
    return HiddenScorer(mean, sd, P, A, b, c, np.asarray(np.quantile(noisy, cuts), float))
