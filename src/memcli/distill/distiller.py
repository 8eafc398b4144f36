"""memcli distill: plan, then apply, the changes that keep the memory small and useful.

Steps, in order (:meth:`Distiller.plan` computes them all and changes nothing):

1. **archive** active memories whose TTL has passed (``status = archived``; the row stays, undo brings it back);
2. **merge** memories that state the same fact. Similarity proposes: within one namespace, pairs whose
   *calibrated* similarity (the embedder's raw cosine mapped as ``check_duplicate`` maps it) is ≥
   ``threshold`` are candidates (and an English and a Chinese memory naming the same thing,
   :mod:`memcli.distill.conflicts`). The same-fact test decides (:mod:`memcli.facts.samefact`): a candidate
   merges into the centre of its star (highest importance, then a deliberate memory before a captured turn,
   then the most recent) only when the centre states everything it states and nothing tells them apart — no
   other value, unit, version, identifier, negation, opposite word, environment, day… An LLM, when configured,
   may confirm a candidate the rules are unsure of, never one they vetoed. The best-written member keeps its
   content (:mod:`memcli.distill.keeper`; or an LLM condensation, :mod:`memcli.distill.condense`, when asked)
   and the others' words it lacks in its keyword index, gets the union of the tags, the highest importance
   and ``merged_from``; the others become ``superseded`` (``superseded_by`` = the keeper), never deleted.
   Clusters are *stars*, so no chain of small steps merges two different facts, and a second run plans
   nothing. Memories with a caller ``key`` are never merged away.
3. **conflicts**: candidates about the same subject with different values (enabled / disabled, port 8080 /
   8081 of one service) are listed in the plan, newest first, with their authors — never merged or resolved,
   and listed again by later runs until settled; the older side is ``outdated``;
4. **promote** to ``global`` the facts that two or more agents hold (a merged cluster spanning ≥ 2
   ``agent:*`` scopes, or one with a global member) and the agent memories marked important (importance ≥
   ``promote_importance``, default :data:`PROMOTE_IMPORTANCE`) — never an outdated memory, nor a group
   holding one;
5. **compact** the table after applying.

:meth:`Distiller.apply` first tags the table's version and records what it will change
(:mod:`memcli.distill.runs`), then writes every row change in **one** ``merge_insert`` commit, each row
conditioned on the version the plan read: a crash leaves the old state or the new one, never half of it; a
memory changed by someone else meanwhile makes the apply put back the rows it changed, in one more commit
(a :class:`VersionConflictError`: run it again). One audit record per change (``merge``, ``supersede``,
``promote``, ``archive``; ``restore`` for an undo). Undo reverses exactly what a run changed and nothing
written since.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memcli.distill.conflicts import (
    CONFLICT_OVERLAP,
    CONFLICT_THRESHOLD,
    across_languages,
    known_conflicts,
    note_conflict,
    save_conflicts,
    word_set,
)
from memcli.distill.keeper import Spelling, keeper_search_text
from memcli.distill.keeper import aliases as _aliases
from memcli.distill.keeper import pick_keeper as _pick_keeper
from memcli.distill.runs import WATERMARK, DistillRuns
from memcli.errors import StoreError, ValidationError, VersionConflictError
from memcli.memory.audit import AuditEvent, clip
from memcli.memory.reader import quote
from memcli.memory.records import embed_memories
from memcli.memory.rows import STATUS_COLUMNS, row_search_text
from memcli.memory.store import ACTIVE_FILTER
from memcli.models import ACTIVE, ARCHIVED, SUPERSEDED, Memory, now_ms

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.distill.condense import LlmSettings
    from memcli.distill.scan import View
    from memcli.embedders import Embedder
    from memcli.memory.store import MemoryStore

MERGE_THRESHOLD = 0.80  # candidates only: memcli.facts.samefact decides (bench/distill_pairs.py)
PROMOTE_IMPORTANCE = 0.8
WATERMARK_MARGIN_MS = 10 * 60_000
_READ = ["id", "content", "namespace", "project", "scope", "tags", "importance", "key", "metadata", "source",
         "created_at", "updated_at", "expires_at", "version", "content_hash", "thread", "context", *STATUS_COLUMNS]


@dataclass
class DistillOptions:
    """What a distill run does. ``fault`` is for tests only: the process dies at that point of apply."""

    threshold: float = MERGE_THRESHOLD
    promote_importance: float = PROMOTE_IMPORTANCE
    namespace: str | None = None  # None: every namespace
    llm: "LlmSettings | None" = None  # condensation of clusters (off unless given)
    compact: bool = True
    full: bool = False  # compare every pair, not only pairs with a memory changed since the last run
    fault: str | None = None  # "after-tag" | "after-commit"

    @classmethod
    def from_config(cls, config: "Config", *, llm: bool | None = None, threshold: float | None = None,
                    namespace: str | None = None) -> "DistillOptions":
        """The options a Config describes (``[distill]``; the LLM endpoint of ``[hooks]``), with overrides."""
        from memcli.distill.condense import LlmSettings

        d, h = config.distill, config.hooks
        use_llm = d.llm if llm is None else llm
        if use_llm and h.llm_provider not in ("openai", "anthropic"):
            raise ValidationError("LLM condensation needs an endpoint: set [hooks] llm_provider = \"openai\" or "
                                  "\"anthropic\" (and llm_base_url, llm_model, llm_api_key) in the config")
        settings = LlmSettings(provider=h.llm_provider or "", model=h.llm_model, base_url=h.llm_base_url,
                               api_key=h.llm_api_key, token_budget=d.llm_token_budget) if use_llm else None
        return cls(threshold=d.threshold if threshold is None else threshold,
                   promote_importance=d.promote_importance, namespace=namespace, llm=settings)

    def check(self) -> None:
        if not 0.0 < float(self.threshold) <= 1.0:
            raise ValidationError("the merge threshold must be in (0, 1]")
        if not 0.0 <= float(self.promote_importance) <= 1.0:
            raise ValidationError("the promote importance must be between 0 and 1")


@dataclass
class MergeStep:
    """One cluster: ``keep`` absorbs ``merge``."""

    keep: str
    merge: list[str]
    content: str
    namespace: str
    scope: str
    tags: list[str]
    importance: float
    similarity: float  # the lowest calibrated similarity of a member to the keeper
    condense: bool = False  # the LLM will be asked to condense it at apply
    why: dict[str, str] = field(default_factory=dict)  # member id → why it is the same fact (rules or LLM)

    def to_dict(self) -> dict[str, Any]:
        return {"keep": self.keep, "merge": list(self.merge), "content": self.content,
                "namespace": self.namespace, "scope": self.scope, "tags": list(self.tags),
                "importance": self.importance, "similarity": round(self.similarity, 4), "condense": self.condense,
                "why": dict(self.why)}


@dataclass
class DistillPlan:
    """Everything one distill would change, and the memories it read (by id)."""

    archive: list[str] = field(default_factory=list)
    merge: list[MergeStep] = field(default_factory=list)
    promote: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)  # why each promoted id is promoted
    conflicts: list[dict[str, Any]] = field(default_factory=list)  # same subject, other value: shown, not merged
    outdated: dict[str, str] = field(default_factory=dict)  # id → the later memory stating another value
    memories: dict[str, Memory] = field(default_factory=dict)  # as read by the plan (versions checked at apply)
    scanned: int = 0
    read_at: int = 0

    @property
    def empty(self) -> bool:
        return not (self.archive or self.merge or self.promote)

    def counts(self) -> dict[str, int]:
        return {"scanned": self.scanned, "archive": len(self.archive), "merge": len(self.merge),
                "supersede": sum(len(m.merge) for m in self.merge), "promote": len(self.promote),
                "conflict": len(self.conflicts)}

    def to_dict(self) -> dict[str, Any]:
        """The REST/CLI JSON shape: ``{"plan": {...}, "counts": {...}}``."""
        ids = set(self.archive) | set(self.promote) | {i for m in self.merge for i in [m.keep, *m.merge]} | {
            i for c in self.conflicts for i in c["ids"]}
        brief = {i: {"content": clip(self.memories[i].content)[:300], "scope": self.memories[i].scope,
                     "namespace": self.memories[i].namespace, "importance": self.memories[i].importance,
                     "created_at": self.memories[i].created_at, "source": self.memories[i].source}
                 for i in sorted(ids) if i in self.memories}
        return {"plan": {"archive": list(self.archive), "merge": [m.to_dict() for m in self.merge],
                         "promote": list(self.promote), "reasons": dict(self.reasons),
                         "conflicts": [dict(c) for c in self.conflicts], "outdated": dict(self.outdated),
                         "compact": not self.empty,
                         "memories": brief},
                "counts": self.counts()}


class Distiller:
    """Plans, applies and undoes distills on one service's store."""

    def __init__(self, store: "MemoryStore", embedder: "Embedder", options: DistillOptions | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.calibration = embedder.calibration()
        self.options = options or DistillOptions()
        self.options.check()
        self._llm: Any = None  # the Condenser of this run (one token budget for confirming and condensing)
        self.runs = DistillRuns(store)
        self._spelling = Spelling(())  # how the namespace being clustered spells its words
        self.exact_max: int | None = None  # neighbours' EXACT_MAX unless set (tests: lower, to partition)

    def llm(self) -> Any:
        """The LLM of this run (memcli.distill.condense.Condenser), when one is configured; else None."""
        if self._llm is None and self.options.llm is not None:
            from memcli.distill.condense import Condenser

            self._llm = Condenser(self.options.llm)
        return self._llm

    # ------------------------------------------------------------------ plan
    def plan(self, now: int | None = None) -> DistillPlan:
        """What to archive, merge and promote (reads only)."""
        from memcli.distill.scan import Scan, View

        now = now or now_ms()
        where = ACTIVE_FILTER
        if self.options.namespace:
            where += f" AND namespace = {quote(self.options.namespace)}"
        # light columns and the vectors of every row; whole Memory objects only for the rows the plan names
        # (outdated_by, of STATUS_COLUMNS: set on write, the older side of a change)
        scan = Scan(self.store.reader.snapshot(), where, self.store.dim)
        plan = DistillPlan(scanned=len(scan), read_at=now)
        plan.outdated = {scan.ids[i]: o for i, o in enumerate(scan.cols["outdated_by"]) if o}
        since = self._watermark()
        plan.archive = [scan.ids[i] for i, e in enumerate(scan.cols["expires_at"]) if e is not None and e <= now]
        archived = set(plan.archive)
        by_ns: dict[str, list[int]] = {}
        for i, ns in enumerate(scan.namespaces):
            if scan.ids[i] not in archived:
                by_ns.setdefault(ns, []).append(i)
        for ns in sorted(by_ns):
            idx = by_ns[ns]
            view = View(scan, idx)
            self._spelling = Spelling(view.contents)
            # every row in one namespace, in order: the scan's array itself, not a copy
            vecs = scan.vectors if len(idx) == len(scan) else scan.vectors[idx]
            steps, conflicts = self._clusters(view, vecs, since)
            plan.merge += steps
            plan.conflicts += conflicts
        plan.memories = scan.built()  # the rows the clustering named, as it read them (whole ones below)
        known_conflicts(self.store, plan, archived, scan.merged_into(), scan.lookup)
        plan.conflicts.sort(key=lambda c: -c["created_at"])
        for c in plan.conflicts:  # the older side of a contradiction is outdated until someone settles it
            plan.outdated.setdefault(c["ids"][1], c["ids"][0])
        merged_away = {i for step in plan.merge for i in step.merge}
        held = _hold_outdated(plan)
        new_scope = {step.keep: step.scope for step in plan.merge}
        new_importance = {step.keep: step.importance for step in plan.merge}
        for step in plan.merge:
            keeper = plan.memories[step.keep]
            if step.keep in held:
                step.scope = keeper.scope  # an outdated value is never promoted: a later memory changed it
            if step.scope != keeper.scope:
                agents = {plan.memories[i].scope for i in [step.keep, *step.merge]} - {"global"}
                plan.promote.append(step.keep)
                plan.reasons[step.keep] = (f"held by {len(agents)} agents" if len(agents) >= 2
                                           else "merged with a global memory")
        cols = scan.cols
        for i, mid in enumerate(scan.ids):
            if mid in archived or mid in merged_away or mid in plan.reasons or mid in held:
                continue
            scope = new_scope.get(mid, cols["scope"][i] or "")
            if scope.startswith("agent:") and new_importance.get(mid, float(cols["importance"][i] or 0.0)
                                                                 ) >= self.options.promote_importance:
                plan.promote.append(mid)
                plan.reasons[mid] = f"importance ≥ {self.options.promote_importance:g}"
        named = [*plan.archive, *plan.promote, *(i for m in plan.merge for i in [m.keep, *m.merge]),
                 *(i for c in plan.conflicts for i in c["ids"])]
        plan.memories = scan.full(named, _READ)
        for step in plan.merge:
            if step.keep in plan.reasons:
                step.scope = "global"
        return plan

    def _clusters(self, mems: "View", vecs: Any, since: int | None = None
                  ) -> tuple[list[MergeStep], list[dict[str, Any]]]:
        """Star clusters of one namespace, and the conflicts found on the way. Similarity proposes: each pair at
        least ``threshold`` similar is a candidate. The same-fact test decides (:mod:`memcli.facts.samefact`): each
        unassigned memory, best first, takes the candidates whose every statement it makes too, with nothing
        that tells them apart; an LLM, when configured, may confirm a candidate the rules are unsure of, never
        one they vetoed. A candidate pair about the same subject with different values is a *conflict*: listed,
        never merged. With ``since`` only pairs with a memory written or changed since then are compared (the
        others were compared by the distill that set it). Candidates: :mod:`memcli.distill.neighbours`."""
        import numpy as np

        from memcli.distill.neighbours import EXACT_MAX, bounded, neighbours
        from memcli.facts.samefact import (
            CONFLICT,
            RELATED,
            Verdict,
            compare,
            may_conflict,
            merge_verdict,
        )

        n = len(mems)
        if n < 2:
            return [], []
        cal = self.calibration
        xs = np.array([p[0] for p in cal.points])
        ys = np.array([p[1] for p in cal.points])
        thr = float(self.options.threshold)
        # the raw cosine from which a pair can reach the threshold (the calibration is monotone)
        cut = float(np.interp(thr, ys, xs)) - 1e-6 if ys[0] < thr <= ys[-1] else (-1.0 if thr <= ys[0] else 2.0)
        cthr = min(thr, CONFLICT_THRESHOLD)
        ccut = float(np.interp(cthr, ys, xs)) - 1e-6 if ys[0] < cthr <= ys[-1] else cut
        words: dict[int, frozenset[str]] = {}
        texts = mems.contents

        def overlap(i: int, c: int) -> float:
            if len(words) > 65536:  # a bounded cache: a million word sets would not fit
                words.clear()
            for k in (i, c):
                if k not in words:
                    words[k] = word_set(texts[k])
            union = len(words[i] | words[c])
            return len(words[i] & words[c]) / union if union else 0.0
        # best first; among equals the oldest id (exact copies keep the id others may have noted). A keeper's
        # rank does not change by merging (its members rank lower), so the next run sees the same order.
        order = sorted(sorted(range(n), key=mems.id), key=mems.rank, reverse=True)
        rank_of = np.empty(n, dtype=np.int64)
        rank_of[order] = np.arange(n)
        fresh = [i for i in range(n) if since is None or mems.updated(i) >= since]
        near: dict[int, dict[int, float]] = {}
        close: dict[tuple[int, int], float] = {}  # read for conflicts only
        rows, cols, raws = neighbours(vecs, np.asarray(fresh, dtype=np.int64), min(cut, ccut), cut,
                                      exact_max=self.exact_max or EXACT_MAX)
        calibrated = np.interp(raws, xs, ys, left=0.0, right=1.0)
        read = bounded(calibrated, thr, cthr)
        for i, c, sim in zip(rows[read].tolist(), cols[read].tolist(), calibrated[read].tolist()):
            if sim >= thr:
                near.setdefault(i, {})[c] = sim
                near.setdefault(c, {})[i] = sim
            elif sim >= cthr and (min(i, c), max(i, c)) not in close and overlap(i, c) >= CONFLICT_OVERLAP:
                close[(min(i, c), max(i, c))] = sim
        del rows, cols, raws, calibrated, read
        for i, c, raw in across_languages(texts, vecs, set(fresh)):  # similarity cannot propose these
            sim = float(np.interp(raw, xs, ys, left=0.0, right=1.0))
            near.setdefault(i, {})[c] = sim
            near.setdefault(c, {})[i] = sim
        taken = [False] * n
        steps: list[MergeStep] = []
        conflicts: dict[tuple[str, str], dict[str, Any]] = {}
        pairs = [((i, c), sim) for i, cs in near.items() for c, sim in cs.items() if i < c]
        verdicts: dict[tuple[int, int], Verdict] = {}
        for (i, c), sim in pairs + list(close.items()):  # whoever keeps what: every contradiction is listed
            if not may_conflict(texts[i], texts[c]):
                continue
            verdict = verdicts[(i, c)] = merge_verdict(texts[i], texts[c])
            if verdict.relation == CONFLICT:
                note_conflict(conflicts, mems[i], mems[c], verdict, sim)

        def same(x: Memory, y: Memory) -> bool:
            return merge_verdict(x.content, y.content).same and compare(y.content, x.content).same

        for i in order:
            if taken[i]:
                continue
            members: list[tuple[int, float]] = []
            why: dict[str, str] = {}
            for c, sim in sorted(near.get(i, {}).items(), key=lambda cs: rank_of[cs[0]]):
                if taken[c] or mems.keys[c] is not None:
                    continue
                verdict = verdicts.get((i, c)) or merge_verdict(texts[i], texts[c])
                if verdict.same and not compare(texts[c], texts[i]).same:
                    # each must state what the other does (a keeper that says more would lose nothing, but a
                    # one-way relation makes the clusters depend on the order: a second run would merge more)
                    verdict = Verdict(RELATED, "the first says more than the second", sure=False)
                if verdict.same:
                    members.append((c, sim))
                    why[mems.id(c)] = verdict.reason
                elif not verdict.sure and self.llm() is not None and self.llm().same_fact(texts[i], texts[c]):
                    members.append((c, sim))
                    why[mems.id(c)] = "confirmed by the LLM (the rules found no difference in values)"
            if not members:
                continue  # not a keeper: a better-worded memory later in the order may still take it
            taken[i] = True
            for c, _ in members:
                taken[c] = True
            group = [mems[c] for c, _ in members]
            keep = _pick_keeper(mems[i], group, same, self._spelling)  # the best-written member keeps its words
            if keep is not mems[i]:
                why[mems[i].id] = why.pop(keep.id)
                group = [mems[i], *[m for m in group if m is not keep]]
            step = self._merge_step(keep, group, min(s for _, s in members))
            step.why = why
            steps.append(step)
        return steps, sorted(conflicts.values(), key=lambda c: -c["created_at"])

    def _merge_step(self, keep: Memory, others: list[Memory], similarity: float) -> MergeStep:
        tags = list(keep.tags)
        for m in others:
            tags += [t for t in m.tags if t not in tags]
        scopes = {m.scope for m in [keep, *others]}
        agents = {s for s in scopes if s.startswith("agent:")}
        scope = "global" if ("global" in scopes or len(agents) >= 2) else keep.scope
        distinct = len({m.content_hash for m in [keep, *others]}) > 1
        return MergeStep(keep=keep.id, merge=[m.id for m in others], content=keep.content, namespace=keep.namespace,
                         scope=scope, tags=tags[:64], importance=max(m.importance for m in [keep, *others]),
                         similarity=similarity, condense=self.options.llm is not None and distinct)

    def explain(self, a: Memory, b: Memory) -> dict[str, Any]:
        """Why two memories would or would not merge: their calibrated similarity (the candidate step) and the
        same-fact test's verdict, in plain words (``memcli distill --explain A B``)."""
        import numpy as np

        from memcli.facts.samefact import compare, explain, same_fact

        vecs = {r["id"]: np.asarray(r["vector"], dtype=np.float32) for r in self.store.read_rows(
            f"id IN ({quote(a.id)}, {quote(b.id)})", ["id", "vector"])}
        sim = float(self.calibration(float(vecs[a.id] @ vecs[b.id]))) if len(vecs) == 2 else 0.0
        keep, other = (a, b) if _keeper_rank(a) >= _keeper_rank(b) else (b, a)
        verdict = compare(keep.content, other.content)
        candidate = sim >= float(self.options.threshold) and a.namespace == b.namespace
        blockers = [why for why, bad in (("they are in different namespaces", a.namespace != b.namespace),
                                         ("one has a --key", a.key is not None or b.key is not None),
                                         (f"their similarity {sim:.3f} is below the threshold "
                                          f"{float(self.options.threshold):g}", sim < float(self.options.threshold)))
                    if bad]
        would = candidate and verdict.same and not blockers
        text = explain(a.content, b.content) if not verdict.same else f"would merge: {verdict.reason}"
        if blockers:
            text = "would not merge: " + "; ".join(blockers) + f". Same-fact test: {explain(a.content, b.content)}"
        return {"a": a.id, "b": b.id, "similarity": round(sim, 4), "threshold": float(self.options.threshold),
                "would_merge": would, "keeper": keep.id, **verdict.item(), "symmetric": same_fact(
                    a.content, b.content).relation, "explanation": text}

    # ------------------------------------------------------------------ apply
    def apply(self, plan: DistillPlan, *, archive: Callable[[list[Memory]], None] | None = None) -> dict[str, Any]:
        """Tag the current version, then apply ``plan`` in one commit. ``archive`` receives the memories
        being archived before anything changes (the CLI appends them to a JSONL file)."""
        if plan.empty:
            self._set_watermark(plan)
            return {"ok": True, "tag": None, "counts": plan.counts(), "condensed": 0}
        condensed = self._condense(plan) if self.options.llm is not None else {}
        rows, originals, events = self._changes(plan, condensed)
        if archive and plan.archive:
            archive([plan.memories[i] for i in plan.archive])
        tag = self.runs.tag()
        self.runs.record(tag, rows, originals)  # what undo reverses: exactly these fields of these rows
        self._fault("after-tag")
        import pyarrow as pa

        schema = self.store.table.schema
        data = pa.Table.from_pylist(rows, schema=schema)
        # one commit (a failed one changes nothing); each row only if it is still at the version the plan read
        res = self.store.commit(lambda: self.store.table.merge_insert("id").when_matched_update_all(
            where="target.version = source.version - 1").execute(data), "applying the distill")
        if int(res.num_updated_rows) != len(rows):
            # some memories changed after they were read: put back the rows this commit did change (only
            # those, so a write another process made meanwhile stays), again in one commit
            back = pa.Table.from_pylist(originals, schema=schema)
            self.store.commit(lambda: self.store.table.merge_insert("id").when_matched_update_all(
                where=f"target.version = source.version + 1 AND target.updated_at = {rows[0]['updated_at']}")
                .execute(back), "rolling the distill back")
            self.store.facts.forget()
            self.runs.forget(tag)  # no distill happened: nothing to undo
            raise VersionConflictError(
                f"{len(rows) - int(res.num_updated_rows)} of the memories to distill changed while it ran; "
                "nothing was changed: run `memcli distill` again")
        self._fault("after-commit")
        self.store.facts.forget()
        self.store.after_write()
        self.store.audit.record(events)
        self._set_watermark(plan)
        self.runs.prune()
        if self.options.compact:
            try:
                self.store.compact(blocking=True)
            except StoreError:  # an optimisation: the distill itself is done
                pass
        return {"ok": True, "tag": tag, "counts": plan.counts(), "condensed": len(condensed)}

    def _condense(self, plan: DistillPlan) -> dict[str, str]:
        """Keeper id → condensed content, for the clusters the model condensed within its budget."""
        condenser = self.llm()
        assert condenser is not None
        out: dict[str, str] = {}
        for step in plan.merge:
            if not step.condense:
                continue
            texts = list(dict.fromkeys(plan.memories[i].content for i in [step.keep, *step.merge]))
            text = condenser.condense(texts)
            if text:
                out[step.keep] = text
        return out

    def _changes(self, plan: DistillPlan, condensed: dict[str, str]
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[AuditEvent]]:
        """The new rows (whole rows, version + 1), the rows as they were, and one audit event per change."""
        now = now_ms()
        values: dict[str, dict[str, Any]] = {}
        events: list[AuditEvent] = []

        def ev(mid: str, action: str, changes: dict[str, list[Any]], note: str = "") -> None:
            m = plan.memories[mid]
            # a promotion is listed after the merge of the same memory (history sorts by time)
            events.append(AuditEvent(memory_id=mid, action=action, actor="distill", namespace=m.namespace,
                                     version=m.version + 1, changes=changes, note=note,
                                     at=now + (action == "promote")))

        for mid in plan.archive:
            values[mid] = {"status": ARCHIVED}
            ev(mid, "archive", {"status": [ACTIVE, ARCHIVED]}, "expired")
        for step in plan.merge:
            keep = plan.memories[step.keep]
            merged_from = list(keep.merged_from)
            for mid in step.merge:
                merged_from += [x for x in [*plan.memories[mid].merged_from, mid] if x not in merged_from]
                values[mid] = {"status": SUPERSEDED, "superseded_by": keep.id}
                ev(mid, "supersede", {"status": [ACTIVE, SUPERSEDED], "superseded_by": [None, keep.id]},
                   f"merged into {keep.id}")
            v: dict[str, Any] = {"tags": step.tags, "importance": step.importance, "merged_from": merged_from}
            content = condensed.get(keep.id)
            if content and content != keep.content:
                v["content"] = content
            values[keep.id] = v
            changes = {k: [clip(getattr(keep, k)), clip(x)] for k, x in v.items() if getattr(keep, k) != x}
            ev(keep.id, "merge", changes, f"merged {len(step.merge)}: {', '.join(step.merge)}"
               + (" (condensed by the LLM)" if "content" in v else ""))
        for mid in plan.promote:
            values.setdefault(mid, {})["scope"] = "global"
            ev(mid, "promote", {"scope": [plan.memories[mid].scope, "global"]}, plan.reasons.get(mid, ""))
        ids = list(values)
        full = {r["id"]: r for start in range(0, len(ids), 500)
                for r in self.store.read_rows("id IN (" + ", ".join(quote(i) for i in ids[start:start + 500]) + ")",
                                          self.store.table.schema.names)}
        new_content = {mid: v["content"] for mid, v in values.items() if "content" in v}
        vecs = self._embed(new_content, full)
        steps = {step.keep: step for step in plan.merge}
        rows = []
        for mid, v in values.items():
            row = full.get(mid)
            if row is None or int(row["version"]) != plan.memories[mid].version:
                raise VersionConflictError(f"memory {mid} changed or was forgotten since the plan was made; "
                                           "nothing was changed: run `memcli distill` again")
            row = dict(row)
            for k, x in v.items():
                row[k] = json.dumps(x) if k == "merged_from" else list(x) if k == "tags" else x
            if mid in new_content:
                from memcli.models import content_hash

                row["content_hash"] = content_hash(new_content[mid])
                row["search_text"] = row_search_text(new_content[mid], json.loads(row["context"] or "[]"))
                row.update(vecs[mid])
            if mid in steps:
                # the merged members' words the kept text lacks stay findable by keyword: the keeper's index
                # gets them (a misspelt name, another language's words, an earlier merge's aliases)
                others = [plan.memories[o].content for o in steps[mid].merge] + [
                    full[o].get("search_text") or "" for o in steps[mid].merge if plan.memories[o].merged_from]
                base = row.get("search_text") or row_search_text(row["content"], json.loads(row["context"] or "[]"))
                row["search_text"] = keeper_search_text(base, _aliases(base, others))
            row["status"] = row.get("status") or ACTIVE
            row["version"] = int(row["version"]) + 1
            row["updated_at"] = now
            rows.append(row)
        return rows, [full[r["id"]] for r in rows], events

    def _embed(self, contents: dict[str, str], rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """New vectors for condensed contents (before the commit: a failing embedder changes nothing)."""
        if not contents:
            return {}
        probes = [Memory(id=mid, content=text, context=json.loads(rows[mid].get("context") or "[]"))
                  for mid, text in contents.items()]
        own, ctx = embed_memories(self.embedder, probes)
        return {p.id: {"vector": [float(x) for x in o], "context_vector": [float(x) for x in c]}
                for p, o, c in zip(probes, own, ctx)}

    def _fault(self, point: str) -> None:
        if self.options.fault == point:  # tests: a crash at this point (no cleanup, no finally blocks)
            os._exit(70)

    # ------------------------------------------------------------------ the incremental watermark
    def _watermark(self) -> int | None:
        """Memories unchanged since the last complete run (every namespace, same threshold) were compared with
        each other then; None: compare everything (``full``, a first run, after an undo)."""
        if self.options.full or self.options.namespace:
            return None
        try:
            mark = json.loads(self.store.read_meta().get(WATERMARK) or "null")
        except (ValueError, TypeError):
            return None
        if not isinstance(mark, dict) or mark.get("threshold") != float(self.options.threshold):
            return None
        at = mark.get("at")
        return int(at) if isinstance(at, int) else None

    def _set_watermark(self, plan: DistillPlan) -> None:
        save_conflicts(self.store, plan, bool(self.options.namespace))
        if self.options.namespace:
            return
        # a margin for other processes' clocks and for writes the plan's snapshot did not see yet
        value = {"at": plan.read_at - WATERMARK_MARGIN_MS, "threshold": float(self.options.threshold)}
        try:
            self.store.write_meta({WATERMARK: json.dumps(value)})
        except (OSError, RuntimeError, ValueError):
            pass  # the next run compares everything: slower, not wrong

def _hold_outdated(plan: DistillPlan) -> set[str]:
    """The memories not to promote: outdated ones, and the keepers of groups with an outdated member."""
    held = set(plan.outdated)
    held |= {step.keep for step in plan.merge if any(i in plan.outdated for i in [step.keep, *step.merge])}
    return held


def _keeper_rank(m: Memory) -> tuple[float, int, int]:
    """Which member of a cluster keeps its content: the most important, then a deliberate memory before a
    captured turn, then the most recent."""
    captured = m.source == "hook:stop" or "turn" in m.tags
    return (m.importance, 0 if captured else 1, m.created_at)
