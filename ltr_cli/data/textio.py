"""Text input shared by both SVMlight readers: opening (possibly compressed) files with
a bound on decompression, the UTF-8 byte-order mark, bounded line reading, group files
and the choice of qid source.

gz / bz2 / xz files are recognised by their magic bytes; a compressed file may expand to
at most ``max_decompression_ratio`` times its size (+1 MiB), else :class:`InputTooLarge`.
The reference reader (:mod:`ltr_cli.data.svmlight`) and the fast path
(:mod:`ltr_cli.data.fastread`) both build on this module, and on nothing of each other's.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path
from collections.abc import Callable
from typing import Any, BinaryIO, cast

from ltr_cli.data.options import (
    DEFAULT_MAX_DECOMPRESSION_RATIO,
    DEFAULT_MAX_LINE_BYTES,
    QidSource,
    ReaderOptions,
)
from ltr_cli.errors import DataFormatError
from ltr_cli.pathnames import tried

MAGIC = {b"\x1f\x8b": "gz", b"BZh": "bz2", b"\xfd7zXZ\x00": "xz"}
BOM = b"\xef\xbb\xbf"


class InputTooLarge(Exception):
    """Decompressed output beyond its bound (converted to a DataFormatError with a line)."""


class _Bounded:
    """A decompressing stream that refuses to produce more than ``limit`` bytes."""

    def __init__(self, fh: Any, limit: int, ratio: float):
        self.fh, self.limit, self.ratio, self.count = fh, limit, ratio, 0

    def _counted(self, data: bytes) -> bytes:
        self.count += len(data)
        if self.count > self.limit:
            raise InputTooLarge(
                f"the compressed file expands to more than {self.ratio:g} times its size (a "
                "decompression bomb?); if it is genuine, raise dataset.max_decompression_ratio")
        return data

    def read(self, n: int = -1) -> bytes:
        return self._counted(self.fh.read(n))

    def readline(self, n: int = -1) -> bytes:
        return self._counted(self.fh.readline(n))

    def close(self) -> None:
        self.fh.close()

    def __enter__(self) -> "_Bounded":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_binary(path: Path, max_ratio: float = DEFAULT_MAX_DECOMPRESSION_RATIO) -> BinaryIO:
    """Open a possibly compressed file for binary reading (format from magic bytes); a
    compressed file's output is bounded by ``max_ratio`` times its size (+1 MiB)."""
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError
        if not stat.S_ISREG(mode):  # a device, FIFO or socket: opening a FIFO would block
            raise DataFormatError(str(path), None, "not a regular file (device, FIFO or socket); "
                                  "give a regular data file")
        with open(path, "rb") as fh:
            head = fh.read(6)
    except FileNotFoundError:
        raise DataFormatError(str(path), None, f"file not found (tried {tried(path)})") from None
    except IsADirectoryError:
        raise DataFormatError(str(path), None, "is a directory, expected a data file") from None
    except OSError as exc:
        raise DataFormatError(str(path), None, f"cannot open: {exc.strerror}") from None
    for magic, kind in MAGIC.items():
        if head.startswith(magic):
            openers: dict[str, Callable[..., Any]] = {"gz": gzip.open, "bz2": bz2.open, "xz": lzma.open}
            opener = openers[kind]
            limit = int(max_ratio * Path(path).stat().st_size) + (1 << 20)
            return cast(BinaryIO, _Bounded(opener(path, "rb"), limit, max_ratio))
    return open(path, "rb")


DECOMPRESS_ERRORS = (EOFError, OSError, lzma.LZMAError, zlib.error, ValueError)


def iter_lines(path: Path, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
               max_ratio: float = DEFAULT_MAX_DECOMPRESSION_RATIO) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, raw_line)`` (1-based), turning decompression failures
    into a :class:`DataFormatError` at the last line read; a line longer than
    ``max_line_bytes`` (newline excluded) is an error at that line, read no further."""
    lineno = 0
    with open_binary(path, max_ratio) as fh:
        while True:
            try:
                raw = fh.readline(max_line_bytes + 1)
            except DECOMPRESS_ERRORS as exc:
                raise DataFormatError(
                    str(path), lineno + 1,
                    f"compressed stream is truncated or corrupt ({type(exc).__name__}: {exc})",
                ) from None
            except InputTooLarge as exc:
                raise DataFormatError(str(path), lineno + 1, str(exc)) from None
            if not raw:
                return
            lineno += 1
            if len(raw) - raw.endswith(b"\n") > max_line_bytes:
                raise DataFormatError(
                    str(path), lineno,
                    f"line longer than {max_line_bytes} bytes (binary data, or no line breaks?); "
                    "if it is genuine, raise dataset.max_line_bytes")
            if lineno == 1 and raw.startswith(BOM):
                raw = raw[len(BOM):]
            yield lineno, raw


def show(token: bytes, limit: int = 40) -> str:
    """A token for an error message: its repr, cut after ``limit`` characters."""
    text = token.decode("latin-1")
    return repr(text if len(text) <= limit else text[:limit] + "...")


def find_group_file(path: Path) -> Path | None:
    """``<file>.query`` or ``<file>.group`` next to a data file, if present."""
    for suffix in (".query", ".group"):
        candidate = path.with_name(path.name + suffix)
        try:
            if candidate.is_file():
                return candidate
        except OSError:  # e.g. a data file whose name leaves no room for the suffix
            continue
    return None


def read_group_sizes(path: Path) -> list[int]:
    """Read a group file: one positive document count per line in ASCII digits (blank lines
    ignored)."""
    sizes: list[int] = []
    from ltr_cli.data.grammar import is_integer, strip_eol

    for lineno, raw in iter_lines(path):
        text = strip_eol(raw).strip(b" \t")
        if not text:
            continue
        if not is_integer(text) or len(text) > 18:  # ASCII digits: int() also reads '1_0'
            raise DataFormatError(
                str(path), lineno, f"group size {show(text)} is not an integer (or implausibly large)"
            )
        n = int(text)
        if n <= 0:
            raise DataFormatError(str(path), lineno, f"group size {n} must be positive")
        sizes.append(n)
    if not sizes:
        raise DataFormatError(str(path), None, "group file has no group sizes")
    return sizes


def detect_qid_source(options: ReaderOptions, path: Path, first_body: list[bytes],
                      first_comment: bytes) -> QidSource:
    """Where the qids of ``path`` come from: ``options.qid_source`` unless ``auto``, then
    decided from the first data line (its label/qid tokens and its comment): a ``qid:``
    token, else a group file (given, or next to the data file), else a numeric comment."""
    if options.qid_source != "auto":
        return options.qid_source
    if len(first_body) > 1 and first_body[1].startswith(b"qid:"):
        return "token"
    if options.group_file is not None or find_group_file(path) is not None:
        return "group"
    comment = first_comment.strip()
    if comment and comment.split()[0].lstrip(b"-").isdigit():
        return "comment"
    return "token"  # fails on the first line with a message naming what is missing
