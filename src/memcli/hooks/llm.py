"""Optional LLM summaries of captured turns (off by default), within a daily token budget.

Configure under ``[hooks]``: ``llm_provider = "openai"`` (any OpenAI-compatible chat-completions API) or
``"anthropic"`` (Messages API), ``llm_base_url``, ``llm_model``, ``llm_api_key``, ``llm_daily_token_budget``.
The text sent is already redacted. Any failure, or a spent budget, falls back to the extractive summary.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from memcli.distill.condense import LlmSettings, complete, estimate_tokens

SKIP = "SKIP"
MAX_OUTPUT_TOKENS = 300
TIMEOUT_S = 20.0
SYSTEM = (
    "You turn one turn of a conversation between a developer and a coding assistant into a memory that other "
    "agents will recall later. Write 1-3 plain sentences with the durable facts: decisions and their reasons, "
    "fixes and root causes, conventions, commands, names of files, services and errors. No preamble, no "
    "markdown. If the turn holds nothing worth remembering (small talk, a trivial edit), answer exactly SKIP."
)

_lock = threading.Lock()


class Budget:
    """Tokens spent today, in ``<home>/hooks-state/llm-usage.json`` (shared by every process)."""

    def __init__(self, path: Path, daily: int) -> None:
        self.path, self.daily = path, int(daily)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and data.get("date") == time.strftime("%Y-%m-%d"):
                return data
        except (OSError, ValueError):
            pass
        return {"date": time.strftime("%Y-%m-%d"), "tokens": 0, "calls": 0}

    def remaining(self) -> int:
        return max(0, self.daily - int(self._read().get("tokens", 0)))

    def spend(self, tokens: int) -> None:
        with _lock:
            data = self._read()
            data["tokens"] = int(data.get("tokens", 0)) + int(tokens)
            data["calls"] = int(data.get("calls", 0)) + 1
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data), encoding="utf-8")
            os.replace(tmp, self.path)


def summarize(prompt: str, reply: str, *, provider: str, model: str | None, base_url: str | None,
              api_key: str | None, budget: Budget, timeout: float = TIMEOUT_S) -> str | None:
    """The model's summary, ``""`` when it says the turn is not worth keeping, or None (use extractive)."""
    user = f"Developer:\n{prompt[:6000]}\n\nAssistant:\n{reply[:12000]}"
    need = estimate_tokens(SYSTEM + user) + MAX_OUTPUT_TOKENS
    if budget.remaining() < need:
        return None
    if provider not in ("anthropic", "openai"):
        return None
    # the one chat client of the core (memcli.distill.condense), shared with distill's condensation and the LLM merge
    text, spent = complete(LlmSettings(provider=provider, model=model, base_url=base_url, api_key=api_key,
                                       timeout=timeout), SYSTEM, user, MAX_OUTPUT_TOKENS)
    budget.spend(spent or need)
    text = text.strip()
    if text.upper().rstrip(".") == SKIP:
        return ""
    return text or None
