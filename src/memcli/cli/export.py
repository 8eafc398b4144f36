"""`memcli export`: every memory (or a filtered part) as JSONL, JSON or Markdown."""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, List, Optional, TextIO

import typer

from memcli.cli.context import use_json
from memcli.cli.output import emit, esc, out, progress
from memcli.errors import MemcliError, ValidationError

FORMATS = ("jsonl", "json", "md")
EXPORT_VERSION = 1


def register(app: typer.Typer) -> None:
    @app.command("export")
    def export(
        ctx: typer.Context,
        format_: str = typer.Option("jsonl", "--format", "-f", help="jsonl (full fidelity), json or md."),
        output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to this file (default: stdout)."),
        with_vectors: bool = typer.Option(False, "--with-vectors", help="Include the vectors (jsonl/json)."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Only this namespace (default: all)."),
        scope: Optional[str] = typer.Option(None, "--scope", help="Only this scope ('global' or 'agent:NAME')."),
        tag: Optional[List[str]] = typer.Option(None, "--tag", "-t", help="Only memories with this tag (repeatable: all)."),
        include_archived: bool = typer.Option(False, "--include-archived", help="Also memories distill superseded "
                                              "or archived (a full backup)."),
        json_: bool = typer.Option(False, "--json", help="Print the summary as JSON (with -o)."),
    ) -> None:
        """Export memories of every namespace and scope (unless filtered), expired ones included.

        Example: memcli export --format jsonl -o memories.jsonl
        """
        st = use_json(ctx, json_)
        fmt = format_.lower()
        if fmt not in FORMATS:
            raise typer.BadParameter(f"unknown format {format_!r}: use jsonl, json or md", param_hint="--format")
        svc = st.service()
        # streamed (flat memory at a million memories); its first memory is read before any output: the core
        # validates the filters lazily, and a bad filter must fail before anything is written
        stream = iter(svc.export(namespace=namespace, scope=scope, tags=tag,
                                 with_vectors=with_vectors and fmt != "md", include_archived=include_archived))
        first = next(stream, None)
        head = [] if first is None else [first]
        header = {"memcli_export": EXPORT_VERSION, "embedder": svc.store.stored_identity,
                  "exported_at": _now_ms()}
        if output is None:
            with progress("Exporting") as bar:
                n = write_export(sys.stdout, fmt, header, _counted(itertools.chain(head, stream), bar, svc),
                                 with_vectors=with_vectors)
            sys.stdout.flush()
            return
        path = output.expanduser()
        if path.is_dir():
            raise ValidationError(f"{path} is a directory: give a file name, like {path / 'memories.jsonl'}")
        if not path.parent.is_dir():
            raise ValidationError(f"cannot write {path}: the directory {path.parent} does not exist")
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8", newline="\n") as fh, progress("Exporting") as bar:
                n = write_export(fh, fmt, header, _counted(itertools.chain(head, stream), bar, svc),
                                 with_vectors=with_vectors)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)  # a half-written export never replaces a good one
        except OSError as exc:
            raise MemcliError(f"cannot write {path}: {exc.strerror or exc}") from None
        finally:
            tmp.unlink(missing_ok=True)
        emit({"ok": True, "exported": n, "format": fmt, "path": str(path)}, st.json,
             lambda d: out.print(f"[green]Exported[/green] {d['exported']} memories to {esc(d['path'])}"))


def _counted(mems: Iterator[Any], bar: Any, svc: Any) -> Iterator[Any]:
    """The memories as they are written, told to the progress bar (when there is one) every 500."""
    if bar is None:
        yield from mems
        return
    count = getattr(svc.store, "count", None)  # a team server's client knows no count: the bar counts up
    total = count() if callable(count) else 0
    n = 0
    for m in mems:
        yield m
        n += 1
        if n % 500 == 0:
            bar(n, max(total, n))
    bar(n, max(total, n))


def _now_ms() -> int:
    from memcli.models import now_ms

    return now_ms()


def write_export(fh: TextIO, fmt: str, header: dict[str, Any], mems: Iterable[Any], *,
                 with_vectors: bool = False) -> int:
    """Write memories in ``fmt`` to ``fh``; returns how many were written."""
    if fmt == "jsonl":
        fh.write(_dumps(header) + "\n")
        n = 0
        for m in mems:
            fh.write(_dumps(m.record(with_vector=with_vectors)) + "\n")
            n += 1
        return n
    if fmt == "json":  # written memory by memory (the document as json.dumps(..., indent=1) lays it out)
        head = json.dumps({**header, "memories": []}, ensure_ascii=False, indent=1)
        fh.write(head[:head.rindex("[") + 1])
        n = 0
        for m in mems:
            rec = json.dumps(m.record(with_vector=with_vectors), ensure_ascii=False, indent=1)
            fh.write(("," if n else "") + "\n" + "\n".join("  " + line for line in rec.splitlines()))
            n += 1
        fh.write(("\n ]" if n else "]") + "\n}\n")
        return n
    mem_list = list(mems)
    for line in _markdown(header, mem_list):
        fh.write(line + "\n")
    return len(mem_list)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _utc(ms: int | None) -> str:
    if not ms:
        return ""
    return datetime.fromtimestamp(int(ms) / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _markdown(header: dict[str, Any], mems: list[Any]) -> Iterator[str]:
    """Readable Markdown: one section per namespace, one entry per memory, newest first."""
    from memcli.models import short_id

    emb = header.get("embedder") or {}
    yield "# memcli export"
    yield ""
    yield (f"{len(mems)} memories · exported {_utc(header['exported_at'])} · embedder "
           f"{emb.get('provider')}:{emb.get('model')} ({emb.get('dim')} dims)")
    by_ns: dict[str, list[Any]] = {}
    for m in mems:
        by_ns.setdefault(m.namespace, []).append(m)
    for ns in sorted(by_ns):
        items = sorted(by_ns[ns], key=lambda m: (m.created_at, m.id), reverse=True)
        yield ""
        yield f"## Namespace `{ns}` ({len(items)})"
        for m in items:
            yield ""
            title = f"### {short_id(m.id)} · {m.scope}"
            if m.tags:
                title += " · " + ", ".join(f"`{t}`" for t in m.tags)
            yield title
            yield ""
            facts = [f"created {_utc(m.created_at)}"]
            if m.updated_at != m.created_at:
                facts.append(f"updated {_utc(m.updated_at)}")
            if m.project:
                facts.append(f"project {m.project}")
            facts.append(f"importance {m.importance:g}")
            if m.key:
                facts.append(f"key `{m.key}`")
            if m.expires_at:
                facts.append(f"expires {_utc(m.expires_at)}")
            facts.append(f"source {m.source}")
            facts.append(f"id `{m.id}`")
            yield "*" + " · ".join(facts) + "*"
            yield ""
            yield m.content
            if m.metadata:
                yield ""
                yield "metadata: `" + json.dumps(m.metadata, ensure_ascii=False) + "`"
