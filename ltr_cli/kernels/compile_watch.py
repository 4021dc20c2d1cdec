"""Knowing when numba really compiles, and saying so with progress.

numba raises its ``numba:compile`` event only when a function is compiled: a kernel loaded
from the on-disk cache does not raise it (numba looks in its cache first). :func:`install`
registers one listener for that event (when numba is imported, by
:mod:`ltr_cli.kernels._numba`); it counts the compiles of this process and, while a
reporter is set (:func:`reporting`), tells it about each one. So the compile notice is
printed only when something is compiled, never on a warm run, however slow loading the
cached kernels is on a busy machine.

:class:`Progress` is the reporter ``ltr run`` uses: the first compile prints one line that
says what is happening; while compiling goes on, a line every :data:`EVERY` seconds (on a
terminal, one line rewritten) gives the functions compiled so far and the time; the end
gives the total.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

EVERY = 5.0  # seconds between progress lines when not on a terminal

compiled = 0  # functions numba compiled in this process (nested compiles included)
_reporter: Callable[[str], None] | None = None
_installed = False


def install() -> None:
    """Listen to numba's compile event (imports numba's event module; once per process)."""
    global _installed
    if _installed:
        return
    from numba.core import event

    class _Listener(event.Listener):
        def on_start(self, ev: Any) -> None:
            global compiled
            compiled += 1
            if _reporter is not None:
                data = ev.data or {}
                dispatcher = data.get("dispatcher")
                name = getattr(getattr(dispatcher, "py_func", None), "__qualname__", "a kernel")
                module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
                _reporter(f"{module.rsplit('.', 1)[-1]}.{name}" if module else name)

        def on_end(self, ev: Any) -> None:
            return None

    event.register("numba:compile", _Listener())
    _installed = True


@contextmanager
def reporting(report: Callable[[str], None] | None) -> Iterator[None]:
    """Within the block, ``report(function name)`` is called as each compile starts."""
    global _reporter
    before = _reporter
    _reporter = report
    try:
        yield
    finally:
        _reporter = before


def silence() -> None:
    """No reports from here on (a forked compile-ahead child: the parent speaks)."""
    global _reporter
    _reporter = None


class Progress:
    """The compile notice and its progress lines, through ``say`` (stderr by default)."""

    def __init__(self, say: Callable[[str], None] | None = None, tty: bool | None = None):
        self.say = say or _stderr
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.count = 0
        self.start = 0.0
        self.last = 0.0

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.count += 1
        if self.count == 1:
            self.start = self.last = now
            self.say("ltr: compiling kernels (not in the kernel cache yet: tens of seconds, once; later "
                     "runs load them; the compile is recorded as the runs' kernel_load_seconds; "
                     "'ltr kernels build' compiles them all ahead of any run)")
            return
        if self.tty or now - self.last >= EVERY:
            self.last = now
            line = f"ltr: compiling kernels: {self.count} functions so far ({name}), {now - self.start:.0f} s"
            if self.tty:
                sys.stderr.write("\r" + line + "\x1b[K")
                sys.stderr.flush()
            else:
                self.say(line)

    def close(self) -> None:
        """The closing line, when something was compiled."""
        if self.count:
            if self.tty:
                sys.stderr.write("\r\x1b[K")
            self.say(f"ltr: compiled {self.count} kernel functions in {time.perf_counter() - self.start:.1f} s "
                     "(kept in the kernel cache for later runs)")
            self.count = 0


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
