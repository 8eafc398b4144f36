"""MemoryService: the core API every face calls (remember, recall, list, get, update, forget, ...).

It owns behaviour (validation, de-duplication, upserts, versions, hybrid recall); storage lives in
:class:`memcli.memory.store.MemoryStore`. It never imports a face and never reads configuration by itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from memcli.errors import NotFoundError, ValidationError, VersionConflictError
from memcli.memory.activity import daily_counts, scope_counts, store_stats
from memcli.memory import current
from memcli.memory.audit import AuditEvent, clip, diff
from memcli.memory.lookups import attach_context, live_by_identity, live_by_key, neighbours
from memcli.memory.records import embed_memories, redact_memory, reembed_all
from memcli.memory.records import import_records as import_stream
from memcli.memory.rows import memory_to_row
from memcli.memory.search import (
    SearchOptions,
    best_first,
    boost_span,
    build_where,
    query_baseline,
    rank,
    relevance,
    shortlist,
)
from memcli.memory.store import ACTIVE_FILTER, Candidates, quote
from memcli.models import (
    DEFAULT_NAMESPACE,
    SOURCES,
    DuplicateCheck,
    Memory,
    NewMemory,
    RecallHit,
    RememberResult,
    content_hash,
    new_id,
    normalise_scope,
    now_ms,
    parse_duration_ms,
    parse_time_ms,
    validate_content,
    validate_importance,
    validate_key,
    validate_metadata,
    validate_namespace,
    validate_project,
    validate_tags,
    validate_thread,
    validate_time_ms,
    write_note,
)
from memcli.redact import redact, redact_fields
from memcli.textnorm import script_of

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.embedders import Embedder
    from memcli.memory.store import MemoryStore

Progress = Callable[[int, int], None]


class MemoryService:
    """The memory core, bound to one store and one embedder."""

    def __init__(self, store: "MemoryStore", embedder: "Embedder", *, namespace: str = DEFAULT_NAMESPACE,
                 agent: str | None = None, project: str | None = None, duplicate_threshold: float = 0.90,
                 search: SearchOptions | None = None, actor: str | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.namespace = validate_namespace(namespace)
        self.agent = agent
        self.project = project
        self.duplicate_threshold = duplicate_threshold
        self.search = search or SearchOptions()
        self.calibration = embedder.calibration()
        # who the audit log names for this service's changes: a face may set it (the team server: the token's
        # agent); else the configured agent, else the face (source) of each call
        self.actor = actor

    def _actor(self, source: str) -> str:
        if self.actor:
            return self.actor
        return normalise_scope(agent=self.agent) if self.agent else source

    def _audit(self, events: list[AuditEvent]) -> None:
        self.store.audit.record(events)

    @classmethod
    def open(cls, config: "Config", *, project: str | None = None, allow_mismatch: bool = False) -> "MemoryService":
        """Open the store and embedder a Config describes (the home is made private, or tightened)."""
        from memcli.embedders import make_embedder
        from memcli.home import secure_home
        from memcli.memory.store import MemoryStore

        try:
            secure_home(config.home)
        except OSError:
            pass  # not a usable directory: the store says so, clearly, below

        embedder = make_embedder(config.embedder)
        store = MemoryStore(config.data_uri, embedder.identity(), allow_mismatch=allow_mismatch,
                            auto_compact_fragments=config.auto_compact_fragments,
                            storage_options=config.storage_options or None)
        return cls(store, embedder, namespace=config.namespace, agent=config.agent, project=project,
                   duplicate_threshold=config.duplicate_threshold)

    def close(self) -> None:
        self.embedder.close()

    # ------------------------------------------------------------------ helpers
    def _ns(self, namespace: str | None) -> str:
        return validate_namespace(namespace) if namespace is not None else self.namespace

    def _prepare(self, item: NewMemory, source: str, now: int) -> Memory:
        if source not in SOURCES:
            raise ValidationError(f"unknown source {source!r}")
        content = validate_content(item.content)
        metadata = validate_metadata(item.metadata)
        ttl_ms = parse_duration_ms(item.ttl) if item.ttl is not None else None
        created = validate_time_ms(item.created_at, "created_at") if item.created_at is not None else now
        mem = Memory(
            id=new_id(), content=content, namespace=self._ns(item.namespace),
            project=validate_project(item.project) if item.project is not None else self.project,
            scope=normalise_scope(item.scope, item.agent) if (item.scope or item.agent) else (
                normalise_scope(agent=self.agent) if self.agent else "global"),
            tags=validate_tags(item.tags), importance=validate_importance(item.importance),
            key=validate_key(item.key), metadata=metadata, source=source,
            created_at=created, updated_at=now, expires_at=(now + ttl_ms) if ttl_ms else None, version=1,
            content_hash=content_hash(content), thread=validate_thread(item.thread),
        )
        if not item.keep_secrets:  # secrets pasted by accident never reach the store, in any field (memcli.redact)
            redact_memory(mem)
        return mem

    def _similar(self, vectors: Sequence[Any], namespaces: Sequence[str], threshold: float,
                 k: int = 5) -> list[list[RecallHit]]:
        """The stored memories at least ``threshold`` similar to each vector, of its namespace: one search for all."""
        now = now_ms()
        found = neighbours(self.store, [(v, build_where(namespace=ns, now=now)) for v, ns in zip(vectors, namespaces)],
                           k + 1)
        return [[RecallHit(memory=m, score=s, similarity=s) for m, s in ((m, self.calibration(c)) for m, c in near)
                 if s >= threshold][:k] for near in found]

    # ------------------------------------------------------------------ remember
    def remember(self, content: str, *, tags: Sequence[str] | None = None, scope: str | None = None,
                 agent: str | None = None, importance: float = 0.5, key: str | None = None,
                 ttl: str | int | None = None, metadata: dict[str, Any] | str | None = None,
                 namespace: str | None = None, project: str | None = None, source: str = "cli",
                 created_at: int | None = None, thread: str | None = None,
                 keep_secrets: bool = False) -> RememberResult:
        """Store one memory. Same content again (same namespace and scope) returns the existing id and
        writes nothing; the same ``key`` again updates that memory; similar memories are reported in
        ``duplicate_of`` but the write still happens. ``thread`` groups memories of one conversation: each
        is then also indexed with the thread's previous memories as context. Secrets in the content and
        metadata are redacted unless ``keep_secrets``."""
        item = NewMemory(content=content, tags=tags, scope=scope, agent=agent, importance=importance, key=key,
                         ttl=ttl, metadata=metadata, namespace=namespace, project=project, created_at=created_at,
                         thread=thread, keep_secrets=bool(keep_secrets))
        return self.remember_many([item], source=source)[0]

    def remember_many(self, items: Sequence[NewMemory], *, source: str = "cli",
                      progress: Progress | None = None, actors: Sequence[str | None] | None = None,
                      sources: Sequence[str] | None = None) -> list[RememberResult]:
        """Store several memories with one batched embedding call and one write. For a server batching several
        callers' writes: ``actors``, who the audit log names for each item (default this service's), and
        ``sources``, the face each item is recorded as (default ``source``)."""
        def src(i: int) -> str:
            return sources[i] if sources is not None else source

        def actor(i: int) -> str:
            return (actors[i] if actors is not None else None) or self._actor(src(i))

        now = now_ms()
        mems = []
        for n, it in enumerate(items):  # validate everything before writing
            try:
                mems.append(self._prepare(it, src(n), now))
            except ValidationError as exc:
                if len(items) == 1:
                    raise
                raise ValidationError(f"memory {n + 1}: {exc.message}") from None
        results: list[RememberResult | None] = [None] * len(mems)
        to_write: list[int] = []
        seen: dict[tuple[str, str, str], int] = {}
        new_keys: dict[tuple[str, str], int] = {}
        later: list[tuple[int, int | str]] = []  # (item, the memory its key names: an item of this batch, or an id)
        again: list[tuple[int, int]] = []  # (item, the earlier item of this batch with the same content)
        stored = live_by_identity(self.store, mems, now)  # one query for the whole batch, not one per item
        for i, m in enumerate(mems):
            if m.key is not None:
                existing = live_by_key(self.store, m)
                if existing:
                    self._upsert_by_key(existing, m, src(i), actor(i), items[i].keep_secrets)
                    results[i] = RememberResult(memory_id=existing.id, created=False, updated=True)
                    continue
                if (m.namespace, m.key) in new_keys:  # the same new key twice in one batch: the later updates it
                    later.append((i, new_keys[(m.namespace, m.key)]))
                    continue
            ident = (m.namespace, m.scope, m.content_hash)
            if ident in seen:  # told the first copy's id once the write below settled which id that is
                again.append((i, seen[ident]))
                continue
            if ident in stored:
                results[i] = RememberResult(memory_id=stored[ident], created=False)
                continue
            seen[ident] = i
            to_write.append(i)
            if m.key is not None:
                new_keys[(m.namespace, m.key)] = i
        if to_write:
            attach_context(self.store, [mems[i] for i in to_write])
            vectors, ctx_vectors = embed_memories(self.embedder, [mems[i] for i in to_write], progress)
            rows: dict[int, dict[str, Any]] = {}
            links: dict[int, list[Any]] = {}
            earlier: list[tuple[Memory, Any]] = []  # this batch's memories before this one (a server's group)
            # one search serves both: the close ones (duplicates, related) and the candidates of a change
            nears = self._similar(vectors, [mems[i].namespace for i in to_write],
                                  min(self.duplicate_threshold, current.MIN_SIMILARITY), k=max(5, current.CANDIDATES))
            for i, vec, cvec, near in zip(to_write, vectors, ctx_vectors, nears):
                similar = self._relate(mems[i].content, [h for h in near if h.similarity >= self.duplicate_threshold][:5])
                links[i] = current.changed_by(self, mems[i], near + current.in_batch(self, mems[i], vec, earlier))
                earlier.append((mems[i], vec))
                mems[i].updates = [old.id for old, _ in links[i]]
                results[i] = RememberResult(
                    memory_id=mems[i].id, duplicate_of=[h.memory.id for h in similar if _same(h)],
                    related=[{"memory_id": h.memory.id, **(h.relation or {})} for h in similar if not _same(h)])
                rows[i] = memory_to_row(mems[i], vec, cvec)
            # another thread, process or replica may have stored the same content since the look above: look
            # again and add under the store's write lock (memcli.memory.writelock), so each content is stored once
            # (a new key too: two writers remembering one new key at once must not store two memories with it)
            idents = [_ident(mems[i]) for i in rows] + [(mems[i].namespace, "\x00key", mems[i].key or "")
                                                        for i in rows if mems[i].key is not None]
            with self.store.write_lock.hold(idents):
                stored = live_by_identity(self.store, [mems[i] for i in rows], now)
                for i in [i for i in rows if _ident(mems[i]) in stored]:
                    results[i] = RememberResult(memory_id=stored[_ident(mems[i])], created=False)
                    del rows[i]
                for i in [i for i in rows if mems[i].key is not None]:
                    existing = live_by_key(self.store, mems[i])
                    if existing:
                        later.append((i, existing.id))
                        del rows[i]
                gone = {mems[i].id for i in to_write if i not in rows}  # items of this batch not written after all
                for i in [i for i in rows if any(old.id in gone for old, _ in links[i])]:
                    links[i] = [(old, why) for old, why in links[i] if old.id not in gone]
                    mems[i].updates = [old.id for old, _ in links[i]]
                    rows[i]["updates"] = memory_to_row(mems[i], [])["updates"]
                self.store.add(list(rows.values()), maintain=False)
            if rows:  # outside the lock: it may compact
                self.store.after_write(list(rows.values()))
                self._audit([AuditEvent(memory_id=mems[i].id, action="remember", actor=actor(i),
                                        namespace=mems[i].namespace, version=1,
                                        note=write_note(items[i].keep_secrets, "updates " + ", ".join(
                                            mems[i].updates) if mems[i].updates else "")) for i in rows])
                for i in rows:  # the older memories each new one changed: outdated by it
                    current.mark(self, [(mems[i], old, why) for old, why in links[i]], actor(i))
        for i, target in later:
            mid = mems[target].id if isinstance(target, int) else target
            if isinstance(target, int) and target not in rows:  # that item was not written after all
                results[i] = RememberResult(memory_id=results[target].memory_id, created=False)  # type: ignore[union-attr]
                continue
            existing = self.store.get(mid)
            if existing is None:
                raise VersionConflictError(f"memory {mid} was forgotten while key {mems[i].key} was remembered; try again")
            self._upsert_by_key(existing, mems[i], src(i), actor(i), items[i].keep_secrets)
            results[i] = RememberResult(memory_id=mid, created=False, updated=True)
        for i, first in again:  # the first copy may have been found stored by another writer under the lock
            results[i] = RememberResult(memory_id=results[first].memory_id, created=False)  # type: ignore[union-attr]
        return [r for r in results if r is not None]

    def _upsert_by_key(self, old: Memory, new: Memory, source: str, actor: str | None = None,
                       keep_secrets: bool = False) -> None:
        values: dict[str, Any] = {"tags": new.tags, "importance": new.importance, "scope": new.scope,
                                  "metadata": new.metadata, "expires_at": new.expires_at, "updated_at": new.updated_at,
                                  "version": old.version + 1, "source": new.source}
        if not old.active:  # remembered again under its key: alive again
            values["status"] = "active"
        if new.content_hash != old.content_hash:
            values.update(content=new.content, content_hash=new.content_hash)
            values.update(self._vector_values(new.content, old.context))
        if not self.store.update(old.id, values, expected_version=old.version):
            raise VersionConflictError(f"memory {old.id} changed while it was being updated; try again")
        self._audit([AuditEvent(memory_id=old.id, action="update", actor=actor or self._actor(source),
                                namespace=old.namespace, version=old.version + 1,
                                note=write_note(keep_secrets, f"key {new.key}"),
                                changes=diff(_fields(old), values))])

    def _vector_values(self, content: str, context: list[str]) -> dict[str, Any]:
        probe = Memory(id="", content=content, context=list(context))
        own, ctx = embed_memories(self.embedder, [probe])
        return {"vector": [float(x) for x in own[0]], "context_vector": [float(x) for x in ctx[0]]}

    # ------------------------------------------------------------------ recall
    def recall(self, query: str, *, top_k: int = 5, namespace: str | None = None, scope: str | None = None,
               agent: str | None = None, tags: Sequence[str] | None = None, since: int | None = None,
               until: int | None = None, project: str | None = None, project_only: bool = False,
               include_expired: bool = False, explain: bool = False, mode: str | None = None,
               min_score: float = 0.0, include_archived: bool = False, words: bool = True,
               other_script_lift: float = 0.0, key: str | None = None, source: str | None = None,
               as_of: int | str | None = None) -> list[RecallHit]:
        """Hybrid recall: the memories most relevant to ``query``, filtered before top-k (superseded and
        archived memories only with ``include_archived``). With ``explain``, ``words`` also names the query
        words each keyword hit holds (for people; the hooks read only the signals and skip it).
        ``other_script_lift`` is added to the cosines of memories written in another script than the query
        (Chinese and Latin) before they are ranked: the bundled e5 scores two texts of one language higher, so
        a Chinese question's English answer ranks under Chinese memories that do not answer it (the prompt
        hook's breadth gains from it: :mod:`memcli.hooks.inject`). What is current comes first: a memory a later one
        changed ranks just below it (memcli.memory.current); ``as_of`` (epoch ms, or a date or duration ago) recalls what was true then —
        memories written by that time, outdated only by ones written by then."""
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("the query is empty: say what to recall")
        query = query.strip()[:4000]
        if not 1 <= int(top_k) <= 1000:
            raise ValidationError("top_k must be between 1 and 1000")
        if not 0.0 <= float(min_score) <= 1.0:  # NaN too
            raise ValidationError("min_score must be between 0 and 1")
        scopes = [normalise_scope(scope, agent)] if (scope or agent) else None
        now = now_ms()
        if as_of is not None:
            as_of = parse_time_ms(as_of) if isinstance(as_of, str) else validate_time_ms(as_of, "as_of")
            until = as_of if until is None else min(int(until), as_of)
        proj = project if project is not None else self.project
        # Filters that would exclude nothing (yet) are left out of the searches, and the rows kept are checked
        # instead: the expiry filter when nothing is about to expire (no index; ~3 ms at 100k rows), the
        # namespace filter when every memory is in this namespace.
        ns = self._ns(namespace)
        post_expiry = not include_expired and not self.store.expiry_due(now)
        post_ns = self.store.sole_namespace() == ns
        post_status = not include_archived and not self.store.has_inactive()  # nothing distilled yet
        where = build_where(namespace=None if post_ns else ns, scopes=scopes, tags=validate_tags(tags),
                            since=since, until=until, project=proj if project_only else None,
                            include_expired=include_expired or post_expiry, now=now,
                            include_archived=include_archived or post_status, key=key, source=source)
        mode = mode or self.search.mode
        if mode not in ("hybrid", "vector", "text"):
            raise ValidationError("mode must be hybrid, vector or text")
        n = max(self.search.candidates, top_k * 2)
        qvec = self.embedder.embed_query(query) if mode != "text" else None
        # plain dense ("vector" mode) searches the own vectors only; without any thread context every context
        # vector equals its own vector and a second search would find the same list
        context = mode == "hybrid" and self.store.has_context()
        cands = self.store.search(text=query if mode != "vector" else None, vector=qvec, where=where, k=n,
                                  context=context)
        ctx_hits = cands.context if context else cands.vector if mode == "hybrid" else []
        lift = self._script_lift(query, cands, other_script_lift) if other_script_lift and qvec is not None \
            else None
        rel = relevance(cands.vector, ctx_hits, cands.text, self.search, cands.text_ideal,
                        size=self.store.size_hint() if cands.text else None, lift=lift)
        # Only the candidates that can still win once boosts are added are read (in one take: at 100k rows
        # here reading 40 whole rows cost 3.3 ms, reading them light and the winners whole after 4+ ms).
        span = boost_span(self.search, importance_varies=self.store.importance_varies(),
                          project_boost=bool(proj) and self.store.has_project(proj))
        rows: dict[int, Memory] = {}
        while True:
            keys = shortlist(rel, top_k, span)
            rows.update(self.store.fetch(cands, [k for k in keys if k not in rows]))
            gone = [k for k in keys if k not in rows or rows[k].namespace != ns
                    or (post_expiry and rows[k].expires_at is not None and rows[k].expires_at <= now)
                    or (post_status and not rows[k].active)]
            if not gone:
                break
            for k in gone:  # expired or written elsewhere since the checks: the next candidate takes its place
                rel.pop(k)
        hits = rank(rel, {k: rows[k] for k in keys}, calibrate=self.calibration, opts=self.search, now=now,
                    project=proj, top_k=top_k, explain=explain, query=query if words else None,
                    relevance_of=self.embedder.relevance(), baseline=query_baseline(cands.vector))
        if any(h.memory.outdated_by for h in hits) or as_of is not None:
            full = build_where(namespace=ns, scopes=scopes, tags=validate_tags(tags), since=since, until=until,
                               project=proj if project_only else None, include_expired=include_expired, now=now,
                               include_archived=include_archived, key=key, source=source)
            hits = best_first(current.current_first(self, hits, where=full, top_k=top_k, as_of=as_of))
        return [h for h in hits if h.score >= min_score]

    def _script_lift(self, query: str, cands: Candidates, amount: float) -> dict[int, float]:
        """``amount`` for each vector candidate written in another script than ``query``."""
        keys = {k for k, _ in cands.vector} | {k for k, _ in cands.context}
        script = script_of(query)
        return {k: amount for k, text in self.store.contents(cands, sorted(keys)).items()
                if script_of(text) != script}

    def check_duplicate(self, content: str, *, namespace: str | None = None,
                        threshold: float | None = None) -> DuplicateCheck:
        """Is this content already remembered? Memories with a similarity ≥ threshold are listed, each with
        its relation to ``content``; it is a duplicate only when one states the same fact."""
        text = redact(validate_content(content))  # as it would be stored
        thr = self.duplicate_threshold if threshold is None else float(threshold)
        if not 0.0 <= thr <= 1.0:
            raise ValidationError("threshold must be between 0 and 1")
        ns = self._ns(namespace)
        exact = self.store.find(f"namespace = {quote(ns)} AND content_hash = {quote(content_hash(text))} "
                                f"AND {ACTIVE_FILTER}", 5)
        similar = [RecallHit(memory=m, score=1.0, similarity=1.0) for m in exact]
        for h in self._similar([self.embedder.embed_passages([text])[0]], [ns], thr)[0]:
            if all(h.memory.id != s.memory.id for s in similar):
                similar.append(h)
        similar = self._relate(text, similar)
        return DuplicateCheck(is_duplicate=any(_same(h) for h in similar), similar=similar)

    @staticmethod
    def _relate(text: str, hits: list[RecallHit]) -> list[RecallHit]:
        """Say of each similar memory whether it states the same fact as ``text`` (memcli.facts.samefact): close in
        meaning is not the same fact ("always" / "never", 30 s / 30 min, staging / production)."""
        from memcli.facts.samefact import merge_verdict

        for h in hits:
            h.relation = merge_verdict(h.memory.content, text).item()
        return hits

    # ------------------------------------------------------------------ read / change / delete
    def _id_ns(self, namespace: str | None, all_namespaces: bool) -> str | None:
        return None if all_namespaces else self._ns(namespace)  # where an id is looked up (None: everywhere)

    def get(self, ref: str, *, namespace: str | None = None, all_namespaces: bool = False) -> Memory:
        """One memory by id or unique prefix, of the caller's namespace (or ``namespace``; ``all_namespaces``:
        of any): another namespace's memory is "not found", as an id nobody has."""
        ns = self._id_ns(namespace, all_namespaces)
        mem = self.store.get(self.store.resolve_id(ref, namespace=ns))
        if mem is None or (ns is not None and mem.namespace != ns):  # forgotten (or moved) since it was resolved
            raise NotFoundError(f"no memory with id {ref}" + (f" in namespace {ns!r}" if ns is not None else ""))
        return mem

    def list(self, *, namespace: str | None = None, all_namespaces: bool = False, scope: str | None = None,
             agent: str | None = None, tags: Sequence[str] | None = None, since: int | None = None,
             until: int | None = None, project: str | None = None, source: str | None = None,
             include_expired: bool = False, limit: int = 50, offset: int = 0,
             include_archived: bool = False, key: str | None = None) -> list[Memory]:
        """Memories matching exact filters, newest first (superseded/archived only with ``include_archived``)."""
        if not 0 < int(limit) <= 100_000 or int(offset) < 0:
            raise ValidationError("limit must be 1..100000 and offset ≥ 0")
        scopes = [normalise_scope(scope, agent)] if (scope or agent) else None
        where = build_where(namespace=None if all_namespaces else self._ns(namespace), scopes=scopes,
                            tags=validate_tags(tags), since=since, until=until, project=project, source=source,
                            include_expired=include_expired, now=now_ms(), include_archived=include_archived,
                            key=key)
        return self.store.page(where, limit=int(limit), offset=int(offset))

    def update(self, ref: str, *, content: str | None = None, tags: Sequence[str] | None = None,
               importance: float | None = None, scope: str | None = None, agent: str | None = None,
               metadata: dict[str, Any] | str | None = None, ttl: str | int | None = None,
               expected_version: int | None = None, source: str = "cli", action: str = "update",
               note: str = "", keep_secrets: bool = False, namespace: str | None = None) -> Memory:
        """Change a memory of the caller's namespace (or ``namespace``); re-embeds only when the content
        changes; version + 1. ``action``/``note``: what the audit log calls the change (a team space's LLM
        merge records "merge"). Secrets in the new content and metadata are redacted unless ``keep_secrets``."""
        mem = self.get(ref, namespace=namespace)
        if expected_version is not None and int(expected_version) != mem.version:
            raise VersionConflictError(
                f"memory {mem.id} is at version {mem.version}, not {expected_version}: it changed since you read it",
                current_version=mem.version)
        given = {"content": validate_content(content) if content is not None else None,
                 "tags": validate_tags(tags) if tags is not None else None,
                 "metadata": validate_metadata(metadata) if metadata is not None else None}
        if not keep_secrets:  # the store and the audit log's diff get the redacted values
            given = redact_fields(given)
        values: dict[str, Any] = {}
        if given["content"] is not None:
            text = given["content"]
            if content_hash(text) != mem.content_hash or text != mem.content:
                values.update(content=text, content_hash=content_hash(text))
                if content_hash(text) != mem.content_hash:
                    values.update(self._vector_values(text, mem.context))
        if given["tags"] is not None:
            values["tags"] = given["tags"]
        if importance is not None:
            values["importance"] = validate_importance(importance)
        if scope is not None or agent is not None:
            values["scope"] = normalise_scope(scope, agent)
        if given["metadata"] is not None:
            values["metadata"] = given["metadata"]
        if ttl is not None:
            keep = isinstance(ttl, str) and ttl.strip().lower() in ("never", "none")
            values["expires_at"] = None if keep else now_ms() + parse_duration_ms(ttl)
        if not values:
            return mem
        values.update(updated_at=now_ms(), version=mem.version + 1)
        if not self.store.update(mem.id, values, expected_version=mem.version):
            raise VersionConflictError(f"memory {mem.id} changed while it was being updated; read it and try again")
        self._audit([AuditEvent(memory_id=mem.id, action=action, actor=self._actor(source), namespace=mem.namespace,
                                version=mem.version + 1, changes=diff(_fields(mem), values),
                                note=write_note(keep_secrets, note))])
        updated = self.store.get(mem.id)
        assert updated is not None
        if "content" in values and updated.updates:  # corrected: does it still change what it made outdated?
            current.recheck(self, updated, self._actor(source))
            updated = self.store.get(mem.id) or updated
        return updated

    def forget(self, refs: Sequence[str] | str, *, source: str = "cli",
               expected_version: int | None = None, namespace: str | None = None) -> list[str]:
        """Delete memories of the caller's namespace (or ``namespace``) by id or unique prefix, every id resolved
        first. ``expected_version`` (one memory only): refuse (412) unless it is still at that version."""
        if isinstance(refs, str):
            refs = [refs]
        if not refs:
            raise ValidationError("give at least one memory id")
        ns = self._id_ns(namespace, False)
        ids = list(dict.fromkeys(self.store.resolve_id(r, namespace=ns) for r in refs))
        gone = self.store.get_many(ids)
        if expected_version is not None:
            if len(gone) != 1:
                raise ValidationError("an expected version applies to one memory at a time")
            if gone[0].version != int(expected_version):
                raise VersionConflictError(f"memory {gone[0].id} is at version {gone[0].version}, not "
                                           f"{expected_version}: it changed since you read it",
                                           current_version=gone[0].version)
        deleted = self.store.delete(ids, expected_version=expected_version)
        if expected_version is not None and not deleted:  # changed between the read and the delete
            raise VersionConflictError(f"memory {ids[0]} changed while it was being deleted; read it and try again")
        self._audit([AuditEvent(memory_id=m.id, action="forget", actor=self._actor(source), namespace=m.namespace,
                                version=m.version, changes={"content": [clip(m.content), None]}) for m in gone])
        if any(m.updates or m.outdated_by for m in gone):  # the marks they made, and the lists they are on
            current.unlink(self, gone, self._actor(source))
        return ids

    def history(self, ref: str, *, namespace: str | None = None, all_namespaces: bool = False) -> list[AuditEvent]:
        """Who changed this memory of the caller's namespace (or ``namespace``; ``all_namespaces``: of any),
        how and when, oldest first (a forgotten memory's full id still works)."""
        ns = self._id_ns(namespace, all_namespaces)
        try:
            mid = self.store.resolve_id(ref, namespace=ns)
        except NotFoundError:  # forgotten: the audit log still knows it (by a short id too)
            ref_id = self.store.audit.resolve(ref, ns)
            events = self.store.audit.history(ref_id) if ref_id else []
            if not events or (ns is not None and any(e.namespace != ns for e in events)):
                raise
            return events
        return self.store.audit.history(mid)

    # ------------------------------------------------------------------ export / import
    def export(self, *, namespace: str | None = None, scope: str | None = None, tags: Sequence[str] | None = None,
               with_vectors: bool = False, include_expired: bool = True,
               include_archived: bool = False) -> Iterator[Memory]:
        """Every active memory (of every namespace and scope unless filtered; superseded and archived ones
        with ``include_archived``), oldest first."""
        where = build_where(namespace=validate_namespace(namespace) if namespace else None,
                            scopes=[normalise_scope(scope)] if scope else None, tags=validate_tags(tags),
                            include_expired=include_expired, now=now_ms(), include_archived=include_archived)
        for batch in self.store.iter_sorted(where, with_vector=with_vectors):  # streamed: flat memory at 1M
            yield from batch

    def import_records(self, records: Iterable[dict[str, Any]], *, vectors_identity: dict[str, Any] | None = None,
                       progress: Progress | None = None, batch: int = 64, keep_secrets: bool = False,
                       total: int | None = None) -> dict[str, int]:
        """Import full-fidelity records (export's JSONL), streamed chunk by chunk (:func:`records.import_records`).
        Idempotent by id within the record's namespace (an id another namespace holds is imported under an id
        derived from both: the same memory may be in two spaces); vectors reused when the exporting embedder
        matches and redaction changed nothing, else re-embedded. Secrets are redacted unless ``keep_secrets``."""
        return import_stream(self, records, vectors_identity=vectors_identity, progress=progress, batch=batch,
                             keep_secrets=keep_secrets, total=total)

    # ------------------------------------------------------------------ maintenance
    def stats(self) -> dict[str, Any]:
        """What the store holds: counts by status, namespace, scope and tag, the embedder, size and indexes."""
        return store_stats(self.store, now=now_ms())

    def scope_counts(self) -> dict[str, Any]:
        """Memories per namespace and scope, as ``list`` shows them (the web view's sidebar)."""
        return scope_counts(self.store, default_namespace=self.namespace, now=now_ms())

    def daily_counts(self, *, days: int = 30, namespace: str | None = None, all_namespaces: bool = False,
                     tz_offset_minutes: int = 0) -> dict[str, Any]:
        """Memories created per day per scope over the last ``days`` days (the web view's chart)."""
        return daily_counts(self.store, namespace=None if all_namespaces else self._ns(namespace), days=days,
                            tz_offset_minutes=tz_offset_minutes, now=now_ms())

    def require_owner(self) -> None:
        """Store-wide maintenance (compact, reindex, distill) is the store owner's: this service allows it (a team
        space's service refuses)."""

    def compact(self) -> dict[str, Any]:
        return self.store.compact(blocking=True)

    def reindex(self, *, progress: Progress | None = None, batch: int = 64) -> dict[str, Any]:
        """Re-embed every memory with the configured embedder into a new table, then switch to it.
        Interrupted, the old table stays active and nothing is lost."""
        done = reembed_all(self.store, self.embedder, progress=progress, batch=batch)
        self.calibration = self.embedder.calibration()
        return done

def _ident(m: Memory) -> tuple[str, str, str]:
    """What makes two memories exact duplicates: the same content in the same namespace and scope."""
    return (m.namespace, m.scope, m.content_hash)


def _same(hit: RecallHit) -> bool:
    return bool(hit.relation) and hit.relation.get("relation") == "same"


def _fields(m: Memory) -> dict[str, Any]:
    """A memory's changeable fields, as the store's update values name them."""
    return {"content": m.content, "tags": list(m.tags), "importance": m.importance, "scope": m.scope,
            "metadata": m.metadata, "expires_at": m.expires_at, "source": m.source}
