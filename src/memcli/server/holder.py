"""The warm service of a long-running face (`memcli serve`, `memcli mcp`).

One :class:`MemoryService` per process, opened once (in the background, so the process answers at once),
shared by every request, and closed only after the calls in flight have finished: a shutdown never cuts a
write in half. Imports nothing heavy by itself.

A store that cannot be opened (a missing bucket, a read-only disk) never leaves a request waiting: a call
waits at most :data:`OPEN_WAIT` seconds for the first opening, then answers 503; a failed opening is
remembered, retried by a later call after :data:`RETRY_AFTER` seconds, and a call waits at most
:data:`RETRY_WAIT` seconds for that retry before it gets the last error. Shutdown waits for an opening only
:data:`OPEN_GRACE` seconds.

Every thread of the holder's (and of the faces built on it: the group commits, the hooks' spool drainer) is a
task of :attr:`ServiceHolder.workers`: :meth:`ServiceHolder.shutdown` stops and joins them all, and says which
ones it could not join in time (the process must then end without finalizing under them: see
:mod:`memcli.server.workers`).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.errors import MemcliError, StoreError
from memcli.server.workers import Workers

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.memory.service import MemoryService

log = logging.getLogger("memcli.server")
OPEN_WAIT = 20.0  # seconds a call waits for the first opening (a cold start on a busy machine: LanceDB, the model)
RETRY_WAIT = 2.0  # ... for a new attempt, once one has failed
RETRY_AFTER = 5.0  # a failed opening is tried again by the first call this long after it failed
SHUTDOWN_WAIT = 30.0  # seconds a shutdown waits for the writes in flight (a busy store retries its commits)
OPEN_GRACE = 5.0  # ... for an opening still running (nothing written yet; a store that cannot be reached)
OPEN_THREAD = "memcli-open-store"
MAINTAIN_THREAD = "memcli-maintain"  # a shutdown does not wait for an index build: the process ends under it


def shutting_down() -> StoreError:
    """The answer (503) to work that arrives once shutdown has begun."""
    return _unavailable("the server is shutting down")


def _unavailable(message: str) -> StoreError:
    err = StoreError(message)
    err.http_status = 503  # the server cannot answer yet (or not at all): not the request's fault
    return err


class _Opening:
    """One attempt at opening the service, in a thread of its own."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.ended = 0.0  # monotonic time it ended


class ServiceHolder:
    """Opens the service lazily (thread-safe), counts calls in flight, closes after they finish."""

    def __init__(self, config: "Config", service: "MemoryService | None" = None, *,
                 project: str | None = None) -> None:
        self.config = config
        self.project = project
        self._service = service
        self._owned = service is None
        self._open_lock = threading.Lock()
        self._opening: _Opening | None = None
        self._failure: BaseException | None = None  # why the last opening failed
        self._busy = 0
        self._cond = threading.Condition()
        self._closed = False
        self._closing = threading.Event()  # set when shutdown begins: calls still waiting for the store give up
        self.workers = Workers()  # the background threads of this process's faces, joined at shutdown
        self._shut_down = False
        self._shutdown_lock = threading.Lock()
        self.maintainer: Any = None  # the store's background upkeep, once the store is open (start_maintainer)
        # team mode (memcli.server.team): turns the shared service into the one the current caller may use
        self.scoper: Callable[["MemoryService"], "MemoryService"] | None = None

    @property
    def ready(self) -> bool:
        return self._service is not None

    def get(self) -> "MemoryService":
        """The service the current caller may use (see ``scoper``), opened on first use. A failure to open is
        raised (MemcliError) and retried later."""
        svc = self.base()
        return self.scoper(svc) if self.scoper is not None else svc

    def base(self, wait: float | None = None) -> "MemoryService":
        """The process's own service, whoever the caller; waits for it at most ``wait`` seconds (default: see
        the module's note), then raises a 503 StoreError."""
        svc = self._service
        if svc is not None:
            return svc
        if self._closed or self._closing.is_set():
            raise _unavailable("the server is shutting down")
        with self._open_lock:
            attempt = self._opening
            failed = attempt is not None and attempt.done.is_set() and attempt.error is not None
            if attempt is None or (failed and time.monotonic() - attempt.ended >= RETRY_AFTER):
                attempt = self._opening = self._start_opening()
        if wait is None:
            wait = RETRY_WAIT if failed else OPEN_WAIT
        deadline = time.monotonic() + wait
        while not attempt.done.wait(min(0.1, max(0.0, deadline - time.monotonic()))):
            if self._closing.is_set():  # nothing was written yet: no reason to hold the shutdown
                raise _unavailable("the server is shutting down")
            if time.monotonic() < deadline:
                continue
            if failed:  # a retry still running: the last failure is the answer meanwhile
                raise _unavailable(_message(self._failure))
            raise _unavailable(f"the store at {self.config.data_uri} is still being opened (over {wait:.0f} s so "
                               "far); retry in a moment")
        if self._service is not None:
            return self._service
        raise _unavailable(_message(attempt.error))

    def _start_opening(self) -> _Opening:
        """Open the service in a thread of its own: a call waits for it only so long (and never shutdown)."""
        attempt = _Opening()

        def run() -> None:
            from memcli.memory.service import MemoryService

            started = time.monotonic()
            try:
                svc = MemoryService.open(self.config, project=self.project)
            except BaseException as exc:  # noqa: BLE001 - handed to the calls waiting, and remembered
                attempt.error = exc
                self._failure = exc
                log.warning("could not open the memory store: %s", _message(exc))
            else:
                with self._open_lock:  # close() either sees this service (and closes it) or we see it closed
                    closed = self._closed
                    if not closed:
                        self._service = svc
                if closed:  # shut down meanwhile: nobody will use it
                    svc.close()
                    attempt.error = shutting_down()
                else:
                    log.info("store %s opened in %.2fs", self.config.data_uri, time.monotonic() - started)
            finally:
                attempt.ended = time.monotonic()
                attempt.done.set()

        self.workers.start(run, name=OPEN_THREAD)
        return attempt

    def warm(self) -> threading.Thread:
        """Open the store and load the embedder in a background thread (errors are logged, not raised)."""

        def run() -> None:
            try:
                # as long as it takes (a cold start): only calls are bounded
                svc = self.base(wait=3600.0)
                embedder = getattr(svc, "embedder", None)  # a team client has none
                if embedder is not None:
                    embedder.embed_query("warm up")
            except Exception as exc:  # noqa: BLE001 - reported again on the first real call
                log.warning("the server is not ready: %s", _message(exc))
                return
            self.start_maintainer(svc)

        return self.workers.start(run, name="memcli-warm")

    def start_maintainer(self, svc: "MemoryService") -> None:
        """The store's indexes and fragments kept up in a background thread (memcli.memory.maintenance.Maintainer):
        the process's writes no longer compact or build an index themselves, so none waits for it."""
        store = getattr(svc, "store", None)
        if store is None or not hasattr(store, "maintain") or self.stopping:
            return
        from memcli.memory.maintenance import Maintainer

        self.maintainer = Maintainer(store)
        self.workers.start(self.maintainer.run, self.workers.stopping, name=MAINTAIN_THREAD)

    @contextmanager
    def use(self) -> Iterator["MemoryService"]:
        """The service, counted as busy until the block ends (shutdown waits for it)."""
        with self._cond:
            self._busy += 1
        try:
            yield self.get()
        finally:
            with self._cond:
                self._busy -= 1
                self._cond.notify_all()

    def call(self, method: str, /, *args: Any, **kwargs: Any) -> Any:
        """``service.<method>(*args, **kwargs)`` as one tracked call."""
        with self.use() as svc:
            return getattr(svc, method)(*args, **kwargs)

    def call_with(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """``fn(service, *args, **kwargs)`` as one tracked call (a second service over it: distill)."""
        with self.use() as svc:
            return fn(svc, *args, **kwargs)

    @property
    def busy(self) -> int:
        return self._busy

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Wait until no call is in flight; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    @property
    def stopping(self) -> bool:
        """Whether shutdown has begun (new writes are refused)."""
        return self.workers.stopping.is_set()

    def begin_close(self) -> None:
        """Shutdown has begun (a signal, the idle timeout): calls still waiting for the store to open answer 503
        at once, before the server's graceful wait for requests in flight runs out (a cancelled request would
        get a bare 500); new writes are refused, the background threads stop at their next safe point."""
        self._closing.set()
        self.workers.stop()

    def shutdown(self, timeout: float = SHUTDOWN_WAIT) -> list[str]:
        """Stop: refuse new work, let the writes in flight and the background threads finish (within
        ``timeout`` seconds; an opening within :data:`OPEN_GRACE`), close the service. Returns what is still
        running then (thread names; calls in flight): the process must not finalize under it. A later call
        (another thread: it waits for the first to end) waits no more: it only says what is still running."""
        self.begin_close()
        deadline = time.monotonic() + timeout
        with self._shutdown_lock:
            if self._shut_down:
                stuck = self.workers.running()
            else:
                self._shut_down = True
                # group commits finish their queue, the drainer its current turn, the warm-up its embedding
                self.workers.join(timeout, skip=(OPEN_THREAD, MAINTAIN_THREAD))
                self.close(max(0.0, deadline - time.monotonic()))
                stuck = self.workers.join(min(OPEN_GRACE, max(0.0, deadline - time.monotonic())))
            if self._busy:
                stuck.append(f"{self._busy} call(s) in flight")
            return stuck

    def close(self, timeout: float = SHUTDOWN_WAIT) -> None:
        """Wait for calls in flight, then close the service if this holder opened it."""
        if self._closed:
            return
        self._closing.set()
        if not self.wait_idle(timeout):
            log.warning("closing with %d call(s) still running after %.0fs", self._busy, timeout)
        self._closed = True
        # Still opening with no call waiting for it: nothing was written; the opening closes what it opened.
        with self._open_lock:
            if self._owned and self._service is not None:
                self._service.close()
                self._service = None


def _message(exc: BaseException | None) -> str:
    if isinstance(exc, MemcliError):
        return exc.message
    return f"the store could not be opened: {type(exc).__name__}: {exc}" if exc else "the store could not be opened"


def setup_file_logging(config: "Config", name: str, *, level: int = logging.INFO,
                       stderr_level: int = logging.WARNING) -> Path:
    """Log to ``<home>/logs/<name>.log`` and stderr, never to stdout. When stderr already is that file (a
    detached server started with its output appended there), it is written once, through stderr."""
    import os

    log_dir = config.log_dir
    log_dir.mkdir(parents=True, exist_ok=True)
    path = log_dir / f"{name}.log"
    fmt = logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    root = logging.getLogger()
    try:
        err, log_file = os.fstat(2), os.stat(path)
        stderr_is_log = (err.st_dev, err.st_ino) == (log_file.st_dev, log_file.st_ino)
    except OSError:
        stderr_is_log = False
    if not stderr_is_log:
        fh = logging.FileHandler(path, encoding="utf-8")
        fh.setFormatter(fmt)
        root.addHandler(fh)
    sh = logging.StreamHandler(sys.stderr)
    sh.setFormatter(fmt)
    sh.setLevel(level if stderr_is_log else stderr_level)
    root.addHandler(sh)
    root.setLevel(level)
    return path
