"""`memcli sync push|pull`: move a personal store into a team space and back, through the team server."""

from __future__ import annotations

from typing import Any, Optional

import typer

from memcli.cli.context import State, use_json
from memcli.cli.output import emit
from memcli.errors import ConfigError

sync_app = typer.Typer(help="Copy memories between this machine's store and the team space (MEMCLI_API_URL). "
                            "Idempotent: running it again copies nothing twice.\n\nExample: memcli sync push",
                       no_args_is_help=True)


def _both(st: State) -> tuple[Any, Any]:
    """(the local store's service, the team server's client)."""
    from pathlib import Path

    from memcli.memory.service import MemoryService
    from memcli.project import detect_project
    from memcli.team.remote import RemoteService

    config = st.config()
    if not config.api_url:
        raise ConfigError("no team server: set MEMCLI_API_URL and MEMCLI_API_TOKEN, or run "
                          "`memcli setup --server URL --token TOKEN`")
    remote = RemoteService.for_team(config)
    local = MemoryService.open(config, project=detect_project(Path.cwd()))
    st._service = local  # closed with the invocation
    return local, remote


def _human(d: dict[str, Any]) -> None:
    from memcli.cli.output import out

    verb = "pushed to the space" if d["direction"] == "push" else f"pulled into namespace {d['namespace']}"
    out.print(f"[green]{d['added']}[/green] of {d['read']} memories {verb} ({d['skipped']} already there)")


@sync_app.command("push")
def push(ctx: typer.Context,
         namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="The local namespace to push "
                                                 "(default: the configured one)."),
         json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Copy a local namespace into the team space (in batches; what the space has already is skipped).

    Example: memcli sync push --namespace default
    """
    from memcli.cli.output import progress
    from memcli.team.sync import push as do_push

    st = use_json(ctx, json_)
    local, remote = _both(st)
    with progress("Pushing") as bar:
        res = do_push(local, remote, namespace=namespace, progress=bar)
    emit(res, st.json, _human)


@sync_app.command("pull")
def pull(ctx: typer.Context,
         namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="The local namespace to pull "
                                                 "into (default: the configured one)."),
         json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Copy the team space into a local namespace (what is there already is skipped).

    Example: memcli sync pull
    """
    from memcli.team.sync import pull as do_pull

    st = use_json(ctx, json_)
    local, remote = _both(st)
    emit(do_pull(remote, local, namespace=namespace), st.json, _human)


def register(app: typer.Typer) -> None:
    app.add_typer(sync_app, name="sync")
