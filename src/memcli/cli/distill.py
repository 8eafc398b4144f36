"""`memcli distill`: archive expired memories and merge exact duplicates (run it from cron)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import typer

from memcli.cli.context import use_json
from memcli.cli.output import emit, esc, out
from memcli.errors import MemcliError


def archive_path(home: Path) -> Path:
    """Where expired memories go: <home>/archive/expired-<UTC date>.jsonl (appended)."""
    return home / "archive" / f"expired-{datetime.now(timezone.utc):%Y-%m-%d}.jsonl"


def register(app: typer.Typer) -> None:
    @app.command("distill")
    def distill(
        ctx: typer.Context,
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Archive expired memories to <home>/archive/expired-<date>.jsonl, then delete them; merge exact
        duplicates (same namespace, scope and content) into the oldest copy.

        Example: memcli distill   (cron: 0 3 * * * memcli distill)
        """
        st = use_json(ctx, json_)
        path = archive_path(st.config().home)
        archived: list[int] = []

        def archive(mems: list) -> None:
            # written and synced before the core deletes anything; a failed write deletes nothing
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "a", encoding="utf-8") as fh:
                    for m in mems:
                        fh.write(json.dumps(m.record(), ensure_ascii=False) + "\n")
                    fh.flush()
                    os.fsync(fh.fileno())
            except OSError as exc:
                raise MemcliError(f"cannot write the archive {path}: {exc.strerror or exc}; nothing was deleted") from None
            archived.append(len(mems))

        res = st.service().distill(archive=archive)
        data = {"ok": True, **res, "archive": str(path) if archived else None}
        emit(data, st.json, lambda d: out.print(
            f"[green]Distilled[/green]: {d['expired_archived']} expired archived"
            + (f" to {esc(d['archive'])}" if d["archive"] else "") + f", {d['duplicates_merged']} duplicates merged"))
