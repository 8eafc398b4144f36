"""Contradictions distill lists, and the pairs it reads beyond its merge candidates.

- **Conflicts**: two memories about the same subject with different values (the same-fact test says
  ``conflict``) are noted newest first with who wrote each (:func:`note_conflict`). Pairs less similar than a
  merge candidate (from :data:`CONFLICT_THRESHOLD`) that share most of their words are read for conflicts too.
  The conflicts a run lists are kept with the store (meta ``distill_conflicts``, :func:`save_conflicts`) and
  listed again by every later run while they hold (:func:`known_conflicts`): an incremental run compares only
  pairs with a memory changed since, and a contradiction nobody settled must not vanish from the plan.
- **Across languages**: an English and a Chinese memory that name the same thing (:func:`across_languages`)
  are candidates for :mod:`memcli.facts.crosslang`, which similarity alone would never propose.

A ``plan`` here is a :class:`~memcli.distill.distiller.DistillPlan` (not imported: the distiller imports this).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from memcli.distill.runs import CONFLICTS

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from memcli.memory.store import MemoryStore
    from memcli.models import Memory

# a contradiction is less similar than a restatement (enabled / disabled: calibrated 0.63–0.76 with e5): pairs
# from here are read for conflicts only, and only when they share most of their words (bench/home.py)
CONFLICT_THRESHOLD = 0.55
CONFLICT_OVERLAP = 0.35


def known_conflicts(store: "MemoryStore", plan: Any, archived: set[str], merged_into: dict[str, str],
                    lookup: "Callable[[Sequence[str]], dict[str, Memory]]") -> None:
    """The contradictions earlier runs listed stay listed until they are settled: while both memories (or
    the memories they were merged into) are active and still contradict each other. (An incremental run
    compares only pairs with a memory changed since the last run: without this they would vanish.)
    ``merged_into``: earlier merges (member id → the memory it went into); ``lookup``: the active memories
    of some ids (the plan holds only the ones it names)."""
    from memcli.facts.samefact import CONFLICT, merge_verdict

    try:
        known = json.loads(store.read_meta().get(CONFLICTS) or "[]")
    except (ValueError, TypeError, OSError, RuntimeError):
        return
    if not isinstance(known, list):
        return
    into = dict(merged_into)
    into.update({i: step.keep for step in plan.merge for i in step.merge})
    found = {frozenset(c["ids"]) for c in plan.conflicts}
    extra: dict[tuple[str, str], dict[str, Any]] = {}
    known = [x for x in known if isinstance(x, list) and len(x) == 3 and all(isinstance(y, str) for y in x[:2])]
    mems = lookup([into.get(x, x) for item in known for x in item[:2]])
    for item in known:
        if not (isinstance(item, list) and len(item) == 3 and all(isinstance(x, str) for x in item[:2])):
            continue
        a, b = into.get(item[0], item[0]), into.get(item[1], item[1])
        ma, mb = mems.get(a), mems.get(b)
        if ma is None or mb is None or a == b or {a, b} & archived or frozenset((a, b)) in found \
                or ma.namespace != mb.namespace:
            continue
        verdict = merge_verdict(ma.content, mb.content)
        if verdict.relation == CONFLICT:
            note_conflict(extra, ma, mb, verdict, float(item[2]) if isinstance(item[2], (int, float)) else 0.0)
    plan.conflicts += list(extra.values())

def save_conflicts(store: "MemoryStore", plan: Any, one_namespace: bool) -> None:
    """Keep the plan's contradictions (ids mapped to the memories they merge into) for the next runs."""
    into = {i: step.keep for step in plan.merge for i in step.merge}
    pairs = [[into.get(c["ids"][0], c["ids"][0]), into.get(c["ids"][1], c["ids"][1]), c["similarity"]]
             for c in plan.conflicts]
    if one_namespace:  # a run of one namespace keeps what the others listed (checked when read)
        try:
            old = json.loads(store.read_meta().get(CONFLICTS) or "[]")
        except (ValueError, TypeError):
            old = []
        pairs = [p for p in old if isinstance(p, list)] + pairs
    unique = {(str(p[0]), str(p[1])): p for p in pairs if len(p) == 3 and p[0] != p[1]}
    try:
        store.write_meta({CONFLICTS: json.dumps(list(unique.values()))})
    except (OSError, RuntimeError, ValueError):
        pass  # the next full run finds them again

def note_conflict(found: dict[tuple[str, str], dict[str, Any]], a: "Memory", b: "Memory", verdict: Any,
                  sim: float) -> None:
    """Note a contradiction between two memories (newest first, with who wrote each)."""
    new, old = (a, b) if (a.created_at, a.id) >= (b.created_at, b.id) else (b, a)
    key = (new.id, old.id)
    if key not in found:
        found[key] = {"ids": [new.id, old.id], "namespace": new.namespace, "reason": verdict.reason,
                      "differences": [list(d) if new is a else [d[1], d[0]] for d in verdict.differences],
                      "authors": [_author(new), _author(old)], "similarity": round(sim, 4),
                      "created_at": new.created_at}


CROSS_MIN_COSINE = 0.82  # raw: a translation scores 0.85–0.89 with e5, unrelated pairs of two languages ≈ 0.75
_ANCHOR_MAX = 50  # a name more memories hold than this anchors nothing


def across_languages(texts: "Sequence[str]", vecs: Any, fresh: set[int]) -> list[tuple[int, int, float]]:
    """Pairs of an English and a Chinese memory that name the same thing (a Latin name, identifier or number
    in the Chinese text is in the English one) with a cosine a translation reaches: candidates for
    :mod:`memcli.facts.crosslang`, which the embedder's similarity alone would never propose."""
    from memcli.textnorm import script_of

    cjk = [i for i, t in enumerate(texts) if script_of(t) == "cjk"]
    if not cjk:
        return []
    token = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-/]*")
    stop = {"the", "a", "an", "is", "to", "of", "in", "and", "or", "on", "for"}
    names = {i: {t.casefold().rstrip(".:") for t in token.findall(texts[i])} - stop for i in cjk}
    wanted = set().union(*names.values())  # only the names a Chinese memory holds (not a million texts' words)
    holders: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        if i not in names:
            for t in {t.casefold().rstrip(".:") for t in token.findall(text)} & wanted:
                holders.setdefault(t, []).append(i)
    out: list[tuple[int, int, float]] = []
    seen: set[tuple[int, int]] = set()
    for i in cjk:
        for t in names[i]:
            group = holders.get(t, [])
            if len(group) > _ANCHOR_MAX:
                continue
            for c in group:
                if (i, c) in seen or (i not in fresh and c not in fresh):
                    continue
                seen.add((i, c))
                raw = float(vecs[i] @ vecs[c])
                if raw >= CROSS_MIN_COSINE:
                    out.append((i, c, raw))
    return out


def word_set(text: str) -> frozenset[str]:
    """A text's words (casefolded) and Chinese character pairs: a quick test of two texts' overlap."""
    low = text.casefold()
    out = set(re.findall(r"[a-z0-9][a-z0-9_.\-/]*", low))
    for run in re.findall(r"[\u3400-\u9fff]+", low):
        out.update(run[k:k + 2] for k in range(max(1, len(run) - 1)))
    return frozenset(out)


def _author(m: "Memory") -> str:
    """Who wrote a memory, as the plan shows it: its agent scope, else the face that wrote it."""
    return m.scope if m.scope.startswith("agent:") else m.source
