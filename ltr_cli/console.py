"""The one way the tool speaks to its user outside the command functions: notes (progress,
what a run is doing) and warnings, on stderr, one line each.

Library layers call :func:`note` and :func:`warn`; the CLI decides where they go
(:func:`quiet` silences notes; warnings always show). Results go to stdout from the
commands only, never from here.
"""

from __future__ import annotations

import sys

_QUIET = False


def quiet(on: bool = True) -> None:
    """Silence (or restore) notes for the rest of the process; warnings still show."""
    global _QUIET
    _QUIET = on


def note(message: str) -> None:
    """A line of progress or context (``[experiment] learner: ...``)."""
    if not _QUIET:
        print(message, file=sys.stderr, flush=True)


def warn(message: str) -> None:
    """A warning line, prefixed ``ltr: warning:``."""
    print(f"ltr: warning: {message}", file=sys.stderr, flush=True)


def error_line(message: str) -> None:
    """A line about a failure the command goes on after (``ltr: ...``)."""
    print(f"ltr: {message}", file=sys.stderr, flush=True)
