"""Group commit for single remembers (``POST /api/memories``) arriving at once.

Every write to the store is a commit, and concurrent commits to one table conflict and retry: eight team
members remembering at once each paid for the others' commits. Here a remember waits while a write of the
same caller is in flight, and the ones that queued meanwhile go to the store together, as one
``remember_many`` (one embedding batch, one commit). An idle server writes at once, as before.

Batches are per namespace the caller writes to (the admin's, or a space's): the agents of one space share
a batch, each memory keeping its agent's default scope and its agent as the audit log's actor. A batch never
holds two memories with the same ``key`` (a later one waits for the next batch, so it updates
the first as it would one by one). If a batch fails, its memories are retried one by one, so one bad
memory fails alone with its own error.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

if TYPE_CHECKING:
    from memcli.models import RememberResult
    from memcli.server.holder import ServiceHolder
    from memcli.service import NewMemory

MAX_BATCH = 128


class WriteBatcher:
    """``await remember(item, caller_key)``: the item's result, written alone or with others."""

    def __init__(self, holder: "ServiceHolder", source: str = "api") -> None:
        self.holder = holder
        self.source = source
        self._queues: dict[Any, list[tuple["NewMemory", str | None, asyncio.Future[Any]]]] = {}
        self._running: set[Any] = set()

    async def remember(self, item: "NewMemory", caller: Any) -> "RememberResult":
        """``caller``: "admin" or a space token's :class:`~memcli.spaces.Caller`."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        # a space's writers share a batch; the admin's are apart (even from a space that is named "admin")
        group = ("space", caller.space) if hasattr(caller, "space") else ("admin",)
        actor = getattr(caller, "actor", None)
        if actor is not None and item.scope is None and item.agent is None:
            item.scope = actor  # what the caller's own SpaceService would default to
        self._queues.setdefault(group, []).append((item, actor, fut))
        if group not in self._running:
            self._running.add(group)
            # created here, so the flush runs in this request's context: as a caller of this space
            asyncio.get_running_loop().create_task(self._flush(group))
        return await fut

    def _take(self, group: Any) -> list[tuple["NewMemory", str | None, asyncio.Future[Any]]]:
        queue = self._queues.get(group, [])
        batch, rest, keys = [], [], set()
        for entry in queue:
            key = entry[0].key
            if len(batch) >= MAX_BATCH or (key is not None and key in keys):
                rest.append(entry)
            else:
                batch.append(entry)
                if key is not None:
                    keys.add(key)
        if rest:
            self._queues[group] = rest
        else:
            self._queues.pop(group, None)
        return batch

    async def _flush(self, group: Any) -> None:
        try:
            while True:
                batch = self._take(group)
                if not batch:
                    return
                outcomes = await run_in_threadpool(self._write, [it for it, _, _ in batch], [a for _, a, _ in batch])
                for (_, _, fut), outcome in zip(batch, outcomes):
                    if fut.done():
                        continue
                    if isinstance(outcome, BaseException):
                        fut.set_exception(outcome)
                    else:
                        fut.set_result(outcome)
        except BaseException as exc:  # noqa: BLE001 - never leave a request waiting
            for _, _, fut in self._queues.pop(group, []):
                if not fut.done():
                    fut.set_exception(exc)
            raise
        finally:
            self._running.discard(group)
            if self._queues.get(group):  # arrived after the last take: flush them too
                self._running.add(group)
                asyncio.get_running_loop().create_task(self._flush(group))

    def _write(self, items: list["NewMemory"], actors: list[str | None]) -> list[Any]:
        """Results (or exceptions) of ``items``, in order: one ``remember_many``, else one by one."""
        with self.holder.use() as svc:
            if len(items) > 1:
                try:
                    return list(svc.remember_many(items, source=self.source, actors=actors))
                except Exception:  # noqa: BLE001 - find out which memory it was: one by one below
                    pass
            out: list[Any] = []
            for it, actor in zip(items, actors):
                try:
                    out.append(svc.remember_many([it], source=self.source, actors=[actor])[0])
                except Exception as exc:  # noqa: BLE001 - handed to that request's error handler
                    out.append(exc)
            return out
