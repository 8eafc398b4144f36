"""`memcli check-duplicate`: is this text already remembered?"""

from __future__ import annotations

from typing import Optional

import typer

from memcli.cli.context import read_text_arg, use_json, with_namespace
from memcli.cli.output import describe_relation, emit, memories_table, out, plain


def register(app: typer.Typer) -> None:
    @app.command("check-duplicate")
    def check_duplicate(
        ctx: typer.Context,
        text: str = typer.Argument(..., help="The text to check, or - to read it from stdin."),
        threshold: Optional[float] = typer.Option(None, "--threshold",
                                                  help="Similarity 0..1 that counts as a duplicate (default from config, 0.90)."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Namespace (default from config)."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Check whether a text is already remembered, exactly or nearly; nothing is written.

        Example: memcli check-duplicate "the billing service uses PostgreSQL 16" --threshold 0.9
        """
        st = use_json(ctx, json_)
        with_namespace(ctx, namespace)
        res = st.client().check_duplicate(read_text_arg(text), threshold=threshold)
        emit(res.item(), st.json, _human)


def _human(d: dict) -> None:
    same = [h for h in d["similar"] if h.get("relation") == "same"]
    if same:
        out.print(f"[yellow]Duplicate:[/yellow] {len(same)} memor{'y states' if len(same) == 1 else 'ies state'} "
                  "the same fact")
        memories_table(same, score=True)
    else:
        out.print("[green]No duplicate.[/green]")
    for h in d["similar"]:
        if h.get("relation") in ("conflict", "related"):
            what = "[red]Conflicting[/red]" if h["relation"] == "conflict" else "[yellow]Related[/yellow]"
            out.print(f"{what} {h['memory_id']}: {plain(h['content'][:120])}\n  {plain(describe_relation(h))}")
