"""A reference code's checkout named by a bench option or an environment variable, checked
by the files every checkout of it has."""

from __future__ import annotations

import os
from pathlib import Path

from ltr_cli.errors import LtrError


def find_checkout(option: Path | None, env: str, markers: tuple[str, ...], not_one: str) -> Path | None:
    """``option`` (``--reference``), else the folder ``env`` names; None when neither is
    given; a one-line error, ``{given} {path}: {not_one} (no {file}); ...``, when a marker
    file is missing. ``not_one``: what the folder is not, then how to get one."""
    raw = option if option is not None else os.environ.get(env) or None
    if raw is None:
        return None
    path = Path(raw)
    given = "--reference" if option is not None else env
    missing = [m for m in markers if not (path / m).is_file()]
    if missing:
        what, fix = not_one.split("; ", 1)
        raise LtrError(f"{given} {path}: {what} (no {missing[0]}); {fix}")
    return path
