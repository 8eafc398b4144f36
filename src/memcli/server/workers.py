"""The background work of a long-running face (`memcli serve`, `memcli mcp`): started here, told to stop, joined.

Python finalizes the interpreter under its daemon threads. One that is inside native code then (LanceDB's
Rust runtime handing a result back, pyarrow, the embedder's OpenMP engine) aborts the whole process
("Fatal Python error: PyGILState_Release", "FATAL: exception not rethrown": SIGABRT, a core dump) after a
clean shutdown. So every thread of the server's own — the store's opening, the warm-up, the group commits,
the hooks' spool drainer and warm recall — runs as a task of one :class:`Workers`: shutdown sets
:attr:`Workers.stopping` (no new work is taken: writes are refused, the drainer stops between turns),
waits for the tasks still running, and a process whose tasks could not all be joined in time ends with
:func:`end_process` (logs flushed, no finalization) instead of finalizing under them.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")


class Workers:
    """A registry of running tasks (each one thread's work, in a thread of its own or a borrowed one)."""

    def __init__(self) -> None:
        self.stopping = threading.Event()  # set at shutdown: take no new work, stop at the next safe point
        self._cond = threading.Condition()
        self._running: dict[int, str] = {}  # task number -> thread name
        self._count = 0

    def _add(self, name: str) -> int:
        with self._cond:
            self._count += 1
            self._running[self._count] = name
            return self._count

    def _done(self, key: int) -> None:
        with self._cond:
            self._running.pop(key, None)
            self._cond.notify_all()

    @contextmanager
    def task(self, name: str) -> Iterator[None]:
        """The block, counted as a running task (shutdown waits for it)."""
        key = self._add(name)
        try:
            yield
        finally:
            self._done(key)

    def run(self, name: str, fn: Callable[..., T], /, *args: Any) -> T:
        """``fn(*args)`` in the current thread (a worker thread of the event loop), as a task."""
        with self.task(name):
            return fn(*args)

    def start(self, target: Callable[..., Any], /, *args: Any, name: str) -> threading.Thread:
        """``target(*args)`` in a daemon thread of its own, as a task (counted before the thread starts, so a
        shutdown that begins meanwhile waits for it too)."""
        key = self._add(name)

        def body() -> None:
            try:
                target(*args)
            finally:
                self._done(key)

        t = threading.Thread(target=body, name=name, daemon=True)
        try:
            t.start()
        except BaseException:  # no thread (the process is out of them): no task either
            self._done(key)
            raise
        return t

    def stop(self) -> None:
        """Shutdown has begun: tasks stop taking new work."""
        self.stopping.set()

    def running(self, skip: tuple[str, ...] = ()) -> list[str]:
        """The names of the tasks still running (but those named in ``skip``)."""
        with self._cond:
            return [n for n in self._running.values() if n not in skip]

    def join(self, timeout: float, skip: tuple[str, ...] = ()) -> list[str]:
        """Wait at most ``timeout`` seconds for every task (but those named in ``skip``) to end; returns the
        names of those still running then."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                left = [n for n in self._running.values() if n not in skip]
                remaining = deadline - time.monotonic()
                if not left or remaining <= 0:
                    return left
                self._cond.wait(remaining)


def end_process(code: int) -> None:
    """End the process now with ``code``, logs and standard streams flushed, without finalizing the
    interpreter: for when a thread could not be joined (it may be inside native code)."""
    logging.shutdown()  # flushes and closes every handler (the log file, stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed, or not a stream any more
            pass
    os._exit(code)
