"""`memcli history`: who changed a memory, how and when (the audit log)."""

from __future__ import annotations

from typing import Any, Optional

import typer

from memcli.cli.context import usage_error, use_json, with_namespace
from memcli.cli.output import emit


def _table(events: list[dict[str, Any]]) -> None:
    from rich.table import Table

    from memcli.cli.output import fmt_time, out, plain

    if not events:
        out.print("no recorded changes")
        return
    t = Table(title=f"history of {events[0]['memory_id']}")
    for col in ("when", "action", "by", "version", "changes"):
        t.add_column(col, overflow="fold")
    for e in events:
        changes = "; ".join(f"{k}: {_short(v[0])} → {_short(v[1])}" for k, v in e["changes"].items())
        t.add_row(fmt_time(e["at"]), e["action"], plain(e["actor"]), str(e["version"]),
                  plain((changes + ("; " if changes and e["note"] else "") + e["note"]) or "—"))
    out.print(t)


def _short(v: Any, n: int = 60) -> str:
    s = "—" if v is None else str(v)
    return s if len(s) <= n else s[: n - 1] + "…"


def register(app: typer.Typer) -> None:
    @app.command("history")
    def history(
        ctx: typer.Context,
        memory_id: str = typer.Argument(..., metavar="ID", help="The id (a forgotten memory: its full id), or a "
                                        "unique part of it."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="The namespace the memory is in "
                                                "(default: MEMCLI_NAMESPACE, else the config's)."),
        all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A", help="Look in every namespace."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Show who changed a memory (of your namespace, unless told another or every one), how and when,
        oldest first.

        Example: memcli history 3f9a1c2e
        """
        st = use_json(ctx, json_)
        if all_namespaces and namespace is not None:
            raise usage_error("give one of them, not both", "--namespace / --all-namespaces")
        with_namespace(ctx, namespace)
        events = [e.to_dict() for e in st.client().history(
            memory_id, **({"all_namespaces": True} if all_namespaces else {}))]
        emit(events, st.json, _table)
