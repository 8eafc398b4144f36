"""`memcli reindex`: re-embed every memory with the configured embedder."""

from __future__ import annotations

import typer

from memcli.cli.context import use_json
from memcli.cli.output import emit, esc, out, progress


def register(app: typer.Typer) -> None:
    @app.command("reindex")
    def reindex(
        ctx: typer.Context,
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Re-embed every memory with the configured embedder (after changing embedders). The old vectors
        stay active until the new ones are complete: an interrupted reindex loses nothing.

        Example: MEMCLI_EMBEDDER=openai memcli reindex
        """
        st = use_json(ctx, json_)
        svc = st.service(allow_mismatch=True)
        with progress("Re-embedding") as bar:
            res = svc.reindex(progress=bar)
        emb = res.get("embedder") or {}
        emit({"ok": True, **res}, st.json, lambda d: out.print(
            f"[green]Reindexed[/green] {d['reindexed']} memories with "
            f"{esc(emb.get('provider'))}:{esc(emb.get('model'))} ({emb.get('dim')} dims)"))
