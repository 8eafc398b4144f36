"""`memcli distill`: show the distill plan; `--apply` it (tagged first); `--undo [TAG]`; `--tags` (cron-able)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import typer

from memcli.cli.context import usage_error, use_json
from memcli.cli.output import age, emit, esc, out, plain
from memcli.errors import MemcliError

FAULT_ENV = "MEMCLI_DISTILL_FAULT"  # tests: crash at "after-tag" or "after-commit" of an apply


def archive_path(home: Path) -> Path:
    """Where archived (expired) memories are also exported: <home>/archive/expired-<UTC date>.jsonl."""
    return home / "archive" / f"expired-{datetime.now(timezone.utc):%Y-%m-%d}.jsonl"


def register(app: typer.Typer) -> None:
    @app.command("distill")
    def distill(
        ctx: typer.Context,
        tag: Optional[str] = typer.Argument(None, metavar="[TAG]", help="With --undo: the distill tag to restore "
                                            "(default: the latest)."),
        apply: bool = typer.Option(False, "--apply", help="Apply the plan (the store's version is tagged first)."),
        undo: bool = typer.Option(False, "--undo", help="Restore the store as it was before a distill."),
        tags: bool = typer.Option(False, "--tags", help="List the distill tags (what --undo can restore)."),
        llm: Optional[bool] = typer.Option(None, "--llm/--no-llm", help="Condense each merged cluster with the "
                                           "configured LLM (default: the config's distill.llm, off)."),
        threshold: Optional[float] = typer.Option(None, "--threshold", help="Calibrated similarity from which "
                                                  "memories merge (default 0.90: a paraphrase)."),
        full: bool = typer.Option(False, "--full", help="Compare every pair of memories, not only pairs with one "
                                  "written or changed since the last run."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Only this namespace "
                                                "(default: every namespace)."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Distill the memory: archive expired memories, merge near-duplicates (union of tags, highest
        importance, the others kept as superseded), promote to global what several agents hold or what is
        important, then compact. Without --apply it only prints the plan.

        Examples: memcli distill  |  memcli distill --apply  |  memcli distill --undo  |  cron: memcli setup --schedule hourly
        """
        st = use_json(ctx, json_)
        if sum([apply, undo, tags]) > 1:
            raise usage_error("give one of --apply, --undo and --tags", "--apply / --undo / --tags")
        if tag is not None and not undo:
            raise usage_error("a TAG is only taken with --undo", "TAG")
        if tags:
            items = st.service().distill_tags()
            emit({"tags": items}, st.json, _tags_table)
            return
        if undo:
            res = st.service().distill_undo(tag)
            emit(res, st.json, lambda d: out.print(
                f"[green]Restored[/green] {esc(d['restored'])}: {d['changed']} memories changed back"
                + (f", {len(d['discarded'])} written since then discarded" if d["discarded"] else "")))
            return
        from memcli.distill import DistillOptions

        config = st.config()
        options = DistillOptions.from_config(config, llm=llm, threshold=threshold, namespace=namespace)
        options.fault = os.environ.get(FAULT_ENV) or None
        options.full = full
        svc = st.service()
        if not apply:
            plan = svc.distill_plan(options)
            emit(plan.to_dict(), st.json, _plan_table)
            return
        path = archive_path(config.home)
        written: list[int] = []

        def archive(mems: list[Any]) -> None:
            # written and synced before anything changes; a failed write changes nothing
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "a", encoding="utf-8") as fh:
                    for m in mems:
                        fh.write(json.dumps(m.record(), ensure_ascii=False) + "\n")
                    fh.flush()
                    os.fsync(fh.fileno())
            except OSError as exc:
                raise MemcliError(f"cannot write the archive {path}: {exc.strerror or exc}; nothing was changed") from None
            written.append(len(mems))

        res = svc.distill_apply(options, archive=archive)
        res["archive"] = str(path) if written else None
        emit(res, st.json, _applied)


def _plan_table(data: dict[str, Any]) -> None:
    from rich.table import Table

    from memcli.models import short_id

    plan, counts = data["plan"], data["counts"]
    if not (plan["archive"] or plan["merge"] or plan["promote"]):
        out.print(f"[green]Nothing to distill[/green] ({counts['scanned']} active memories).")
        return
    mems = plan["memories"]

    def text(mid: str) -> Any:
        return plain(mems.get(mid, {}).get("content", ""))

    t = Table(title="distill plan (nothing changed; --apply applies it)", header_style="bold", show_lines=True)
    t.add_column("action", style="bold")
    t.add_column("memory", style="cyan", no_wrap=True)
    t.add_column("content", overflow="fold", ratio=1)
    t.add_column("detail", overflow="fold")
    for mid in plan["archive"]:
        t.add_row("archive", short_id(mid), text(mid), f"expired ({age(mems.get(mid, {}).get('created_at'))} old)")
    for step in plan["merge"]:
        merged = ", ".join(short_id(i) for i in step["merge"])
        detail = (f"absorbs {len(step['merge'])}: {merged}; similarity ≥ {step['similarity']:.2f}; "
                  f"tags {', '.join(step['tags']) or '—'}; importance {step['importance']:g}"
                  + ("; LLM condensation" if step["condense"] else ""))
        t.add_row("merge", short_id(step["keep"]), plain(step["content"][:300]), plain(detail))
    for mid in plan["promote"]:
        t.add_row("promote", short_id(mid), text(mid),
                  plain(f"{mems.get(mid, {}).get('scope', '')} → global: {plan['reasons'].get(mid, '')}"))
    out.print(t)
    out.print(f"{counts['archive']} to archive, {counts['merge']} merges ({counts['supersede']} superseded), "
              f"{counts['promote']} to promote, of {counts['scanned']} active memories.")


def _applied(d: dict[str, Any]) -> None:
    c = d["counts"]
    if d["tag"] is None:
        out.print(f"[green]Nothing to distill[/green] ({c['scanned']} active memories).")
        return
    out.print(f"[green]Distilled[/green]: {c['archive']} archived, {c['merge']} merges ({c['supersede']} "
              f"superseded), {c['promote']} promoted" + (f", {d['condensed']} condensed" if d.get("condensed") else "")
              + f". Undo with: memcli distill --undo {esc(d['tag'])}")
    if d.get("archive"):
        out.print(f"Archived memories also exported to {esc(d['archive'])}")


def _tags_table(data: dict[str, Any]) -> None:
    from rich.table import Table

    from memcli.cli.output import fmt_time

    if not data["tags"]:
        out.print("[dim]No distill tags yet.[/dim]")
        return
    t = Table(header_style="bold")
    t.add_column("tag", style="cyan")
    t.add_column("version", justify="right")
    t.add_column("created", style="dim")
    for it in data["tags"]:
        t.add_row(it["tag"], str(it["version"]), fmt_time(it["created_at"]))
    out.print(t)
