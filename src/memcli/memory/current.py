"""What is current: a memory that a later one changed (another value for the same fact, by
:mod:`memcli.facts.update`) carries ``outdated_by``, the later one ``updates``.

- on write (:func:`changed_by`, :func:`mark`): the new memory's similar stored memories are tested; each that
  it changes is marked, with an audit event ``outdated`` that names the reason;
- on forget and on a corrected content (:func:`unlink`, :func:`recheck`): the marks the memory made are
  cleared (or passed on to the memory that replaced it in turn);
- on recall (:func:`current_first`): an outdated memory ranks just below the memory that replaced it, which is
  brought in when the search missed it; ``as_of`` judges the marks as of then (a replacement written later
  does not count).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from memcli.memory.audit import AuditEvent
from memcli.memory.store import quote
from memcli.models import Memory, RecallHit

if TYPE_CHECKING:
    from memcli.facts.update import Change

Service = Any  # a MemoryService (its module imports this one): .store, and nothing else is used

CANDIDATES = 8  # similar memories a new one is tested against
MIN_SIMILARITY = 0.05  # calibrated (e5: cosine ~0.80, a question and its answer across languages); the rules decide
MAX_CHARS = 600  # a longer text (a captured turn) states several facts: never linked
CHAIN = 8  # replacements followed at most (A → B → C …)
RETRIES = 3


def changed_by(service: Service, mem: Memory, hits: Sequence[RecallHit]) -> list[tuple[Memory, "Change"]]:
    """The stored memories among ``hits`` that ``mem`` (being written) changes: older, current, of its
    namespace and project (or of none), not the same fact, and another value by the rules — or the memory
    that changed the very fact ``mem`` states again (A, B, A: the change back)."""
    from memcli.facts.samefact import merge_verdict
    from memcli.facts.update import Change, changes

    if len(mem.content) > MAX_CHARS:
        return []
    by_id = {h.memory.id: h.memory for h in hits}
    out = []
    for h in hits:
        old = h.memory
        if (old.id == mem.id or not old.active or old.outdated_by or old.namespace != mem.namespace
                or old.created_at > mem.created_at or len(old.content) > MAX_CHARS
                or (old.project and mem.project and old.project != mem.project)
                or (h.relation or {}).get("relation") == "same"):
            continue
        verdict = changes(old.content, mem.content)
        if not verdict.update and old.updates:
            earlier = [by_id.get(u) for u in old.updates]
            if any(e is None for e in earlier):
                earlier = service.store.get_many(old.updates[:CHAIN])
            if any(e is not None and (e.content_hash == mem.content_hash or merge_verdict(e.content, mem.content).same)
                   for e in earlier):
                verdict = Change(True, "changed back to what it replaced", old.content[:80], mem.content[:80])
        # a hit from a bare vector search (import, distill): the same fact said again is no change (asked only
        # of a change: the same-fact test costs more than the change rules)
        if verdict.update and not (h.relation is None and merge_verdict(old.content, mem.content).same):
            out.append((old, verdict))
    return out


def in_batch(service: Service, mem: Memory, vec: Any, earlier: Sequence[tuple[Memory, Any]]) -> list[RecallHit]:
    """The memories written in the same batch before ``mem`` (not stored yet) as similar candidates."""
    import numpy as np

    out = []
    for m, v in earlier:
        if m.namespace == mem.namespace:
            sim = service.calibration(float(np.dot(np.asarray(vec), np.asarray(v))))
            if sim >= MIN_SIMILARITY:
                out.append(RecallHit(memory=m, score=sim, similarity=sim))
    return out


def _note(new_id: str, why: "Change") -> str:
    shown = f" ({why.before or '—'} → {why.after or '—'})" if why.before or why.after else ""
    return f"outdated by {new_id}: {why.reason}{shown}"


def _set(service: Service, mid: str, change: Any) -> Memory | None:
    """Apply ``change(memory) -> values`` to one memory, version + 1, retried when another writer changed it
    in between; None when it is gone (or the change has nothing to do)."""
    for _ in range(RETRIES):
        mem = service.store.get(mid)
        if mem is None:
            return None
        values = change(mem)
        if values is None:
            return None
        values = dict(values, version=mem.version + 1)
        if service.store.update(mid, values, expected_version=mem.version):
            return mem
    return None


def mark(service: Service, links: Sequence[tuple[Memory, Memory, "Change"]], actor: str) -> None:
    """Mark each older memory outdated by the newer one of its link (newer, older, why)."""
    events = []
    for new, old, why in links:
        done = _set(service, old.id, lambda m, n=new: None if m.outdated_by == n.id else {"outdated_by": n.id})
        if done is not None:
            events.append(AuditEvent(memory_id=old.id, action="outdated", actor=actor, namespace=old.namespace,
                                     version=done.version + 1, changes={"outdated_by": [done.outdated_by, new.id]},
                                     note=_note(new.id, why)))
    if events:
        service.store.audit.record(events)


def unlink(service: Service, gone: Sequence[Memory], actor: str) -> None:
    """Memories were forgotten: the ones they made outdated are current again (or outdated by what replaced
    the forgotten one in turn), and what replaced them no longer lists them."""
    ids = {m.id for m in gone}
    events = []
    for m in gone:
        heir = m.outdated_by if m.outdated_by and m.outdated_by not in ids else None
        for old_id in m.updates:
            if old_id in ids:
                continue
            done = _set(service, old_id, lambda x, m=m: {"outdated_by": heir} if x.outdated_by == m.id else None)
            if done is None:
                continue
            note = (f"outdated by {heir}: {m.id}, which had changed it, was forgotten" if heir else
                    f"current again: {m.id}, the memory that had changed it, was forgotten")
            events.append(AuditEvent(memory_id=old_id, action="outdated", actor=actor, namespace=done.namespace,
                                     version=done.version + 1, changes={"outdated_by": [m.id, heir]}, note=note))
            if heir:
                _set(service, heir, lambda h, o=old_id: None if o in h.updates else {"updates": [*h.updates, o]})
        if heir:
            _set(service, heir, lambda h, m=m: {"updates": [u for u in h.updates if u != m.id]}
                 if m.id in h.updates else None)
    if events:
        service.store.audit.record(events)


def recheck(service: Service, mem: Memory, actor: str) -> None:
    """``mem``'s content was corrected: each memory it had made outdated that it no longer changes is current
    again."""
    from memcli.facts.update import changes

    if not mem.updates:
        return
    keep, events = [], []
    for old in service.store.get_many(mem.updates):
        if old.outdated_by != mem.id:
            continue
        if changes(old.content, mem.content).update:
            keep.append(old.id)
            continue
        done = _set(service, old.id, lambda x: {"outdated_by": None} if x.outdated_by == mem.id else None)
        if done is not None:
            events.append(AuditEvent(memory_id=old.id, action="outdated", actor=actor, namespace=old.namespace,
                                     version=done.version + 1, changes={"outdated_by": [mem.id, None]},
                                     note=f"current again: {mem.id} was corrected and no longer changes it"))
    if keep != mem.updates:
        _set(service, mem.id, lambda m: {"updates": [u for u in m.updates if u in keep]})
    if events:
        service.store.audit.record(events)


def link_imported(service: Service, imported: Sequence[tuple[Memory, Any]], actor: str,
                  pool: "ImportPool | None" = None) -> int:
    """Link imported memories (with their vectors) that came without links of their own, oldest first, as if
    each had been remembered then; returns how many were marked outdated. With ``pool`` (an import's records
    so far, :class:`ImportPool`) the candidates among them are found in memory, and the store is searched only
    when it held memories before the import began."""
    from memcli.memory.search import build_where

    done = 0
    todo = sorted(imported, key=lambda p: (p[0].created_at, p[0].id))
    near = pool.nearest(todo) if pool is not None else {}
    for mem, vec in todo:
        if len(mem.content) > MAX_CHARS:
            continue
        hits = near.get(mem.id, [])
        if pool is None or pool.search_store:
            where = build_where(namespace=mem.namespace)
            seen = {h.memory.id for h in hits}
            hits += [RecallHit(memory=m, score=0.0, similarity=service.calibration(cos))
                     for m, cos in service.store.vector_search(vec, where, CANDIDATES + 1) if m.id not in seen]
            hits = sorted(hits, key=lambda h: -(h.similarity or 0.0))[:CANDIDATES + 1]
        links = changed_by(service, mem, [h for h in hits if (h.similarity or 0.0) >= MIN_SIMILARITY])
        if not links:
            continue
        ids = [old.id for old, _ in links]
        if _set(service, mem.id, lambda m: {"updates": [*m.updates, *[i for i in ids if i not in m.updates]]}):
            mark(service, [(mem, old, why) for old, why in links], actor)
            mem.updates = [*mem.updates, *[i for i in ids if i not in mem.updates]]
            for old, _ in links:  # the pool's copies say what the store now does: a later record skips them
                old.outdated_by = mem.id
            done += len(links)
    return done


class ImportPool:
    """The records an import has stored so far (their memories and vectors, in memory): the candidates a bare
    record is linked against, found by one matrix product per block of records instead of one vector search of
    the store each (~13 ms each at 10k rows: an import linked 70 records/s). ``search_store``: the store held
    memories before the import, which are searched as before."""

    BLOCK = 256

    def __init__(self, service: Service, search_store: bool) -> None:
        self.service = service
        self.search_store = search_store
        self.mems: list[Memory] = []
        self._vecs: list[Any] = []
        self._matrix: Any = None

    def add(self, stored: Sequence[tuple[Memory, Any]]) -> None:
        """Records just stored (memory, vector)."""
        import numpy as np

        if not stored:
            return
        self.mems += [m for m, _ in stored]
        self._vecs.append(np.asarray([v for _, v in stored], dtype=np.float32))
        self._matrix = None

    def nearest(self, todo: Sequence[tuple[Memory, Any]]) -> dict[str, list[RecallHit]]:
        """Each record's CANDIDATES + 1 most similar records of the pool (itself excluded, its namespace only)."""
        import numpy as np

        if not self.mems or not todo:
            return {}
        if self._matrix is None:
            self._matrix = np.concatenate(self._vecs) if len(self._vecs) > 1 else self._vecs[0]
            self._vecs = [self._matrix]
        pool = self._matrix
        spaces = np.asarray([m.namespace for m in self.mems], dtype=object)
        one = set(spaces.tolist())
        cal = self.service.calibration
        k = min(CANDIDATES + 2, len(self.mems))
        out: dict[str, list[RecallHit]] = {}
        for start in range(0, len(todo), self.BLOCK):
            block = todo[start:start + self.BLOCK]
            sims = np.asarray([v for _, v in block], dtype=np.float32) @ pool.T
            for r, (mem, _) in enumerate(block):
                if one != {mem.namespace}:
                    sims[r, spaces != mem.namespace] = -2.0
            best = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k < sims.shape[1] else \
                np.tile(np.arange(sims.shape[1]), (len(block), 1))
            vals = np.take_along_axis(sims, best, axis=1)
            order = np.argsort(-vals, axis=1)
            best, vals = np.take_along_axis(best, order, axis=1), np.take_along_axis(vals, order, axis=1)
            calibrated = cal.many(vals)
            for r, (mem, _) in enumerate(block):
                hits = [RecallHit(memory=self.mems[j], score=0.0, similarity=float(c))
                        for j, v, c in zip(best[r].tolist(), vals[r].tolist(), calibrated[r].tolist())
                        if v > -2.0 and c >= MIN_SIMILARITY and self.mems[j].id != mem.id]
                out[mem.id] = hits[:CANDIDATES + 1]
        return out


def link_missed(service: Service, *, namespace: str | None = None, batch: int = 256) -> int:
    """Link what the writes missed (two memories of one batch written by an older memcli, a mark cleared by a
    forget whose memory was said again): every current memory of ``namespace`` (default: every namespace),
    oldest first, against the memories written before it. For ``distill``; returns how many were marked."""
    from memcli.memory.search import build_where

    where = build_where(namespace=namespace)
    where = f"{where} AND outdated_by IS NULL" if where else "outdated_by IS NULL"
    todo: list[tuple[Memory, Any]] = []
    for rows in service.store.iter_batches(where, with_vector=True, batch_size=batch):
        todo += [(m, m.vector) for m in rows if len(m.content) <= MAX_CHARS and m.vector is not None]
    return link_imported(service, todo, "distill")  # what each already updates is outdated: skipped


# ------------------------------------------------------------------------------------------ recall
def as_of_view(mem: Memory, replacements: dict[str, Memory], as_of: int | None) -> Memory:
    """``mem`` as it stood at ``as_of``: a mark by a memory written later is not yet there (what it updates was
    written before it, so before then too)."""
    if as_of is None or not mem.outdated_by:
        return mem
    rep = replacements.get(mem.outdated_by)
    return mem if rep is not None and rep.created_at <= as_of else replace(mem, outdated_by=None)


def current_first(service: Service, hits: list[RecallHit], *, where: str | None, top_k: int,
                  as_of: int | None = None) -> list[RecallHit]:
    """Recall's hits with every outdated memory just below the memory that replaced it (brought in, with the
    outdated one's score, when the search did not find it but it passes the same filters); scores stay
    monotone (an outdated memory's score is at most its replacement's)."""
    if not any(h.memory.outdated_by for h in hits):
        return hits
    by_id = {h.memory.id: h for h in hits}
    known: dict[str, Memory] = {h.memory.id: h.memory for h in hits}
    # the replacements, and theirs (A → B → C), that the hits do not hold: one query per step of the chain
    want = {h.memory.outdated_by for h in hits if h.memory.outdated_by} - set(known)
    for _ in range(CHAIN):
        if not want:
            break
        found = service.store.find("id IN (" + ", ".join(quote(i) for i in sorted(want)) + ")"
                                   + (f" AND {where}" if where else ""), len(want) + 1)
        known.update({m.id: m for m in found})
        want = {m.outdated_by for m in found if m.outdated_by} - set(known)
    if as_of is not None:
        for h in hits:
            h.memory = as_of_view(h.memory, known, as_of)

    def replacement(mem: Memory) -> Memory | None:
        rep = known.get(mem.outdated_by or "")
        return None if rep is None or (as_of is not None and rep.created_at > as_of) else rep

    out: list[RecallHit] = []
    placed: set[str] = set()
    waiting: dict[str, list[RecallHit]] = {}  # outdated hits, by the id of the memory that replaced them

    def put(h: RecallHit) -> None:
        out.append(h)
        placed.add(h.memory.id)
        for w in waiting.pop(h.memory.id, []):  # right below the memory that replaced them
            put(w)

    def place(h: RecallHit, depth: int = 0) -> None:
        rep = replacement(h.memory)
        if rep is None or rep.id in placed or depth > CHAIN:
            put(h)
        elif rep.id in by_id:  # a hit further down: this one moves to just below it
            waiting.setdefault(rep.id, []).append(h)
        else:  # not found by the search: shown just above the memory it replaced, with its score
            by_id[rep.id] = RecallHit(memory=as_of_view(rep, known, as_of), score=h.score, similarity=h.similarity)
            waiting.setdefault(rep.id, []).append(h)
            place(by_id[rep.id], depth + 1)

    for h in hits:
        if h.memory.id not in placed:
            place(h)
    for rest in waiting.values():  # pragma: no cover - a cycle of marks (a damaged import): as found
        out.extend(r for r in rest if r.memory.id not in placed)
    for a, b in zip(out, out[1:]):  # an outdated memory that moved down takes the score of the one above it
        if b.score > a.score:
            b.score = a.score
    return out[:top_k]
