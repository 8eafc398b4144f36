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


def estimate_tokens(text: str) -> int:
    """A cautious estimate (≈ 3 characters a token; CJK ≈ 1 a character)."""
    cjk = sum(1 for c in text if "\u3000" <= c <= "\u9fff")
    return (len(text) - cjk) // 3 + cjk + 1


def summarize(prompt: str, reply: str, *, provider: str, model: str | None, base_url: str | None,
              api_key: str | None, budget: Budget, timeout: float = TIMEOUT_S) -> str | None:
    """The model's summary, ``""`` when it says the turn is not worth keeping, or None (use extractive)."""
    import httpx

    user = f"Developer:\n{prompt[:6000]}\n\nAssistant:\n{reply[:12000]}"
    need = estimate_tokens(SYSTEM + user) + MAX_OUTPUT_TOKENS
    if budget.remaining() < need:
        return None
    headers = {"content-type": "application/json"}
    if provider == "anthropic":
        url = (base_url or "https://api.anthropic.com").rstrip("/")
        url = url + ("/messages" if url.endswith("/v1") else "/v1/messages")
        headers["anthropic-version"] = "2023-06-01"
        if api_key:
            headers["x-api-key"] = api_key
        body: dict[str, Any] = {"model": model or "claude-haiku-4-5", "max_tokens": MAX_OUTPUT_TOKENS,
                                "system": SYSTEM, "messages": [{"role": "user", "content": user}]}
    elif provider == "openai":
        url = (base_url or "https://api.openai.com/v1").rstrip("/") + "/chat/completions"
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        body = {"model": model or "gpt-4o-mini", "max_tokens": MAX_OUTPUT_TOKENS, "temperature": 0,
                "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]}
    else:
        return None
    resp = httpx.post(url, json=body, headers=headers, timeout=timeout)
    resp.raise_for_status()
    data = resp.json()
    usage = data.get("usage") or {}
    if provider == "anthropic":
        text = "".join(b.get("text", "") for b in data.get("content") or [] if isinstance(b, dict))
        spent = int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
    else:
        text = ((data.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
        spent = int(usage.get("total_tokens", 0)) or (
            int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0)))
    budget.spend(spent or need)
    text = text.strip()
    if text.upper().rstrip(".") == SKIP:
        return ""
    return text or None
