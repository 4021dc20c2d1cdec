"""The ``attention`` scorer: allRank's context-aware ranker (Pobrotyn et al. 2020): an input
block, N Transformer encoder blocks over the documents of each slate, an output layer.

* Input block (allRank's ``fc_model``): optional ``LayerNorm`` over the features, then
  ``Linear -> input_activation -> dropout(input_dropout)`` per width of ``input``.
* Positional encoding (off by default, allRank's ``positional_encoding: null``): ``fixed``
  (sinusoidal) or ``learned``, ``x * sqrt(width) + pe[position]``, the position being the
  document's place in its query; a padded document or a position past ``max_positions``
  reads a zero row, as allRank's padding index does.
* Encoder block (allRank's ``EncoderLayer``, norm first): ``x + dropout(MHA(norm(x)))``, then
  ``x + dropout(FF(norm(x)))`` with ``FF = Linear(ff) -> relu -> dropout -> Linear(width)``;
  ``heads`` heads of ``width / heads`` units each, their attention probabilities dropped out
  too; after the blocks a final norm. The norms are allRank's (unbiased std, ``eps`` 1e-6
  added to it).
* Attention is masked: a padded document is never attended to (:func:`layers.attention`), so
  padding never changes a real document's score.

Parameters: ``input_norm/*``, ``input<i>/{w,b}``, ``positions/table`` (learned),
``block<i>/{norm1,norm2}/{g,b}``, ``block<i>/attention/{q,k,v,o}/{w,b}``,
``block<i>/{ff1,ff2}/{w,b}``, ``norm/{g,b}``, ``output/{w,b}``.
"""

from __future__ import annotations

import math
from typing import Any, Union

from pydantic import Field, field_validator, model_validator

from ltr_cli.neural.jaxenv import jax
from ltr_cli.neural.scorers import Scorer, ScorerKind, ScorerSettings
from ltr_cli.neural.scorers.layers import (activation, allrank_norm, attention, attention_init, check_activation,
                                           dense, dense_init, dropout, keys, layer_norm, norm_init)
from ltr_cli.neural.scorers.mlp import check_widths

POSITIONAL = ("none", "fixed", "learned")
MAX_POSITIONS = 1_000_000


class AttentionSettings(ScorerSettings):
    """``scorer: {kind: attention, input: 64, blocks: 2, heads: 1, ff: 256, dropout: 0.1}``."""

    input: Union[int, list[int]] = Field(64, description="width(s) of the input block (allRank's "
                                         "fc_model.sizes); its last width is the encoder's")
    input_activation: str = Field("none", description="activation after each input layer (allRank's "
                                  "fc_model.activation)")
    input_dropout: float = Field(0.0, ge=0.0, lt=1.0, description="dropout after each input layer")
    input_norm: bool = Field(False, description="layer norm over the input features (fc_model.input_norm)")
    blocks: int = Field(2, ge=1, le=64, description="encoder blocks (allRank's N)")
    heads: int = Field(1, ge=1, le=256, description="attention heads (allRank's h); they divide the width")
    ff: int = Field(256, ge=1, le=65536, description="feed-forward width (allRank's d_ff)")
    dropout: float = Field(0.1, ge=0.0, lt=1.0, description="dropout in the encoder blocks")
    positional: str = Field("none", description="positional encoding: none, fixed (sinusoidal) or learned")
    max_positions: int = Field(5000, ge=1, le=MAX_POSITIONS, description="positions the encoding covers "
                               "(allRank's max_len); later ones read a zero row")

    @field_validator("input")
    @classmethod
    def _input(cls, widths: Union[int, list[int]]) -> list[int]:
        return check_widths([widths] if isinstance(widths, int) else list(widths), "input", empty=False)

    @field_validator("input_activation")
    @classmethod
    def _act(cls, name: str) -> str:
        return check_activation(name)

    @field_validator("positional")
    @classmethod
    def _positional(cls, name: str) -> str:
        if name not in POSITIONAL:
            raise ValueError(f"positional {name!r} is not one of {', '.join(POSITIONAL)}")
        return name

    @model_validator(mode="after")
    def _heads(self) -> "AttentionSettings":
        width = self.widths()[-1]
        if width % self.heads:
            raise ValueError(f"heads: {self.heads} heads do not divide the encoder's width {width} (input)")
        return self

    def widths(self) -> list[int]:
        return [self.input] if isinstance(self.input, int) else list(self.input)


def fixed_table(n: int, width: int) -> Any:
    """allRank's sinusoidal table, ``[n + 1, width]``, its last row zeros (the padding row)."""
    jnp = jax().numpy
    position = jnp.arange(n, dtype=jnp.float32)[:, None]
    div = jnp.exp(jnp.arange(0, width, 2, dtype=jnp.float32) * -(math.log(10000.0) / width))
    pe = jnp.zeros((n + 1, width), jnp.float32)
    pe = pe.at[:n, 0::2].set(jnp.sin(position * div))
    pe = pe.at[:n, 1::2].set(jnp.cos(position * div)[:, : width // 2])
    return pe


def build(settings: AttentionSettings, outputs: int) -> Scorer:
    widths = settings.widths()
    width, heads, n_pos = widths[-1], settings.heads, settings.max_positions
    act, rate, in_rate = activation(settings.input_activation), settings.dropout, settings.input_dropout

    def init(key: Any, d: int) -> dict[str, Any]:
        j = jax()
        k_in, k_blocks, k_pos, k_out = j.random.split(key, 4)
        params: dict[str, Any] = {}
        if settings.input_norm:
            params["input_norm"] = norm_init(d)
        sizes = [d, *widths]
        for i, (k, a, b) in enumerate(zip(j.random.split(k_in, len(widths)), sizes[:-1], sizes[1:])):
            params[f"input{i}"] = dense_init(k, a, b)
        if settings.positional == "learned":
            limit = math.sqrt(6.0 / (n_pos + 1 + width))
            params["positions"] = {"table": j.random.uniform(k_pos, (n_pos + 1, width), minval=-limit, maxval=limit)}
        for i, k in enumerate(j.random.split(k_blocks, settings.blocks)):
            ka, k1, k2 = j.random.split(k, 3)
            params[f"block{i}"] = {"norm1": norm_init(width), "norm2": norm_init(width),
                                   "attention": attention_init(ka, width, heads, width // heads, width),
                                   "ff1": dense_init(k1, width, settings.ff), "ff2": dense_init(k2, settings.ff, width)}
        params["norm"] = norm_init(width)
        params["output"] = dense_init(k_out, width, outputs)
        return params

    def encode_positions(params: dict[str, Any], x: Any, mask: Any, positions: Any) -> Any:
        jnp = jax().numpy
        pos = jnp.where(mask & (positions < n_pos), positions, n_pos)
        if settings.positional == "fixed":
            table = fixed_table(n_pos, width)
            return math.sqrt(width) * x + table[pos]
        table = params["positions"]["table"]
        return math.sqrt(width) * x + jnp.where((pos < n_pos)[..., None], table[pos], 0.0)

    def forward(params: dict[str, Any], X: Any, mask: Any, train: bool, key: Any, positions: Any) -> Any:
        live = train and (rate > 0 or in_rate > 0)
        k_in, k_blocks = keys(key if live else None, 2)
        x = layer_norm(params["input_norm"], X) if settings.input_norm else X
        for i, k in enumerate(keys(k_in, len(widths))):
            x = dropout(k, act(dense(params[f"input{i}"], x)), in_rate, train)
        if settings.positional != "none":
            x = encode_positions(params, x, mask, positions)
        for i, k in enumerate(keys(k_blocks, settings.blocks)):
            p = params[f"block{i}"]
            ka, k1, k2, k3 = keys(k, 4)
            x = x + dropout(k1, attention(p["attention"], allrank_norm(p["norm1"], x), mask, heads, rate, train, ka),
                            rate, train)
            hidden = dropout(k2, jax().nn.relu(dense(p["ff1"], allrank_norm(p["norm2"], x))), rate, train)
            x = x + dropout(k3, dense(p["ff2"], hidden), rate, train)
        return dense(params["output"], allrank_norm(params["norm"], x))

    def floats(d: int, L: int) -> float:
        return float(d + 2 * sum(widths) + settings.blocks * (8 * width + 2 * heads * L + 2 * settings.ff) + outputs)

    return Scorer(init, forward, outputs, settings.output_activation, per_document=False, floats=floats)


ATTENTION = ScorerKind("attention", "allRank's context-aware scorer: an input layer, Transformer encoder blocks "
                       "over each query's documents, an output layer", AttentionSettings, build)
