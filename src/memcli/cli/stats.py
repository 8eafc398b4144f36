"""`memcli stats`: counts by namespace, scope and tag; size, embedder, fragments."""

from __future__ import annotations

import time
from typing import Any

import typer

from memcli.cli.context import use_json
from memcli.cli.output import emit, out, plain


def register(app: typer.Typer) -> None:
    @app.command("stats")
    def stats(
        ctx: typer.Context,
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Show what the store holds: counts by namespace, scope and tag, size, embedder, fragments.

        Example: memcli stats --json
        """
        st = use_json(ctx, json_)
        emit(st.client().stats(), st.json, _human)


def _human(d: dict[str, Any]) -> None:
    from rich.table import Table

    emb = d.get("embedder") or {}
    summary = Table(show_header=False, title="memcli store")
    summary.add_column("key", style="bold")
    summary.add_column("value", overflow="fold")
    summary.add_row("memories", f"{d['total']:,}" + (f" ({d['expired']:,} expired)" if d.get("expired") else ""))
    summary.add_row("store", plain(d.get("store")))
    summary.add_row("size", _size(d.get("size_bytes") or 0))
    summary.add_row("embedder", plain(f"{emb.get('provider')}:{emb.get('model')} ({emb.get('dim')} dims)"))
    summary.add_row("fragments", str(d.get("fragments")))
    summary.add_row("indexes", ", ".join(d.get("indexes") or []) or "none")
    if d.get("maintenance_due"):
        summary.add_row("maintenance due", ", ".join(d["maintenance_due"]) + " (the server does it in the "
                        "background; or `memcli compact`)")
    out.print(summary)
    if d.get("index_status"):
        t = Table(title="indexes", header_style="bold")
        for col, just in (("index", "left"), ("kind", "left"), ("column", "left"), ("rows indexed", "right"),
                          ("rows outside", "right"), ("built", "left")):
            t.add_column(col, justify=just)  # type: ignore[arg-type]
        for ix in d["index_status"]:
            built = ix.get("built_at")
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(built / 1000)) if built else ""
            t.add_row(plain(ix["name"]), plain(ix["kind"]), plain(ix["column"]), f"{ix['indexed_rows']:,}",
                      f"{ix['unindexed_rows']:,}", when)
        out.print(t)
    for title, key in (("namespaces", "namespaces"), ("scopes", "scopes"), ("top tags", "tags")):
        counts = d.get(key) or {}
        if not counts:
            continue
        t = Table(title=title, header_style="bold")
        t.add_column(key.rstrip("s"))
        t.add_column("memories", justify="right")
        for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            t.add_row(plain(name), f"{n:,}")
        out.print(t)


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
