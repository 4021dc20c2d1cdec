"""How an error names a path it could not use: the absolute path it tried and, for a
relative path, the directory it was resolved from (the directory ``ltr`` runs in)."""

from __future__ import annotations

import os
from pathlib import Path


def tried(path: str | os.PathLike[str]) -> str:
    """``/abs/path`` for an absolute path, ``/dir/rel, resolved from /dir`` for a relative
    one (``rel`` as given)."""
    given = Path(path)
    if given.is_absolute():
        return str(given)
    here = os.getcwd()
    return f"{os.path.abspath(given)}, resolved from {here}"
