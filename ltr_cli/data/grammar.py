"""The one grammar of numbers, qids and separators in data, score and group files.

Both readers (the reference parse in :mod:`ltr_cli.data.svmlight` and the compiled scanner
in :mod:`ltr_cli.data.fastscan`) and the score and group file readers follow it:

* Tokens are separated by spaces and tabs only (SVMlight's whitespace); a line ends at
  LF, optionally preceded by one CR. Outside a ``#`` comment a line holds printable ASCII,
  spaces and tabs only: any other byte (a no-break space, a vertical tab, a lone CR, a
  Latin-1 or UTF-8 letter, a NUL) is an error naming the character, never a silent
  separator or part of a token. Comments may hold anything.
* A number is ``[+-]? (digits [. digits?] | . digits) [(e|E) [+-]? digits]`` in ASCII
  digits (what C's ``strtod`` and SVMlight read; no ``_`` as Python's ``float()`` allows,
  so ``0_5`` is not 5). ``nan``/``inf`` spellings are read so that they can be refused as
  non-finite with their own message.
* A qid is an integer, ``[+-]? digits``, compared by value as SVMlight, RankLib, LightGBM
  and XGBoost read it: ``qid:1``, ``qid:01`` and ``qid:+1`` are the same query, spelt
  canonically ``1`` (no sign, no leading zeros; ``-0`` is ``0``). A qid that is not an
  integer is refused, never compared as a string.
"""

from __future__ import annotations

import re
import unicodedata

_NUMBER = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_NONFINITE = {b"nan", b"inf", b"infinity"}
_QID = re.compile(rb"([+-]?)0*([0-9]+)\Z")
_INTEGER = re.compile(rb"[+-]?[0-9]+\Z")
_BAD_BYTE = re.compile(rb"[^\x21-\x7e \t]")
_ALLOWED = bytes(range(0x21, 0x7F)) + b" \t"  # what _BAD_BYTE does not match

NUMBER_GRAMMAR = "[+-]digits[.digits][e[+-]digits] in ASCII, no '_'"


def parse_number(token: bytes) -> float:
    """``float(token)`` for a token of the number grammar (or a nan/inf spelling, for the
    caller to refuse as non-finite); ValueError for anything else (``1_0``, ``0x1``)."""
    if _NUMBER.match(token) is None and token.lstrip(b"+-").lower() not in _NONFINITE:
        raise ValueError(token)
    return float(token)


def is_integer(token: bytes) -> bool:
    """``[+-]? digits`` in ASCII (group sizes, RankLib indices)."""
    return _INTEGER.match(token) is not None


def canonical_qid(token: bytes) -> str | None:
    """The canonical spelling of an integer qid (``01`` and ``+1`` -> ``1``, ``-0`` -> ``0``),
    or None when ``token`` is not an integer."""
    m = _QID.match(token)
    if m is None:
        return None
    digits = (m.group(2).lstrip(b"0") or b"0").decode("ascii")
    return "-" + digits if m.group(1) == b"-" and digits != "0" else digits


def strip_eol(raw: bytes) -> bytes:
    """A line without its LF and the one CR before it (CR LF is accepted, a lone CR not)."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    return raw[:-1] if raw.endswith(b"\r") else raw


def bad_character(body: bytes) -> str | None:
    """A description of the first byte of ``body`` (a line outside its comment, without its
    line end) that the grammar does not allow, or None."""
    if not body.translate(None, _ALLOWED):  # every byte allowed: the usual line, no regex scan
        return None
    m = _BAD_BYTE.search(body)
    if m is None:
        return None
    at = m.start()
    for width in (2, 3, 4):  # a UTF-8 sequence: name the character
        try:
            ch = body[at:at + width].decode("utf-8")
        except UnicodeDecodeError:
            continue
        if len(ch) == 1:
            name = unicodedata.name(ch, "")
            return f"character U+{ord(ch):04X}" + (f" ({name.lower()})" if name else "")
    byte = body[at]
    if byte < 0x80:
        names = {0x0B: "vertical tab", 0x0C: "form feed", 0x0D: "lone carriage return",
                 0x00: "NUL", 0x7F: "DEL"}
        return f"character U+{byte:04X} ({names.get(byte, 'control character')})"
    return f"byte 0x{byte:02x} (not ASCII, not UTF-8)"


def bad_character_message(what: str) -> str:
    return (f"{what} outside a '#' comment; tokens are separated by spaces and tabs only and "
            "hold ASCII only (fix the file's encoding or separators)")
