"""Shortcuts of the reference parse (:mod:`ltr_cli.data.svmlight`) over a line's or a
query's token bytes: each answers what the plain token-by-token rule answers, in fewer
passes over the bytes."""

from __future__ import annotations

import numpy as np

_SPACE = b" \t\n\r\x0b\x0c"  # what \s matches in a bytes pattern
_NEITHER_COLON_NOR_SPACE = bytes(b for b in range(256) if b not in b":" + _SPACE)


def two_colons_in_a_token(text: bytes) -> bool:
    r"""Whether a whitespace-separated token of ``text`` holds two colons (the pattern
    ``:[^\s:]*:``): kept to its colons and whitespace, two colons then meet. (One C pass
    over the bytes; the pattern's search costs a scan per colon.)"""
    return b"::" in text.translate(None, _NEITHER_COLON_NOR_SPACE)


def consecutive_indices(keys: list[bytes], counts: np.ndarray) -> np.ndarray | None:
    """The feature indices of a query whose every line writes the same run ``k, k+1, ...``
    in plain decimal (as dense files do), as the floats that converting each token gives;
    None for any other query (its tokens are then converted one by one)."""
    c = int(counts[0]) if counts.size else 0
    first = keys[0] if keys else b""
    if c == 0 or not (counts == c).all() or not first.isdigit() or (first.startswith(b"0") and first != b"0"):
        return None
    start = int(first)
    if start + c > 1 << 53:  # beyond exact float integers: convert as written
        return None
    if keys != [b"%d" % i for i in range(start, start + c)] * int(counts.size):
        return None
    return np.tile(np.arange(start, start + c, dtype=np.float64), int(counts.size))


def count_tokens(text: bytes) -> int:
    """The tokens of ``text`` (no leading whitespace; spaces and tabs only): one more than
    its spaces when they are single and inside it, else by splitting."""
    if not text or b"\t" in text or b"  " in text or text.endswith(b" "):
        return len(text.split())
    return text.count(b" ") + 1
