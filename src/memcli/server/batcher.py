"""Group commit for single remembers arriving at once: REST ``POST /api/memories``, the MCP ``remember`` tool and
the CLI's remembers through the home's server.

Every write to the store is a commit, and concurrent commits to one table conflict and retry: eight writers
remembering at once each paid for the others' commits. Here a remember waits while a write of the same group
is in flight, and the ones that queued meanwhile go to the store together, as one ``remember_many`` (one
embedding batch, one commit). An idle server writes at once, as before; each writer gets its own id and result,
and only once the commit that holds its memory is done.

A group is the namespace owner the caller writes as (the admin's, or a space's), whatever the face: REST
(``api``), the CLI (``cli``) and MCP (``mcp``) writes arriving at once share a batch, each memory keeping its own
face as its source, and the agents of one space share a batch, each memory keeping its agent's default scope
and its agent as the audit log's actor. A batch never holds two memories with the same ``key`` (a later
one waits for the next batch, so it updates the first as it would one by one). If a batch fails, its memories
are retried one by one, so one bad memory fails alone with its own error; if the store cannot be used at all,
every writer of the batch gets that error at once.

A batch is taken as soon as the previous one is done, so writers that are answered together come back a few
milliseconds apart: the first alone would make a batch of one, and the rest another. So when the group's
last batch ended a moment ago (:data:`RECENT`), the next one waits for the writers it answered and those that
queued meanwhile, at most :data:`FILL_WAIT` (and a tenth of that batch's time); an idle server, or a lone
writer, writes at once.

The writes run in a thread of their own (one per busy group), so a caller may be a coroutine (REST:
:meth:`WriteBatcher.remember`) or a worker thread (an MCP tool: :meth:`WriteBatcher.remember_now`); the
caller's context (who the caller is, in team mode) goes with the write. Those threads are tasks of the holder's
:attr:`~memcli.server.holder.ServiceHolder.workers`: once shutdown has begun a new write is refused (503), and
the shutdown waits until every write already queued has its answer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memcli.server.holder import shutting_down

if TYPE_CHECKING:
    from memcli.memory.service import NewMemory
    from memcli.models import RememberResult
    from memcli.server.holder import ServiceHolder

log = logging.getLogger("memcli.server")
MAX_BATCH = 128
RECENT = 0.25  # s: a group's last batch this recent says its writers are still writing
FILL_WAIT = 0.020  # s: the longest a batch waits for the writers of the last one (bench/scale.py --parts writes)


@dataclass
class _Entry:
    item: "NewMemory"
    actor: str | None
    source: str
    future: "concurrent.futures.Future[RememberResult]" = field(default_factory=concurrent.futures.Future)


@dataclass
class _Last:
    """A group's last batch: its writers and those that queued while it was written (how many write next),
    when it ended, how long it took (s)."""
    writers: int = 0
    ended: float = 0.0
    took: float = 0.0


class WriteBatcher:
    """``await remember(item, caller, source)``: the item's result, written alone or with others."""

    def __init__(self, holder: "ServiceHolder", source: str = "api",
                 current_caller: Callable[[], Any] | None = None) -> None:
        self.holder = holder
        self.source = source  # the default face writes are recorded as
        self.current_caller = current_caller or (lambda: "admin")  # whom a caller of None means
        self._lock = threading.Condition()  # notified when a write is queued (a filling batch waits for it)
        self._queues: dict[tuple[Any, ...], list[_Entry]] = {}
        self._running: set[tuple[Any, ...]] = set()
        self._last: dict[tuple[Any, ...], _Last] = {}
        self.commits = 0  # groups written (for the log and the benches)

    def submit(self, item: "NewMemory", caller: Any, source: str | None = None,
               actor: str | None = None) -> "concurrent.futures.Future[Any]":
        """Queue ``item``; the future holds its RememberResult (or its error) once its commit is done.
        ``caller``: "admin", a space token's :class:`~memcli.team.spaces.Caller`, or None: the current one.
        ``actor``: who the audit log names when the caller is the admin (a space token names its own agent)."""
        src = source or self.source
        if self.holder.stopping:  # nothing queued after this: the shutdown waits only for what it has seen
            refused: concurrent.futures.Future[Any] = concurrent.futures.Future()
            refused.set_exception(shutting_down())
            return refused
        if caller is None:
            caller = self.current_caller()
        # a space's writers share a batch, whatever their face; the admin's are apart (even from a space that is
        # named "admin")
        group = ("space", caller.space) if hasattr(caller, "space") else ("admin",)
        space_actor = getattr(caller, "actor", None)
        if space_actor is not None and item.scope is None and item.agent is None:
            item.scope = space_actor  # what the caller's own SpaceService would default to
        entry = _Entry(item, space_actor if space_actor is not None else actor, src)
        with self._lock:
            self._queues.setdefault(group, []).append(entry)
            start = group not in self._running
            if start:
                self._running.add(group)
            self._lock.notify_all()
        if start:
            # the caller's context goes with the writes: in team mode it says which space they go to
            ctx = contextvars.copy_context()
            self.holder.workers.start(ctx.run, self._drain, group, name="memcli-group-commit")
        return entry.future

    async def remember(self, item: "NewMemory", caller: Any, source: str | None = None) -> "RememberResult":
        """From the event loop (REST)."""
        return await asyncio.wrap_future(self.submit(item, caller, source))

    def remember_now(self, item: "NewMemory", caller: Any, source: str | None = None,
                     actor: str | None = None) -> "RememberResult":
        """From a worker thread (an MCP tool): blocks until the item's commit is done."""
        return self.submit(item, caller, source, actor).result()

    def _take(self, group: tuple[Any, ...]) -> list[_Entry]:
        """The next batch of ``group`` (under the lock); an empty one ends the group's thread."""
        queue = self._queues.get(group, [])
        batch: list[_Entry] = []
        rest: list[_Entry] = []
        keys: set[str] = set()
        for entry in queue:
            key = entry.item.key
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
        if not batch:
            self._running.discard(group)
        return batch

    def _fill(self, group: tuple[Any, ...]) -> float:
        """Wait (under the lock) while the writers of the group's last batch, answered a moment ago, come
        back: until they and those queued meanwhile are queued, at most FILL_WAIT. Returns the wait (s)."""
        last = self._last.get(group)
        now = time.monotonic()
        if last is None or last.writers < 2 or now - last.ended > RECENT:
            return 0.0
        deadline = now + min(FILL_WAIT, last.took / 10)
        while len(self._queues.get(group, ())) < min(last.writers, MAX_BATCH) and not self.holder.stopping:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._lock.wait(left)
        return time.monotonic() - now

    def _drain(self, group: tuple[Any, ...]) -> None:
        """Write ``group``'s queue batch by batch until it is empty. Every entry taken gets an answer."""
        while True:
            with self._lock:
                waited = self._fill(group)
                batch = self._take(group)
            if not batch:
                return
            started = time.monotonic()
            sources = [e.source for e in batch]
            try:
                outcomes = self._write([e.item for e in batch], [e.actor for e in batch], sources)
            except BaseException as exc:  # noqa: BLE001 - the store could not be used: every writer hears it
                outcomes = [exc] * len(batch)
            ended = time.monotonic()
            with self._lock:
                self._last[group] = _Last(len(batch) + len(self._queues.get(group, ())), ended, ended - started)
            for entry, outcome in zip(batch, outcomes):
                try:
                    if isinstance(outcome, BaseException):
                        entry.future.set_exception(outcome)
                    else:
                        entry.future.set_result(outcome)
                except concurrent.futures.InvalidStateError:
                    pass  # its request was cancelled meanwhile (shutdown): nobody waits for it
            self.commits += 1
            log.info("remember: %d memor%s (%s) in one commit, %.0f ms (%.0f ms waiting for writers)", len(batch),
                     "y" if len(batch) == 1 else "ies", "+".join(sorted(set(sources))), (ended - started) * 1000,
                     waited * 1000)

    def _write(self, items: list["NewMemory"], actors: list[str | None], sources: list[str]) -> list[Any]:
        """Results (or exceptions) of ``items``, in order: one ``remember_many``, else one by one."""
        with self.holder.use() as svc:
            if len(items) > 1:
                try:
                    return list(svc.remember_many(items, source=sources[0], actors=actors, sources=sources))
                except Exception:  # noqa: BLE001 - find out which memory it was: one by one below
                    pass
            out: list[Any] = []
            for it, actor, source in zip(items, actors, sources):
                try:
                    out.append(svc.remember_many([it], source=source, actors=[actor])[0])
                except Exception as exc:  # noqa: BLE001 - handed to that request's error handler
                    out.append(exc)
            return out
