"""``ltr kernels``: fill the compiled-kernel cache ahead of any run, and say what it holds."""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from ltr_cli.cli.boundary import command

kernels_app = typer.Typer(help="The compiled kernels: build the kernel cache once, or see what it holds.",
                          no_args_is_help=True, rich_markup_mode=None)


@command(kernels_app, "build")
def build(
    family: Annotated[Optional[list[str]], typer.Option("--family", metavar="NAME", help="build only this block family (repeatable; 'rounds': the per-round kernels; 'evaluation': ltr eval's)")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list what would be built (families and the learner examples that run them); compile nothing")] = False,
    ahead_only: Annotated[bool, typer.Option("--ahead", help="instead: compile the kernels built ahead of time (the online learners', the scanners, the evaluation) into the package's extension again, as installing does; for a checkout whose kernel sources changed")] = False,
) -> None:
    """Compile the online learners' kernels into the kernel cache (every declared block family and the
    per-round kernels, float64 and float32 rows) and ltr eval's, so that later runs load them instead of compiling;
    once per machine, and again after an upgrade. A family already cached compiles nothing."""
    if ahead_only:
        _build_ahead(dry_run)
        return
    from ltr_cli.runs import kernel_build

    from ltr_cli import kernels

    kernels.set_enabled(True)  # before planning: with LTR_KERNELS=0 no run would plan a family
    chosen = kernel_build.targets(family)
    if dry_run:
        for target in chosen:
            typer.echo(f"{target.family}: {', '.join(target.learners) or '(no learner example uses it)'}")
        return
    from ltr_cli.runs.kernel_background import holding

    say = lambda text: typer.echo(text, err=True)  # noqa: E731
    with holding(say):  # one build at a time: a run's background build may be compiling
        built = kernel_build.build(chosen, say)
    total = sum(b.compiled for b in built)
    seconds = sum(b.seconds for b in built)
    typer.echo(f"compiled {total} kernel file{'s' if total != 1 else ''} for {len(built)} "
               f"famil{'ies' if len(built) != 1 else 'y'} in {seconds:.1f} s" if total else
               f"nothing to compile: the kernel cache already holds {len(built)} famil"
               f"{'ies' if len(built) != 1 else 'y'} ({seconds:.1f} s)")


def _build_ahead(dry_run: bool) -> None:
    """``ltr kernels build --ahead``: the extension of :mod:`ltr_cli.kernels.ahead`, in a
    process of its own (numba's build settings stay out of this one)."""
    import subprocess

    from ltr_cli.core.children import PYTHON
    from ltr_cli.errors import LtrError
    from ltr_cli.kernels import ahead
    from ltr_cli.kernels.ahead_build import installed_path

    target = installed_path()
    if dry_run:
        for export in ahead.EXPORTS:
            typer.echo(f"{export.ref}: {len(export.variants)} variant{'s' if len(export.variants) != 1 else ''}")
        return
    if not os.access(target.parent, os.W_OK):
        raise LtrError(f"{target.parent} is not writable: re-install the package (pip install .) to rebuild "
                       "the kernels compiled ahead")
    done = subprocess.run([*PYTHON, "-m", "ltr_cli.kernels.ahead_build", str(target), "--force"])
    if done.returncode:
        raise LtrError("the kernels could not be compiled ahead (numba's output is above); runs compile them "
                       "on first use instead")


@command(kernels_app, "status")
def status() -> None:
    """Which block families' kernels are built ahead or held by the kernel cache (numba is not imported)."""
    from ltr_cli.kernels import numba_cache
    from ltr_cli.runs import kernel_build

    held = kernel_build.status()  # chooses the cache's place first
    typer.echo(f"kernel cache: {os.environ.get('NUMBA_CACHE_DIR') if numba_cache.ensure() else '(off)'}")
    from ltr_cli.kernels import ahead
    from ltr_cli.runs.kernel_plan import ahead_families

    built = set(ahead_families([name for name in held if name != kernel_build.EVALUATION]))
    if ahead.available(kernel_build.EVALUATION_KERNEL):
        built.add(kernel_build.EVALUATION)
    for name, cached in held.items():
        typer.echo(f"{name}: {'built ahead' if name in built else 'cached' if cached else 'not cached (ltr kernels build compiles it)'}")
    for ref, state in ahead.status().items():
        typer.echo(f"ahead {ref}: {state}")
