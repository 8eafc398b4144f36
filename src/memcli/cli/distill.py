"""`memcli distill`: show the distill plan; `--apply` it (tagged first); `--undo [TAG]`; `--tags` (cron-able)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, List, Optional

import typer

from memcli.cli.context import usage_error, use_json
from memcli.cli.output import age, emit, esc, out, plain
from memcli.distill.service import DistillService
from memcli.errors import MemcliError

FAULT_ENV = "MEMCLI_DISTILL_FAULT"  # tests: crash at "after-tag" or "after-commit" of an apply


def archive_path(home: Path) -> Path:
    """Where archived (expired) memories are also exported: <home>/archive/expired-<UTC date>.jsonl."""
    return home / "archive" / f"expired-{datetime.now(timezone.utc):%Y-%m-%d}.jsonl"


def register(app: typer.Typer) -> None:
    @app.command("distill")
    def distill(
        ctx: typer.Context,
        tag: Optional[List[str]] = typer.Argument(None, metavar="[TAG | A B]", help="With --undo: the distill "
                                                  "to undo (default: the latest). With --explain: two memory ids."),
        apply: bool = typer.Option(False, "--apply", help="Apply the plan (the store's version is tagged first)."),
        undo: bool = typer.Option(False, "--undo", help="Reverse what a distill changed (later writes stay)."),
        dry_run: bool = typer.Option(False, "--dry-run", help="With --undo: only show what it would change."),
        explain: bool = typer.Option(False, "--explain", help="Say why two memories (A B) would or would not "
                                     "merge."),
        tags: bool = typer.Option(False, "--tags", help="List the distill tags (what --undo can restore)."),
        llm: Optional[bool] = typer.Option(None, "--llm/--no-llm", help="Condense each merged cluster with the "
                                           "configured LLM (default: the config's distill.llm, off)."),
        threshold: Optional[float] = typer.Option(None, "--threshold", help="Calibrated similarity from which two "
                                                  "memories are compared as candidates (default 0.80); the "
                                                  "same-fact test decides whether they merge."),
        full: bool = typer.Option(False, "--full", help="Compare every pair of memories, not only pairs with one "
                                  "written or changed since the last run."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Only this namespace "
                                                "(default: every namespace)."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Distill the memory: archive expired memories, merge memories that state the same fact (union of
        tags, highest importance, the others kept as superseded), list conflicts (never merged), promote to
        global what several agents hold or what is important, then compact. Without --apply it only prints
        the plan.

        Examples: memcli distill  |  memcli distill --apply  |  memcli distill --undo --dry-run  |
        memcli distill --explain 3f9a1c2e 8b7d4e10  |  cron: memcli setup --schedule hourly
        """
        st = use_json(ctx, json_)
        args = list(tag or [])
        if sum([apply, undo, tags, explain]) > 1:
            raise usage_error("give one of --apply, --undo, --tags and --explain", "--apply / --undo / --tags")
        if explain and len(args) != 2:
            raise usage_error("--explain takes two memory ids: memcli distill --explain A B", "A B")
        if args and not (undo or explain):
            raise usage_error("a TAG is only taken with --undo (two ids with --explain)", "TAG")
        if undo and len(args) > 1:
            raise usage_error("--undo takes one distill tag", "TAG")
        if dry_run and not undo:
            raise usage_error("--dry-run goes with --undo", "--dry-run")
        if tags:
            items = DistillService(st.service()).tags()
            emit({"tags": items}, st.json, _tags_table)
            return
        if undo:
            res = DistillService(st.service()).undo(args[0] if args else None, dry_run=dry_run)
            emit(res, st.json, _undone)
            return
        from memcli.distill.distiller import DistillOptions

        config = st.config()
        options = DistillOptions.from_config(config, llm=llm, threshold=threshold, namespace=namespace)
        if explain:
            emit(DistillService(st.service()).explain(args[0], args[1], options), st.json,
                 lambda d: out.print(plain(d["explanation"]) if d["would_merge"] is False else
                                     f"[green]{esc(d['explanation'])}[/green]"))
            return
        options.fault = os.environ.get(FAULT_ENV) or None
        options.full = full
        svc = st.service()
        if not apply:
            plan = DistillService(svc).plan(options)
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

        res = DistillService(svc).apply(options, archive=archive)
        res["archive"] = str(path) if written else None
        emit(res, st.json, _applied)


def _plan_table(data: dict[str, Any]) -> None:
    from rich.table import Table

    from memcli.models import short_id

    plan, counts = data["plan"], data["counts"]
    _conflicts(plan)
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
        detail = (f"keeps it; similarity ≥ {step['similarity']:.2f}; tags {', '.join(step['tags']) or '—'}; "
                  f"importance {step['importance']:g}" + ("; LLM condensation" if step["condense"] else ""))
        t.add_row("merge", short_id(step["keep"]), plain(step["content"][:300]), plain(detail))
        for mid in step["merge"]:
            t.add_row("  ← merged", short_id(mid), text(mid), plain((step.get("why") or {}).get(mid, "the same fact")))
    for mid in plan["promote"]:
        t.add_row("promote", short_id(mid), text(mid),
                  plain(f"{mems.get(mid, {}).get('scope', '')} → global: {plan['reasons'].get(mid, '')}"))
    out.print(t)
    out.print(f"{counts['archive']} to archive, {counts['merge']} merges ({counts['supersede']} superseded), "
              f"{counts['promote']} to promote, {counts.get('conflict', 0)} conflicts (listed, not merged), of "
              f"{counts['scanned']} active memories.")


def _conflicts(plan: dict[str, Any]) -> None:
    """Contradictions the plan found: listed, newest first, with their authors; never merged."""
    from rich.table import Table

    from memcli.cli.output import describe_relation
    from memcli.models import short_id

    if not plan.get("conflicts"):
        return
    mems = plan["memories"]
    t = Table(title="conflicts (the same subject, different values: not merged; resolve them yourself)",
              header_style="bold", show_lines=True)
    t.add_column("memory", style="cyan", no_wrap=True)
    t.add_column("by", style="green")
    t.add_column("content", overflow="fold", ratio=1)
    t.add_column("age", style="dim", justify="right")
    for c in plan["conflicts"]:
        for mid, who in zip(c["ids"], c["authors"]):
            m = mems.get(mid, {})
            t.add_row(short_id(mid), plain(who), plain(m.get("content", "")), age(m.get("created_at")))
        t.add_row("", "", plain("↑ " + describe_relation(c)), "")
    out.print(t)


def _undone(d: dict[str, Any]) -> None:
    from memcli.models import short_id

    verb = "Would change back" if d.get("dry_run") else "Undid"
    out.print(f"[green]{verb}[/green] {esc(d['restored'])}: {d['changed']} memories")
    for c in d.get("changes") or []:
        fields = ", ".join(f"{f}: {plain_value(v[0])} → {plain_value(v[1])}" for f, v in c["changes"].items())
        out.print(f"  {short_id(c['memory_id'])}  {esc(fields)}")
    for k in d.get("kept") or []:
        out.print(f"  [yellow]kept[/yellow] {short_id(k['memory_id'])}: {', '.join(k['fields'])} changed again "
                  f"since (version {k['version']})")
    for mid in d.get("gone") or []:
        out.print(f"  [dim]{short_id(mid)} was forgotten since: left as it is[/dim]")


def plain_value(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "…"


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
