"""The typer application, its global options and the single error boundary."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperGroup

from memcli.cli.context import State, state
from memcli.cli.output import error
from memcli.errors import MemcliError, clean_message

# Each module defines `register(app)`; one module per command (pipx style). Command name → module.
COMMANDS = {
    "remember": "remember", "recall": "recall", "list": "list_cmd", "get": "get", "update": "update",
    "forget": "forget", "check-duplicate": "check_duplicate", "export": "export", "import": "import_cmd",
    "history": "history", "stats": "stats", "doctor": "doctor", "reindex": "reindex", "compact": "compact", "distill": "distill",
    "serve": "serve", "mcp": "mcp_cmd", "hook": "hook", "setup": "setup", "ui": "ui", "board": "board",
    "space": "space", "sync": "sync",
}
COMMAND_MODULES = list(COMMANDS.values())


class MemcliGroup(TyperGroup):
    """Turns a MemcliError into a clear message and exit code 1 (JSON error object in JSON mode); converts
    plain option values without pydantic (:mod:`memcli.cli.coerce`)."""

    def get_params(self, ctx: Any) -> list[Any]:
        from memcli.cli.coerce import lighten

        params = super().get_params(ctx)
        lighten(params)
        return params

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        from memcli.cli.coerce import lighten

        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            lighten(command.get_params(ctx))  # its --help option included
        return name, command, rest

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except MemcliError as exc:
            st = ctx.obj if isinstance(ctx.obj, State) else State()
            error(exc.message, st.json, exc.code)
            raise typer.Exit(exc.exit_code) from None
        except (typer.Exit, typer.Abort, typer.TyperException, BrokenPipeError):
            raise  # exit codes and usage errors: click's own (typer's vendored click); a reader that went away
        except Exception as exc:  # an engine error no core call named: a message (JSON with --json), no traceback
            if os.environ.get("MEMCLI_DEBUG") == "1":
                raise
            st = ctx.obj if isinstance(ctx.obj, State) else State()
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            error(f"unexpected error: {type(exc).__name__}: {clean_message(text)} (MEMCLI_DEBUG=1 shows where)",
                  st.json, "internal_error")
            raise typer.Exit(1) from None
        finally:
            if isinstance(ctx.obj, State):
                ctx.obj.close()


def _version(value: bool) -> None:
    if value:
        from memcli import __version__

        typer.echo(f"memcli {__version__}")
        raise typer.Exit()


def main_callback(
    ctx: typer.Context,
    home: Optional[Path] = typer.Option(None, "--home", envvar="MEMCLI_HOME", help="Directory for config and data "
                                        "(default: the platform's user data dir)."),
    no_server: bool = typer.Option(False, "--no-server", envvar="MEMCLI_NO_SERVER", help="Work in this process "
                                   "only: do not use this home's running server, do not start one."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
) -> None:
    """Global options."""
    st = state(ctx)
    st.home = home
    st.no_server = no_server


def build_app(modules: list[str] | None = None) -> typer.Typer:
    """The typer app with these command modules (default: all of them)."""
    app = typer.Typer(
        name="memcli",
        cls=MemcliGroup,
        help="One shared, persistent memory for all of your AI agents. Remember anything; recall it by meaning "
             "or keyword, in any language, from any agent.",
        no_args_is_help=True,
        add_completion=False,
        rich_markup_mode="rich",
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(main_callback)
    for name in COMMAND_MODULES if modules is None else modules:
        try:
            mod = importlib.import_module(f"memcli.cli.{name}")
        except ModuleNotFoundError as exc:  # a face still being built; see COMMANDS
            if exc.name != f"memcli.cli.{name}":
                raise
            continue
        mod.register(app)
    return app


def __getattr__(name: str) -> Any:
    """``memcli.cli.app.app``: the full app, built on first access (tests, ``typer.testing``)."""
    if name == "app":
        full = build_app()
        globals()["app"] = full
        return full
    raise AttributeError(name)


def _command_of(argv: list[str]) -> str | None:
    """The command name in a command line (after the global options), or None."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--home":
            i += 2
            continue
        if arg.startswith("--home=") or arg == "--no-server":
            i += 1
            continue
        return None if arg.startswith("-") else arg  # --version, --help: the full app
    return None


def main() -> None:
    """Console-script entry point (`memcli`, `mnemo`). Usage errors exit 2 (typer's standalone mode).

    Only the command being run is imported and registered (help and unknown commands get them all): a
    `memcli recall` answered by the warm server is a short process, and every import counts.
    """
    # Whatever this process creates in the home (store files, logs, spool, server.json) is the user's alone.
    os.umask(0o077)
    name = _command_of(sys.argv[1:])
    if name in COMMANDS:
        modules: list[str] | None = [COMMANDS[name]]
    else:  # help and usage errors list every command; `--version` needs none
        modules = [] if sys.argv[1:] == ["--version"] else None
    build_app(modules)()
