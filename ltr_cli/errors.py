"""The tool's own error types.

Every error a user can cause (bad data, bad config, missing dataset) is raised as an
``LtrError`` subclass whose ``str()`` is a single line naming the place (file:line or the
config key path) and, where there is one, the fix. The CLI prints that line and exits 1;
anything else escaping is a bug.
"""

from __future__ import annotations


class LtrError(Exception):
    """Base class: a one-line, user-facing message."""


class DataFormatError(LtrError):
    """A data file does not parse. ``path`` and 1-based ``line`` locate the problem."""

    def __init__(self, path: str, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class ConfigError(LtrError):
    """A config file or override is invalid. ``key`` is the dotted key path."""

    def __init__(self, source: str, key: str | None, message: str):
        self.source = str(source)
        self.key = key
        where = f"{self.source}: {key}" if key else self.source
        super().__init__(f"{where}: {message}")


class DatasetNotFoundError(LtrError):
    """A registry dataset file is missing; the message says where it was expected."""


class ResultsError(LtrError):
    """A results directory is missing, incomplete or unreadable."""


class QueryTooLong(LtrError):
    """A query whose scoring would take more memory than its budget: ``size`` documents.
    The caller that knows the query's id names it."""

    def __init__(self, size: int, needed: int, budget: int, scorer: str):
        self.size = size
        super().__init__(f"a query of {size:,} documents is too long to score on this device: the {scorer} scorer "
                         f"needs about {needed / 2**30:.1f} GiB for it, over the budget of {budget / 2**30:.1f} GiB "
                         "(train.memory_gb; or score on a device with more memory)")
