"""Counts: what a store holds (``stats``), and for a monitor view memories per namespace and scope and memories
written per day per scope.

Pure functions over the store's rows (core: no face imports). They count what ``list`` shows — the same
``build_where`` filter, so memories that ``list`` hides (expired today; whatever else the core hides later)
are not counted either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memcli.errors import StoreError, ValidationError
from memcli.memory.search import build_where

if TYPE_CHECKING:
    from memcli.memory.store import MemoryStore

DAY_MS = 86_400_000
MAX_DAYS = 366
MAX_TZ_OFFSET_MIN = 14 * 60  # UTC-12 .. UTC+14, with room


def scope_counts(store: "MemoryStore", *, default_namespace: str, now: int,
                 only: str | None = None) -> dict[str, Any]:
    """``{"default_namespace", "total", "namespaces": [{"namespace", "total", "scopes": {scope: n}}]}``:
    the default namespace first, then the others by name; scopes by count, then name. ``only``: that
    namespace alone (a team space sees its own)."""
    rows = store.column_values(build_where(namespace=only, include_expired=False, now=now), ["namespace", "scope"])
    by_ns: dict[str, dict[str, int]] = {}
    for r in rows:
        scopes = by_ns.setdefault(r["namespace"], {})
        scopes[r["scope"]] = scopes.get(r["scope"], 0) + 1
    by_ns.setdefault(default_namespace, {})  # the sidebar always offers the default one, even empty
    order = sorted(by_ns, key=lambda ns: (ns != default_namespace, ns))
    namespaces = [
        {"namespace": ns, "total": sum(by_ns[ns].values()),
         "scopes": dict(sorted(by_ns[ns].items(), key=lambda kv: (-kv[1], kv[0])))}
        for ns in order
    ]
    return {"default_namespace": default_namespace, "total": len(rows), "namespaces": namespaces}


def daily_counts(store: "MemoryStore", *, namespace: str | None, days: int, tz_offset_minutes: int,
                 now: int) -> dict[str, Any]:
    """Memories created per day per scope over the last ``days`` days (today included), in the caller's
    time zone (``tz_offset_minutes`` east of UTC, what a browser knows). ``namespace`` None: all of them.

    ``{"days": ["YYYY-MM-DD", …], "series": [{"scope", "counts": [n per day], "total"}], "total"}``; series
    by total, largest first.
    """
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise ValidationError(f"days must be an integer from 1 to {MAX_DAYS}")
    if isinstance(tz_offset_minutes, bool) or not isinstance(tz_offset_minutes, int) \
            or abs(tz_offset_minutes) > MAX_TZ_OFFSET_MIN:
        raise ValidationError(f"tz_offset must be minutes east of UTC, -{MAX_TZ_OFFSET_MIN}..{MAX_TZ_OFFSET_MIN}")
    shift = tz_offset_minutes * 60_000
    today = (now + shift) // DAY_MS  # the local day number
    first = today - days + 1
    since = first * DAY_MS - shift  # local midnight of the first day, as UTC ms
    where = build_where(namespace=namespace, since=since, include_expired=False, now=now)
    rows = store.column_values(where, ["scope", "created_at"])
    series: dict[str, list[int]] = {}
    for r in rows:
        i = (int(r["created_at"]) + shift) // DAY_MS - first
        if 0 <= i < days:  # a memory dated in the future (an import) is not today's
            series.setdefault(r["scope"], [0] * days)[i] += 1
    import datetime as dt

    labels = [(dt.date(1970, 1, 1) + dt.timedelta(days=first + i)).isoformat() for i in range(days)]
    out = [{"scope": s, "counts": c, "total": sum(c)} for s, c in series.items()]
    out.sort(key=lambda d: (-d["total"], d["scope"]))
    return {"days": labels, "series": out, "total": sum(d["total"] for d in out),
            "namespace": namespace, "tz_offset": tz_offset_minutes}


def store_stats(store: "MemoryStore", *, now: int) -> dict[str, Any]:
    """``memcli stats``: every row counted by status, namespace, scope and tag (the 50 most used), the expired ones,
    and the store's embedder, location, size, fragments and indexes."""
    import pyarrow.compute as pc

    # counted in arrow (at 1M rows the rows as Python dicts took seconds and a GB of the server's memory)
    try:
        table = store.reader.snapshot().to_table(columns=["namespace", "scope", "tags", "expires_at", "status"])
    except (OSError, RuntimeError, ValueError) as exc:  # ValueError: pyarrow's ArrowInvalid (a damaged file)
        raise StoreError(f"reading the store failed: {exc}. Run `memcli doctor`.") from exc
    total = table.num_rows

    def counts(values: Any) -> dict[str, int]:
        return {str(v["values"]): int(v["counts"]) for v in pc.value_counts(values).to_pylist()
                if v["values"] is not None}

    status = pc.fill_null(table.column("status"), "active")
    by_status, by_ns, by_scope = counts(status), counts(table.column("namespace")), counts(table.column("scope"))
    by_tag = counts(pc.list_flatten(table.column("tags")))
    exp = table.column("expires_at")
    expired = int(pc.sum(pc.less_equal(exp, now)).as_py() or 0) if exp.null_count < total else 0
    del table
    return {
        "total": total, "expired": expired, "statuses": by_status, "namespaces": by_ns, "scopes": by_scope,
        "tags": dict(sorted(by_tag.items(), key=lambda kv: -kv[1])[:50]),
        "embedder": store.stored_identity, "store": store.uri,
        "size_bytes": store.size_bytes(), "fragments": store.fragment_count(),
        "indexes": sorted(store.index_names()),
        # what each index holds and how fresh it is (rows outside one are searched exactly or flat meanwhile)
        "index_status": store.index_status(), "maintenance_due": store.maintenance_due(),
    }
