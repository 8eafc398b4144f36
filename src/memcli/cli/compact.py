"""`memcli compact`: merge small fragments and fold new rows into the indexes."""

from __future__ import annotations

import typer

from memcli.cli.context import use_json
from memcli.cli.output import emit, out


def register(app: typer.Typer) -> None:
    @app.command("compact")
    def compact(
        ctx: typer.Context,
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Compact the store (writers also do this automatically); safe while other agents write.

        Example: memcli compact
        """
        st = use_json(ctx, json_)
        res = st.service().compact()
        emit({"ok": True, **res}, st.json, lambda d: out.print(
            f"[green]Compacted[/green]: {d.get('fragments_before')} → {d.get('fragments')} fragments"
            if d.get("compacted") else f"[yellow]Not compacted[/yellow]: {d.get('reason')}"))
