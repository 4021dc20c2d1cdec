"""Build the extension of kernels compiled ahead of time (:mod:`ltr_cli.kernels.ahead`)
with numba's ahead-of-time compiler, ``numba.pycc``.

``setup.py`` calls :func:`build` when the package is installed; ``ltr kernels build
--ahead`` calls it again in a checkout whose kernel sources changed. It needs numba, numpy
and a C compiler (gcc), and nothing of ltr-cli beyond the kernel modules.

Every export is compiled from the Python function of the numba kernel (``py_func``) with
the argument types :data:`~ltr_cli.kernels.ahead.EXPORTS` lists; the kernels it calls
compile into the same module. It is compiled for the host CPU, as numba compiles just in
time: the same instructions, so the same bits (with float32 rows a generic x86-64 build
differed from numba's kernels in the last bits of some weights). The exported functions release the GIL, as the kernels
declared ``nogil`` do (the SVMlight scanner runs in two threads). The sidecar
``_ahead.json`` records, per kernel module, the digest of every source file compiled in, so
that a run can tell a stale build (:func:`ltr_cli.kernels.ahead.kernel`).

The compile takes a minute or two of CPU, inside ``pip install``, which shows nothing of a
build step's output: the build says what it is doing and how long it has taken (a line every
few seconds, :class:`Ticker`) on the terminal the install was started from (``/dev/tty``)
when there is one, else on stderr.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable

from ltr_cli.kernels.ahead import EXPORTS, SIDECAR, cpu_signature, read_sidecar, source_digests

NAME = "_ahead"


def _signature(text_args: tuple[str, ...], returns: str) -> Any:
    """numba's signature from the table's notation (``f8[:, ::1]``: numba's own, read in the
    namespace of ``numba.types``; the table is ours, never user input)."""
    from numba import types

    namespace = dict(types.__dict__)
    return eval(returns, {}, namespace)(*(eval(a, {}, namespace) for a in text_args))


def _release_gil() -> None:
    """Make pycc's generated wrappers release the GIL around the compiled call."""
    from numba.core.compiler import Flags
    from numba.pycc import compiler

    class _NoGil(Flags):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.release_gil = True  # type: ignore[assignment]

    compiler.Flags = _NoGil  # type: ignore[misc]


TICK = 5.0  # seconds between the compile's progress lines


class Ticker:
    """Progress of a long step without steps of its own: ``with Ticker(what, write):`` writes
    ``what`` at once, then the time so far every :data:`TICK` seconds, then the total.
    ``write(text, final)`` puts one line out (a terminal may rewrite it until ``final``)."""

    def __init__(self, what: str, write: Callable[[str, bool], None]) -> None:
        self.what, self.write = what, write
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)

    def _tick(self) -> None:
        start = time.perf_counter()
        while not self._stop.wait(TICK):
            self.write(f"{self.what}: {time.perf_counter() - start:.0f} s so far", False)

    def __enter__(self) -> "Ticker":
        self.write(f"{self.what} ...", False)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def progress_writer() -> Callable[[str, bool], None]:
    """Where the build's progress goes: the controlling terminal when there is one (a pip
    install hides its build's own output), one line rewritten in place; else stderr, a line
    each time."""
    try:
        fd = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY)
    except OSError:
        def to_stderr(text: str, final: bool) -> None:
            print(f"ltr-cli: {text}", file=sys.stderr, flush=True)
        return to_stderr
    tty = os.fdopen(fd, "w", buffering=1)

    def to_tty(text: str, final: bool) -> None:
        tty.write(f"\r\x1b[Kltr-cli: {text}" + ("\n" if final else ""))
        tty.flush()
    return to_tty


def build(output: Path, say: Callable[[str], None] = print,
          progress: Callable[[str, bool], None] | None = None) -> Path:
    """Compile every export into the extension file ``output`` (its name as Python's
    importer wants it, in the package's ``kernels`` folder) and write the sidecar beside it.
    Returns ``output``. Compiles in a scratch folder; the numba kernel cache is a scratch
    folder too (nothing is left in the user's). ``progress(text, final)``: where the
    compile's progress lines go (none when None)."""
    start = time.perf_counter()
    functions = sum(len(e.variants) for e in EXPORTS)
    write = progress if progress is not None else (lambda text, final: None)
    scratch = Path(tempfile.mkdtemp(prefix="ltr-ahead-"))
    os.environ.setdefault("NUMBA_CACHE_DIR", str(scratch / "numba-cache"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pycc's pending deprecation; numba's performance notes
            from numba.pycc import CC

            _release_gil()
            cc = CC(NAME)
            cc.output_dir = str(scratch)
            cc.verbose = False
            cc.target_cpu = "host"  # as numba compiles just in time: the same instructions, the same bits
            sources: dict[str, dict[str, str]] = {}
            for export in EXPORTS:
                module = importlib.import_module(export.module)
                dispatcher = getattr(module, export.function)
                for i, args in enumerate(export.variants):
                    cc.export(export.symbol(i), _signature(args, export.returns))(dispatcher.py_func)
                sources[export.module] = source_digests(export.module)
            with Ticker(f"compiling {functions} kernels for this CPU (once, about 2 min)", write):
                cc.compile()
        built = Path(cc.output_file) if os.path.isabs(cc.output_file) else scratch / cc.output_file
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, output.with_suffix(output.suffix + ".tmp"))
        os.replace(output.with_suffix(output.suffix + ".tmp"), output)
        sidecar = output.parent / SIDECAR.name
        sidecar.write_text(json.dumps({"numba": _numba_version(), "python": sys.version.split()[0], "cpu": cpu_signature(),
                                       "extension": hashlib.sha256(output.read_bytes()).hexdigest(),
                                       "sources": sources}, indent=1, sort_keys=True) + "\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    done = f"kernels compiled ahead: {functions} functions in {time.perf_counter() - start:.0f} s -> {output.name}"
    write(done, True)
    say(done)
    return output


def _numba_version() -> str:
    import numba

    return str(numba.__version__)


def installed_path() -> Path:
    """Where the extension of this checkout or installation lives."""
    import sysconfig

    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    return SIDECAR.with_name(NAME + suffix)


def main(argv: list[str] | None = None) -> int:
    """``python -m ltr_cli.kernels.ahead_build [OUTPUT] [--force] [--reuse EARLIER]``: build
    into OUTPUT (default: the package's own place, :func:`installed_path`) unless it is
    there and fresh, or ``EARLIER`` (an earlier build, say in the checkout of an editable
    install) is fresh and is copied; ``--force``: build anyway. In a process of its own, so
    that numba's settings for the build stay out of the caller's."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m ltr_cli.kernels.ahead_build")
    parser.add_argument("output", nargs="?", type=Path, default=installed_path())
    parser.add_argument("--force", action="store_true", help="build even when the output is fresh")
    parser.add_argument("--reuse", type=Path, help="an earlier build: copied when it is fresh")
    args = parser.parse_args(argv)
    output: Path = args.output
    if not args.force and fresh(output):
        print(f"kernels compiled ahead: {output.name} is up to date")
        return 0
    if not args.force and args.reuse is not None and args.reuse.resolve() != output.resolve() and fresh(args.reuse):
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(args.reuse, output)
        shutil.copyfile(args.reuse.with_name(SIDECAR.name), output.with_name(SIDECAR.name))
        print(f"kernels compiled ahead: {output.name} is up to date (from {args.reuse.parent})")
        return 0
    build(output, progress=progress_writer())
    return 0


def fresh(output: Path) -> bool:
    """Whether ``output`` exists, was built for this CPU and its sidecar's digests match the
    kernel sources now."""
    sidecar = read_sidecar(output.parent / SIDECAR.name)
    recorded = sidecar.get("sources") if isinstance(sidecar, dict) else None
    return (isinstance(sidecar, dict) and output.is_file() and isinstance(recorded, dict) and sidecar.get("cpu") == cpu_signature()
            and sidecar.get("extension") == hashlib.sha256(output.read_bytes()).hexdigest()
            and all(recorded.get(e.module) == source_digests(e.module) for e in EXPORTS))


if __name__ == "__main__":
    raise SystemExit(main())
