"""The CLI's one error boundary: every command is registered through :func:`command`,
so an :class:`~ltr_cli.errors.LtrError`, an OS error on a user's path or running out of
memory is one line on stderr with status 1 (never a traceback), and a closed output pipe
(``| head``) ends the command quietly."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import typer

from ltr_cli.errors import LtrError


def io_error(exc: OSError) -> LtrError:
    """An operating-system error on a user-given path, as one line."""
    where = exc.filename or "output"
    return LtrError(f"{where}: {exc.strerror or exc} (check the path and its parent folder)")


def one_line(text: str) -> str:
    """``text`` with control characters (a newline in a folder name, a terminal escape in a
    crafted file) shown escaped, so an error is always one line."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


# click's UsageError (typer may vendor its own click): bad option values, unknown options,
# missing arguments
USAGE_ERROR: Any = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def refuse(exc: LtrError) -> typer.Exit:
    """Show a refusal as one line on stderr; the exit (status 1) to raise."""
    typer.echo(f"ltr: error: {one_line(str(exc))}", err=True)
    return typer.Exit(1)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so flushing it at exit does not fail again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (e.g. a test runner's buffer)


def _guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The error boundary of every command: an LtrError, or an OS error on a user's
    path, is one line on stderr and status 1, never a traceback."""
    @functools.wraps(fn)
    def command(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except LtrError as exc:
            raise refuse(exc) from None
        except BrokenPipeError:  # the reader of the output went away (``| head``): stop quietly
            _silence_stdout()
            raise typer.Exit(0) from None
        except OSError as exc:
            raise refuse(io_error(exc)) from None
        except MemoryError:
            raise refuse(LtrError(
                "out of memory: the data (or the arrays built from it) do not fit in this machine's "
                "memory; use dataset.storage: float32, fewer folds or files, or a smaller "
                "protocol.max_rounds")) from None

    return command


def command(group: typer.Typer, name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a command of ``group`` behind the error boundary."""
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        group.command(name)(_guarded(fn))
        return fn

    return register
