"""Names that become parts of paths (experiments, learners, run ids) and labels that are
shown to people (legends, tables), checked the same way in configs and in run folders
read back from disk."""

from __future__ import annotations

import re

NAME_HELP = ("1 to 100 ASCII letters, digits, '.', '_' or '-', not starting with '.' or '-' "
             "(e.g. mslr_slam.v2)")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}", re.ASCII)

LABEL_HELP = "one line of at most 100 printable characters"
_MAX_LABEL = 100


def is_name(value: object) -> bool:
    """``value`` is a name that is safe as one path component (and as a file-name stem)."""
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def check_name(value: str) -> str:
    """Validator: ``value`` is a name, else ValueError stating the allowed characters."""
    if not is_name(value):
        raise ValueError(f"must be {NAME_HELP}")
    return value


def is_label(value: object) -> bool:
    return (isinstance(value, str) and 0 < len(value) <= _MAX_LABEL
            and all(ch.isprintable() for ch in value))


def check_label(value: str | None) -> str | None:
    """Validator: a legend label is one short line without control characters."""
    if value is not None and not is_label(value):
        raise ValueError(f"a label must be {LABEL_HELP}")
    return value
