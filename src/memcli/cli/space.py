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
        from memcli.team.spaces import SpaceRegistry

        return SpaceRegistry(self.st.service().store.db)

    def create(self, name: str, agent: str, conflict: str | None = None) -> dict[str, Any]:
        if self.remote is not None:
            body = {"name": name, "agent": agent, **({"conflict": conflict} if conflict else {})}
            return self.remote.request("POST", "/api/spaces", body)
        token, info = self._registry().create(name, agent, conflict or "refuse")
        return {"ok": True, "space_id": info.space, "api_token": token, "token_id": info.token_id,
                "agent": info.agent, "conflict": conflict or "refuse", **self._ready(conflict)}

    def set_conflict(self, space: str, conflict: str) -> dict[str, Any]:
        if self.remote is not None:
            return self.remote.request("PATCH", f"/api/spaces/{quote(space, safe='')}", {"conflict": conflict})
        return {"ok": True, **self._registry().set_conflict(space, conflict), **self._ready(conflict)}

    def _ready(self, conflict: str | None) -> dict[str, Any]:
        """On the server's own machine: whether its config has the LLM endpoint an llm-merge space needs."""
        if conflict != "llm-merge":
            return {}
        return {"llm_merge_ready": self.st.config().hooks.llm_provider in ("openai", "anthropic")}

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
        path = f"/api/spaces/{quote(space, safe='')}/tokens/{quote(token_id, safe='')}"
        if self.remote is not None:
            return self.remote.request("DELETE", path)
        # This home's running server trusts a resolved token for up to 2 s (spaces.CACHE_SECONDS): revoked
        # through it, the token is refused at once; with no server of this home, on the store directly.
        from memcli.team.remote import RemoteService, Unavailable

        local = RemoteService.for_home(self.st.config())
        if local is not None:
            try:
                return local.request("DELETE", path)
            except Unavailable:
                pass
        return {"ok": True, **self._registry().revoke(space, token_id).item()}


def _no_llm_warning(d: dict[str, Any]) -> None:
    from memcli.cli.output import err

    if d.get("llm_merge_ready") is False:
        err.print("[yellow]No LLM endpoint is configured (\\[hooks] llm_provider, llm_base_url, llm_model, "
                  "llm_api_key in the server's config): until there is one, stale updates are refused.[/yellow]")


def _new_token(d: dict[str, Any]) -> None:
    from memcli.cli.output import err, esc, out

    _no_llm_warning(d)

    out.print(f"space [bold]{esc(d['space_id'])}[/bold], agent [bold]{esc(d['agent'])}[/bold], token id "
              f"{esc(d['token_id'])}")
    out.print(esc(d["api_token"]))
    err.print("[yellow]This token is shown once and stored only hashed: hand it to the agent now "
              "(memcli setup --server URL --token TOKEN).[/yellow]")


_CONFLICT_HELP = ("What a stale update gets: refuse (412, the default), lww (last writer wins: it overwrites, "
                  "and history says so) or llm-merge (the LLM endpoint of the hooks config merges it; refused when "
                  "it cannot).")


def _mode(value: str) -> str:
    """A valid --conflict value, or exit 2 with the choices."""
    if value.strip().lower() not in ("refuse", "lww", "llm-merge"):
        raise typer.BadParameter(f"{value!r}: use refuse, lww or llm-merge", param_hint="--conflict")
    return value.strip().lower()


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
           conflict: Optional[str] = typer.Option(None, "--conflict", help=_CONFLICT_HELP),
           json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Create a space and the first agent's token: {space_id, api_token}.

    Example: memcli space create acme --agent alice-claude --conflict llm-merge
    """
    st = use_json(ctx, json_)
    emit(_Admin(st).create(name, agent, _mode(conflict) if conflict else None), st.json, _new_token)


@space_app.command("set")
def set_(ctx: typer.Context, name: str = typer.Argument(..., help="The space."),
         conflict: str = typer.Option(..., "--conflict", help=_CONFLICT_HELP),
         json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Change a space's setting: what a stale update (an old If-Match / expected_version) gets.

    Example: memcli space set acme --conflict llm-merge
    """
    st = use_json(ctx, json_)

    def show(d: dict[str, Any]) -> None:
        from memcli.cli.output import esc, out

        _no_llm_warning(d)
        out.print(f"space [bold]{esc(d['space_id'])}[/bold]: conflict = {esc(d['conflict'])}")
    emit(_Admin(st).set_conflict(name, _mode(conflict)), st.json, show)


@space_app.command("list")
def list_spaces(ctx: typer.Context, json_: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the spaces and how many active tokens each has."""
    st = use_json(ctx, json_)
    emit(_Admin(st).spaces(), st.json, _rows("spaces", ("space_id", "active_tokens", "conflict", "created_by",
                                                        "created_at")))


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
