"""The Stop hook's queue: ``<home>/spool/<ms>-<rand>.json``, one payload each, written atomically.

The client spools a turn when the server is down or busy; the server spools every Stop it receives before
answering, then drains the queue in the background. A turn is deleted from the queue only once it is stored
(or judged not worth storing), so a crash, a busy embedder or a full disk never loses it.
"""

from __future__ import annotations

import errno
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memcli.hooks.transport import spool as _write_raw

MAX_ATTEMPTS = 5
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


class Spool:
    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self.dir = self.home / "spool"
        self._lock = threading.Lock()
        self._attempts: dict[str, int] = {}

    def put(self, payload: dict[str, Any]) -> Path:
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

    def drain(self, process: Callable[[dict[str, Any]], Any], log: Callable[[str], None],
              stop: Callable[[], bool] | None = None) -> int:
        """Process every queued payload in order; returns how many left the queue. One drainer at a time:
        when another thread is draining, returns 0 at once (it will see the new files). ``stop``: asked before
        each payload; True (the server is shutting down) ends the drain there, the rest stays queued."""
        if not self._lock.acquire(blocking=False):
            return 0
        done = 0
        try:
            while True:
                batch = self.pending()
                if not batch:
                    break
                progressed = False
                for path in batch:
                    if stop is not None and stop():
                        return done
                    try:
                        payload = json.loads(path.read_bytes().decode("utf-8"))
                        if not isinstance(payload, dict):
                            raise PermanentError("not a JSON object")
                    except FileNotFoundError:
                        continue
                    except (ValueError, UnicodeDecodeError, RecursionError, PermanentError) as exc:
                        log(f"spool: {path.name} is not a valid payload ({exc}); moved to spool/failed")
                        self._fail(path)
                        continue
                    try:
                        process(payload)
                    except PermanentError as exc:
                        log(f"spool: {path.name} cannot be stored ({exc}); moved to spool/failed")
                        self._fail(path)
                        continue
                    except Exception as exc:  # noqa: BLE001 - transient: keep it queued, retry later
                        if store_unwritable(exc):
                            log(f"spool: {path.name} failed ({type(exc).__name__}: {exc}); the store cannot be "
                                "written now: kept queued")
                            return done
                        n = self._attempts.get(path.name, 0) + 1
                        self._attempts[path.name] = n
                        log(f"spool: {path.name} failed ({type(exc).__name__}: {exc}); attempt {n}/{MAX_ATTEMPTS}")
                        if n >= MAX_ATTEMPTS:
                            self._fail(path)
                            continue
                        return done
                    try:
                        path.unlink()
                    except FileNotFoundError:
                        pass
                    self._attempts.pop(path.name, None)
                    done += 1
                    progressed = True
                if not progressed:
                    break
        finally:
            self._lock.release()
        return done
