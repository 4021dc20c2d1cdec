"""The ``dasalc`` scorer: DASALC-like (Qin et al., ICLR 2021; TF-Ranking's
``research/dasalc.py``): a document-interaction network of self-attention over each slate
whose output crosses a feed-forward scorer's last layer ("latent cross"), with Gaussian
input noise while training.

* Input: DASALC feeds ``sign(x) log1p(|x|)`` clipped to +-30 into batch normalisation; here
  the model's feature transform does both (``transform: [log1p, zscore]``, the z-score fitted
  on the training split being batch normalisation's statistics at inference).
* Interaction branch (TF-Ranking's ``DocumentInteractionAttention``): ``relu(Linear(head_size))``
  on the features, plus noise, then ``attention_layers`` times
  ``LayerNorm(x + dropout(MHA(x)))`` with ``heads`` heads of ``head_size`` units each (post-norm,
  eps 1e-12), padded documents masked out of the attention.
* Scoring branch: features plus noise, then ``layers`` times
  ``dropout(norm(relu(Linear(hidden))))``, then ``Linear(hidden)``; the interaction output,
  normed, through ``Linear(hidden)``; their latent cross ``relu(h * c + h)``, dropout and the
  output layer.
* Where DASALC normalises a hidden layer over the batch (batch normalisation, with running
  statistics: state), this scorer takes a layer norm over the units, which keeps the
  scorer a pure function of its parameters; that is the "-like".

Defaults are DASALC's on Web30K: hidden 512, 2 layers, 4 attention layers of 2 heads of 100,
dropout 0.4, noise 1.5.

Parameters: ``din_input/{w,b}``, ``din<i>/attention/{q,k,v,o}/{w,b}``, ``din<i>/norm/{g,b}``,
``layer<i>/{w,b}``, ``layer<i>/norm/{g,b}``, ``last/{w,b}``, ``context_norm/{g,b}``,
``context/{w,b}``, ``output/{w,b}``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ltr_cli.neural.jaxenv import jax
from ltr_cli.neural.scorers import Scorer, ScorerKind, ScorerSettings
from ltr_cli.neural.scorers.layers import (attention, attention_init, dense, dense_init, dropout, keys, layer_norm,
                                           norm_init)


class DASALCSettings(ScorerSettings):
    """``scorer: {kind: dasalc, hidden: 512, layers: 2, attention_layers: 4, heads: 2, head_size: 100,
    dropout: 0.4, noise: 1.5}``."""

    hidden: int = Field(512, ge=1, le=65536, description="width of the scoring branch's layers")
    layers: int = Field(2, ge=0, le=64, description="hidden layers of the scoring branch before its last")
    attention_layers: int = Field(4, ge=1, le=64, description="self-attention layers of the interaction branch")
    heads: int = Field(2, ge=1, le=256, description="attention heads")
    head_size: int = Field(100, ge=1, le=65536, description="units per head, and the interaction branch's width")
    dropout: float = Field(0.4, ge=0.0, lt=1.0, description="dropout rate (attention, hidden layers, the cross)")
    noise: float = Field(1.5, ge=0.0, description="standard deviation of the Gaussian noise added to the "
                         "inputs while training")


def build(settings: DASALCSettings, outputs: int) -> Scorer:
    s = settings
    rate, sigma, size = s.dropout, s.noise, s.head_size

    def init(key: Any, d: int) -> dict[str, Any]:
        j = jax()
        k_din, k_att, k_layers, k_last, k_ctx, k_out = j.random.split(key, 6)
        params: dict[str, Any] = {"din_input": dense_init(k_din, d, size)}
        for i, k in enumerate(j.random.split(k_att, s.attention_layers)):
            params[f"din{i}"] = {"attention": attention_init(k, size, s.heads, size, size), "norm": norm_init(size)}
        sizes = [d] + [s.hidden] * s.layers
        for i, (k, a, b) in enumerate(zip(j.random.split(k_layers, max(s.layers, 1)), sizes[:-1], sizes[1:])):
            params[f"layer{i}"] = {**dense_init(k, a, b), "norm": norm_init(b)}
        params["last"] = dense_init(k_last, sizes[-1], s.hidden)
        params["context_norm"] = norm_init(size)
        params["context"] = dense_init(k_ctx, size, s.hidden)
        params["output"] = dense_init(k_out, s.hidden, outputs)
        return params

    def forward(params: dict[str, Any], X: Any, mask: Any, train: bool, key: Any, positions: Any) -> Any:
        j = jax()
        live = train and (rate > 0 or sigma > 0)
        k_n1, k_n2, k_din, k_layers, k_cross = keys(key if live else None, 5)

        def noisy(k: Any, x: Any) -> Any:
            return x + sigma * j.random.normal(k, x.shape, x.dtype) if train and sigma > 0 else x

        h = noisy(k_n1, j.nn.relu(dense(params["din_input"], X)))
        for i, k in enumerate(keys(k_din, s.attention_layers)):
            p = params[f"din{i}"]
            ka, kd = keys(k, 2)
            out = dropout(kd, attention(p["attention"], h, mask, s.heads, rate, train, ka), rate, train)
            h = layer_norm(p["norm"], out + h, eps=1e-12)
        x = noisy(k_n2, X)
        for i, k in enumerate(keys(k_layers, s.layers)):
            p = params[f"layer{i}"]
            x = dropout(k, layer_norm(p["norm"], j.nn.relu(dense(p, x))), rate, train)
        x = dense(params["last"], x)
        c = dense(params["context"], layer_norm(params["context_norm"], h))
        cross = dropout(k_cross, j.nn.relu(x * c + x), rate, train)
        return dense(params["output"], cross)

    def floats(d: int, L: int) -> float:
        return float(2 * d + s.attention_layers * (6 * size * s.heads + 2 * s.heads * L)
                     + (2 * s.layers + 4) * s.hidden + outputs)

    return Scorer(init, forward, outputs, settings.output_activation, per_document=False, floats=floats)


DASALC = ScorerKind("dasalc", "DASALC-like: self-attention over each query's documents crossed with a "
                    "feed-forward scorer, Gaussian input noise (Qin et al. 2021)", DASALCSettings, build)
