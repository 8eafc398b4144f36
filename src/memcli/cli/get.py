"""`memcli get`: one memory by id (or a unique prefix)."""

from __future__ import annotations

import typer

from memcli.cli.context import use_json
from memcli.cli.output import emit, memory_detail


def register(app: typer.Typer) -> None:
    @app.command("get")
    def get(
        ctx: typer.Context,
        memory_id: str = typer.Argument(..., metavar="ID", help="The id, or a unique part of it (≥ 4 hex digits)."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Show one memory in full.

        Example: memcli get 3f9a1c2e
        """
        st = use_json(ctx, json_)
        mem = st.client().get(memory_id)
        emit(mem.item(), st.json, memory_detail)
