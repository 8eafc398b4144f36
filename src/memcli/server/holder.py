"""The warm service of a long-running face (`memcli serve`, `memcli mcp`).

One :class:`MemoryService` per process, opened once (in the background, so the process answers at once),
shared by every request, and closed only after the calls in flight have finished: a shutdown never cuts a
write in half. Imports nothing heavy by itself.
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

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.service import MemoryService

log = logging.getLogger("memcli.server")


class ServiceHolder:
    """Opens the service lazily (thread-safe), counts calls in flight, closes after they finish."""

    def __init__(self, config: "Config", service: "MemoryService | None" = None, *,
                 project: str | None = None) -> None:
        self.config = config
        self.project = project
        self._service = service
        self._owned = service is None
        self._open_lock = threading.Lock()
        self._busy = 0
        self._cond = threading.Condition()
        self._closed = False
        # team mode (memcli.server.team): turns the shared service into the one the current caller may use
        self.scoper: Callable[["MemoryService"], "MemoryService"] | None = None

    @property
    def ready(self) -> bool:
        return self._service is not None

    def get(self) -> "MemoryService":
        """The service the current caller may use (see ``scoper``), opened on first use. A failure to open is
        raised (MemcliError) and retried next time."""
        svc = self.base()
        return self.scoper(svc) if self.scoper is not None else svc

    def base(self) -> "MemoryService":
        """The process's own service, whoever the caller."""
        svc = self._service
        if svc is not None:
            return svc
        with self._open_lock:
            if self._service is None:
                from memcli.service import MemoryService

                started = time.monotonic()
                self._service = MemoryService.open(self.config, project=self.project)
                log.info("store %s opened in %.2fs", self.config.data_uri, time.monotonic() - started)
            return self._service

    def warm(self) -> threading.Thread:
        """Open the store and load the embedder in a background thread (errors are logged, not raised)."""

        def run() -> None:
            try:
                embedder = getattr(self.base(), "embedder", None)  # a team client (RemoteService) has none
                if embedder is not None:
                    embedder.embed_query("warm up")
            except Exception as exc:  # noqa: BLE001 - reported again on the first real call
                log.warning("could not open the memory store yet: %s", exc)

        t = threading.Thread(target=run, name="memcli-warm", daemon=True)
        t.start()
        return t

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

    def close(self, timeout: float = 30.0) -> None:
        """Wait for calls in flight, then close the service if this holder opened it."""
        if self._closed:
            return
        if not self.wait_idle(timeout):
            log.warning("closing with %d call(s) still running after %.0fs", self._busy, timeout)
        self._closed = True
        # Still opening (the warm-up) with no call waiting for it: nothing was written, nothing to close.
        if not self._open_lock.acquire(blocking=False):
            return
        try:
            if self._owned and self._service is not None:
                self._service.close()
                self._service = None
        finally:
            self._open_lock.release()


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
