"""The typer application, its global options and the single error boundary."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperGroup

from memcli.cli.context import State, state
from memcli.cli.output import error
from memcli.errors import MemcliError

# Each module defines `register(app)`; one module per command (pipx style).
COMMAND_MODULES = [
    "remember", "recall", "list_cmd", "get", "update", "forget", "check_duplicate", "export", "import_cmd",
    "history", "stats", "doctor", "reindex", "compact", "distill", "serve", "mcp_cmd", "hook", "setup",
]


class MemcliGroup(TyperGroup):
    """Turns a MemcliError into a clear message and exit code 1 (JSON error object in JSON mode)."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except MemcliError as exc:
            st = ctx.obj if isinstance(ctx.obj, State) else State()
            error(exc.message, st.json, exc.code)
            raise typer.Exit(exc.exit_code) from None
        finally:
            if isinstance(ctx.obj, State):
                ctx.obj.close()


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


def _version(value: bool) -> None:
    if value:
        from memcli import __version__

        typer.echo(f"memcli {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    ctx: typer.Context,
    home: Optional[Path] = typer.Option(None, "--home", envvar="MEMCLI_HOME", help="Directory for config and data "
                                        "(default: the platform's user data dir)."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
) -> None:
    """Global options."""
    st = state(ctx)
    st.home = home


for _name in COMMAND_MODULES:
    try:
        _mod = importlib.import_module(f"memcli.cli.{_name}")
    except ModuleNotFoundError as _exc:  # a face still being built; see COMMAND_MODULES
        if _exc.name != f"memcli.cli.{_name}":
            raise
        continue
    _mod.register(app)


def main() -> None:
    """Console-script entry point (`memcli`, `mnemo`). Usage errors exit 2 (typer's standalone mode)."""
    app()
