"""The record of each distill run, and its undo.

:meth:`DistillRuns.tag` tags the table's version ``distill-<UTC timestamp>`` before a run applies anything;
:meth:`DistillRuns.record` keeps with the tag, for each row the run changes, every field it changes
before and after (status, superseded_by, merged_from, scope, tags, importance, content). :meth:`undo` puts
exactly those fields back — each only if it still holds what the run wrote; a field written again since keeps
the later value and is reported — so memories written after the run, in any namespace, are never touched. A
condensed content goes back with the vectors it had, read from the tagged version. The last
:data:`KEEP_TAGS` tags are kept (their versions survive compaction).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from memcli.errors import (
    NotFoundError,
    StoreError,
    ValidationError,
    VersionConflictError,
)
from memcli.memory.audit import AuditEvent, clip
from memcli.memory.reader import quote
from memcli.models import now_ms

if TYPE_CHECKING:
    from memcli.memory.store import MemoryStore

TAG_PREFIX = "distill-"
KEEP_TAGS = 20  # older distill tags are deleted, so compaction can reclaim their versions' files
RUN_PREFIX = "distill_run:"  # meta key of a run's record: the fields it changed, before and after
UNDO_FIELDS = ("status", "superseded_by", "merged_from", "scope", "tags", "importance", "content", "search_text")
WATERMARK = "distill_watermark"  # meta key: {"at": ms, "threshold": t} of the last complete run
CONFLICTS = "distill_conflicts"  # meta key: [[newer id, older id, similarity], ...] listed by the last runs
_QUIET = {"search_text"}  # undone like the others, not shown (the keyword index of the content)


class DistillRuns:
    """The distill tags of one store, what each run changed, and undo."""

    def __init__(self, store: "MemoryStore") -> None:
        self.store = store

    def tag(self) -> str:
        """Tag the table's current version ``distill-<UTC timestamp>`` (unique)."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        existing = self.store.table.tags.list()
        tag, n = TAG_PREFIX + stamp, 1
        while tag in existing:
            n += 1
            tag = f"{TAG_PREFIX}{stamp}-{n}"
        try:
            self.store.table.tags.create(tag, self.store.table.version)
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"cannot tag the store's version before the distill: {exc}; nothing was changed") from exc
        return tag

    def tags(self) -> list[dict[str, Any]]:
        """The distill tags, newest first: ``{"tag", "version", "created_at"}`` (ms, from the tag's name)."""
        out = []
        for name, info in self.store.table.tags.list().items():
            if name.startswith(TAG_PREFIX):
                out.append({"tag": name, "version": int(info["version"]), "created_at": _tag_time(name)})
        out.sort(key=lambda t: (t["created_at"], t["version"], t["tag"]), reverse=True)
        return out

    def prune(self) -> None:
        for t in self.tags()[KEEP_TAGS:]:
            self.forget(t["tag"])

    def record(self, tag: str, rows: list[dict[str, Any]], originals: list[dict[str, Any]]) -> None:
        """Keep, with the tag, each changed field of each row before and after this run (undo's input)."""
        before = {r["id"]: r for r in originals}
        changes: dict[str, dict[str, Any]] = {}
        for row in rows:
            old = before[row["id"]]
            fields = [f for f in UNDO_FIELDS if _same_value(old.get(f), row.get(f)) is False]
            changes[row["id"]] = {"version": int(row["version"]), "updated_at": int(row["updated_at"]),
                                  "version_before": int(old["version"]), "updated_at_before": int(old["updated_at"]),
                                  "before": {f: _plain(old.get(f)) for f in fields},
                                  "after": {f: _plain(row.get(f)) for f in fields}}
        try:
            self.store.write_meta({RUN_PREFIX + tag: json.dumps({"tag": tag, "at": now_ms(), "changes": changes})})
        except (OSError, RuntimeError, ValueError) as exc:
            self.forget(tag)
            raise StoreError(f"cannot record the distill before applying it: {exc}; nothing was changed") from exc

    def forget(self, tag: str) -> None:
        """Drop a tag and its run record (an undone or rolled-back run cannot be undone again)."""
        try:
            self.store.table.tags.delete(tag)
        except (OSError, RuntimeError, ValueError):
            pass
        try:
            self.store.delete_meta([RUN_PREFIX + tag])
        except (OSError, RuntimeError, ValueError):
            pass

    def undo(self, tag: str | None = None, *, dry_run: bool = False) -> dict[str, Any]:
        """Reverse exactly what one distill run changed (default: the latest): each field it changed goes back
        to its value before the run — unless a later write changed that field again, which is kept and
        reported. Memories written after the run, in any namespace, are never touched. ``dry_run``: only say
        what would change. ``{"ok", "restored", "changed", "changes": [...], "kept": [...], "gone": [...]}``."""
        tags = self.tags()
        if tag is None:
            if not tags:
                raise NotFoundError("there is no distill to undo (no distill-* tag; see `memcli distill --tags`)")
            tag = tags[0]["tag"]
        elif tag not in {t["tag"] for t in tags}:
            known = ", ".join(t["tag"] for t in tags[:5]) or "none"
            raise NotFoundError(f"no distill tag {tag!r} (latest: {known})")
        raw = self.store.read_meta().get(RUN_PREFIX + tag)
        if not raw:
            raise ValidationError(f"{tag} was applied by an older memcli that did not record what it changed; it "
                                  "cannot be undone without discarding what was written since (nothing was changed)")
        changes: dict[str, dict[str, Any]] = json.loads(raw)["changes"]
        ids = list(changes)
        current = {r["id"]: r for start in range(0, len(ids), 500)
                   for r in self.store.read_rows("id IN (" + ", ".join(quote(i) for i in ids[start:start + 500]) + ")",
                                                 self.store.table.schema.names)}
        now = now_ms()
        rows: list[dict[str, Any]] = []
        report: list[dict[str, Any]] = []
        kept: list[dict[str, Any]] = []
        need_old: list[str] = []
        stamps = {ch.get("updated_at") for ch in changes.values()}
        run_at = stamps.pop() if len(stamps) == 1 else None  # one time stamps every row a run wrote
        exact = False
        for mid, ch in changes.items():
            cur = current.get(mid)
            if cur is None:
                continue
            row, back, later = dict(cur), {}, []
            for f, value in ch["before"].items():
                if _same_value(cur.get(f), ch["after"][f]):
                    back[f] = [_plain(cur.get(f)), value]
                    row[f] = value
                else:
                    later.append(f)  # written again after the run: the later value stays
            if later:
                kept.append({"memory_id": mid, "fields": later, "version": int(cur["version"])})
            if back:
                if "content" in back:
                    need_old.append(mid)
                untouched = not later and run_at is not None and int(cur["version"]) == ch["version"] \
                    and "version_before" in ch and int(cur["updated_at"]) == run_at
                if untouched:  # nothing written since the run: the row goes back exactly as it was
                    row["version"], row["updated_at"] = int(ch["version_before"]), int(ch["updated_at_before"])
                    exact = True
                else:  # written again since: the undo is one more change
                    row["version"] = int(cur["version"]) + 1
                    row["updated_at"] = now
                rows.append(row)
                report.append({"memory_id": mid, "namespace": cur["namespace"], "version": int(row["version"]),
                               "changes": {f: v for f, v in back.items() if f not in _QUIET}})
        gone = sorted(set(ids) - set(current))
        result = {"ok": True, "restored": tag, "changed": len(rows), "changes": report, "kept": kept, "gone": gone,
                  "dry_run": dry_run}
        if dry_run:
            return result
        if need_old:  # a condensed content goes back with the vectors it had
            old = {r["id"]: r for r in self.store.reader.snapshot().checkout_version(tag).to_table(
                columns=["id", "content_hash", "search_text", "vector", "context_vector"],
                filter="id IN (" + ", ".join(quote(i) for i in need_old) + ")").to_pylist()}
            for row in rows:
                if row["id"] in old:
                    row.update({k: v for k, v in old[row["id"]].items() if k != "id"})
        if rows:
            import pyarrow as pa

            data = pa.Table.from_pylist(rows, schema=self.store.table.schema)
            # a row put back exactly is one version *below* the stored one, still stamped by the run (one time
            # for all its rows); a row written since is one above
            cond = "target.version = source.version - 1"
            if exact:
                cond = f"({cond}) OR (target.version = source.version + 1 AND target.updated_at = {int(run_at or 0)})"
            res = self.store.commit(lambda: self.store.table.merge_insert("id").when_matched_update_all(
                where=cond).execute(data), "undoing the distill")
            if int(res.num_updated_rows) != len(rows):
                raise VersionConflictError("memories changed while the undo ran; some were put back, run "
                                           f"`memcli distill --undo {tag}` again to finish")
            self.store.facts.forget()
            self.store.after_write()
            self.store.audit.record([
                AuditEvent(memory_id=r["memory_id"], action="restore", actor="distill", namespace=r["namespace"],
                           version=r["version"], note=f"undo {tag}",
                           changes={f: [clip(v[0]), clip(v[1])] for f, v in r["changes"].items()})
                for r in report])
        self.store.write_meta({WATERMARK: "null"})  # the next run compares everything again
        self.forget(tag)
        return result


def _plain(value: Any) -> Any:
    """A row value as JSON can keep it (tags: a list; merged_from: its JSON text)."""
    return list(value) if isinstance(value, (list, tuple)) else value


def _same_value(a: Any, b: Any) -> bool:
    return _plain(a) == _plain(b)


def _tag_time(name: str) -> int:
    stamp = name[len(TAG_PREFIX):].split("-")[0]
    try:
        return int(datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc).timestamp() * 1000)
    except ValueError:
        return 0
