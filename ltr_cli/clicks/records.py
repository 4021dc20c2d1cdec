"""What ``ltr clicks probabilities`` and ``ltr clicks sample`` print: plain records and text.

Probabilities are written with 15 significant digits (enough for any comparison at 1e-12,
and free of the last-digit noise of products such as (1 - 0.95 x 0.9) x 0.05).
Patterns are 0/1 strings, position 1 first, in string order; the exact law leaves out the
patterns of probability 0 and says how many it left out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.clicks.base import ClickModel, check_labels
from ltr_cli.clicks.law import check_enumerable, pattern_strings

#: draws are sampled in blocks of this many, so memory stays bounded and a seed gives the
#: same counts whatever the machine
BLOCK = 1 << 16
#: the most draws one command samples
MAX_DRAWS = 100_000_000


def _num(x: float) -> float:
    return float(f"{float(x):.15g}")


def _head(model: ClickModel, labels: list[int]) -> dict[str, Any]:
    return {**model.describe(), "labels": [int(v) for v in labels]}


def exact_record(model: ClickModel, labels: list[int]) -> dict[str, Any]:
    """The exact law on ``labels``: ``marginal`` (P(click) per position, in closed form) and
    ``patterns`` (0/1 string -> probability, the nonzero ones), ``zero_patterns`` (how many
    patterns of probability 0 were left out) and ``total`` (the probabilities' sum)."""
    arr = check_labels(labels, model.grades, model.hint)
    check_enumerable(len(arr), "give at most that many labels")
    rows, probs = model.law(arr)
    keep = probs > 0
    names = pattern_strings(rows[keep])
    return {**_head(model, labels), "marginal": [_num(p) for p in model.marginal(arr)],
            "patterns": {s: _num(p) for s, p in zip(names, probs[keep])},
            "zero_patterns": int((~keep).sum()), "total": _num(probs.sum())}


def sample_counts(model: ClickModel, labels: list[int], seed: int, draws: int) -> tuple[np.ndarray, dict[str, int]]:
    """Clicks per position (int (n,)) and the count of each observed pattern, over
    ``draws`` samples from ``numpy.random.default_rng(seed)`` in blocks of :data:`BLOCK`."""
    arr = check_labels(labels, model.grades, model.hint)
    check_enumerable(len(arr), "give at most that many labels")
    n = len(arr)
    rng = np.random.default_rng(seed)
    per_position = np.zeros(n, dtype=np.int64)
    codes = np.zeros(1 << n, dtype=np.int64)
    weights = 1 << np.arange(n - 1, -1, -1, dtype=np.int64)
    done = 0
    while done < draws:
        clicks = model.sample(arr, rng, min(BLOCK, draws - done))
        per_position += clicks.sum(axis=0)
        codes += np.bincount(clicks.astype(np.int64) @ weights, minlength=1 << n)
        done += len(clicks)
    seen = np.flatnonzero(codes)
    rows = ((seen[:, None] >> np.arange(n - 1, -1, -1)) & 1).astype(bool)
    return per_position, dict(zip(pattern_strings(rows), (int(c) for c in codes[seen])))


def sample_record(model: ClickModel, labels: list[int], seed: int, draws: int) -> dict[str, Any]:
    """Sampled frequencies: ``marginal`` (clicks per position / draws), ``patterns``
    (0/1 string -> frequency, the patterns seen) and ``counts`` (the same as counts)."""
    per_position, counts = sample_counts(model, labels, seed, draws)
    return {**_head(model, labels), "seed": seed, "draws": draws,
            "marginal": [_num(c / draws) for c in per_position],
            "patterns": {s: _num(c / draws) for s, c in counts.items()}, "counts": counts}


def _title(rec: dict[str, Any]) -> str:
    """``<model> clicks (<kind>, <its settings>, <grades> grades) on labels ...``: the
    settings its ``describe()`` gives among a stop rule, a table and eta."""
    how = [f"stop {rec['stop']}" if isinstance(rec.get("stop"), str) else "",
           f"{rec['table']} table" if isinstance(rec.get("table"), str) else "",
           f"eta {rec['eta']:g}" if isinstance(rec.get("eta"), (int, float)) else ""]
    inside = ", ".join([str(rec.get("kind", rec.get("model"))), *(h for h in how if h), f"{rec['grades']} grades"])
    return f"{rec['model']} clicks ({inside}) on labels " + ",".join(str(v) for v in rec["labels"])


def render(rec: dict[str, Any], exact: bool) -> list[str]:
    """The record as text lines: a title, the marginal per position, then the patterns."""
    word = "P(click)" if exact else "frequency"
    lines = [_title(rec) + ("" if exact else f", {rec['draws']} draws, seed {rec['seed']}"), "",
             f"{'position':>8s}  {'label':>5s}  {word}"]
    lines += [f"{i:8d}  {lab:5d}  {p:.6g}" for i, (lab, p) in enumerate(zip(rec["labels"], rec["marginal"]), 1)]
    width = max(7, len(rec["labels"]))
    lines += ["", f"{'pattern':<{width}s}  {'probability' if exact else 'frequency'}"]
    lines += [f"{s:<{width}s}  {p:.6g}" for s, p in rec["patterns"].items()]
    if exact and rec["zero_patterns"]:
        lines.append(f"({rec['zero_patterns']} patterns of probability 0 not shown)")
    return lines
