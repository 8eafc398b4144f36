"""`memcli recall`: find the memories most relevant to a query."""

from __future__ import annotations

from typing import List, Optional

import typer

from memcli.cli.context import use_json, with_namespace
from memcli.cli.output import emit, memories_table
from memcli.models import parse_time_ms


def register(app: typer.Typer) -> None:
    @app.command("recall")
    def recall(
        ctx: typer.Context,
        query: str = typer.Argument(..., help="What you are looking for, in any words or language."),
        top_k: int = typer.Option(5, "--top-k", "-k", help="How many memories to return."),
        agent: Optional[str] = typer.Option(None, "--agent", help="Only memories of this agent."),
        scope: Optional[str] = typer.Option(None, "--scope", help="Only this scope ('global' or 'agent:NAME')."),
        tag: Optional[List[str]] = typer.Option(None, "--tag", "-t", help="Only memories with this tag (repeatable: all)."),
        since: Optional[str] = typer.Option(None, "--since", help="Only newer than: 2d, 12h, or an ISO date."),
        until: Optional[str] = typer.Option(None, "--until", help="Only older than: 2d, or an ISO date."),
        as_of: Optional[str] = typer.Option(None, "--as-of", help="What was true then (an ISO date, or 30d ago): "
                                            "memories written by then, outdated only by ones written by then."),
        project: Optional[str] = typer.Option(None, "--project", help="Only memories written in this project."),
        include_expired: bool = typer.Option(False, "--include-expired", help="Also expired memories."),
        include_archived: bool = typer.Option(False, "--include-archived", help="Also memories distill superseded or archived."),
        mode: str = typer.Option("hybrid", "--mode", help="hybrid, vector or text."),
        min_score: float = typer.Option(0.0, "--min-score", help="Drop memories scoring below this (0..1)."),
        explain: bool = typer.Option(False, "--explain", help="Show each signal behind the score."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Namespace (default from config)."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Recall memories by meaning and keyword.

        Example: memcli recall "which database do we use" --top-k 3
        """
        st = use_json(ctx, json_)
        with_namespace(ctx, namespace)
        hits = st.client().recall(
            query, top_k=top_k, agent=agent, scope=scope, tags=tag,
            since=parse_time_ms(since) if since else None, until=parse_time_ms(until) if until else None,
            project=project, project_only=project is not None, include_expired=include_expired, explain=explain,
            mode=mode, min_score=min_score, include_archived=include_archived,
            **({"as_of": parse_time_ms(as_of)} if as_of else {}))
        items = [h.item() for h in hits]
        emit(items, st.json, lambda d: _human(d, explain))


def _human(items: list[dict], explain: bool) -> None:
    memories_table(items, score=True)
    if explain:
        explain_table(items)


def _signal(value: object) -> str:
    """One signal's value as a cell: numbers to 3 places, lists joined, nothing as a dash."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "—"
    return str(value)


def explain_table(items: list[dict]) -> None:
    """The signals behind each score (``--explain``): one row per signal, one column per hit (its short id),
    whatever signals the search reports (a raw dict printed in a terminal helped no one)."""
    from rich.table import Table

    from memcli.cli.output import esc, out
    from memcli.models import short_id

    explained = [it for it in items if isinstance(it.get("explain"), dict)]
    if not explained:
        return
    signals: list[str] = []
    for it in explained:
        signals += [k for k in it["explain"] if k not in signals]
    t = Table(title="why these scores (--explain)", header_style="bold")
    t.add_column("signal", style="dim")
    for it in explained:
        t.add_column(short_id(it["memory_id"]), justify="right")
    t.add_row("score", *(f"{it.get('score', 0):.3f}" for it in explained), style="bold")
    for name in signals:
        t.add_row(esc(name.replace("_", " ")), *(esc(_signal(it["explain"].get(name))) for it in explained))
    out.print(t)
