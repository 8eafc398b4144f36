"""`memcli mcp`: the MCP server over stdio, started on demand by an MCP client."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from memcli.cli.context import state, with_namespace


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp(
        ctx: typer.Context,
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Default namespace."),
    ) -> None:
        """Serve MCP over stdin/stdout (for an MCP client to start; nothing but protocol on stdout).

        Example: claude mcp add --scope user memcli -- memcli mcp
        """
        from memcli.mcp.stdio import run_stdio
        from memcli.project import detect_project
        from memcli.server.holder import ServiceHolder, setup_file_logging

        st = state(ctx)  # never JSON mode: errors go to stderr, stdout belongs to the protocol
        with_namespace(ctx, namespace)
        config = st.config()
        setup_file_logging(config, "mcp")
        project = detect_project(Path.cwd())
        team = st.team()  # team mode: the tools call the team server (MEMCLI_API_URL), no local store
        run_stdio(ServiceHolder(config, team, project=project) if team is not None  # type: ignore[arg-type]
                  else ServiceHolder(config, project=project))
