"""`memcli check-duplicate`: is this text already remembered?"""

from __future__ import annotations

from typing import Optional

import typer

from memcli.cli.context import read_text_arg, use_json, with_namespace
from memcli.cli.output import emit, memories_table, out


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
    if d["is_duplicate"]:
        out.print(f"[yellow]Duplicate:[/yellow] {len(d['similar'])} similar memor"
                  f"{'y' if len(d['similar']) == 1 else 'ies'}")
        memories_table(d["similar"], score=True)
    else:
        out.print("[green]No duplicate.[/green]")
