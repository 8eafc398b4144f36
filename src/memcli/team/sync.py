"""Moving memories between a personal store and a team space (``memcli sync push|pull``), and the server's
side of whole-record export/import (``GET /api/export``, ``POST /api/import``).

Idempotent both ways: a record whose id is already stored is skipped (``import_records``), and so is one
whose content is already in the target namespace under another id (``skip_same_content``: the same fact
pushed from two laptops is stored once). Vectors are not sent: the receiving side embeds with its own model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memcli.memory.reader import quote
from memcli.models import content_hash
from memcli.redact import redact

if TYPE_CHECKING:
    from memcli.memory.service import MemoryService
    from memcli.team.remote import RemoteService

PUSH_BATCH = 200
Progress = Callable[[int, int], None]


def export_records(svc: "MemoryService", *, namespace: str | None = None, scope: str | None = None,
                   tags: Sequence[str] | None = None, include_archived: bool = False) -> dict[str, Any]:
    """Every matching memory as an export record (no vectors), with the store's embedder identity."""
    mems = svc.export(namespace=namespace, scope=scope, tags=tags, include_archived=include_archived)
    return {"embedder": svc.store.stored_identity, "records": [m.record() for m in mems]}


def _target_ns(svc: "MemoryService", rec: dict[str, Any], namespace: str | None) -> str:
    return svc._ns(namespace or rec.get("namespace") or svc.namespace)


def import_new(svc: "MemoryService", records: list[Any], *, vectors_identity: dict[str, Any] | None = None,
               skip_same_content: bool = False, namespace: str | None = None,
               keep_secrets: bool = False) -> dict[str, int]:
    """Import records (idempotent by id); with ``skip_same_content`` also skip a record whose content the
    target namespace already holds (as it would be stored: redacted unless ``keep_secrets``). ``namespace``
    puts every record there (a space's service ignores it: its own namespace wins)."""
    recs = [dict(r, namespace=_target_ns(svc, r, namespace)) if isinstance(r, dict) else r for r in records]
    dropped = 0
    if skip_same_content:
        def stored_hash(text: str) -> str:
            return content_hash(text.strip() if keep_secrets else redact(text.strip()))

        keyed = [(r, stored_hash(r["content"])) for r in recs
                 if isinstance(r, dict) and isinstance(r.get("content"), str)]
        known: set[tuple[str, str]] = set()
        for ns in {r["namespace"] for r, _ in keyed}:
            hashes = sorted({h for r, h in keyed if r["namespace"] == ns})
            for start in range(0, len(hashes), 500):
                chunk = ", ".join(quote(h) for h in hashes[start:start + 500])
                where = f"namespace = {quote(ns)} AND content_hash IN ({chunk})"
                known |= {(ns, row["content_hash"]) for row in svc.store.column_values(where, ["content_hash"])}
        seen: set[tuple[str, str]] = set()
        kept = []
        for r in recs:
            if isinstance(r, dict) and isinstance(r.get("content"), str):
                k = (r["namespace"], stored_hash(r["content"]))
                if k in known or k in seen:
                    dropped += 1
                    continue
                seen.add(k)
            kept.append(r)
        recs = kept
    res = svc.import_records(recs, vectors_identity=vectors_identity, keep_secrets=keep_secrets) if recs else {
        "read": 0, "added": 0, "skipped": 0}
    return {"read": len(records), "added": res["added"], "skipped": res["skipped"] + dropped}


def push(local: "MemoryService", remote: "RemoteService", *, namespace: str | None = None,
         batch: int = PUSH_BATCH, progress: Progress | None = None) -> dict[str, Any]:
    """Copy a local namespace (default: the configured one) into the remote space, in batches."""
    ns = local._ns(namespace)
    recs = [m.record() for m in local.export(namespace=ns)]
    added = skipped = 0
    for start in range(0, len(recs), batch):
        res = remote.import_new(recs[start:start + batch], skip_same_content=True)
        added += res["added"]
        skipped += res["skipped"]
        if progress:
            progress(min(start + batch, len(recs)), len(recs))
    return {"ok": True, "direction": "push", "namespace": ns, "read": len(recs), "added": added,
            "skipped": skipped}


def pull(remote: "RemoteService", local: "MemoryService", *, namespace: str | None = None) -> dict[str, Any]:
    """Copy the remote space into a local namespace (default: the configured one)."""
    ns = local._ns(namespace)
    data = remote.export_records()
    res = import_new(local, data["records"], skip_same_content=True, namespace=ns)
    return {"ok": True, "direction": "pull", "namespace": ns, **res}
