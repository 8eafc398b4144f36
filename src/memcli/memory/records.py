"""Memories on their way into the store: embedding them (own and context vectors) and reading exported
records back (validated, with their vectors reused only when they are sound)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memcli.errors import ValidationError
from memcli.memory.rows import memory_to_row
from memcli.models import (
    DEFAULT_NAMESPACE,
    MAX_TIME_MS,
    SOURCES,
    STATUSES,
    Memory,
    content_hash,
    new_id,
    normalise_scope,
    now_ms,
    validate_content,
    validate_importance,
    validate_key,
    validate_metadata,
    validate_namespace,
    validate_project,
    validate_tags,
    validate_thread,
)
from memcli.redact import STORED_FIELDS, redact_fields

if TYPE_CHECKING:
    from memcli.embedders import Embedder
    from memcli.memory.store import MemoryStore

Progress = Callable[[int, int], None]
# Records read, checked, embedded and committed at a time by an import: one commit (one table version and one
# audit append) per chunk. 64-record commits made 5,213 versions of a 300k-row import, each merge scanning a
# larger table; a chunk holds ~10 MB of rows (e5's 384-dim vectors), so memory stays flat in the file's size.
IMPORT_CHUNK = 4096
# Every this many rows an import folds them into the id index: each chunk's id look-up and merge scan only the
# rows outside it, and without the fold that was every row of the import so far (rows/CPU s fell 2,770 → 2,120
# from the first 100k rows of a 1M import to the fourth: bench/scale.py)
IMPORT_FOLD_ROWS = 65_536


def embed_memories(embedder: "Embedder", mems: Sequence[Memory], progress: Progress | None = None,
                   batch: int = 32) -> tuple[list[Any], list[Any]]:
    """Own vectors, and context vectors ("previous + this"; the own vector when there is no context),
    embedded together in batches."""
    own: list[Any] = []
    ctx: list[Any] = []
    for start in range(0, len(mems), batch):
        chunk = mems[start:start + batch]
        extra = [m.context_text() for m in chunk if m.context]
        vecs = embedder.embed_passages([m.content for m in chunk] + [t for t in extra if t])
        it = iter(vecs[len(chunk):])
        for m, v in zip(chunk, vecs[:len(chunk)]):
            own.append(v)
            ctx.append(next(it) if m.context else v)
        if progress:
            progress(min(start + batch, len(mems)), len(mems))
    return own, ctx


@contextmanager
def record_number(i: int, r: Any) -> Iterator[dict[str, Any]]:
    """The ``i``-th record (0-based) of an import, checked to be an object; a ValidationError raised while
    reading it names the record (``record 3: …``)."""
    if not isinstance(r, dict):
        raise ValidationError(f"record {i + 1} is not a JSON object")
    try:
        yield r
    except ValidationError as exc:
        raise ValidationError(f"record {i + 1}: {exc.message}") from None


def record_to_memory(r: dict[str, Any]) -> Memory:
    """An exported record (export's JSONL) as a Memory, validated field by field."""
    content = validate_content(r.get("content"))
    now = now_ms()
    mid = r.get("id") or r.get("memory_id") or new_id()
    if not isinstance(mid, str) or not 8 <= len(mid) <= 64 or not set(mid.lower()) <= set("0123456789abcdef-"):
        raise ValidationError(f"invalid id {str(mid)[:70]!r}: ids are hex digits and dashes (a UUID)")
    mid = mid.lower()
    created = _int_field(r, "created_at", now)
    return Memory(
        id=mid, content=content, namespace=validate_namespace(r.get("namespace") or DEFAULT_NAMESPACE),
        project=validate_project(r.get("project")), scope=normalise_scope(r.get("scope") or "global"),
        tags=validate_tags(r.get("tags")), importance=validate_importance(r.get("importance", 0.5)),
        key=validate_key(r.get("key")), metadata=validate_metadata(r.get("metadata")),
        source=r.get("source") if r.get("source") in SOURCES else "import", created_at=created,
        updated_at=_int_field(r, "updated_at", created), expires_at=_int_field(r, "expires_at", None),
        version=_int_field(r, "version", 1), content_hash=content_hash(content),
        thread=validate_thread(r.get("thread")), context=_context_field(r.get("context")),
        status=r.get("status") if r.get("status") in STATUSES else "active",
        merged_from=[str(x) for x in r.get("merged_from") or [] if isinstance(x, str)][:10_000],
        superseded_by=r.get("superseded_by") if isinstance(r.get("superseded_by"), str) else None,
        outdated_by=_id_field(r.get("outdated_by")),
        updates=[x for x in (_id_field(v) for v in (r.get("updates") if isinstance(r.get("updates"), list) else []))
                 if x][:10_000],
    )


def _id_field(v: Any) -> str | None:
    """A memory id an imported record names (outdated_by, updates), or None for anything else."""
    if not isinstance(v, str) or not 8 <= len(v) <= 64 or not set(v.lower()) <= set("0123456789abcdef-"):
        return None
    return v.lower()


def _context_field(v: Any) -> list[str]:
    """An imported record's context: a list of strings (the thread's previous memories)."""
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValidationError("context must be a list of strings")
    return [x for x in v if x][-2:]


def _int_field(r: dict[str, Any], name: str, default: int | None) -> int | None:
    """An integer field of an imported record (ms timestamps, version); absent/null → ``default``."""
    v = r.get(name)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, str)) or (isinstance(v, str) and not v.strip().isdigit()):
        raise ValidationError(f"{name} must be an integer, got {v!r}")
    if not 0 <= int(v) <= MAX_TIME_MS:  # far inside int64 (a bigger number is a broken file, not a time)
        raise ValidationError(f"{name} must be between 0 and {MAX_TIME_MS}, got {v!r}")
    return int(v)


def reusable_vector(v: Any, dim: int) -> list[float] | None:
    """An exported vector worth reusing: ``dim`` finite numbers, not all zero; else None (the content is
    re-embedded). Never store a zero, NaN or malformed vector from a file."""
    import numpy as np

    if not isinstance(v, list) or len(v) != dim or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        return None
    arr = np.asarray(v, dtype=np.float64)
    norm = float(np.linalg.norm(arr)) if np.all(np.isfinite(arr)) else 0.0
    return [float(x) for x in v] if norm > 1e-6 else None


def redact_memory(mem: Memory) -> bool:
    """Redact every stored string field of a memory in place (:func:`memcli.redact.redact_fields`: content,
    context, tags, key, project, thread, metadata; its content hash follows). Returns whether anything changed."""
    before = {name: getattr(mem, name) for name in STORED_FIELDS}
    after = redact_fields(before)
    if after == before:
        return False
    for name, value in after.items():
        setattr(mem, name, value)
    mem.content_hash = content_hash(mem.content)
    return True


def namespaced_id(memory_id: str, namespace: str) -> str:
    """The id a memory takes in ``namespace`` when another namespace holds its id already: the same time
    part (ids still sort by creation), the rest a hash of both (the same record imported again finds it)."""
    import hashlib

    h = hashlib.sha256(f"{namespace}\n{memory_id}".encode("utf-8")).hexdigest()
    head = memory_id.replace("-", "")[:12]
    if len(head) != 12:
        head = h[-12:]
    v = f"{head}7{h[:3]}{8 | (int(h[3], 16) & 3):x}{h[4:19]}"
    return f"{v[:8]}-{v[8:12]}-{v[12:16]}-{v[16:20]}-{v[20:]}"


def not_in_namespace(store: "MemoryStore", mems: list[tuple[Memory, Any]],
                     fresh: set[str] | frozenset[str] = frozenset()) -> list[tuple[Memory, Any]]:
    """The imported memories (with their vectors) that their namespace does not hold yet, each id once. An
    id is only looked up within the memory's namespace; one that another namespace holds takes
    :func:`namespaced_id` instead, so whether an id exists elsewhere changes nothing a caller sees (the same
    memory may be in two spaces). Within the batch the first record with an id wins: a later one with the same
    id in the same namespace is skipped like one already stored (ids stay unique), and one in another namespace
    takes :func:`namespaced_id` too. Ids in ``fresh`` were just made (UUIDv7): they are not looked up."""
    def owners(ids: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        ids = [i for i in ids if i not in fresh]
        for start in range(0, len(ids), 500):
            found.update({m.id: m.namespace for m in store.get_many(ids[start:start + 500])})
        return found

    known = owners(list(dict.fromkeys(m.id for m, _ in mems)))
    claimed = dict(known)  # id -> namespace: the store's, then this batch's first record's
    moved = []
    for m, _ in mems:
        owner = claimed.setdefault(m.id, m.namespace)
        if owner != m.namespace:
            m.id = namespaced_id(m.id, m.namespace)
            moved.append(m.id)
    known.update(owners(list(dict.fromkeys(moved))))
    out, taken = [], set()
    for m, v in mems:
        if known.get(m.id) != m.namespace and m.id not in taken:
            taken.add(m.id)
            out.append((m, v))
    return out


# Imported records without links of their own are checked for updates (facts/update.py) against the import's
# earlier records (in memory: current.ImportPool) and, if the store held memories before, a vector search each
# (~13 ms at 10k rows). Past this many, `memcli distill` links the rest (it links what the writes missed before
# it plans).
LINK_IMPORTED = 20_000
# On object storage each of those searches is S3 requests (a LIST of the versions and ~3 ranged GETs per
# fragment): 61 ms a search on moto with one 4,096-row fragment, and the first 20k records of a 100k import took
# more than the rest of it (bench/s3.py --scale). There an import links this many; `memcli distill` the rest.
LINK_IMPORTED_REMOTE = 500


def import_records(svc: Any, records: Iterable[Any], *, vectors_identity: dict[str, Any] | None = None,
                   progress: Progress | None = None, batch: int = 64, keep_secrets: bool = False,
                   total: int | None = None, chunk: int = IMPORT_CHUNK) -> dict[str, int]:
    """``MemoryService.import_records`` (``svc``: that service): records streamed ``chunk`` at a time (an iterator is never held
    whole), each chunk one lookup of its ids, embedding batches of ``batch`` and one commit. A list is checked
    whole before anything is written (a bad record imports nothing); an iterator's caller checks it first
    (``memcli import`` reads the file twice). Maintenance (compaction, index upkeep) runs once, at the end.
    ``progress(done, total)``: ``total`` is ``len(records)`` for a list, else as given (0: unknown)."""
    from memcli.memory.audit import AuditEvent
    from memcli.memory.store import same_embedder
    from memcli.models import write_note

    if isinstance(records, Sequence):
        for i, raw in enumerate(records):
            with record_number(i, raw) as r:
                record_to_memory(r)
        total = len(records)
    from memcli.memory.current import ImportPool, link_imported

    reuse = vectors_identity is not None and same_embedder(vectors_identity, svc.embedder.identity())
    dim = svc.embedder.dim
    pool = ImportPool(svc, search_store=svc.store.count() > 0)
    it = iter(records)
    read = added = linked = 0
    unlinked = 0  # records past LINK_IMPORTED that came without links: `memcli distill` links them
    while True:
        raws = list(itertools.islice(it, chunk))
        if not raws:
            break
        mems: list[tuple[Memory, Any]] = []
        fresh_ids: set[str] = set()  # ids made here (the record had none): no store can hold them yet
        bare: set[str] = set()  # records with no links of their own (an older export, another tool)
        for i, raw in enumerate(raws, read):
            with record_number(i, raw) as r:
                vec = reusable_vector(r.get("vector"), dim) if reuse else None
                if vec is not None:  # context vector: its own if exported, else the same vector
                    cvec = reusable_vector(r.get("context_vector"), dim)
                    vec = (vec, cvec if cvec is not None else vec)
                mem = record_to_memory(r)
                if not (r.get("id") or r.get("memory_id")):
                    fresh_ids.add(mem.id)
                if "outdated_by" not in r and "updates" not in r:
                    bare.add(mem.id)
            text = (mem.content, mem.context)
            if not keep_secrets and redact_memory(mem) and (mem.content, mem.context) != text:
                vec = None  # the vectors of the text as it was: embed what is stored
            mems.append((mem, vec))
        read += len(raws)
        todo = sorted(not_in_namespace(svc.store, mems, fresh=fresh_ids), key=lambda p: (p[0].created_at, p[0].id))
        need = [m for m, v in todo if v is None]
        own, ctx = embed_memories(svc.embedder, need, batch=batch) if need else ([], [])
        vectors = iter(zip(own, ctx))
        rows = [memory_to_row(m, *(v if v is not None else next(vectors))) for m, v in todo]
        n = svc.store.insert(rows, maintain=False) if rows else 0
        if (added + n) // IMPORT_FOLD_ROWS > added // IMPORT_FOLD_ROWS:
            svc.store.fold_key_indexes()
        added += n
        if n:
            actor = svc._actor("import")
            note = write_note(keep_secrets)
            svc.store.audit.record([AuditEvent(memory_id=m.id, action="import", actor=actor, namespace=m.namespace,
                                               version=m.version, note=note) for m, _ in todo])
        # records without links are linked as if each had been remembered then (in time order within a
        # chunk; memcli's exports are oldest first), against the import so far: only the first LINK_IMPORTED
        link = [(m, row["vector"]) for (m, _), row in zip(todo, rows) if m.id in bare]
        # on object storage each vector search of the store is S3 round trips (~61 ms on moto): only the
        # import's own records are searched in memory, so the smaller cap holds only when the store is searched
        remote = "://" in str(svc.store.uri) and pool.search_store
        room = max(0, (LINK_IMPORTED_REMOTE if remote else LINK_IMPORTED) - (linked + unlinked))
        if room:  # the candidates of what is linked: every record stored so far (held until linking ends)
            pool.add([(m, row["vector"]) for (m, _), row in zip(todo, rows)])
        if link[:room]:
            link_imported(svc, link[:room], svc._actor("import"), pool)
        linked += len(link[:room])
        unlinked += len(link[room:])
        if progress:
            progress(read, max(total or 0, read))
    if added:
        svc.store.after_import(added)
    out = {"read": read, "added": added, "skipped": read - added}
    return {**out, "unlinked": unlinked} if unlinked else out


def reembed_all(store: "MemoryStore", embedder: "Embedder", *, progress: Callable[[int, int], None] | None = None,
                batch: int = 64) -> dict[str, Any]:
    """Every memory re-embedded with ``embedder`` into a new table, then the store switched to it (``memcli
    reindex``): ``{"reindexed", "embedder", "table"}``. Interrupted, the old table stays active."""
    import pyarrow as pa

    identity = embedder.identity()
    name = f"memories_{now_ms()}"
    new = store.new_table(name, int(identity["dim"]))
    total = store.count()
    done = 0
    pending: list[dict[str, Any]] = []  # one commit per IMPORT_CHUNK rows (one per 64 made 15k versions at 1M)
    for mems in store.iter_batches(None, batch_size=batch):
        own, ctx = embed_memories(embedder, mems)
        pending += [memory_to_row(m, v, c) for m, v, c in zip(mems, own, ctx)]
        if len(pending) >= IMPORT_CHUNK:
            new.add(pa.Table.from_pylist(pending, schema=new.schema))
            pending = []
        done += len(mems)
        if progress:
            progress(done, total)
    if pending:
        new.add(pa.Table.from_pylist(pending, schema=new.schema))
    if new.count_rows() != total:
        raise ValidationError("the store changed during reindex; run it again")
    store.activate(name, identity)
    store.compact(blocking=True)
    return {"reindexed": done, "embedder": identity, "table": name}
