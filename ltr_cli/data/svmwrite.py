"""SVMlight text from arrays, formatted by numpy a block of rows at a time.

Every value is written as Python's ``f"{v:.6g}"`` writes it, byte for byte, without a
Python call per value (:func:`format_g6`). ``%.6g`` rounds to six significant digits and
uses fixed notation when the decimal exponent of the rounded value is in -4..5, as it is
for nearly every feature value: the value is then ``N / 10**f``, ``N`` a six-digit integer
and ``f`` (0..9) the decimals. ``N`` comes from one float product by an exact power of ten,
so it is exact unless that product lies within float error of a half unit; those values
are decided on the exact binary value (Dekker's product), ties to even, as correctly
rounded decimal conversion does. The text is then two table look-ups: the first three
digits of ``N`` (with the sign, the point and any leading ``0.000``) and the last three,
both indexed by ``f``, with trailing zeros already dropped. Zero, a value in scientific
notation, one whose rounding carries to a seventh digit, a non-finite one and a negative
one below 1e-3 go to Python's own formatting.

A value's text is two little-endian 64-bit words padded with zero bytes; a block of lines
is one table of words, and the padding is dropped in one pass (:func:`svmlight_block`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

VALUE_WORDS = 2  # words per formatted value: 16 bytes hold any %.6g text (at most 13)
_U8 = np.dtype("<u8")
_POW10 = np.array([10.0 ** k for k in range(10)])  # exact


def _words(texts: Sequence[str], width: int) -> np.ndarray:
    """ASCII texts as zero-padded rows of ``width`` little-endian 64-bit words."""
    size = 8 * width
    data = b"".join([t.encode("ascii").ljust(size, b"\0") for t in texts])
    return np.frombuffer(data, dtype=_U8).reshape(len(texts), width).copy()


def _head_texts(f: int, last_zero: bool) -> list[str]:
    """The texts of the first three digits (100..999; "" below) of a six-digit value with
    ``f`` decimals: integer digits, point and the fraction digits they hold, trailing zeros
    dropped when the last three digits are zero and all decimals (``last_zero``)."""
    texts = [f"{high:03d}" for high in range(100, 1000)]
    if f >= 3:  # the point lies before or among these digits
        cut = 6 - f
        whole = (lambda t: t[:cut]) if f <= 6 else (lambda t: "0")
        lead = "" if f <= 6 else "0" * (f - 6)
        fractions = [lead + t[cut:] if f <= 6 else lead + t for t in texts]
        if last_zero:
            fractions = [fr.rstrip("0") for fr in fractions]
        texts = [(whole(t) or "0") + ("." + fr if fr else "") for t, fr in zip(texts, fractions)]
        if not last_zero:  # a digit follows: keep the point even after "hhh"
            texts = [t if "." in t else t + "." for t in texts]
    return [""] * 100 + texts


def _tail_text(f: int, low: int) -> str:
    """The text of the last three digits ``low`` of a six-digit value with ``f`` decimals."""
    digits = f"{low:03d}"
    if f == 0:
        return digits
    if f <= 2:
        fraction = digits[3 - f:].rstrip("0")
        return digits[:3 - f] + ("." + fraction if fraction else "")
    return digits.rstrip("0")


@functools.cache
def _tables() -> tuple[np.ndarray, np.ndarray]:
    """Head words at ``[f, last_zero, negative, high]`` and tail words at ``[f, low]``, flat;
    a head longer than a word ("-0.000ddd") is empty: such values go to Python."""
    heads = []
    for f in range(10):
        for z in (False, True):
            texts = _head_texts(f, z)
            heads += texts
            heads += ["-" + t if t and len(t) < 8 else "" for t in texts]
    tails = [_tail_text(f, low) for f in range(10) for low in range(1000)]
    return _words(heads, 1).ravel(), _words(tails, 1).ravel()


def _split(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp's split: ``hi + lo == v`` exactly, each half with at most 26 bits."""
    c = 134217729.0 * v  # 2**27 + 1
    hi = c - (c - v)
    return hi, v - hi


def _round_near_half(a: np.ndarray, f: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``a * 10**f`` rounded to an integer when it lies near ``k + 1/2``, as correctly rounded
    decimal conversion does: by the exact sign of ``2 a 10**f - (2k + 1)``, ties to even.
    ``2 a 10**f`` is the float product ``p`` plus its exact error (Dekker), and ``p - (2k + 1)``
    is exact (Sterbenz), so one float comparison decides."""
    t = 2 * k + 1
    scale = 2 * _POW10[f]
    p = a * scale
    ah, al = _split(a)
    sh, sl = _split(scale)
    err = ((ah * sh - p) + ah * sl + al * sh) + al * sl
    side = np.sign((p - t) + err)  # p - t is exact and |err| is far below it, or it is zero
    return np.where(side > 0, k + 1, np.where(side < 0, k, k + (k % 2)))


def format_g6_words(values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``f"{v:.6g}"`` of every value as ``VALUE_WORDS`` little-endian words of ASCII bytes,
    padded with zero bytes (anywhere: drop them to read the text), written to ``out`` (shape
    ``values.shape + (VALUE_WORDS,)``) or to a new ``(n, VALUE_WORDS)`` array."""
    shape = np.shape(values)
    x = np.ascontiguousarray(values, dtype=np.float64).ravel()
    if out is None:
        out = np.empty((x.shape[0], VALUE_WORDS), dtype=_U8)
        shape = (x.shape[0],)
    heads, tails = _tables()
    a = np.abs(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        f = np.fmax(np.fmin(5.0 - np.floor(np.log10(a)), 9), 0).astype(np.intp)  # decimals, 0..9
        scaled = a * _POW10[f]
        digits = np.rint(scaled)
        near = np.abs(scaled - digits) > 0.5 - 1e-6
        # six digits: not zero, not a carry to a seventh, not a value outside fixed
        # notation, not a power of ten that log10 put a unit off (Python writes those)
        python = ~((scaled >= 1e5) & (digits < 1e6))
    negative = np.signbit(x)
    python |= negative & (f == 9)  # "-0.000ddd" does not fit a word
    near &= ~python
    if near.any():  # a half unit within float error: decide on the exact values
        digits[near] = _round_near_half(a[near], f[near], np.floor(scaled[near]))
    others = np.flatnonzero(python)
    digits[others] = 1e5
    six = digits.astype(np.intp)
    high = six // 1000
    low = six - high * 1000
    # flat indices of [f, last_zero, negative, high] and [f, low]
    head_at = f * 4000 + high
    head_at += (low == 0) * 2000
    head_at += negative * 1000
    out[..., 0] = heads.take(head_at).reshape(shape)
    out[..., 1] = tails.take(f * 1000 + low).reshape(shape)
    if others.size:
        out[np.unravel_index(others, shape)] = _words([f"{v:.6g}" for v in x[others].tolist()], VALUE_WORDS)
    return out


def format_g6(values: np.ndarray) -> np.ndarray:
    """:func:`format_g6_words` as a ``(n, 8 * VALUE_WORDS)`` table of bytes."""
    return format_g6_words(values).view(np.uint8)


def text_words(texts: Sequence[str]) -> np.ndarray:
    """ASCII ``texts`` (no NUL byte) as a ``(len, words)`` table of zero-padded words."""
    for t in texts:
        if "\0" in t:
            raise ValueError(f"cannot write {t!r}: it holds a NUL byte")
    width = max((len(t) for t in texts), default=0)
    return _words(texts, -(-width // 8))


def feature_prefixes(n_features: int, index_base: int) -> np.ndarray:
    """`` <index>:`` of every column as zero-padded words."""
    return text_words([f" {c + index_base}:" for c in range(n_features)])


_NEWLINE = np.uint64(ord("\n"))


def svmlight_block(X: np.ndarray, heads: np.ndarray, tails: np.ndarray, prefixes: np.ndarray,
                   sparse: bool, empty_gap: bool = False) -> bytes:
    """The lines of the rows of ``X``: ``heads[i]`` (label and qid token), then
    `` <index>:<value>`` for every feature (only non-zero ones when ``sparse``), then
    ``tails[i]`` (a qid comment) and a newline. ``heads``, ``tails`` and ``prefixes`` are
    tables of zero-padded words (:func:`text_words`); with ``empty_gap`` a row with no
    feature written gets one more space before its tail."""
    if sparse:
        return _sparse_block(X, heads, tails, prefixes, empty_gap)
    rows, d = X.shape
    pw = prefixes.shape[1]
    slot = pw + VALUE_WORDS
    hw, tw = heads.shape[1], tails.shape[1]
    table = np.zeros((rows, hw + d * slot + 1 + tw + 1), dtype=_U8)
    table[:, :hw] = heads
    feats = table[:, hw:hw + d * slot].reshape(rows, d, slot)
    feats[:, :, :pw] = prefixes
    format_g6_words(X, out=feats[:, :, pw:])
    if empty_gap and d == 0:
        table[:, hw] = ord(" ")
    table[:, hw + d * slot + 1:-1] = tails
    table[:, -1] = _NEWLINE
    return table.tobytes().translate(None, b"\0")


def _sparse_block(X: np.ndarray, heads: np.ndarray, tails: np.ndarray, prefixes: np.ndarray,
                  empty_gap: bool) -> bytes:
    """:func:`svmlight_block` for ``sparse``: only the non-zero values are formatted. The
    block is a table of items of one feature's width (`` <index>:`` and the value): per
    line, its head padded to whole items, an item per value written, and its end (the gap
    word, the tail and the newline) padded likewise; the padding is zero bytes, dropped
    with the rest."""
    rows, d = X.shape
    pw = prefixes.shape[1]
    slot = pw + VALUE_WORDS
    hw, tw = heads.shape[1], tails.shape[1]
    nh, nt = -(-hw // slot), -(-(tw + 2) // slot)  # items per head and per end
    x = np.ascontiguousarray(X).ravel()
    written = x != 0
    cell = np.flatnonzero(written)  # row by row, columns in order
    r = cell // max(d, 1)
    counts = written.reshape(rows, d).sum(axis=1)
    ends = np.cumsum(nh + counts + nt)  # items
    start = ends - (nh + counts + nt)
    items = np.zeros((int(ends[-1]) if rows else 0, slot), dtype=_U8)
    head = np.zeros((rows, nh * slot), dtype=_U8)
    head[:, :hw] = heads
    items[start[:, None] + np.arange(nh)] = head.reshape(rows, nh, slot)
    feats = np.empty((cell.shape[0], slot), dtype=_U8)
    feats[:, :pw] = prefixes[cell - r * d]
    format_g6_words(x[cell], out=feats[:, pw:])
    items[np.arange(cell.shape[0]) + (nh + nt) * r + nh] = feats
    end = np.zeros((rows, nt * slot), dtype=_U8)
    if empty_gap:
        end[counts == 0, 0] = ord(" ")
    end[:, 1:1 + tw] = tails
    end[:, 1 + tw] = _NEWLINE
    items[(ends - nt)[:, None] + np.arange(nt)] = end.reshape(rows, nt, slot)
    return items.tobytes().translate(None, b"\0")
