"""`memcli mcp`: the MCP server over stdio, started on demand by an MCP client.

The command line is usually taken by :mod:`memcli.cli.fast` without typer (a client waits ~1 s for the
handshake); this is the same command for the forms it leaves to typer (``--help``, ``--home`` after it...)."""

from __future__ import annotations

from typing import Optional

import typer

from memcli.cli.context import state, with_namespace


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp(
        ctx: typer.Context,
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Default namespace."),
        agent: Optional[str] = typer.Option(
            None, "--agent", help="The agent this client is (codex, gemini…): its writes are that agent's "
                                  "(scope agent:<name>) unless a tool call names another. `memcli setup` sets it."),
    ) -> None:
        """Serve MCP over stdin/stdout (for an MCP client to start; nothing but protocol on stdout).

        Example: claude mcp add --scope user memcli -- memcli mcp --agent claude-code
        """
        from memcli.mcp.front import serve

        st = state(ctx)  # never JSON mode: errors go to stderr, stdout belongs to the protocol
        with_namespace(ctx, namespace)
        serve(str(st.home) if st.home else None, dict(st.overrides), agent)
