"""MemoryStore: the LanceDB repository. It owns storage (schema, indexes, compaction), not behaviour.

Facts this relies on (DESIGN.md, measured on lancedb 0.40): connections use
``read_consistency_interval=0`` so every handle sees other processes' writes; ``id`` is the unenforced
primary key so concurrent ``merge_insert`` never duplicates a row; every write adds a fragment, so writers
compact (``optimize``) once fragments pile up, one owner at a time, retrying on commit conflicts.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from memcli.errors import (
    AmbiguousIdError,
    EmbedderMismatchError,
    NotFoundError,
    StoreError,
    ValidationError,
)
from memcli.memory import damage
from memcli.memory.audit import AuditLog
from memcli.memory.maintenance import VECTOR_COLUMNS, IndexMaintenance, TableFacts
from memcli.memory.reader import Reader, id_like, quote
from memcli.memory.rows import (
    COLUMNS,
    memory_schema,
    row_search_text,
    row_to_memory,
    status_fields,
)
from memcli.memory.writelock import WriteLock
from memcli.models import MIN_PREFIX, Memory
from memcli.textnorm import query_text

os.environ.setdefault("LANCE_LOG", "error")  # lance's Rust deprecation chatter must not reach stderr/stdout
os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")  # and neither must its index-stats warning
# nor lancedb's Rust warnings (a damaged index's, with the source paths of the engine): memcli says it itself
os.environ.setdefault("LANCEDB_LOG", "error")

SCHEMA_VERSION = 2
TOKEN_BEST_TTL = 600.0  # seconds a token's best single score is reused (document frequencies move slowly)
META_TABLE = "memcli_meta"
DEFAULT_TABLE = "memories"
_ID_CHARS = set("0123456789abcdef-")

# Lance gives a commit up after ~30 s when other writers keep winning the race (8 busy writers on 2 cores do
# that); memcli retries such a write for up to WRITE_RETRY_SECONDS before it reports the store busy.
BUSY_MARKERS = ("too many concurrent writers", "retryable commit conflict")
WRITE_RETRY_SECONDS = 180.0

ACTIVE_FILTER = "(status IS NULL OR status = 'active')"


@dataclass
class Candidates:
    """What one recall's searches found on one snapshot of the table."""

    text: list[tuple[int, float]]  # (row id, score), best first
    vector: list[tuple[int, float]]
    context: list[tuple[int, float]]
    snapshot: Any = None
    # Σ over the query's tokens of the best score each token alone reaches: what a memory matching the whole
    # query would score (None: not computed). search.relevance scales keyword evidence by it.
    text_ideal: float | None = None


_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="memcli-search")
    return _POOL


def _open_failure(exc: BaseException) -> str:
    """Why a store could not be opened, in words a user can act on (lance's errors carry retry state and the
    source location of the Rust code: neither helps, and neither belongs in an answer to a client)."""
    text = str(exc)
    if "NoSuchBucket" in text:
        return "the bucket does not exist (object storage: create the bucket first, e.g. `aws s3 mb s3://BUCKET`)"
    for cut in (", location: Location", " location: Location", ", backtrace:"):
        if cut in text:
            text = text[:text.index(cut)]
    return text[:500]


def _label(table: str) -> str | None:
    """How a damaged table is named to the user (None: by its name)."""
    return "the store's settings table" if table == META_TABLE else None


class MemoryStore(IndexMaintenance):
    """One LanceDB database holding the memories table and a small meta table."""

    def __init__(self, uri: str, identity: dict[str, Any], *, allow_mismatch: bool = False,
                 auto_compact_fragments: int = 32, storage_options: dict[str, str] | None = None) -> None:
        self.uri = uri
        self.identity = identity
        self.auto_compact_fragments = auto_compact_fragments
        self._local = "://" not in uri
        self.storage_options = dict(storage_options or {})
        self._writes_since_check = 0
        self._fts_ready = False
        self._token_best: dict[tuple[str, str | None], tuple[float, float]] = {}
        self.facts = TableFacts()
        self.write_lock = WriteLock(uri, self.storage_options)  # remember's check-then-write (memcli.memory.writelock)
        try:
            import lancedb

            if self._local:
                Path(uri).mkdir(parents=True, exist_ok=True, mode=0o700)
            self.db = lancedb.connect(uri, read_consistency_interval=timedelta(0),
                                      storage_options={**self.storage_options, **NEW_TABLE_OPTIONS})
            self._meta = self._open_meta()
            self.audit = AuditLog(self.db, commit=self.commit, open_or_create=self.open_or_create)
            meta = self.read_meta()
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"cannot open the store at {uri}: {_open_failure(exc)}. Run `memcli doctor`.") from exc
        stored = meta.get("embedder")
        self.stored_identity = json.loads(stored) if stored else None
        self.table_name = meta.get("active_table", DEFAULT_TABLE)
        if self.stored_identity and not allow_mismatch and not same_embedder(self.stored_identity, identity):
            raise EmbedderMismatchError(
                f"this store was built with the embedder {describe(self.stored_identity)}, but the configured "
                f"embedder is {describe(identity)}. Configure the original embedder again, or run "
                "`memcli reindex` to re-embed every memory with the new one."
            )
        version = int(meta.get("schema_version") or SCHEMA_VERSION)
        if version > SCHEMA_VERSION:
            raise StoreError(f"this store has schema version {version}, newer than this memcli understands "
                             f"({SCHEMA_VERSION}): upgrade memcli")
        if version < SCHEMA_VERSION and not allow_mismatch:
            raise EmbedderMismatchError(
                f"this store has schema version {version}; this memcli uses {SCHEMA_VERSION}. Run "
                "`memcli reindex` once to migrate it (nothing is lost; the old table stays until it is done)."
            )
        self.dim = int((self.stored_identity or identity)["dim"])
        try:
            if not self.stored_identity:  # new settings: a store whose settings table vanished is not a new one
                damage.refuse_orphans(self.db, uri, META_TABLE, DEFAULT_TABLE)
            self.table = self._open_or_create(self.table_name, self.dim)
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"cannot open the store at {uri}: {_open_failure(exc)}. Run `memcli doctor`.") from exc
        self._add_status_columns()
        self.reader = Reader(self.table.to_lance())
        if not self.stored_identity:
            self.write_meta({"embedder": json.dumps(identity), "schema_version": str(SCHEMA_VERSION),
                             "active_table": self.table_name})
            self.stored_identity = identity

    # ---------------------------------------------------------------- tables and meta
    def _open_meta(self) -> Any:
        import pyarrow as pa

        schema = pa.schema([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string())])
        def create() -> Any:
            return _create_keyed(self.db, META_TABLE, schema, "key")

        return self.open_or_create(META_TABLE, create)

    def open_or_create(self, name: str, create: Callable[[], Any]) -> Any:
        """Open a table, or create it with ``create()`` if it is missing: on object storage one creator at a
        time (objectstore.creation_guard); another process may have created it first either way. A table
        that is there but cannot be read is damaged, never missing: DamagedStoreError, nothing written."""
        table = self._open_table(name)
        if table is not None:
            return table
        from memcli.memory.objectstore import creation_guard

        with creation_guard(self.uri, self.storage_options):
            table = self._open_table(name)
            if table is not None:
                return table
            damage.refuse_leftovers(self.db, self.uri, name, opens=lambda: self._open_table(name) is not None,
                                    label=_label(name))
            try:
                return create()
            except (ValueError, OSError):  # another process created it first
                table = self._open_table(name)
                if table is None:
                    raise
                return table

    def _open_table(self, name: str) -> Any:
        """The table, or None when it does not exist. Locally any other failure to open it (a garbled
        manifest) is a DamagedStoreError; on object storage it is raised as it is (a bucket that does not
        answer is not a damaged table: the caller says which)."""
        try:
            return self.db.open_table(name)
        except FileNotFoundError:
            return None
        except (OSError, RuntimeError, ValueError) as exc:
            if isinstance(exc, ValueError) and "was not found" in str(exc):
                return None
            if not self._local or "permission denied" in str(exc).lower():  # not damage: said as it is
                raise
            raise damage.damaged(self.uri, name, f"its latest version cannot be read ({_open_failure(exc)})",
                                 label=_label(name)) from exc

    def read_meta(self) -> dict[str, str]:
        """Key/value settings stored with the table (schema version, embedder identity, active table)."""
        return {r["key"]: r["value"] for r in self._meta.to_arrow().to_pylist()}

    def write_meta(self, values: dict[str, str]) -> None:
        import pyarrow as pa

        rows = pa.Table.from_pylist([{"key": k, "value": v} for k, v in values.items()], schema=self._meta.schema)
        self.commit(lambda: self._meta.merge_insert("key").when_matched_update_all().when_not_matched_insert_all()
                     .execute(rows), "writing the store's settings")

    def delete_meta(self, keys: list[str]) -> None:
        """Remove settings from the meta table (absent keys are fine)."""
        if keys:
            where = "key IN (" + ", ".join(quote(k) for k in keys) + ")"
            self.commit(lambda: self._meta.delete(where), "removing store settings")

    def _open_or_create(self, name: str, dim: int) -> Any:
        def create() -> Any:
            return _create_keyed(self.db, name, memory_schema(dim), "id")

        table = self.open_or_create(name, create)
        field = table.schema.field("vector")
        if field.type.list_size != dim:
            raise EmbedderMismatchError(
                f"the stored vectors have {field.type.list_size} dimensions but the embedder gives {dim}. "
                "Run `memcli reindex`."
            )
        return table

    def _add_status_columns(self) -> None:
        """Migrate a store made before memcli distill kept a lifecycle: add the nullable status columns
        (metadata only, no data rewritten; NULL reads as active). Another process may do it at the same time."""
        missing = [f for f in status_fields() if f.name not in self.table.schema.names]
        if not missing:
            return
        try:
            self.table.add_columns(missing)
        except (ValueError, RuntimeError, OSError) as exc:
            self.table = self.db.open_table(self.table_name)
            if any(f.name not in self.table.schema.names for f in missing):
                raise StoreError(f"cannot add the status columns to the store: {exc}") from exc

    # ---------------------------------------------------------------- writes
    def commit(self, op: Callable[[], Any], what: str, landed: Callable[[], bool] | None = None) -> Any:
        """Run one write (one commit). While other writers keep winning the commit race it is retried (after
        ``landed()`` says the failed attempt did not commit after all, so nothing is written twice); any
        failure (a full or read-only disk, a busy store) becomes a StoreError with a clear message."""
        deadline = time.monotonic() + WRITE_RETRY_SECONDS
        delay = 0.05
        while True:
            try:
                return op()
            except (OSError, RuntimeError, ValueError) as exc:
                text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                busy = any(m in text.lower() for m in BUSY_MARKERS)
                if not busy:
                    raise StoreError(f"{what} failed: {text}") from exc
                if time.monotonic() > deadline:
                    raise StoreError(f"{what} failed: the store is busy (other writers kept committing first "
                                     f"for {WRITE_RETRY_SECONDS:.0f} s); nothing was written, try again") from exc
                if landed is not None and landed():
                    return None
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 2.0)

    def insert(self, rows: list[dict[str, Any]], *, maintain: bool = True) -> int:
        """Insert rows whose id is new; rows with an existing id are left alone, and so is a row whose id an
        earlier row of ``rows`` has (merge_insert matches against the table only: it would insert both).
        Returns rows inserted. ``maintain=False``: the caller maintains (an import: :meth:`after_import`)."""
        first: dict[str, dict[str, Any]] = {}
        for r in rows:
            first.setdefault(r["id"], r)
        rows = list(first.values())
        if not rows:
            return 0
        import pyarrow as pa

        data = pa.Table.from_pylist(rows, schema=self.table.schema)
        res = self.commit(lambda: self.table.merge_insert("id").when_not_matched_insert_all().execute(data),
                           "writing to the store")
        if maintain:
            self.after_write(rows)
        return int(res.num_inserted_rows)

    def add(self, rows: list[dict[str, Any]], *, maintain: bool = True) -> int:
        """Append rows with fresh ids (UUIDv7: no collision to check, so no merge scan). ``maintain=False``:
        the caller runs :meth:`after_write` itself (after releasing the write lock: it may compact)."""
        if not rows:
            return 0
        import pyarrow as pa

        data = pa.Table.from_pylist(rows, schema=self.table.schema)
        where = "id IN (" + ", ".join(quote(r["id"]) for r in rows) + ")"
        self.commit(lambda: self.table.add(data), "writing to the store",
                     landed=lambda: self.count(where) == len(rows))
        if maintain:
            self.after_write(rows)
        return len(rows)

    def update(self, memory_id: str, values: dict[str, Any], *, expected_version: int | None = None) -> int:
        """Rewrite one row with ``values`` applied, only if its version is still ``expected_version``
        (optimistic concurrency, checked inside the commit). Returns rows changed (0 or 1)."""
        import pyarrow as pa

        rows = self.read_rows(f"id = {quote(memory_id)}", self.table.schema.names, 2)
        if not rows:
            return 0
        row = rows[0]
        version = int(row["version"]) if expected_version is None else int(expected_version)
        for k, v in values.items():
            if k == "metadata":
                v = json.dumps(v, ensure_ascii=False) if v else None
            elif k == "tags":
                v = list(v)
            elif k == "updates":
                v = json.dumps(list(v)) if v else None
            row[k] = v
        if "content" in values:
            ctx = json.loads(row["context"]) if row.get("context") else []
            row["search_text"] = row_search_text(values["content"], ctx)
        data = pa.Table.from_pylist([row], schema=self.table.schema)
        res = self.commit(lambda: self.table.merge_insert("id").when_matched_update_all(
            where=f"target.version = {version}").execute(data), "updating the store")
        self.after_write()
        return int(res.num_updated_rows)

    def delete(self, ids: Sequence[str], *, expected_version: int | None = None) -> int:
        """Delete rows; with ``expected_version`` only those still at that version (checked in the commit)."""
        if not ids:
            return 0
        where = "id IN (" + ", ".join(quote(i) for i in ids) + ")"
        if expected_version is not None:
            where += f" AND version = {int(expected_version)}"
        res = self.commit(lambda: self.table.delete(where), "deleting from the store")
        self.after_write()
        return int(res.num_deleted_rows)

    # ---------------------------------------------------------------- reads
    def read_rows(self, where: str | None, columns: list[str], limit: int | None = None) -> list[dict[str, Any]]:
        try:
            return self.reader.rows(where, columns, limit)
        except (OSError, RuntimeError, ValueError) as exc:  # ValueError: pyarrow's ArrowInvalid (a damaged file)
            raise StoreError(f"reading the store failed: {exc}. Run `memcli doctor`.") from exc

    def get(self, memory_id: str, *, with_vector: bool = False) -> Memory | None:
        rows = self.read_rows(f"id = {quote(memory_id)}", COLUMNS + (VECTOR_COLUMNS if with_vector else []), 2)
        return row_to_memory(rows[0], with_vector=with_vector) if rows else None

    def get_many(self, ids: Sequence[str], *, with_vector: bool = False) -> list[Memory]:
        if not ids:
            return []
        where = "id IN (" + ", ".join(quote(i) for i in ids) + ")"
        rows = self.read_rows(where, COLUMNS + (VECTOR_COLUMNS if with_vector else []), len(ids) + 1)
        return [row_to_memory(r, with_vector=with_vector) for r in rows]

    def resolve_id(self, ref: str, *, namespace: str | None) -> str:
        """A full id or a unique prefix (≥ 4 characters, dashes optional) → the full id, among the memories of
        ``namespace`` only (None: of every namespace, for the store's owner). Another namespace's memory is
        answered as an id nobody has, and is never named by an ambiguous-id error."""
        if not isinstance(ref, str):
            raise ValidationError("a memory id must be a string")
        raw = ref.strip().lower()
        if len(raw.replace("-", "")) < MIN_PREFIX or not set(raw) <= _ID_CHARS:
            raise ValidationError(
                f"invalid memory id {ref!r}: give the id or at least {MIN_PREFIX} of its hex digits"
            )
        where_ns = f"namespace = {quote(namespace)} AND " if namespace is not None else ""
        missing = f"no memory with id {ref}" + (f" in namespace {namespace!r}" if namespace is not None else "")
        if len(raw) == 36:
            if not self.read_rows(f"{where_ns}id = {quote(raw)}", ["id"], 1):
                raise NotFoundError(missing)
            return raw
        compact = raw.replace("-", "")
        if len(compact) > 32:
            raise NotFoundError(missing)
        # Ids are shown short (their last 8 hex digits) and full: accept a prefix or a suffix of either, with
        # or without dashes (only hex digits and dashes get here, so the patterns hold no wildcard).
        where = f"{where_ns}{id_like(compact)}"
        hits = sorted({r["id"] for r in self.read_rows(where, ["id"], 6)})
        if not hits:
            raise NotFoundError(missing)
        if len(hits) > 1:
            raise AmbiguousIdError(
                f"id {ref!r} matches {len(hits) if len(hits) < 6 else 'at least 6'} memories "
                f"({', '.join(h[:13] for h in hits[:5])}…): give more characters"
            )
        return hits[0]

    def scan(self, where: str | None, *, with_vector: bool = False) -> list[Memory]:
        cols = COLUMNS + (VECTOR_COLUMNS if with_vector else [])
        return [row_to_memory(r, with_vector=with_vector) for r in self.read_rows(where, cols)]

    def iter_batches(self, where: str | None = None, *, with_vector: bool = False,
                     batch_size: int = 1000) -> Iterator[list[Memory]]:
        """Stream every matching memory in batches, in storage order (reindex)."""
        snap = self.reader.snapshot()  # an older schema (reindex migrates it) lacks some columns
        cols = [c for c in COLUMNS + (VECTOR_COLUMNS if with_vector else []) if c in set(snap.schema.names)]
        try:
            for batch in snap.to_batches(columns=cols, filter=where, batch_size=batch_size):
                yield [row_to_memory(r, with_vector=with_vector) for r in batch.to_pylist()]
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"reading the store failed: {exc}. Run `memcli doctor`.") from exc

    def iter_sorted(self, where: str | None = None, *, with_vector: bool = False,
                    batch_size: int = 1000) -> Iterator[list[Memory]]:
        """Every matching memory oldest first (by created_at, then id), in batches, on one snapshot (export)."""
        try:
            for rows in self.reader.sorted_batches(self.reader.snapshot(), where,
                                                   COLUMNS + (VECTOR_COLUMNS if with_vector else []), batch_size):
                yield [row_to_memory(r, with_vector=with_vector) for r in rows]
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"reading the store failed: {exc}. Run `memcli doctor`.") from exc

    def page(self, where: str | None, *, limit: int, offset: int = 0) -> list[Memory]:
        """Newest first (by created_at, then id), exact filters, paged: only the page's rows are read."""
        snap = self.reader.snapshot()
        try:
            rowids = self.reader.sorted_rowids(snap, where, newest_first=True, limit=offset + limit)[offset:]
            rows = dict(self.reader.take(snap, rowids, COLUMNS))
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"reading the store failed: {exc}. Run `memcli doctor`.") from exc
        return [row_to_memory(rows[r]) for r in rowids if r in rows]

    def find(self, where: str, limit: int = 10) -> list[Memory]:
        return [row_to_memory(r) for r in self.read_rows(where, COLUMNS, limit)]

    def count(self, where: str | None = None) -> int:
        try:
            return self.reader.count(where)
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"reading the store failed: {exc}. Run `memcli doctor`.") from exc

    column_values = read_rows  # (where, columns): rows as dicts

    # ---------------------------------------------------------------- search
    def vector_search(self, vector: Sequence[float], where: str | None, k: int,
                      column: str = "vector") -> list[tuple[Memory, float]]:
        """Nearest memories by cosine similarity, filtered before top-k. Returns (memory, cosine)."""
        try:
            rows = self.reader.vector(self.reader.snapshot(), vector, column, where, k, COLUMNS,
                                      self.vector_nprobes(column))
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"vector search failed: {exc}") from exc
        return [(row_to_memory(r), 1.0 - float(r["_distance"])) for r in rows]

    def cosines(self, vector: Sequence[float], where: str | None, k: int) -> list[float]:
        """The cosine similarities of the ``k`` nearest memories, best first (no row is read)."""
        try:
            return [c for _, c in self._vector_ids(self.reader.snapshot(), vector, "vector", where, k)]
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"vector search failed: {exc}") from exc

    def search(self, *, text: str | None, vector: Sequence[float] | None, where: str | None, k: int,
               context: bool = False) -> Candidates:
        """Keyword, own-vector and (``context``) context-vector candidates on one snapshot, as row ids with
        scores, reading no columns (:meth:`fetch` reads the few that can win); the keyword search runs in a
        second thread beside the vector searches (bench/README.md)."""
        snap = self.reader.snapshot()
        out = Candidates(text=[], vector=[], context=[], snapshot=snap)
        try:
            fut = _pool().submit(self._text_search, snap, text, where, k, vector is not None) if text else None
            if vector is not None:
                out.vector = self._vector_ids(snap, vector, "vector", where, k)
                if context:
                    out.context = self._vector_ids(snap, vector, "context_vector", where, k)
            if fut is not None:
                out.text, out.text_ideal = fut.result()
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"search failed: {exc}. Run `memcli doctor`.") from exc
        return out

    def _vector_ids(self, snapshot: Any, vector: Sequence[float], column: str, where: str | None,
                    k: int) -> list[tuple[int, float]]:
        rows = self.reader.vector(snapshot, vector, column, where, k, [], self.vector_nprobes(column))
        return [(int(r["_rowid"]), 1.0 - float(r["_distance"])) for r in rows]

    def _text_search(self, snapshot: Any, text: str, where: str | None, k: int,
                     meaning: bool = True) -> tuple[list[tuple[int, float]], float | None]:
        hits = self._text_ids(snapshot, text, where, k, meaning)
        return hits, (self.keyword_ideal(snapshot, text, where) if hits else None)

    def keyword_ideal(self, snapshot: Any, text: str, where: str | None) -> float:
        """What a memory matching the whole query would score: Σ over the query's index tokens of the best
        score that token alone reaches among the filtered memories (a token no memory holds counts as the
        best present one). A hit's BM25 over it tells a strong match (an identifier, most of the query) from
        an incidental one; no document frequencies needed (lance exposes none). Cached a while per token."""
        import lance

        from memcli.textnorm import FTS_PARAMS

        # with repetitions: the query's BM25 counts a token it says twice twice
        tokens = [t.text for t in lance.tokenize(query_text(text), **FTS_PARAMS)]
        now = time.monotonic()
        scores = []
        for tok in tokens:
            key = (tok, where)
            hit = self._token_best.get(key)
            if hit is None or now - hit[0] > TOKEN_BEST_TTL:
                if len(self._token_best) > 20_000:
                    self._token_best.clear()
                rows = self.reader.text(snapshot, tok, "search_text", where, 1, [])
                hit = self._token_best[key] = (now, float(rows[0]["_score"]) if rows else 0.0)
            scores.append(hit[1])
        present = [v for v in scores if v > 0]
        return sum(present) + max(present, default=0.0) * (len(scores) - len(present))

    def _text_ids(self, snapshot: Any, text: str, where: str | None, k: int,
                  meaning: bool = True) -> list[tuple[int, float]]:
        query = query_text(text).strip()
        if not query:
            return []
        self.ensure_fts_index()
        if not self._fts_ready:
            return []
        try:
            rows = self.reader.text(snapshot, query, "search_text", where, k, [])
        except (ValueError, RuntimeError, OSError) as exc:
            self._fts_ready = False  # dropped meanwhile (reindex): looked up again on the next search or write
            return self.keyword_search_failed(exc, meaning)  # or damaged: recall goes on with meaning, says the log
        return [(int(r["_rowid"]), float(r["_score"])) for r in rows]

    def fetch(self, candidates: Candidates, rowids: Sequence[int]) -> dict[int, Memory]:
        """Some candidates' whole rows (by row id), from the snapshot they were found on."""
        try:
            rows = self.reader.take(candidates.snapshot, list(rowids), COLUMNS)
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"reading the store failed: {exc}") from exc
        return {rid: row_to_memory(r) for rid, r in rows}

    def contents(self, candidates: Candidates, rowids: Sequence[int]) -> dict[int, str]:
        """Some candidates' text alone (by row id), from the snapshot they were found on."""
        try:
            return {rid: r["content"] for rid, r in self.reader.take(candidates.snapshot, list(rowids), ["content"])}
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"reading the store failed: {exc}") from exc

    # ---------------------------------------------------------------- reindex support
    def new_table(self, name: str, dim: int) -> Any:
        """A fresh memories table (reindex fills it, then :meth:`activate` switches to it)."""
        try:
            self.db.drop_table(name)
        except (ValueError, FileNotFoundError):
            pass
        return _create_keyed(self.db, name, memory_schema(dim), "id")

    def activate(self, name: str, identity: dict[str, Any]) -> None:
        """Point the store at another table built with another embedder; drop the old table."""
        old = self.table_name
        self.write_meta({"active_table": name, "embedder": json.dumps(identity),
                         "schema_version": str(SCHEMA_VERSION)})
        self.table_name, self.stored_identity, self.identity = name, identity, identity
        self.dim = int(identity["dim"])
        self.table = self.db.open_table(name)
        self.reader = Reader(self.table.to_lance())
        self._fts_ready = False
        self._token_best.clear()
        self.facts.forget()
        if old != name:
            try:
                self.db.drop_table(old)
            except (ValueError, FileNotFoundError, OSError):
                pass


def same_embedder(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (a.get("provider"), a.get("model"), int(a.get("dim", 0))) == (
        b.get("provider"), b.get("model"), int(b.get("dim", 0)))


def describe(identity: dict[str, Any]) -> str:
    return f"{identity.get('provider')}:{identity.get('model')} ({identity.get('dim')} dims)"


# New tables are written in lance's file format 2.1: 2.2 encodes a column of one repeated value (namespace,
# status, version, importance) so that taking a row decodes its whole fragment: at 1M memories (fragments of
# 262k-475k rows) fetching a recall's ~8 rows cost ~24 ms, and a 475k-row test table's row take 7.7 ms in 2.2
# against 1.5 ms in 2.1 (scans 14 / 7 ms). An existing table keeps the version it was created with.
NEW_TABLE_OPTIONS = {"new_table_data_storage_version": "2.1"}

# The key is declared in the schema the table is created with (the field metadata set_unenforced_primary_key
# writes): created first and declared after, a writer that opened the table in between merged without the key
# and could duplicate a row (seen with the board's tables; see boardstore.py).
PK_META = {b"lance-schema:unenforced-primary-key:position": b"1"}


def _create_keyed(db: Any, name: str, schema: Any, key: str) -> Any:
    """Create table ``name`` with ``key`` as its unenforced primary key from the first version on."""
    i = schema.get_field_index(key)
    field = schema.field(i)
    table = db.create_table(name, schema=schema.set(i, field.with_metadata({**(field.metadata or {}), **PK_META})))
    if not (table.schema.field(key).metadata or {}).get(next(iter(PK_META))):  # a lance that dropped it
        table.set_unenforced_primary_key(key)
    return table
