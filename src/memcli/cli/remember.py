"""`memcli remember`: store a memory."""

from __future__ import annotations

from typing import List, Optional

import typer

from memcli.cli.context import read_text_arg, use_json, with_namespace
from memcli.cli.output import describe_relation, emit, out, plain


def register(app: typer.Typer) -> None:
    @app.command("remember")
    def remember(
        ctx: typer.Context,
        text: str = typer.Argument(..., help="What to remember, or - to read it from stdin."),
        tag: Optional[List[str]] = typer.Option(None, "--tag", "-t", help="A tag (repeatable)."),
        agent: Optional[str] = typer.Option(None, "--agent", help="Agent scope: stored as agent:NAME."),
        scope: Optional[str] = typer.Option(None, "--scope", help="'global' or 'agent:NAME'."),
        importance: float = typer.Option(0.5, "--importance", "-i", help="0.0 .. 1.0"),
        key: Optional[str] = typer.Option(None, "--key", help="Upsert handle: the same key updates that memory."),
        ttl: Optional[str] = typer.Option(None, "--ttl", help="Expire after a duration: 30m, 12h, 7d, 2w."),
        metadata: Optional[str] = typer.Option(None, "--metadata", help="A JSON object."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Namespace (default from config)."),
        keep_secrets: bool = typer.Option(
            False, "--keep-secrets", help="Store the text exactly as given (by default API keys, tokens, "
            "passwords and private keys are replaced by [REDACTED:kind]); noted in the audit log."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Remember a fact, decision or lesson.

        Example: memcli remember "the billing service uses PostgreSQL 16" --tag decision
        """
        st = use_json(ctx, json_)
        with_namespace(ctx, namespace)
        content = read_text_arg(text)
        res = st.client().remember(content, tags=tag, agent=agent, scope=scope, importance=importance, key=key,
                                   ttl=ttl, metadata=metadata, source="cli",
                                   **({"keep_secrets": True} if keep_secrets else {}))
        emit(res.item(), st.json, _human)


def _human(d: dict) -> None:
    out.print(f"[green]{'Remembered' if d['created'] else ('Updated' if d['updated'] else 'Already remembered')}"
              f"[/green] {d['memory_id']}"
              + (f"\n[yellow]The same fact as:[/yellow] {', '.join(d['duplicate_of'])}" if d["duplicate_of"] else ""))
    for r in d.get("related") or []:
        what = "[red]Conflicts with[/red]" if r.get("relation") == "conflict" else "[yellow]Related to[/yellow]"
        out.print(f"{what} {r['memory_id']}: {plain(describe_relation(r))}")
