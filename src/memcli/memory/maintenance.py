"""Index upkeep and compaction of the memories table, and cached facts about it that let searches skip work.

A mixin of :class:`memcli.memory.store.MemoryStore` (it uses the store's table, reader and counts). Compaction is
done by one process at a time (an flock beside a local store) and retried on commit conflicts; vector indexes
get no deltas and are rebuilt once 10% of the rows are outside them (searched exactly meanwhile).
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from memcli.errors import StoreError, clean_message
from memcli.memory.reader import quote
from memcli.textnorm import FTS_PARAMS

log = logging.getLogger("memcli.memory.store")

VECTOR_INDEX_MIN_ROWS = 20_000  # below this an exact scan is fast enough (~7 ms at 10k rows here) and exact
VECTOR_COLUMNS = ["vector", "context_vector"]
# The keyword index's name carries its tokenizer's version: an index built with other settings is replaced
# (built anew, then the old one dropped) the first time the store is used. v2: stemmed stop words too.
FTS_INDEX = "search_text_v2_idx"
OLD_FTS_INDEXES = ("search_text_idx",)
FTS_EAGER_ROWS = 2_000  # below this many rows every write folds its rows into the keyword index
REMOTE_FOLD_SECONDS = 5.0  # on object storage, at most one such fold per process in this many seconds
# The ANN index is IVF_FLAT: √rows partitions of the raw vectors, a share of them searched exactly. Measured at
# 100k rows here (hash embedder, load ~14): built in 3–4 s where IVF_HNSW_SQ took 261 s and IVF_PQ 84 s; 25% of
# the partitions probed found 0.95 of exact search's top 5 (38%: 0.99) in ~8 ms against exact's 24–39 ms, where
# HNSW-SQ found 0.43 (ef 100 + refine: 0.94, as slow as exact). No quantisation: nothing to refine.
VECTOR_INDEX_KIND = "IVF_FLAT"
# Compaction merges fragments smaller than this: a fragment that reached it is left alone, so a compaction
# rewrites at most this many rows, not the whole table (with 1M rows per fragment every compaction of a 1M-row
# store rewrote it all)
COMPACT_ROWS = 1 << 18
NPROBE_SHARE = 0.25
# At 1M rows (1,000 partitions) 15% probed found 0.977 of exact's vector top 5 and recall's 0.990 in 18 ms, 25%
# 0.997 in 36 ms: bigger indexes probe a share that falls as 1/sqrt(partitions) (4.7 sqrt(p)), at most 25%.
NPROBE_SQRT = 4.7
KEYWORD_NOTE_SECONDS = 60.0  # a damaged keyword index is logged at most once a minute per process
# The background maintainer (a server's): how often it looks, and after how many new rows it folds them into
# the keyword and scalar indexes (rows outside the keyword index are scored with statistics of their own: an
# identifier among 100k unindexed rows no longer ranks as it would inside the index)
MAINTAIN_SECONDS = 10.0
FTS_REFRESH_ROWS = 5_000
# A server loads an ANN index whole into lance's index cache once it opens the store (and after a rebuild): its
# partitions are otherwise read as the first searches touch them, and at 1M rows (1,000 partitions, 149 probed)
# the first 30 recalls after a start took p90 57 ms against 23 ms warm (one search over every partition: 0.5 s).
# An index bigger than this is left to fill as searches go: the cache would hold it all (e5 at 1M: 1.5 GB).
WARM_INDEX_BYTES = 768 << 20


def vector_partitions(rows: int) -> int:
    return max(1, round(rows ** 0.5))


def vector_nprobes(rows: int) -> int:
    """Partitions probed per search: a share of those of an index over ``rows`` rows (it was built over
    fewer, at most half as many: a few more are probed, never fewer)."""
    p = vector_partitions(rows)
    return max(1, math.ceil(min(NPROBE_SHARE * p, NPROBE_SQRT * math.sqrt(p))))


def _vector_config(rows: int) -> Any:
    from lancedb.index import IvfFlat

    return IvfFlat(distance_type="cosine", num_partitions=vector_partitions(rows))


class TableFacts:
    """Facts about the table that each cost a query, kept for a few seconds. Another process may change one
    meanwhile, so every user either re-checks what it keeps or only uses the fact to save work."""

    TTL = 5.0

    def __init__(self) -> None:
        self._values: dict[Hashable, tuple[float, Any]] = {}

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        now = time.monotonic()
        hit = self._values.get(key)
        if hit is None or now - hit[0] > self.TTL:
            if len(self._values) > 256:  # keys include project names
                self._values.clear()
            hit = self._values[key] = (now, compute())
        return hit[1]

    def peek(self, key: Hashable) -> Any:
        hit = self._values.get(key)
        return None if hit is None else hit[1]

    def forget(self, *kinds: str) -> None:
        """Drop the facts of these kinds (a key is a kind, or a tuple starting with one); all without kinds."""
        if not kinds:
            self._values.clear()
            return
        for key in list(self._values):
            if (key[0] if isinstance(key, tuple) else key) in kinds:
                del self._values[key]


class IndexMaintenance:
    """Indexes, compaction and cached table facts (mixed into MemoryStore)."""

    table: Any
    uri: str
    _local: bool
    _fts_ready: bool
    _last_fold: float = -REMOTE_FOLD_SECONDS  # monotonic time of the last keyword-index fold (object storage)
    _keyword_noted: float = -KEYWORD_NOTE_SECONDS  # monotonic time a failing keyword index was last logged
    facts: TableFacts
    _writes_since_check: int
    auto_compact_fragments: int
    # a server's maintainer thread compacts and indexes (memcli.memory.maintenance.Maintainer): writes then
    # never compact or build an index themselves
    background_maintenance: bool = False
    vector_index_min_rows: int = VECTOR_INDEX_MIN_ROWS  # (a test's small store lowers them)
    fts_refresh_rows: int = FTS_REFRESH_ROWS

    # provided by MemoryStore
    audit: Any
    reader: Any
    count: Callable[..., int]
    _rows: Callable[..., list[dict[str, Any]]]

    # ---------------------------------------------------------------- indexes and compaction
    def index_names(self) -> dict[str, Any]:
        return {ix.name: ix for ix in self.table.list_indices()}

    def has_vector_index(self, column: str = "vector") -> bool:
        """Whether an ANN index exists (re-checked at most every few seconds: another process may add it)."""
        return self.vector_nprobes(column) is not None

    def vector_nprobes(self, column: str = "vector") -> int | None:
        """Partitions to probe on ``column``'s ANN index (None: no index, the search is exact)."""
        probes = self.facts.get("vector_index", lambda: {
            ix.columns[0]: vector_nprobes(int(ix.num_indexed_rows or 0))
            for ix in self.index_names().values() if ix.index_type.upper().startswith("IVF")})
        return probes.get(column)

    def warm_vector_indexes(self, budget: int = WARM_INDEX_BYTES) -> list[str]:
        """Load each ANN index (raw vectors of IVF_FLAT) of at most ``budget`` bytes into lance's index cache by
        one search over all its partitions; the columns warmed. Reads only: the answer is dropped."""
        import numpy as np

        warmed = []
        snap = self.reader.snapshot()
        for ix in self.table.list_indices():
            if not ix.index_type.upper().startswith("IVF"):
                continue
            col = ix.columns[0]
            rows = int(getattr(ix, "num_indexed_rows", 0) or 0)
            dim = snap.schema.field(col).type.list_size
            if rows * dim * 4 > budget:
                continue
            probe = np.random.default_rng(0).standard_normal(dim).astype(np.float32)
            probe /= np.linalg.norm(probe)
            # nprobes past the partition count means every partition (lance takes the smaller)
            self.reader.vector(snap, probe, col, None, 1, [], 4 * vector_partitions(rows) + 16)
            warmed.append(col)
        return warmed

    def ensure_fts_index(self) -> None:
        """Create the ICU full-text index (finds 数据库 inside a Chinese sentence) once there is data; replace
        one built with an older tokenizer version."""
        if self._fts_ready:
            return
        names = self.index_names()
        if FTS_INDEX not in names:
            if self.table.count_rows() == 0:
                return
            from lancedb.index import FTS

            try:
                self.table.create_index("search_text", config=FTS(**FTS_PARAMS, with_position=False),
                                        name=FTS_INDEX)
            except (ValueError, RuntimeError, OSError) as exc:
                if "already exists" not in str(exc).lower() and "conflict" not in str(exc).lower():
                    raise
            if any(old in names for old in OLD_FTS_INDEXES):
                log.info("keyword index rebuilt with tokenizer %s", FTS_INDEX)
        for old in OLD_FTS_INDEXES:
            if old in names:
                try:
                    self.table.drop_index(old)
                except (ValueError, RuntimeError, OSError) as exc:  # another process dropped it first
                    log.debug("dropping the old keyword index %s: %s", old, exc)
        self._fts_ready = True

    # ---------------------------------------------------------------- damaged indexes
    def keyword_search_failed(self, exc: BaseException, meaning: bool = True) -> list[Any]:
        """A keyword search failed on an index that is there (its files damaged or missing): a recall that
        also searches by ``meaning`` goes on with that alone, and the log says so (at most once a minute),
        naming the fix; a keyword-only one fails, naming it. An index dropped meanwhile (a reindex) is no news."""
        try:
            if FTS_INDEX not in self.index_names():
                return []
        except (OSError, RuntimeError, ValueError):
            return []
        if not meaning:
            raise StoreError(f"keyword search failed: the full-text index does not answer ({_first_line(exc)}); "
                             "`memcli compact` rebuilds it") from exc
        now = time.monotonic()
        if now - self._keyword_noted >= KEYWORD_NOTE_SECONDS:
            self._keyword_noted = now
            log.warning("the full-text index of %s does not answer (%s): recall uses meaning only until "
                        "`memcli compact` rebuilds it", self.uri, _first_line(exc))
        return []

    def index_problems(self) -> dict[str, str]:
        """The indexes that are there but do not answer (their files damaged or missing): name → why. Each is
        asked what it is (its statistics) and a full-text or vector index a query, which loads its parts."""
        import numpy as np

        problems: dict[str, str] = {}
        ds = self.table.to_lance()
        for ix in self.table.list_indices():
            kind = ix.index_type.upper()
            try:
                ds.stats.index_stats(ix.name)
                if kind == "FTS":
                    ds.to_table(columns=[], full_text_query={"query": "memcli", "columns": [ix.columns[0]]}, limit=1,
                                with_row_id=True, disable_scoring_autoprojection=True)
                elif kind.startswith("IVF"):
                    dim = ds.schema.field(ix.columns[0]).type.list_size
                    ds.to_table(columns=[], with_row_id=True, nearest={
                        "column": ix.columns[0], "q": np.full(dim, 1.0, dtype=np.float32), "k": 1,
                        "metric": "cosine", "use_index": True})
            except (OSError, RuntimeError, ValueError) as exc:  # ValueError: pyarrow's ArrowInvalid
                problems[ix.name] = _first_line(exc)
        return problems

    def repair_indexes(self) -> list[str]:
        """Rebuild every index that does not answer from the table's rows (an index holds nothing the rows do
        not: nothing is lost). Returns the names rebuilt."""
        problems = self.index_problems()
        if not problems:
            return []
        from lancedb.index import FTS

        by_name = self.index_names()
        n = self.table.count_rows()
        for name, why in problems.items():
            ix = by_name[name]
            col, kind = ix.columns[0], ix.index_type.upper()
            try:
                if kind == "FTS" and name != FTS_INDEX:  # an older keyword index: ensure_fts_index makes the new one
                    self.table.drop_index(name)
                elif kind == "FTS":
                    self.table.create_index(col, config=FTS(**FTS_PARAMS, with_position=False), name=name,
                                            replace=True)
                elif kind.startswith("IVF"):
                    self.table.create_index(col, config=_vector_config(n), name=name, replace=True)
                else:
                    self.table.create_scalar_index(col, index_type=kind, replace=True)
            except (OSError, RuntimeError, ValueError) as exc:  # the rows it is built from cannot be read either
                raise StoreError(f"the index {name} does not answer ({why}) and rebuilding it failed "
                                 f"({_first_line(exc)}): run `memcli doctor`") from exc
            log.warning("rebuilt the damaged index %s of %s (%s)", name, self.uri, why)
        self._fts_ready = False
        self._keyword_noted = -KEYWORD_NOTE_SECONDS
        self.facts.forget("vector_index")
        return sorted(problems)

    def ensure_scalar_indexes(self) -> None:
        """B-tree indexes for the exact lookups every write does (id, content hash, key), and for what the
        SessionStart digest reads of a big store: the newest memories (created_at), the important ones and one
        project's (a million rows' columns read whole took ~60 ms)."""
        if self.table.count_rows() < 1000:
            return
        have = {tuple(ix.columns) for ix in self.table.list_indices()}
        for col in ("id", "content_hash", "key", "namespace", "status", "created_at", "importance", "project"):
            if (col,) not in have and col in self.table.schema.names:
                try:
                    self.table.create_scalar_index(col, index_type="BITMAP" if col in ("namespace", "status")
                                                   else "BTREE")
                except (ValueError, RuntimeError, OSError) as exc:
                    if "already exists" not in str(exc).lower():
                        raise

    def ensure_vector_index(self, *, force: bool = False) -> bool:
        """An ANN index once the table is large enough for exact search to be slow."""
        n = self.table.count_rows()
        self.facts.forget("vector_index", "context")
        # Without thread context every context vector equals its own vector and is never searched: no index
        # for it (at 100k rows each HNSW build takes ~35 s here) until some memory has context.
        columns = VECTOR_COLUMNS if self.has_context() else ["vector"]
        todo = [c for c in columns if not self.has_vector_index(c)]
        if not todo or (n < self.vector_index_min_rows and not force) or n < 256:
            return False
        for col in todo:
            self.table.create_index(col, config=_vector_config(n), name=f"{col}_idx")
        self.facts.forget("vector_index")
        return True

    def rebuild_vector_indexes_if_stale(self, min_unindexed: int = 5000, fraction: float = 0.1) -> bool:
        """Rebuild the ANN indexes once many rows are outside them (they are searched exactly meanwhile), and
        one of another kind (IVF_HNSW_SQ, before issue 30: slow to build, and 0.43 of exact's top 5 with the
        hash embedder)."""
        stale = [ix for ix in self.table.list_indices() if ix.index_type.upper().startswith("IVF")
                 and (ix.num_unindexed_rows >= max(min_unindexed, fraction * ix.num_indexed_rows)
                      or _kind(ix.index_type) != VECTOR_INDEX_KIND)]
        if not stale:
            return False
        n = self.table.count_rows()
        for ix in stale:
            self.table.create_index(ix.columns[0], config=_vector_config(n), name=ix.name, replace=True)
        self.facts.forget("vector_index")
        return True

    def has_context(self) -> bool:
        """Whether any memory has thread context. Without any, every context vector equals its own vector
        and searching them again would find the same list."""
        return bool(self.facts.get("context", lambda: self.count("context IS NOT NULL") > 0))

    def sole_namespace(self) -> str | None:
        """The namespace of every memory, if they all share one. Searches of it need no namespace filter
        (~0.7 ms per search at 100k rows); the caller still checks the rows it keeps, for one another
        process may have just written elsewhere."""
        def compute() -> str | None:
            first = self.read_rows(None, ["namespace"], 1)
            ns = first[0]["namespace"] if first else None
            return ns if ns is not None and self.count(f"namespace != {quote(ns)}") == 0 else None

        return self.facts.get("sole_ns", compute)

    def size_hint(self) -> int:
        """How many memories the table holds (all namespaces: the keyword index's statistics are the whole
        table's), kept for a few seconds."""
        return int(self.facts.get("rows", lambda: self.table.count_rows()))

    def importance_varies(self) -> bool:
        """Whether any memory has another importance than the default 0.5. Used only to bound boosts."""
        return bool(self.facts.get("importance", lambda: self.count("importance IS NULL OR importance != 0.5") > 0))

    def has_project(self, project: str) -> bool:
        """Whether any memory belongs to ``project``. Used only to bound boosts."""
        return bool(self.facts.get(("project", project), lambda: self.count(f"project = {quote(project)}") > 0))

    def expiry_due(self, now: int) -> bool:
        """Whether any memory expires within a minute. When none does, a search can leave out the expiry
        filter (it costs ~3 ms at 100k rows, having no index) and drop the rare hit that expired meanwhile
        (say one imported already expired by another process)."""
        horizon = int(now) + 60_000
        return bool(self.facts.get("expiry", lambda: self.count(
            f"expires_at IS NOT NULL AND expires_at <= {horizon}") > 0))

    def has_inactive(self) -> bool:
        """Whether any memory is superseded or archived (memcli distill). When none is, a search can leave
        out the status filter and check the rows it keeps instead."""
        return bool(self.facts.get("inactive", lambda: self.count(
            "status IS NOT NULL AND status != 'active'") > 0))

    def fragment_count(self) -> int:
        return int(self.table.stats()["fragment_stats"]["num_fragments"])

    def after_write(self, rows: list[dict[str, Any]] | None = None) -> None:
        # what this process just wrote is seen at once; an update (no rows) may change importance or project
        if rows:
            self.facts.forget("rows")
        if rows and any(r.get("context") for r in rows):
            self.facts.forget("context")
        if rows and any(r.get("expires_at") is not None for r in rows):
            self.facts.forget("expiry")
        if rows and any(r.get("namespace") != self.facts.peek("sole_ns") for r in rows):
            self.facts.forget("sole_ns")
        if not rows or any(r.get("importance") != 0.5 for r in rows):
            self.facts.forget("importance")
        if not rows or any(r.get("project") for r in rows):
            self.facts.forget("project")
        if not rows or any(r.get("status") not in (None, "active") for r in rows):
            self.facts.forget("inactive")
        if not self._fts_ready:  # the first write creates the keyword index (later rows join it on compaction)
            try:
                self.ensure_fts_index()
            except (OSError, RuntimeError, ValueError) as exc:
                log.warning("creating the full-text index failed: %s", exc)
        elif rows:
            self._fold_small_fts()
        self._writes_since_check += 1
        if self.background_maintenance:  # the server's maintainer compacts and indexes, never this write
            return
        if self.auto_compact_fragments and self._writes_since_check >= max(4, self.auto_compact_fragments // 4):
            self._writes_since_check = 0
            try:
                if self.fragment_count() >= self.auto_compact_fragments:
                    self.compact(blocking=False)
            except (OSError, RuntimeError, ValueError, StoreError) as exc:
                # compaction is an optimisation; the write itself succeeded
                log.warning("automatic compaction failed: %s", exc)

    def fold_key_indexes(self) -> None:
        """Fold new rows into the id index (created once there are rows enough), so that look-ups by id and
        merges on it scan only the rows written since (an import calls this every so many rows)."""
        try:
            self.ensure_scalar_indexes()
            names = [ix.name for ix in self.table.list_indices() if tuple(ix.columns) == ("id",)]
            if names:
                self.table.to_lance().optimize.optimize_indices(index_names=names, num_indices_to_merge=1000)
        except (OSError, RuntimeError, ValueError) as exc:  # another writer's commit: only speed is lost
            log.debug("folding rows into the id index: %s", exc)

    def after_import(self, added: int) -> None:
        """After an import's chunks (written with ``maintain=False``): what this process knows of the table is
        forgotten, and the store is compacted and indexed once (unless a server's background maintainer does
        it: :attr:`background_maintenance`)."""
        self.facts.forget()
        self._fts_ready = False
        if self.background_maintenance:
            return
        try:
            self.compact(blocking=False)
        except (OSError, RuntimeError, ValueError, StoreError) as exc:  # the rows are in: only speed is lost
            log.warning("compaction after the import failed: %s", exc)

    def _fold_small_fts(self) -> None:
        """In a small store, fold new rows into the keyword index at once (~20 ms here). Lance scores rows
        outside the index with statistics of their own: in a fresh store the first memory (indexed alone)
        and the later ones (searched flat) got BM25 scores on different scales, and keyword evidence meant
        nothing until the first compaction. Large stores fold on compaction (their new rows are few).

        On object storage a fold costs ~80 ms and one more commit racing the other replicas' writes (bench/s3.py):
        there it folds at most every REMOTE_FOLD_SECONDS per process, so a burst of writes folds once."""
        if not self._local:
            now = time.monotonic()
            if now - self._last_fold < REMOTE_FOLD_SECONDS:
                return
            self._last_fold = now
        if self.facts.get("small_store", lambda: self.table.count_rows() < FTS_EAGER_ROWS) is not True:
            return
        try:
            self.table.to_lance().optimize.optimize_indices(index_names=[FTS_INDEX], num_indices_to_merge=1000)
        except (OSError, RuntimeError, ValueError) as exc:  # a concurrent writer: the next write folds them
            log.debug("folding new rows into the keyword index: %s", exc)

    @contextmanager
    def _compact_lock(self, blocking: bool) -> Iterator[bool]:
        """One compactor at a time across processes (an flock beside a local store; on s3:// a lease object
        written with a conditional PUT; on other object stores none: racing compactions are retried)."""
        if not self._local:
            if not self.uri.lower().startswith("s3://"):
                yield True
                return
            from memcli.memory.objectstore import CompactionLease

            with CompactionLease(self.uri, getattr(self, "storage_options", {})).hold(blocking) as owner:
                yield owner
            return
        import fcntl

        path = Path(self.uri) / ".compact.lock"
        with open(path, "a+") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def compact(self, *, blocking: bool = True, retries: int = 14) -> dict[str, Any]:
        """Merge small fragments, fold new rows into the indexes, drop old versions. Retries conflicts."""
        before = self.fragment_count()
        with self._compact_lock(blocking) as owner:
            if not owner:
                return {"compacted": False, "reason": "another process is compacting", "fragments": before}
            # before anything reads them (optimizing a damaged index fails); asking every index costs a load of
            # each, so the automatic compaction after writes (not blocking) leaves it to `memcli compact`
            repaired = self.repair_indexes() if blocking else []
            self.ensure_fts_index()
            self.ensure_scalar_indexes()
            self.ensure_vector_index()
            # Fold new rows into the keyword and scalar indexes first, merging their deltas into one
            # segment: lance merges only fragments that the same index segments cover. Vector indexes get
            # no deltas (merging HNSW deltas costs about a rebuild, and with deltas every compaction left
            # one more fragment behind); their new rows are searched exactly until the next rebuild.
            names = [ix.name for ix in self.table.list_indices() if not ix.index_type.upper().startswith("IVF")]
            if names:
                self._retry(lambda: self.table.to_lance().optimize.optimize_indices(
                    index_names=names, num_indices_to_merge=1000), retries)
            self._retry(lambda: self.table.to_lance().optimize.compact_files(target_rows_per_fragment=COMPACT_ROWS),
                        retries)
            self.rebuild_vector_indexes_if_stale()
            try:
                # the versions memcli distill tagged stay (undo restores them); the others go
                self.table.to_lance().cleanup_old_versions(older_than=timedelta(minutes=5),
                                                           error_if_tagged_old_versions=False)
            except (OSError, RuntimeError, ValueError) as exc:  # old versions are only disk space
                log.warning("cleanup of old versions failed: %s", exc)
            self.facts.forget("vector_index")
            self.audit.compact()
        return {"compacted": True, "fragments_before": before, "fragments": self.fragment_count(),
                "rebuilt_indexes": repaired}

    @staticmethod
    def _retry(op: Any, retries: int) -> None:
        """Run a maintenance commit, retrying on commit conflicts with another writer."""
        delay = 0.05
        for attempt in range(retries):
            try:
                op()
                return
            except (RuntimeError, OSError, ValueError) as exc:
                text = str(exc).lower()
                busy = "conflict" in text or "too many concurrent writers" in text
                if not busy or attempt == retries - 1:
                    raise StoreError(f"compaction failed: {exc}") from exc
                # jittered: writers that conflicted together must not retry in lockstep (~10 s in all)
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 1.0)

    def size_bytes(self) -> int:
        return int(self.table.stats().get("total_bytes", 0))

    def index_status(self) -> list[dict[str, Any]]:
        """Each index: name, kind, column, rows inside it and rows outside it (searched exactly or flat until
        the next refresh), when it was built. For ``stats`` and ``doctor``."""
        out = []
        for ix in self.table.list_indices():
            created = getattr(ix, "created_at", None)
            out.append({"name": ix.name, "kind": str(ix.index_type), "column": ix.columns[0],
                        "indexed_rows": int(getattr(ix, "num_indexed_rows", 0) or 0),
                        "unindexed_rows": int(getattr(ix, "num_unindexed_rows", 0) or 0),
                        "built_at": int(created.timestamp() * 1000) if created is not None else None})
        return sorted(out, key=lambda d: d["name"])

    def maintenance_due(self) -> list[str]:
        """What :meth:`maintain` would do now: ``compact`` (fragments piled up), ``keyword`` (new rows
        outside the keyword or scalar indexes), ``vector`` (no ANN index on a big table, or a stale one)."""
        due = []
        if self.fragment_count() >= max(self.auto_compact_fragments, 2):
            due.append("compact")
        status = self.index_status()
        n = self.table.count_rows()
        if FTS_INDEX not in {d["name"] for d in status} and n:
            due.append("keyword")
        elif any(not d["kind"].upper().startswith("IVF") and d["unindexed_rows"] >= self.fts_refresh_rows
                 for d in status):
            due.append("keyword")
        vectors = [d for d in status if d["kind"].upper().startswith("IVF")]
        if (not vectors and n >= max(self.vector_index_min_rows, 256)) or any(
                d["unindexed_rows"] >= max(5000, 0.1 * d["indexed_rows"]) or _kind(d["kind"]) != VECTOR_INDEX_KIND
                for d in vectors):
            due.append("vector")
        return due

    def maintain(self) -> list[str]:
        """One round of background upkeep: what :meth:`maintenance_due` says, by the compaction's owner (another
        process compacting: nothing now). Reads and writes go on meanwhile (each step is one commit of new
        index files or fragments; a search keeps its snapshot). Returns what was done."""
        due = self.maintenance_due()
        if not due:
            return []
        with self._compact_lock(False) as owner:
            if not owner:
                return []
            self.ensure_fts_index()
            self.ensure_scalar_indexes()
            if "compact" in due or "keyword" in due:
                names = [ix.name for ix in self.table.list_indices()
                         if not ix.index_type.upper().startswith("IVF")]
                if names:
                    self._retry(lambda: self.table.to_lance().optimize.optimize_indices(
                        index_names=names, num_indices_to_merge=1000), 14)
            if "compact" in due:
                self._retry(lambda: self.table.to_lance().optimize.compact_files(target_rows_per_fragment=COMPACT_ROWS),
                            14)
            if "vector" in due:
                self.ensure_vector_index()
                self.rebuild_vector_indexes_if_stale()
            self.facts.forget("vector_index")
        return due


class Maintainer:
    """A long-running process's background upkeep of one store (``memcli serve``): every MAINTAIN_SECONDS it
    runs :meth:`IndexMaintenance.maintain` (compaction, the keyword and scalar indexes' new rows, the ANN index
    from VECTOR_INDEX_MIN_ROWS rows and its rebuild once 10% of the rows are outside it). While it does,
    reads and writes go on (writes then never compact themselves: ``background_maintenance``)."""

    def __init__(self, store: "IndexMaintenance", interval: float = MAINTAIN_SECONDS) -> None:
        self.store = store
        self.interval = interval
        self.rounds = 0
        self.last: list[str] = []
        self.warmed: list[str] = []  # the columns whose ANN index was last loaded whole
        store.background_maintenance = True

    def run(self, stopping: threading.Event) -> None:
        """Until ``stopping`` is set (first round at once: a store opened at 1M rows may lack its indexes)."""
        first = True
        while not stopping.is_set():
            try:
                started = time.monotonic()
                if first:  # the ANN index is loaded whole at the start, and again after each rebuild
                    first = False
                    self._warm()
                did = self.store.maintain()
                if did:
                    log.info("maintenance of %s: %s in %.1f s", self.store.uri, ", ".join(did),
                             time.monotonic() - started)
                if "vector" in did:
                    self._warm()
                self.last = did
            except (OSError, RuntimeError, ValueError, StoreError) as exc:  # tried again next round
                log.warning("background maintenance failed: %s", _first_line(exc))
            self.rounds += 1
            stopping.wait(self.interval)

    def _warm(self) -> None:
        started = time.monotonic()
        self.warmed = self.store.warm_vector_indexes()
        if self.warmed:
            log.info("%s: ANN index of %s loaded in %.1f s", self.store.uri, ", ".join(self.warmed),
                     time.monotonic() - started)


def _kind(index_type: str) -> str:
    """An index type as lance names it in one place or another (IvfFlat, IVF_FLAT) → IVF_FLAT."""
    t = str(index_type).replace("_", "").upper()
    return {"IVFFLAT": "IVF_FLAT", "IVFHNSWSQ": "IVF_HNSW_SQ", "IVFPQ": "IVF_PQ"}.get(t, str(index_type))


def _first_line(exc: BaseException) -> str:
    """An engine error's first line, without its source locations."""
    text = str(exc).strip()
    return clean_message(text.splitlines()[0]) if text else type(exc).__name__
