"""The audit log: who changed which memory, how, and when (``memcli history ID``).

An append-only table (``memcli_audit``) in the memories' database: one event per created, updated, forgotten
(or, later, merged/superseded/promoted) memory, with the actor (an agent scope or a face), the memory's version
after the change and the changed fields as ``{field: [old, new]}``. Events of one call are written in one
append; the table is compacted with the store. Reading and writing go through LanceDB like the store.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memcli.errors import AmbiguousIdError, MemcliError
from memcli.memory.reader import id_like, quote
from memcli.models import new_id, now_ms

log = logging.getLogger("memcli.memory.audit")

AUDIT_TABLE = "memcli_audit"
MAX_VALUE_CHARS = 2_000  # an old/new content longer than this is kept clipped: the log is not a backup


@dataclass
class AuditEvent:
    """One change of one memory."""

    memory_id: str
    action: str  # remember | update | forget | upsert | merge | supersede | promote | archive | restore | import
    actor: str
    namespace: str = ""
    version: int = 0
    changes: dict[str, list[Any]] = field(default_factory=dict)
    note: str = ""
    at: int = 0
    event_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"event_id": self.event_id, "memory_id": self.memory_id, "action": self.action, "actor": self.actor,
                "namespace": self.namespace, "version": self.version, "changes": self.changes, "note": self.note,
                "at": self.at}


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([
        pa.field("event_id", pa.string(), nullable=False), pa.field("memory_id", pa.string(), nullable=False),
        pa.field("action", pa.string(), nullable=False), pa.field("actor", pa.string()),
        pa.field("namespace", pa.string()), pa.field("version", pa.int64()), pa.field("changes", pa.string()),
        pa.field("note", pa.string()), pa.field("at", pa.int64(), nullable=False),
    ])


def clip(v: Any) -> Any:
    """A value as the log keeps it (long text clipped)."""
    return v[:MAX_VALUE_CHARS] + "…" if isinstance(v, str) and len(v) > MAX_VALUE_CHARS else v


def diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[Any]]:
    """``{field: [old, new]}`` for the fields whose value changed (vectors and bookkeeping left out)."""
    skip = {"vector", "context_vector", "search_text", "updated_at", "version", "content_hash"}
    return {k: [clip(before.get(k)), clip(v)] for k, v in after.items() if k not in skip and before.get(k) != v}


class AuditLog:
    """The audit table of one LanceDB database."""

    def __init__(self, db: Any, commit: Callable[..., Any] | None = None,
                 open_or_create: Callable[[str, Callable[[], Any]], Any] | None = None) -> None:
        self.db = db
        self._table: Any = None
        # the store's creation path: on object storage one creator at a time (replicas race for it)
        self._open_or_create = open_or_create
        # the store's commit wrapper: retries while other writers (other replicas) keep committing first
        self._commit = commit

    def table(self) -> Any:
        if self._table is None and self._open_or_create is not None:
            self._table = self._open_or_create(AUDIT_TABLE, lambda: self.db.create_table(AUDIT_TABLE,
                                                                                           schema=_schema()))
        if self._table is None:
            try:
                self._table = self.db.open_table(AUDIT_TABLE)
            except (ValueError, FileNotFoundError):
                try:
                    self._table = self.db.create_table(AUDIT_TABLE, schema=_schema())
                except (ValueError, OSError):  # another process created it first
                    self._table = self.db.open_table(AUDIT_TABLE)
        return self._table

    def record(self, events: list[AuditEvent]) -> None:
        """Append events. The change itself has happened: a failure here is logged, never raised."""
        if not events:
            return
        import pyarrow as pa

        now = now_ms()
        rows = [{"event_id": e.event_id or new_id(), "memory_id": e.memory_id, "action": e.action, "actor": e.actor,
                 "namespace": e.namespace, "version": int(e.version),
                 "changes": json.dumps(e.changes, ensure_ascii=False, default=str) if e.changes else None,
                 "note": e.note or None, "at": e.at or now} for e in events]
        data = pa.Table.from_pylist(rows, schema=_schema())
        try:
            table = self.table()
            if self._commit is None:
                table.add(data)
            else:
                ids = "event_id IN (" + ", ".join(quote(r["event_id"]) for r in rows) + ")"
                self._commit(lambda: table.add(data), "writing the audit log",
                             landed=lambda: table.count_rows(ids) == len(rows))
        except (OSError, RuntimeError, ValueError, MemcliError) as exc:
            log.warning("could not write %d audit event(s): %s", len(rows), exc)

    def history(self, memory_id: str, limit: int = 1000) -> list[AuditEvent]:
        """Events of one memory, oldest first."""
        try:
            rows = (self.table().to_lance().to_table(filter=f"memory_id = {quote(memory_id)}", limit=limit)
                    .to_pylist())
        except (OSError, RuntimeError, ValueError) as exc:
            log.warning("could not read the audit log: %s", exc)
            return []
        out = [AuditEvent(memory_id=r["memory_id"], action=r["action"], actor=r.get("actor") or "",
                          namespace=r.get("namespace") or "", version=int(r.get("version") or 0),
                          changes=json.loads(r["changes"]) if r.get("changes") else {}, note=r.get("note") or "",
                          at=int(r["at"]), event_id=r["event_id"]) for r in rows]
        out.sort(key=lambda e: (e.at, e.event_id))
        return out

    def resolve(self, ref: str, namespace: str | None) -> str | None:
        """The full id of a memory the log knows (a forgotten one too) from the id or a part of it, as
        :meth:`memcli.memory.store.MemoryStore.resolve_id` accepts it; None when no event names one. Only the
        events of ``namespace`` count (None: every namespace)."""
        compact = ref.strip().lower().replace("-", "")
        if not 4 <= len(compact) <= 32 or not set(compact) <= set("0123456789abcdef"):
            return None
        where = id_like(compact, "memory_id") + (f" AND namespace = {quote(namespace)}" if namespace is not None else "")
        try:
            rows = self.table().to_lance().to_table(filter=where, columns=["memory_id"]).to_pylist()
        except (OSError, RuntimeError, ValueError) as exc:
            log.warning("could not read the audit log: %s", exc)
            return None
        ids = sorted({r["memory_id"] for r in rows})
        if len(ids) > 1:
            raise AmbiguousIdError(f"id {ref!r} matches {len(ids)} memories ({', '.join(i[:13] for i in ids[:5])}…): "
                                   "give more characters")
        return ids[0] if ids else None

    def compact(self) -> None:
        try:
            if self._table is None:
                self._table = self.db.open_table(AUDIT_TABLE)
        except (ValueError, FileNotFoundError):  # nothing recorded yet
            return
        try:
            self._table.optimize()
        except (OSError, RuntimeError, ValueError) as exc:
            log.warning("compacting the audit log failed: %s", exc)
