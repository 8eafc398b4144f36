"""`memcli get`: one memory by id (or a unique prefix)."""

from __future__ import annotations

from typing import Optional

import typer

from memcli.cli.context import usage_error, use_json, with_namespace
from memcli.cli.output import emit, memory_detail


def register(app: typer.Typer) -> None:
    @app.command("get")
    def get(
        ctx: typer.Context,
        memory_id: str = typer.Argument(..., metavar="ID", help="The id, or a unique part of it (≥ 4 hex digits)."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="The namespace the memory is in "
                                                "(default: MEMCLI_NAMESPACE, else the config's)."),
        all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A", help="Look in every namespace."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Show one memory in full (of your namespace, unless told another or every one).

        Example: memcli get 3f9a1c2e
        """
        st = use_json(ctx, json_)
        if all_namespaces and namespace is not None:
            raise usage_error("give one of them, not both", "--namespace / --all-namespaces")
        with_namespace(ctx, namespace)
        mem = st.client().get(memory_id, **({"all_namespaces": True} if all_namespaces else {}))
        emit(mem.item(), st.json, memory_detail)
