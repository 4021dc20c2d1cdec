"""How a data file is read: :class:`ReaderOptions`, the input bounds and their defaults.

Shared by the reference reader (:mod:`ltr_cli.data.svmlight`), the compiled fast path
(:mod:`ltr_cli.data.fastread`), the text layer (:mod:`ltr_cli.data.textio`) and the
cache; a leaf module (no ``ltr_cli`` imports).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

QidSource = Literal["auto", "token", "comment", "group"]
SplitQids = Literal["error", "new-query"]

MAX_LABEL = 1000.0  # 2^1000 - 1 is finite, and so is a sum of millions of such gains
DEFAULT_MAX_LINE_BYTES = 1 << 20
DEFAULT_MAX_QUERY_MB = 1024.0
DEFAULT_MAX_DECOMPRESSION_RATIO = 200.0
LIMIT_OPTIONS = ("max_line_bytes", "max_query_mb", "max_decompression_ratio")  # not part of what is read


@dataclass(frozen=True)
class ReaderOptions:
    """How to read one file. ``n_features=None`` is only allowed for sparse scans."""

    n_features: int | None = None
    index_base: int = 1
    qid_source: QidSource = "auto"
    group_file: Path | None = None
    null_value: float | None = None
    split_qids: SplitQids = "error"
    engine: Literal["auto", "reference"] = "auto"  # reference: never use the compiled scanner
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_query_mb: float = DEFAULT_MAX_QUERY_MB
    max_decompression_ratio: float = DEFAULT_MAX_DECOMPRESSION_RATIO

    @property
    def max_query_rows(self) -> int:
        """Documents one query may have at this width (dense float64 rows within
        ``max_query_mb``)."""
        return int(self.max_query_mb * (1 << 20)) // (8 * (self.n_features or 1))

    def __post_init__(self) -> None:
        if self.index_base not in (0, 1):
            raise ValueError("index_base must be 0 or 1")
        if self.n_features is not None and self.n_features <= 0:
            raise ValueError("n_features must be positive")
