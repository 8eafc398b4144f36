"""What a write looks up before it writes: the store's queries behind ``remember``'s promises.

``remember`` is idempotent (the same content in one namespace and scope is one memory), a ``key`` names one
memory, and a threaded memory is indexed with its thread's previous memories as context. These are the look-ups
that keep those promises; :meth:`memcli.memory.service.MemoryService.remember_many` makes them before it embeds
and again under the store's write lock (:mod:`memcli.memory.writelock`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from memcli.memory.reader import quote

if TYPE_CHECKING:
    from memcli.memory.store import MemoryStore
    from memcli.models import Memory

# content hashes per IN (...) filter: one query for a whole batch, bounded in length
HASHES_PER_QUERY = 500
# On object storage a batch's similar-memory searches (one per memory) run this many at once: each is S3 round
# trips. A replica writing a group of 99 to a 100k-row store on moto spent 73 of its 82 s before the write leases
# (bench/s3.py --scale 100000); in process at 24k rows these searches were 10.6 of a 40-write group's 14.5 s,
# 8 at once made the group 9.8 s (in the replica run at load 11 the group took as long: the CPU was the limit).
SIMILAR_THREADS = 8

T = TypeVar("T")


def similar_each(search: Callable[[Any, str], T], queries: Sequence[tuple[Any, str]], *, remote: bool) -> list[T]:
    """``search(vector, namespace)`` of each query, in the queries' order: on object storage (``remote``)
    SIMILAR_THREADS at a time (reads only; lance releases the GIL while it waits), else one after another."""
    if not remote or len(queries) < 2:
        return [search(v, ns) for v, ns in queries]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(SIMILAR_THREADS, len(queries)),
                            thread_name_prefix="memcli-similar") as pool:
        return list(pool.map(lambda q: search(*q), queries))


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
