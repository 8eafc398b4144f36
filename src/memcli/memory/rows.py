"""How a memory is stored: the table's columns and schema, and a Memory to and from a row."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memcli.models import Memory
from memcli.textnorm import search_text

COLUMNS = ["id", "content", "namespace", "project", "scope", "tags", "importance", "key", "metadata",
           "source", "created_at", "updated_at", "expires_at", "version", "content_hash", "thread", "context",
           "status", "merged_from", "superseded_by", "outdated_by", "updates"]
# Added by memcli distill (issue 12), and the update links (issue 28: outdated_by, the later memory that changed
# this fact; updates, a JSON list of the ids this one made outdated). Nullable, NULL meaning active and current:
# an older store gains them on open with no data rewritten, and a writer that does not know them (an older
# memcli) still writes valid rows.
STATUS_COLUMNS = ("status", "merged_from", "superseded_by", "outdated_by", "updates")


def memory_schema(dim: int) -> Any:
    import pyarrow as pa

    return pa.schema([
        pa.field("id", pa.string(), nullable=False),
        pa.field("content", pa.string(), nullable=False),
        pa.field("search_text", pa.string()),
        pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
        # the embedding of "previous memory of the thread + this one" (= vector when there is no thread):
        # conversation turns are often only meaningful with the turn before them
        pa.field("context_vector", pa.list_(pa.float32(), dim), nullable=False),
        pa.field("namespace", pa.string(), nullable=False),
        pa.field("project", pa.string()),
        pa.field("scope", pa.string(), nullable=False),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("importance", pa.float64()),
        pa.field("key", pa.string()),
        pa.field("metadata", pa.string()),
        pa.field("source", pa.string()),
        pa.field("created_at", pa.int64(), nullable=False),
        pa.field("updated_at", pa.int64(), nullable=False),
        pa.field("expires_at", pa.int64()),
        pa.field("version", pa.int64(), nullable=False),
        pa.field("content_hash", pa.string()),
        pa.field("thread", pa.string()),
        pa.field("context", pa.string()),
        *status_fields(),
    ])


def status_fields() -> list[Any]:
    """The lifecycle columns: status, merged_from (a JSON list of ids), superseded_by, outdated_by, updates (a
    JSON list of ids)."""
    import pyarrow as pa

    return [pa.field(name, pa.string()) for name in STATUS_COLUMNS]


def row_to_memory(row: dict[str, Any], *, with_vector: bool = False) -> Memory:
    meta = row.get("metadata")
    try:
        # NaN/Infinity that an older memcli let in read as null: JSON answers cannot carry them
        metadata = json.loads(meta, parse_constant=lambda _: None) if meta else {}
    except json.JSONDecodeError:
        metadata = {}
    vec = row.get("vector") if with_vector else None
    cvec = row.get("context_vector") if with_vector else None
    try:
        context = json.loads(row["context"]) if row.get("context") else []
    except json.JSONDecodeError:
        context = []
    return Memory(
        id=row["id"], content=row.get("content", ""), namespace=row.get("namespace", ""),
        project=row.get("project"), scope=row.get("scope", ""), tags=list(row.get("tags") or []), importance=float(row.get("importance") or 0.0),
        key=row.get("key"), metadata=metadata, source=row.get("source") or "cli",
        created_at=int(row["created_at"]), updated_at=int(row.get("updated_at") or row["created_at"]),
        expires_at=row.get("expires_at"), version=int(row.get("version") or 1), content_hash=row.get("content_hash") or "", thread=row.get("thread"),
        context=context, vector=[float(x) for x in vec] if vec is not None else None,
        context_vector=[float(x) for x in cvec] if cvec is not None else None,
        status=row.get("status") or "active", merged_from=_json_list(row.get("merged_from")),
        superseded_by=row.get("superseded_by"), outdated_by=row.get("outdated_by"),
        updates=_json_list(row.get("updates")),
    )


def _json_list(value: str | None) -> list[str]:
    try:
        out = json.loads(value) if value else []
    except json.JSONDecodeError:
        return []
    return [str(x) for x in out] if isinstance(out, list) else []


def row_search_text(content: str, context: Sequence[str]) -> str:
    """What the keyword index sees: the thread's previous memories, then this one (twice, so it outweighs
    its context)."""
    if not context:
        return search_text(content)
    return search_text("\n".join([*context, content, content]))


def memory_to_row(m: Memory, vector: Sequence[float], context_vector: Sequence[float] | None = None) -> dict[str, Any]:
    """The stored row for a memory, its vector and its context vector (default: the same vector)."""
    return {
        "id": m.id, "content": m.content, "search_text": row_search_text(m.content, m.context),
        "vector": list(vector), "context_vector": list(context_vector if context_vector is not None else vector),
        "namespace": m.namespace, "project": m.project, "scope": m.scope, "tags": list(m.tags),
        "importance": float(m.importance), "key": m.key,
        "metadata": json.dumps(m.metadata, ensure_ascii=False) if m.metadata else None,
        "source": m.source, "created_at": m.created_at, "updated_at": m.updated_at, "expires_at": m.expires_at,
        "version": m.version, "content_hash": m.content_hash, "thread": m.thread,
        "context": json.dumps(m.context, ensure_ascii=False) if m.context else None,
        "status": m.status, "merged_from": json.dumps(m.merged_from) if m.merged_from else None,
        "superseded_by": m.superseded_by, "outdated_by": m.outdated_by,
        "updates": json.dumps(m.updates) if m.updates else None,
    }
