"""What a write looks up before it writes: the store's queries behind ``remember``'s promises.

``remember`` is idempotent (the same content in one namespace and scope is one memory), a ``key`` names one
memory, and a threaded memory is indexed with its thread's previous memories as context. These are the look-ups
that keep those promises; :meth:`memcli.memory.service.MemoryService.remember_many` makes them before it embeds
and again under the store's write lock (:mod:`memcli.memory.writelock`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memcli.errors import StoreError
from memcli.memory.reader import quote

if TYPE_CHECKING:
    from memcli.memory.store import MemoryStore
    from memcli.models import Memory

# content hashes per IN (...) filter: one query for a whole batch, bounded in length
HASHES_PER_QUERY = 500
# the most rows :func:`neighbours` scans at once (a store without an ANN index has fewer: maintenance.py's
# VECTOR_INDEX_MIN_ROWS, 20,000, ~30 MB of e5 vectors), else one search per vector
SCAN_MAX_ROWS = 50_000


def live_by_key(store: "MemoryStore", m: "Memory") -> "Memory | None":
    """The live memory that holds ``m``'s key in its namespace, if any."""
    found = store.find(f"namespace = {quote(m.namespace)} AND key = {quote(m.key or '')}", 1)
    return found[0] if found else None


def live_by_identity(store: "MemoryStore", mems: Sequence["Memory"], now: int) -> dict[tuple[str, str, str], str]:
    """The stored memory already holding each (namespace, scope, content hash) of ``mems``: live (not expired,
    not archived) and current (one a later memory changed is not: A, B, then A again is news)."""
    found: dict[tuple[str, str, str], str] = {}
    hashes = sorted({m.content_hash for m in mems})
    for start in range(0, len(hashes), HASHES_PER_QUERY):
        chunk = ", ".join(quote(h) for h in hashes[start:start + HASHES_PER_QUERY])
        where = (f"content_hash IN ({chunk}) AND (expires_at IS NULL OR expires_at > {now}) "
                 "AND (status IS NULL OR status != 'archived')")
        for r in store.column_values(where, ["id", "namespace", "scope", "content_hash", "created_at",
                                             "status", "superseded_by", "outdated_by"]):
            if r.get("outdated_by"):  # said again after it changed (A, B, A): the change back is news
                continue
            # a fact distill merged away is already known: by the memory it was merged into
            mid = r["superseded_by"] if r["status"] == "superseded" and r["superseded_by"] else r["id"]
            found.setdefault((r["namespace"], r["scope"], r["content_hash"]), mid)
    return found


def attach_context(store: "MemoryStore", mems: Sequence["Memory"], window: int = 2) -> None:
    """Give each threaded memory the thread's previous memories (stored ones, then earlier ones of this
    batch), oldest first."""
    recent: dict[tuple[str, str], list["Memory"]] = {}
    for m in sorted((m for m in mems if m.thread), key=lambda m: m.created_at):
        k = (m.namespace, m.thread or "")
        if k not in recent:
            where = (f"namespace = {quote(m.namespace)} AND thread = {quote(m.thread or '')} "
                     f"AND created_at <= {int(m.created_at)}")
            recent[k] = store.page(where, limit=window)[::-1]
        m.context = [p.content for p in recent[k][-window:]]
        recent[k].append(m)


def neighbours(store: "MemoryStore", queries: Sequence[tuple[Any, str | None]],
               k: int) -> list[list[tuple["Memory", float]]]:
    """``store.vector_search(vector, where, k)`` of each ``(vector, where)``: (memory, cosine), best first. Without
    an ANN index every search is an exact scan of the vectors, ~8 ms each whatever the store's size: the
    vectors of one filter are then read once for all its queries, and the memories found read together
    (a server's batch of 8 writes made 8 searches)."""
    import numpy as np

    from memcli.memory.rows import COLUMNS, row_to_memory

    if len(queries) < 2 or store.vector_nprobes("vector") is not None:
        return [store.vector_search(v, w, k) for v, w in queries]
    try:
        snap = store.reader.snapshot()
        if snap.count_rows() > SCAN_MAX_ROWS:
            return [store.vector_search(v, w, k) for v, w in queries]
        out: list[list[tuple[Memory, float]]] = [[] for _ in queries]
        for where in dict.fromkeys(w for _, w in queries):
            mine = [n for n, (_, w) in enumerate(queries) if w == where]
            table = snap.to_table(columns=["vector"], filter=where or None, with_row_id=True)
            if table.num_rows == 0:
                continue
            dim = table.schema.field("vector").type.list_size
            stored = table.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, dim)
            q = np.stack([np.asarray(queries[n][0], dtype=np.float32) for n in mine])
            # cosine as lance computes it for the exact search (1 - its cosine distance)
            cos = (q @ stored.T) / np.maximum(np.outer(np.linalg.norm(q, axis=1), np.linalg.norm(stored, axis=1)),
                                              1e-12)
            best = np.argsort(-cos, axis=1, kind="stable")[:, :k]
            rowids = table.column("_rowid").to_numpy()
            rows = dict(store.reader.take(snap, sorted({int(rowids[j]) for j in best.flat}), COLUMNS))
            for n, order, sims in zip(mine, best, cos):
                out[n] = [(row_to_memory(rows[int(rowids[j])]), float(sims[j])) for j in order
                          if int(rowids[j]) in rows]
        return out
    except (OSError, RuntimeError, ValueError) as exc:
        raise StoreError(f"vector search failed: {exc}") from exc
