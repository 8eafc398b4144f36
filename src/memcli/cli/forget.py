"""`memcli forget`: delete memories by id (or unique prefix)."""

from __future__ import annotations

from typing import List, Optional

import typer

from memcli.cli.context import use_json, with_namespace
from memcli.cli.output import emit, out


def register(app: typer.Typer) -> None:
    @app.command("forget")
    def forget(
        ctx: typer.Context,
        memory_ids: List[str] = typer.Argument(..., metavar="ID",
                                               help="Ids, or unique parts of them (≥ 4 hex digits)."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="The namespace the memory is in "
                                                "(default: MEMCLI_NAMESPACE, else the config's)."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Forget (delete) memories of your namespace. Every id is checked first: an unknown or ambiguous one
        (or one of another namespace) deletes nothing.

        Example: memcli forget 3f9a1c2e 7b21d0aa
        """
        st = use_json(ctx, json_)
        with_namespace(ctx, namespace)
        ids = st.client().forget(memory_ids)
        emit({"ok": True, "forgotten": ids}, st.json,
             lambda d: out.print(f"[green]Forgot[/green] {len(ids)} memor{'y' if len(ids) == 1 else 'ies'}: "
                                 + ", ".join(d["forgotten"])))
