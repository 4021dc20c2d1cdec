"""The ``ltr`` command line (Typer).

Heavy modules (pandas, matplotlib, the learners) are imported inside the commands that
need them, so ``ltr --help`` and ``ltr list`` start quickly. Every user-caused error is an
``LtrError``: printed as one line on stderr, exit code 1.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from ltr_cli.cli import bench as bench_cmd
from ltr_cli.cli import compare as compare_cmd
from ltr_cli.cli import evaluate, listing
from ltr_cli.cli import plot as plot_cmd
from ltr_cli.cli import report as report_cmd
from ltr_cli.cli import run as run_cmd
from ltr_cli.cli import score as score_cmd
from ltr_cli.cli import sweep as sweep_cmd
from ltr_cli.cli.boundary import USAGE_ERROR, command, one_line, refuse
from ltr_cli.cli.data import data_app
from ltr_cli.cli.export import export_app
from ltr_cli.cli.theory import theory_app
from ltr_cli.errors import LtrError


def _usage_like_click() -> None:
    """Usage lines in click's style (``ltr run [OPTIONS] CONFIG``): recent Typer releases
    write a required argument as ``{CONFIG}``, which reads like a template placeholder."""
    from typer.core import TyperArgument

    def usage_name(self: Any) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")

    hook = "_usage_display_name"  # absent in older Typer releases, which need no fix
    if hasattr(TyperArgument, hook):
        setattr(TyperArgument, hook, usage_name)


_usage_like_click()

app = typer.Typer(
    name="ltr",
    help="Reproducible learning-to-rank experiments: run configs, plot curves, evaluate scores.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: no "<bool>" beside flags
)


def _show_version(value: bool) -> None:
    if value:
        from ltr_cli import __version__

        typer.echo(f"ltr {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_show_version,
                                          help="print the version and exit")] = False,
) -> None:
    """Reproducible learning-to-rank experiments: run configs, plot curves, evaluate scores."""


app.add_typer(data_app, name="data")
app.add_typer(theory_app, name="theory")
app.add_typer(export_app, name="export")


# the commands, in the order --help lists them (each module one command, thin: it parses
# options and calls one function)
command(app)(run_cmd.run)
command(app)(plot_cmd.plot)
command(app)(sweep_cmd.sweep)
command(app)(report_cmd.report)
command(app)(compare_cmd.compare)
command(app)(bench_cmd.bench)
command(app, "list")(listing.list_)
command(app, "score")(score_cmd.score)
command(app, "eval")(evaluate.eval_)


def _refuse_unencodable(argv: list[str]) -> None:
    """Arguments (paths above all) that are not valid UTF-8 are refused before any work:
    they could not be written into a manifest, a config copy or a report."""
    for i, arg in enumerate(argv[1:], 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
            raise LtrError(f"argument {i} ({shown}) is not valid UTF-8; rename the file or "
                           "directory, or give another path") from None


def main() -> None:
    try:
        _refuse_unencodable(sys.argv)
        code = app(standalone_mode=False)
    except USAGE_ERROR as exc:  # one line and status 1, like every other refusal
        command = exc.ctx.command_path.split(" ", 1) if exc.ctx is not None else []
        hint = f"ltr {command[1]} --help" if len(command) > 1 else "ltr --help"
        typer.echo(f"ltr: error: {one_line(exc.format_message())} (see '{hint}')", err=True)
        sys.exit(1)
    except (typer.Abort, KeyboardInterrupt):  # Ctrl-C
        typer.echo("ltr: interrupted", err=True)
        sys.exit(130)
    except LtrError as exc:  # errors raised outside a command body
        refuse(exc)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
