"""The Stop hook's queue: ``<home>/spool/<ms>-<rand>.json``, one payload each, written atomically.

The client spools a turn when the server is down or busy; the server spools every Stop it receives before
answering, then drains the queue in the background. A turn is deleted from the queue only once it is stored
(or judged not worth storing), so a crash, a busy embedder or a full disk never loses it.

One entry never holds up the others: only a bounded regular file is read (a FIFO, a device or a symlink named
like an entry is set aside unread), and an entry that fails is retried at most :data:`MAX_ATTEMPTS` times,
counted in its name (``<ms>-<rand>.try<n>.json``, renamed before each attempt) so that the count survives a
restart, and even an entry that kills the server is set aside after that many starts.
"""

from __future__ import annotations

import errno
import json
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memcli.hooks.transport import SPOOL_MAX, read_regular
from memcli.hooks.transport import spool as _write_raw

MAX_ATTEMPTS = 5
_TRY_RE = re.compile(r"\.try(\d+)\.json$")
# The disk refused the write (full, read-only, no permission): not the payload's fault, so such a failure does not
# count against its attempts; the turn stays queued until the store can be written again.
_UNWRITABLE = {errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, getattr(errno, "EDQUOT", errno.ENOSPC)}


def store_unwritable(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or an error it was raised from) says the store cannot be written right now."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _UNWRITABLE:
            return True
        text = str(exc)
        if "the store is busy" in text or any(f"(os error {n})" in text for n in _UNWRITABLE):  # lance's IO errors
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class PermanentError(Exception):
    """This payload can never be processed (moved to spool/failed/)."""


def attempts_of(path: Path) -> int:
    """How many times this entry was tried already (its name says it: ``….try<n>.json``)."""
    m = _TRY_RE.search(path.name)
    return int(m.group(1)) if m else 0


def with_attempts(path: Path, n: int) -> Path:
    """The entry's name after ``n`` attempts."""
    base = _TRY_RE.sub(".json", path.name)
    return path.with_name(base if n == 0 else base[: -len(".json")] + f".try{n}.json")


class Spool:
    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self.dir = self.home / "spool"
        self._lock = threading.Lock()
        self._counted: dict[str, int] = {}  # attempts of entries that could not be renamed (a read-only spool)

    def put(self, payload: dict[str, Any]) -> Path:
        """Queue ``payload`` (fsync'd, then renamed into place); raises OSError when the disk refuses."""
        # the server's payloads are cleaned already (HookRuntime.handle)
        return Path(_write_raw(self.home, json.dumps(payload, ensure_ascii=False).encode("utf-8"), clean=False))

    def pending(self) -> list[Path]:
        try:
            names = [n for n in os.listdir(self.dir) if n.endswith(".json") and not n.startswith(".")]
        except OSError:
            return []
        return [self.dir / n for n in sorted(names)]

    def _fail(self, path: Path) -> None:
        failed = self.dir / "failed"
        try:
            failed.mkdir(parents=True, exist_ok=True)
            os.replace(path, failed / path.name)
        except OSError:
            pass

    @staticmethod
    def read(path: Path) -> dict[str, Any]:
        """One entry's payload: a regular file (not a link, FIFO or device) of at most :data:`~memcli.hooks.transport.SPOOL_MAX`
        bytes holding a JSON object, else :class:`PermanentError`; FileNotFoundError when another drainer
        took it."""
        try:
            raw = read_regular(str(path), SPOOL_MAX, follow=False)
        except FileNotFoundError:
            raise
        except (OSError, ValueError) as exc:
            raise PermanentError(f"{type(exc).__name__}: {exc}") from None
        try:
            payload = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise PermanentError(f"{type(exc).__name__}: {exc}") from None
        if not isinstance(payload, dict):
            raise PermanentError("not a JSON object")
        return payload

    def drain(self, process: Callable[[dict[str, Any]], Any], log: Callable[[str], None],
              stop: Callable[[], bool] | None = None) -> int:
        """Process every queued payload in order; returns how many left the queue. One drainer at a time:
        when another thread is draining, returns 0 at once (it will see the new files). ``stop``: asked before
        each payload; True (the server is shutting down) ends the drain there, the rest stays queued."""
        if not self._lock.acquire(blocking=False):
            return 0
        done = 0
        tried: set[str] = set()  # entries attempted in this drain: each once, a failed one waits for the next
        try:
            while True:
                batch = [p for p in self.pending() if with_attempts(p, 0).name not in tried]
                if not batch:
                    break
                progressed = False
                failed_last = False
                for path in batch:
                    if stop is not None and stop():
                        return done
                    key = with_attempts(path, 0).name
                    tried.add(key)
                    n = max(attempts_of(path), self._counted.get(key, 0))
                    if n >= MAX_ATTEMPTS:  # tried that often already, perhaps each time by a server it killed
                        log(f"spool: {path.name} was tried {n} times; moved to spool/failed")
                        self._fail(path)
                        continue
                    try:
                        payload = self.read(path)
                    except FileNotFoundError:
                        continue
                    except PermanentError as exc:
                        log(f"spool: {path.name} is not a valid payload ({exc}); moved to spool/failed")
                        self._fail(path)
                        continue
                    trying = with_attempts(path, n + 1)
                    try:  # counted before it runs: a crash or a kill during the attempt still counts it
                        os.replace(path, trying)
                    except FileNotFoundError:
                        continue
                    except OSError:
                        trying = path  # a read-only spool: the count is kept in memory only
                        self._counted[key] = n + 1
                    try:
                        process(payload)
                    except PermanentError as exc:
                        log(f"spool: {path.name} cannot be stored ({exc}); moved to spool/failed")
                        self._fail(trying)
                        continue
                    except Exception as exc:  # noqa: BLE001 - transient: keep it queued, retry later
                        if store_unwritable(exc):
                            log(f"spool: {path.name} failed ({type(exc).__name__}: {exc}); the store cannot be "
                                "written now: kept queued")
                            self._uncount(trying, path)
                            return done
                        if failed_last:
                            # the one before failed too: the trouble is the store's, not this entry's
                            log(f"spool: {path.name} failed ({type(exc).__name__}: {exc}); kept queued")
                            self._uncount(trying, path)
                            return done
                        log(f"spool: {path.name} failed ({type(exc).__name__}: {exc}); attempt "
                            f"{n + 1}/{MAX_ATTEMPTS}")
                        if n + 1 >= MAX_ATTEMPTS:
                            self._fail(trying)
                        failed_last = True
                        continue  # the entries after it are not held up
                    try:
                        trying.unlink()
                    except FileNotFoundError:
                        pass
                    self._counted.pop(key, None)
                    done += 1
                    progressed = True
                    failed_last = False
                if not progressed:
                    break
        finally:
            self._lock.release()
        return done

    def _uncount(self, trying: Path, path: Path) -> None:
        """Give back an attempt that was not the entry's fault."""
        if trying == path:
            key = with_attempts(path, 0).name
            if key in self._counted:
                self._counted[key] -= 1
            return
        try:
            os.replace(trying, path)
        except OSError:
            pass
