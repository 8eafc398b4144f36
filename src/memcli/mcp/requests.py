"""``request_id`` on MCP writes (remember, update, forget): a retry with the same id gets the first answer again
and writes nothing (seed 004's tools; REST's ``Idempotency-Key``).

Kept per owner (a space token's id, the admin, this stdio process) for 24 hours in the server's process, at
most :data:`MAX_IDS` ids: a retry after a restart is answered by the store's own rule instead (an exact repeat
of a text returns the id it already has). The same id with other arguments is refused: it names another write.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from typing import Any

from memcli.errors import ConflictError, ValidationError

TTL_S = 86_400.0
MAX_IDS = 10_000
MAX_ID_CHARS = 255


def fingerprint(request: Any) -> str:
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_request_id(value: str) -> str:
    value = value.strip()
    if not value or len(value) > MAX_ID_CHARS or not value.isprintable():
        raise ValidationError(f"request_id must be 1 to {MAX_ID_CHARS} printable characters")
    return value


class RequestIds:
    """The answers of writes that carried a ``request_id``, by (owner, id). Thread-safe."""

    def __init__(self) -> None:
        self._done: OrderedDict[tuple[str, str], tuple[str, float, Any]] = OrderedDict()
        self._running: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def begin(self, owner: str, request_id: str, request: Any) -> tuple[bool, Any]:
        """(True, the first answer) for a retry; (False, None): do the write, then :meth:`finish` or
        :meth:`abandon`."""
        key, fp, now = (owner, check_request_id(request_id)), fingerprint(request), time.monotonic()
        with self._lock:
            while self._done and (len(self._done) > MAX_IDS or now - next(iter(self._done.values()))[1] > TTL_S):
                self._done.popitem(last=False)
            if key in self._running:
                raise ConflictError("a call with this request_id is still running: retry in a moment")
            if key in self._done:
                first_fp, _, answer = self._done[key]
                if first_fp != fp:
                    raise ValidationError("this request_id was used for another call: use a new request_id for a "
                                          "new write")
                return True, answer
            self._running.add(key)
            return False, None

    def finish(self, owner: str, request_id: str, request: Any, answer: Any) -> None:
        key = (owner, check_request_id(request_id))
        with self._lock:
            self._running.discard(key)
            self._done[key] = (fingerprint(request), time.monotonic(), answer)

    def abandon(self, owner: str, request_id: str) -> None:
        with self._lock:
            self._running.discard((owner, check_request_id(request_id)))
