"""The ``ltr`` command line (Typer).

Heavy modules (pandas, matplotlib, the learners) are imported inside the commands that
need them, so ``ltr --help`` and ``ltr list`` start quickly. Every user-caused error is an
``LtrError``: printed as one line on stderr, exit code 1.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated, Any

import typer

from ltr_cli.cli.boundary import USAGE_ERROR, command, one_line, refuse
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


def _show_version(value: bool) -> None:
    if value:
        from ltr_cli import __version__

        typer.echo(f"ltr {__version__}")
        raise typer.Exit()


def _options(
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_show_version,
                                          help="print the version and exit")] = False,
) -> None:
    """Reproducible learning-to-rank experiments: run configs, plot curves, evaluate scores."""


#: the commands, in the order --help lists them: name -> (module of ``ltr_cli.cli``, function);
#: each module one command, thin: it parses options and calls one function
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "run"), "plot": ("plot", "plot"), "sweep": ("sweep", "sweep"), "report": ("report", "report"),
    "compare": ("compare", "compare"), "bench": ("bench", "bench"), "list": ("listing", "list_"),
    "score": ("score", "score"), "eval": ("evaluate", "eval_"), "interleave": ("interleave", "interleave"),
}
#: the command groups: name -> (module, Typer app)
GROUPS: dict[str, tuple[str, str]] = {"data": ("data", "data_app"), "theory": ("theory", "theory_app"),
                                      "export": ("export", "export_app"), "clicks": ("clicks", "clicks_app"),
                                      "kernels": ("kernels", "kernels_app")}


def build(only: str | None = None) -> typer.Typer:
    """The ``ltr`` app with every command, or with only the command or group ``only``
    (what ``ltr <only> ...`` runs: the other commands' modules are not imported, nor their
    options built)."""
    app = typer.Typer(
        name="ltr",
        help="Reproducible learning-to-rank experiments: run configs, plot curves, evaluate scores.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # plain help: no "<bool>" beside flags
    )
    app.callback()(_options)
    for name, (module, attr) in GROUPS.items():
        if only in (None, name):
            app.add_typer(getattr(importlib.import_module(f"ltr_cli.cli.{module}"), attr), name=name)
    for name, (module, attr) in COMMANDS.items():
        if only in (None, name):
            function = getattr(importlib.import_module(f"ltr_cli.cli.{module}"), attr)
            command(app, name if name != function.__name__ else None)(function)
    return app


_APP: typer.Typer | None = None


def __getattr__(name: str) -> Any:
    """``app``: the whole command line, built on first use."""
    global _APP
    if name == "app":
        if _APP is None:
            _APP = build()
        return _APP
    raise AttributeError(name)


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
        word = sys.argv[1] if len(sys.argv) > 1 else None
        app = build(word) if word in COMMANDS or word in GROUPS else build()
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
