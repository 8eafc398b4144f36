"""Per-session hook state under ``<home>/hooks-state/``: the last prompt (for Stop), the ids already
injected (never repeated), the turns already captured (idempotent retries). Pruned after a week."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_INJECTED = 1000
MAX_CAPTURED = 200
KEEP_DAYS = 7.0


class HookState:
    """JSON files, one per session, written atomically; one lock per session inside this process."""

    def __init__(self, home: Path, keep_days: float = KEEP_DAYS) -> None:
        self.dir = Path(home) / "hooks-state"
        self.keep_days = keep_days
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._last_prune = 0.0

    def _path(self, session_id: str) -> Path:
        digest = hashlib.sha256(str(session_id).encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return self.dir / f"session-{digest}.json"

    def _lock(self, session_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(str(session_id), threading.Lock())

    def load(self, session_id: str | None) -> dict[str, Any]:
        if not session_id:
            return {}
        try:
            data = json.loads(self._path(session_id).read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def update(self, session_id: str | None, change: Callable[[dict[str, Any]], Any]) -> Any:
        """Load, apply ``change`` (which mutates the dict and may return a value), save atomically."""
        if not session_id:
            return change({})
        with self._lock(session_id):
            data = self.load(session_id)
            result = change(data)
            data["updated_at"] = int(time.time() * 1000)
            data["injected"] = list(data.get("injected") or [])[-MAX_INJECTED:]
            data["captured"] = list(data.get("captured") or [])[-MAX_CAPTURED:]
            self.dir.mkdir(parents=True, exist_ok=True)
            path = self._path(session_id)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)
            return result

    # ----------------------------------------------------------------- conveniences
    def injected(self, session_id: str | None) -> set[str]:
        return set(self.load(session_id).get("injected") or [])

    def add_injected(self, session_id: str | None, ids: list[str], *, reset: bool = False) -> None:
        def change(d: dict[str, Any]) -> None:
            prev = [] if reset else list(d.get("injected") or [])
            d["injected"] = prev + [i for i in ids if i not in prev]
        self.update(session_id, change)

    def reset_injected(self, session_id: str | None) -> None:
        self.update(session_id, lambda d: d.__setitem__("injected", []))

    def set_prompt(self, session_id: str | None, prompt: str) -> None:
        def change(d: dict[str, Any]) -> None:
            d["prompt"] = prompt
            d["prompt_at"] = int(time.time() * 1000)
        self.update(session_id, change)

    def take_prompt(self, session_id: str | None) -> str | None:
        """The prompt remembered for this session's current turn, forgotten once taken."""
        def change(d: dict[str, Any]) -> str | None:
            return d.pop("prompt", None)
        return self.update(session_id, change)

    def mark_captured(self, session_id: str | None, key: str) -> bool:
        """Record a captured turn; False when it was already captured."""
        def change(d: dict[str, Any]) -> bool:
            done = list(d.get("captured") or [])
            if key in done:
                return False
            d["captured"] = done + [key]
            return True
        return bool(self.update(session_id, change))

    def was_captured(self, session_id: str | None, key: str) -> bool:
        return key in (self.load(session_id).get("captured") or [])

    def prune(self, *, force: bool = False) -> int:
        """Delete session files untouched for ``keep_days`` (at most once an hour)."""
        now = time.time()
        if not force and now - self._last_prune < 3600:
            return 0
        self._last_prune = now
        removed = 0
        try:
            entries = list(os.scandir(self.dir))
        except OSError:
            return 0
        for e in entries:
            if not e.name.startswith(("session-", ".session-")):
                continue
            try:
                if now - e.stat().st_mtime > self.keep_days * 86400:
                    os.unlink(e.path)
                    removed += 1
            except OSError:
                pass
        return removed
