"""DistillService: consolidation of a store, beside :class:`~memcli.memory.service.MemoryService` (as the board's
service is). It plans a distill, applies it after tagging the table's version, undoes a run exactly, explains
why two memories would or would not merge, and lists the runs. A face builds it over the memory service it
already holds: ``DistillService(svc).plan(options)``.

Distill is store-wide maintenance: the memory service must allow it (:meth:`MemoryService.require_owner`; a
team space's service refuses), except :meth:`explain`, which only reads two memories the caller can get.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memcli.distill.distiller import Distiller, DistillOptions, DistillPlan
from memcli.distill.runs import DistillRuns

if TYPE_CHECKING:
    from memcli.memory.service import MemoryService
    from memcli.models import Memory


class DistillService:
    """Distill the store one memory service is bound to."""

    def __init__(self, memory: "MemoryService") -> None:
        self.memory = memory

    def _distiller(self, options: DistillOptions | None) -> Distiller:
        return Distiller(self.memory.store, self.memory.embedder, options)

    def plan(self, options: DistillOptions | None = None) -> DistillPlan:
        """What a distill would do (changes nothing)."""
        self.memory.require_owner()
        return self._distiller(options).plan()

    def apply(self, options: DistillOptions | None = None, *,
              archive: Callable[[list["Memory"]], None] | None = None) -> dict[str, Any]:
        """Link the updates the writes missed (:func:`memcli.memory.current.link_missed`: an older memory a
        later one changed gets ``outdated_by``, so the plan never promotes it), then plan and apply a distill
        after tagging the table's version; ``{"ok", "tag", "counts", "linked", ...}``. The links are not undone
        with the run: they are what the writes would have recorded."""
        from memcli.memory.current import link_missed

        self.memory.require_owner()
        linked = link_missed(self.memory, namespace=options.namespace if options is not None else None)
        d = self._distiller(options)
        return {**d.apply(d.plan(), archive=archive), "linked": linked}

    def undo(self, tag: str | None = None, *, dry_run: bool = False) -> dict[str, Any]:
        """Reverse what a distill run changed (default: the latest); later writes stay. ``dry_run``: only say."""
        self.memory.require_owner()
        return DistillRuns(self.memory.store).undo(tag, dry_run=dry_run)

    def explain(self, a: str, b: str, options: DistillOptions | None = None) -> dict[str, Any]:
        """Why two memories would or would not merge (similarity, then the same-fact test)."""
        # distill is the owner's, of every namespace unless its options name one ("in different namespaces")
        ns = options.namespace if options is not None else None
        ma, mb = (self.memory.get(r, namespace=ns, all_namespaces=ns is None) for r in (a, b))
        return self._distiller(options).explain(ma, mb)

    def tags(self) -> list[dict[str, Any]]:
        """The distill tags, newest first: ``[{"tag", "version", "created_at"}]``."""
        self.memory.require_owner()
        return DistillRuns(self.memory.store).tags()
