"""`memcli space`: team spaces and their tokens (admin only).

On the server's own machine these work on the local store directly (whoever owns the home is the admin);
with ``MEMCLI_API_URL`` set they go through that server, which accepts only its admin token (the home's
``auth.json`` token or ``MEMCLI_TOKEN`` of the server), never a space token.
"""

from __future__ import annotations

from typing import Any, Callable, Optional
from urllib.parse import quote

import typer

from memcli.cli.context import State, use_json
from memcli.cli.output import emit

space_app = typer.Typer(help="Team spaces (namespaces with members) and their agents' tokens (admin only).\n\n"
                             "Example: memcli space create acme --agent alice-claude", no_args_is_help=True)
token_app = typer.Typer(help="Tokens of a space: one per agent; shown once, stored hashed.\n\n"
                             "Example: memcli space token add acme --agent bob-codex", no_args_is_help=True)
space_app.add_typer(token_app, name="token")


class _Admin:
    """The same five operations, on the local store's registry or through the server's admin routes."""

    def __init__(self, st: State) -> None:
        self.remote = st.team()
        self.st = st

    def _registry(self) -> Any:
        from memcli.spaces import SpaceRegistry

        return SpaceRegistry(self.st.service().store.db)

    def create(self, name: str, agent: str) -> dict[str, Any]:
        if self.remote is not None:
            return self.remote.request("POST", "/api/spaces", {"name": name, "agent": agent})
        token, info = self._registry().create(name, agent)
        return {"ok": True, "space_id": info.space, "api_token": token, "token_id": info.token_id,
                "agent": info.agent}

    def spaces(self) -> list[dict[str, Any]]:
        if self.remote is not None:
            return self.remote.request("GET", "/api/spaces")
        return self._registry().spaces()

    def add(self, space: str, agent: str) -> dict[str, Any]:
        if self.remote is not None:
            return self.remote.request("POST", f"/api/spaces/{quote(space, safe='')}/tokens", {"agent": agent})
        token, info = self._registry().add_token(space, agent)
        return {"ok": True, "api_token": token, **info.item()}

    def tokens(self, space: str) -> list[dict[str, Any]]:
        if self.remote is not None:
            return self.remote.request("GET", f"/api/spaces/{quote(space, safe='')}/tokens")
        return [t.item() for t in self._registry().tokens(space)]

    def revoke(self, space: str, token_id: str) -> dict[str, Any]:
        if self.remote is not None:
            return self.remote.request("DELETE", f"/api/spaces/{quote(space, safe='')}/tokens/"
                                       f"{quote(token_id, safe='')}")
        return {"ok": True, **self._registry().revoke(space, token_id).item()}


def _new_token(d: dict[str, Any]) -> None:
    from memcli.cli.output import err, esc, out

    out.print(f"space [bold]{esc(d['space_id'])}[/bold], agent [bold]{esc(d['agent'])}[/bold], token id "
              f"{esc(d['token_id'])}")
    out.print(esc(d["api_token"]))
    err.print("[yellow]This token is shown once and stored only hashed: hand it to the agent now "
              "(memcli setup --server URL --token TOKEN).[/yellow]")


def _rows(title: str, cols: tuple[str, ...]) -> Callable[[list[dict[str, Any]]], None]:
    def show(items: list[dict[str, Any]]) -> None:
        from rich.table import Table

        from memcli.cli.output import fmt_time, out, plain

        t = Table(title=title)
        for c in cols:
            t.add_column(c)
        for it in items:
            t.add_row(*(fmt_time(it[c]) if c.endswith("_at") and it.get(c) else plain(str(it.get(c, "")))
                        for c in cols))
        out.print(t)
    return show


@space_app.command("create")
def create(ctx: typer.Context, name: str = typer.Argument(..., help="The space's name (= its namespace)."),
           agent: str = typer.Option(..., "--agent", "-a", help="The agent the first token is for."),
           json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Create a space and the first agent's token: {space_id, api_token}.

    Example: memcli space create acme --agent alice-claude
    """
    st = use_json(ctx, json_)
    emit(_Admin(st).create(name, agent), st.json, _new_token)


@space_app.command("list")
def list_spaces(ctx: typer.Context, json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the spaces and how many active tokens each has."""
    st = use_json(ctx, json_)
    emit(_Admin(st).spaces(), st.json, _rows("spaces", ("space_id", "active_tokens", "created_by", "created_at")))


@token_app.command("add")
def token_add(ctx: typer.Context, space: str = typer.Argument(..., help="The space."),
              agent: str = typer.Option(..., "--agent", "-a", help="The agent the token is for."),
              json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Give one more agent a token of a space.

    Example: memcli space token add acme --agent bob-codex
    """
    st = use_json(ctx, json_)
    emit(_Admin(st).add(space, agent), st.json, _new_token)


@token_app.command("list")
def token_list(ctx: typer.Context, space: str = typer.Argument(..., help="The space."),
               json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List a space's tokens (their ids, agents and whether revoked; never the tokens)."""
    st = use_json(ctx, json_)
    emit(_Admin(st).tokens(space), st.json,
         _rows(f"tokens of {space}", ("token_id", "agent", "active", "created_at", "revoked_at")))


@token_app.command("revoke")
def token_revoke(ctx: typer.Context, space: str = typer.Argument(..., help="The space."),
                 token_id: str = typer.Argument(..., help="The token id (`memcli space token list`) or the token."),
                 json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Revoke a token: refused at once (within 2 s on other server replicas)."""
    st = use_json(ctx, json_)
    emit(_Admin(st).revoke(space, token_id), st.json,
         lambda d: __import__("memcli.cli.output", fromlist=["out"]).out.print(
             f"revoked token {d['token_id']} of {d['agent']} in {d['space_id']}"))


def register(app: typer.Typer) -> None:
    app.add_typer(space_app, name="space")
