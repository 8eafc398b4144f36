"""`memcli list`: memories matching exact filters, newest first."""

from __future__ import annotations

from typing import List, Optional

import typer

from memcli.cli.context import usage_error, use_json, with_namespace
from memcli.cli.output import emit, memories_table
from memcli.models import parse_time_ms


def register(app: typer.Typer) -> None:
    @app.command("list")
    def list_(
        ctx: typer.Context,
        agent: Optional[str] = typer.Option(None, "--agent", help="Only memories of this agent (scope agent:NAME)."),
        scope: Optional[str] = typer.Option(None, "--scope", help="Only this scope ('global' or 'agent:NAME')."),
        tag: Optional[List[str]] = typer.Option(None, "--tag", "-t", help="Only memories with this tag (repeatable: all of them)."),
        since: Optional[str] = typer.Option(None, "--since", help="Only created at or after: 2d, 12h, an ISO date or epoch ms."),
        until: Optional[str] = typer.Option(None, "--until", help="Only created at or before: 2d, an ISO date or epoch ms."),
        project: Optional[str] = typer.Option(None, "--project", help="Only memories written in this project."),
        source: Optional[str] = typer.Option(None, "--source", help="Only memories written by: cli, hook:stop, mcp, api, distill, import."),
        all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A", help="List every namespace."),
        include_expired: bool = typer.Option(False, "--include-expired", help="Also expired memories."),
        include_archived: bool = typer.Option(False, "--include-archived", help="Also memories distill superseded or archived."),
        limit: int = typer.Option(50, "--limit", "-l", help="At most this many memories."),
        offset: int = typer.Option(0, "--offset", help="Skip this many (paging)."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Namespace (default from config)."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """List memories, newest first, filtered exactly.

        Example: memcli list --tag decision --since 7d --limit 20
        """
        st = use_json(ctx, json_)
        if all_namespaces and namespace is not None:
            raise usage_error("give one of them, not both", "--namespace / --all-namespaces")
        with_namespace(ctx, namespace)
        mems = st.client().list(
            all_namespaces=all_namespaces, scope=scope, agent=agent, tags=tag,
            since=parse_time_ms(since) if since else None, until=parse_time_ms(until) if until else None,
            project=project, source=source, include_expired=include_expired, limit=limit, offset=offset,
            include_archived=include_archived)
        emit([m.item() for m in mems], st.json, lambda items: memories_table(items))
