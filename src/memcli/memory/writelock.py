"""One exact-duplicate check and write at a time, across threads, processes and (on s3://) replicas.

``remember`` writes a memory only when no live memory has the same (namespace, scope, content hash). Two
writers doing that at once both found none and both wrote: the server's write groups (REST, /mcp, the CLI)
commit in parallel threads and a stdio `memcli mcp` process writes beside the server, so the same text sent
at once was stored up to four times (issue 26). The service therefore looks again and adds under
:meth:`WriteLock.hold`; the embedding before it is not held (it is the slow part, and a writer that lost the
race only wasted it). What the lock is:

- every store: one lock per store in this process (its threads: the server's write groups and thread pool);
- a local store: also an ``flock`` on ``.write.lock`` in the store's directory (the other processes of this
  machine). A store the lock file cannot be made in (a read-only directory) goes without it: nothing can be
  written there anyway, and the write says so.
- an ``s3://`` (or ``s3+ddb://``) store: also one lease object per content identity
  (:class:`memcli.memory.objectstore.DedupLeases`, a conditional PUT), so replicas on other machines writing the same
  text wait for each other and replicas writing other texts never do. Without a key pair to sign the
  lease requests, or on a store that does not honour the condition, replicas go without it.
- ``gs://`` and ``az://``: the lock of this process only; replicas of such a store can still each store one
  copy of a text remembered at the same moment on both.

The lock is held for a look-up and one commit (a few ms locally), and the wait for it is bounded
(WAIT_SECONDS): then the write fails as a busy store's does, with nothing written. An flock is only as good
as the file system's (NFS and other network file systems may not honour it).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from memcli.errors import StoreError

if TYPE_CHECKING:
    from memcli.memory.objectstore import DedupLeases

log = logging.getLogger("memcli.memory.store")
LOCK_FILE = ".write.lock"
# A writer waits this long for the lock (a holder's commit may retry while other writers commit: the store's
# own WRITE_RETRY_SECONDS), then fails as a busy store does: nothing written, try again. Never forever: a
# stopped process (SIGSTOP, a debugger) may hold the flock.
WAIT_SECONDS = 180.0

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _process_lock(key: str) -> threading.Lock:
    """The one lock of this process for the store at ``key`` (several handles may open one store)."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.Lock())


def _busy() -> StoreError:
    return StoreError(f"writing to the store failed: the store is busy (another writer held its write lock for "
                      f"{WAIT_SECONDS:.0f} s); nothing was written, try again")


def identity_name(namespace: str, scope: str, content_hash: str) -> str:
    """What names one content identity across processes (a lease object's name): a hash, so no namespace or
    scope text ends up in an object key."""
    return hashlib.sha256(f"{namespace}\x00{scope}\x00{content_hash}".encode()).hexdigest()


class WriteLock:
    """The lock of one store's check-then-write (see the module docstring)."""

    def __init__(self, uri: str, storage_options: Mapping[str, str] | None = None) -> None:
        self.uri = uri
        self.local = "://" not in uri
        self.storage_options = dict(storage_options or {})
        self._lock = _process_lock(os.path.realpath(uri) if self.local else uri)
        self._leases: "DedupLeases | None" = None
        if not self.local and uri.lower().startswith("s3"):
            from memcli.memory.objectstore import DedupLeases

            self._leases = DedupLeases(uri, self.storage_options)

    @contextmanager
    def hold(self, identities: Iterable[tuple[str, str, str]]) -> Iterator[None]:
        """Held while the caller looks for the ``(namespace, scope, content_hash)`` identities it is about to
        write and writes those still missing."""
        deadline = time.monotonic() + WAIT_SECONDS
        if not self._lock.acquire(timeout=WAIT_SECONDS):
            raise _busy()
        try:
            if self.local:
                with self._flock(deadline):
                    yield
            elif self._leases is not None:
                names = sorted({identity_name(*i) for i in identities})
                with self._leases.hold(names, max(0.0, deadline - time.monotonic())):
                    yield
            else:
                yield
        finally:
            self._lock.release()

    @contextmanager
    def _flock(self, deadline: float) -> Iterator[None]:
        import fcntl

        try:
            fh = open(Path(self.uri) / LOCK_FILE, "a+")
        except OSError as exc:  # a read-only or vanished store: the write that follows fails clearly
            log.debug("no write lock file in %s: %s", self.uri, exc)
            yield
            return
        with fh:
            delay = 0.001
            while True:  # polled, not blocking: a wait must end (WAIT_SECONDS)
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise _busy() from None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.01)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
