"""Idempotent retries of writes: a write that carries a caller's key (REST ``Idempotency-Key``; MCP may use it
for ``request_id``) is done once; a retry with the same key gets the first answer again and writes nothing.

A client retries a write when it did not see the answer (a timeout, a dropped connection): without a key the
retry is a second write (a key-upsert's version +1 again, a second audit event, or a second memory when the
text was changed by redaction or a timestamp). :class:`IdempotencyKeys` remembers, per owner (who is asking:
a space token's id, the admin) and key, a fingerprint of the request and its answer, for ``ttl`` seconds (24 h,
at most ``max_keys`` keys and ``max_bytes`` of answers: a batch's answer is large; the oldest go first). It lives in the server's process: a retry after a restart is
answered by the store's own rule instead (an exact repeat of a text returns the id it already has).

The same key with another request is refused (422): it names a different write. A retry that arrives while
the first is still running is refused with 409 (retry it): it never runs twice at once.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from memcli.errors import ConflictError, ValidationError

MAX_KEY_CHARS = 255
DAY_S = 86_400.0


def fingerprint(request: Any) -> str:
    """A stable digest of a request (JSON values: key order does not matter)."""
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_key(key: Any) -> str:
    """A usable idempotency key: 1..255 visible ASCII characters."""
    if not isinstance(key, str) or not key.strip():
        raise ValidationError("an idempotency key must be a non-empty string")
    key = key.strip()
    if len(key) > MAX_KEY_CHARS or not key.isascii() or not key.isprintable():
        raise ValidationError(f"an idempotency key is 1 to {MAX_KEY_CHARS} printable ASCII characters")
    return key


@dataclass
class _Entry:
    fingerprint: str
    at: float
    answer: Any = None
    done: bool = False
    size: int = 0


class IdempotencyKeys:
    """Answers of keyed writes, by (owner, key). Thread-safe. A face with its own key rule and words (MCP's
    ``request_id``) sets :attr:`check`, :attr:`reused` and :attr:`running`."""

    check = staticmethod(check_key)
    reused = "this Idempotency-Key was used for another request: use a new key for a new write"
    running = "a request with this Idempotency-Key is still running: retry in a moment"

    def __init__(self, ttl: float = DAY_S, max_keys: int = 10_000, max_bytes: int = 64 << 20) -> None:
        self.ttl, self.max_keys, self.max_bytes = float(ttl), int(max_keys), int(max_bytes)
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        while self._entries:
            first = next(iter(self._entries.values()))
            if now - first.at < self.ttl and len(self._entries) < self.max_keys and self._bytes <= self.max_bytes:
                return
            self._bytes -= self._entries.popitem(last=False)[1].size

    def begin(self, owner: str, key: str, request_fingerprint: str) -> tuple[bool, Any]:
        """``(True, answer)`` when this key's write is done (answer it again, write nothing); else
        ``(False, None)``: the caller writes, then calls :meth:`finish` (or :meth:`abandon` when it failed)."""
        key = self.check(key)
        now = time.monotonic()
        with self._lock:
            self._expire(now)
            entry = self._entries.get((owner, key))
            if entry is not None:
                if entry.fingerprint != request_fingerprint:
                    raise ValidationError(self.reused)
                if not entry.done:
                    raise ConflictError(self.running)
                return True, entry.answer
            self._entries[(owner, key)] = _Entry(request_fingerprint, now)
            return False, None

    def finish(self, owner: str, key: str, answer: Any) -> None:
        """Record the answer of a write :meth:`begin` let through."""
        with self._lock:
            entry = self._entries.get((owner, self.check(key)))
            if entry is not None:
                entry.answer, entry.done = answer, True
                entry.size = len(json.dumps(answer, ensure_ascii=False, default=str))
                self._bytes += entry.size
                self._expire(time.monotonic())

    def abandon(self, owner: str, key: str) -> None:
        """The write failed: a retry with this key may try again."""
        with self._lock:
            entry = self._entries.get((owner, self.check(key)))
            if entry is not None and not entry.done:
                del self._entries[(owner, self.check(key))]
