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
        if h.relation is None and merge_verdict(old.content, mem.content).same:
            continue  # a hit from a bare vector search (import, distill): the same fact said again is no change
        verdict = changes(old.content, mem.content)
        if not verdict.update and old.updates:
            earlier = [by_id.get(u) for u in old.updates]
            if any(e is None for e in earlier):
                earlier = service.store.get_many(old.updates[:CHAIN])
            if any(e is not None and (e.content_hash == mem.content_hash or merge_verdict(e.content, mem.content).same)
                   for e in earlier):
                verdict = Change(True, "changed back to what it replaced", old.content[:80], mem.content[:80])
        if verdict.update:
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


def link_imported(service: Service, imported: Sequence[tuple[Memory, Any]], actor: str) -> int:
    """Link imported memories (with their vectors) that came without links of their own, oldest first, as if
    each had been remembered then; returns how many were marked outdated."""
    from memcli.memory.search import build_where

    done = 0
    for mem, vec in sorted(imported, key=lambda p: (p[0].created_at, p[0].id)):
        if len(mem.content) > MAX_CHARS:
            continue
        where = build_where(namespace=mem.namespace)
        hits = [RecallHit(memory=m, score=0.0, similarity=service.calibration(cos))
                for m, cos in service.store.vector_search(vec, where, CANDIDATES + 1)]
        links = changed_by(service, mem, [h for h in hits if h.similarity >= MIN_SIMILARITY])
        if not links:
            continue
        ids = [old.id for old, _ in links]
        if _set(service, mem.id, lambda m: {"updates": [*m.updates, *[i for i in ids if i not in m.updates]]}):
            mark(service, [(mem, old, why) for old, why in links], actor)
            done += len(links)
    return done


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
