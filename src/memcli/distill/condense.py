"""Optional LLM condensation of a distill cluster (off by default): near-duplicate memories → one statement.

It talks to the endpoint configured for the hooks' summaries (``[hooks] llm_provider = "openai"`` — any
OpenAI-compatible chat-completions API — or ``"anthropic"``, with ``llm_base_url``, ``llm_model``,
``llm_api_key``) and is turned on by ``[distill] llm = true`` or ``memcli distill --llm``. Each run spends at
most ``[distill] llm_token_budget`` tokens (estimated before a call, counted from the answer's usage after).
Any failure, an answer that is empty or too long, or a spent budget keeps the extractive choice: distill
never depends on the model. `complete` is the one chat client: the hooks' summaries and the LLM merge use it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

MAX_OUTPUT_TOKENS = 400
MAX_INPUT_CHARS = 12_000
SYSTEM = (
    "You merge near-duplicate memories of AI coding agents into one memory that other agents will recall "
    "later. Write one self-contained statement (1-3 plain sentences) that keeps every durable fact of the "
    "memories below: decisions and their reasons, fixes, names of files, services, commands and errors. Do not "
    "add anything that is not in them. No preamble, no markdown."
)

JUDGE = (
    "You check a shared memory of AI coding agents for duplicates. Two memories are the SAME only if memory B "
    "states the same fact as memory A: the same subject, the same values (numbers, units, versions, names, "
    "environments, dates), the same polarity (not always vs never, enabled vs disabled), and nothing in B that "
    "A does not say. Different wording, order, language script or a typo do not matter. If in any doubt, the "
    "answer is DIFFERENT. Answer with one word: SAME or DIFFERENT."
)


@dataclass
class LlmSettings:
    """Where condensation is sent and how much it may spend in one distill run."""

    provider: str  # openai | anthropic
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    token_budget: int = 20_000
    timeout: float = 20.0


def estimate_tokens(text: str) -> int:
    """A cautious estimate (≈ 3 characters a token; CJK ≈ 1 a character)."""
    cjk = sum(1 for c in text if "\u3000" <= c <= "\u9fff")
    return (len(text) - cjk) // 3 + cjk + 1


class Condenser:
    """Condenses clusters through one LLM endpoint until its token budget is spent."""

    def __init__(self, settings: LlmSettings) -> None:
        self.settings = settings
        self.spent = 0
        self.calls = 0
        self.failures = 0

    def remaining(self) -> int:
        return max(0, int(self.settings.token_budget) - self.spent)

    def condense(self, contents: Sequence[str]) -> str | None:
        """One statement for these memories (best first), or None: keep the extractive choice."""
        user = "Memories (the first is the most trusted):\n" + "\n".join(f"- {c}" for c in contents)
        user = user[:MAX_INPUT_CHARS]
        need = estimate_tokens(SYSTEM + user) + MAX_OUTPUT_TOKENS
        if self.remaining() < need:
            return None
        try:
            text, used = self._call(user)
        except Exception:  # noqa: BLE001 - network, HTTP or a malformed answer: stay extractive
            self.failures += 1
            self.spent += estimate_tokens(SYSTEM + user)  # the request may have been billed
            return None
        self.calls += 1
        self.spent += used or need
        text = " ".join(text.split())
        longest = max(len(c) for c in contents)
        # a condensed memory is no longer than the longest original (plus a little): else it is not condensing
        if not text or len(text) > max(200, int(longest * 1.5)):
            return None
        return text

    def same_fact(self, first: str, second: str) -> bool:
        """Does the model confirm that ``second`` states the same fact as ``first`` (nothing in it that the
        first does not say, nothing that differs)? False on any doubt, failure or spent budget: a candidate
        the model does not confirm is not merged. Only asked of pairs no rule vetoed (memcli.facts.samefact)."""
        user = (f"Memory A: {first[:MAX_INPUT_CHARS // 2]}\nMemory B: {second[:MAX_INPUT_CHARS // 2]}\n"
                "Answer SAME or DIFFERENT.")
        need = estimate_tokens(JUDGE + user) + 8
        if self.remaining() < need:
            return False
        try:
            text, used = complete(self.settings, JUDGE, user, 8)
        except Exception:  # noqa: BLE001 - network, HTTP or a malformed answer: no merge
            self.failures += 1
            self.spent += need
            return False
        self.calls += 1
        self.spent += used or need
        return text.strip().strip(".").upper() == "SAME"

    def _call(self, user: str) -> tuple[str, int]:
        return complete(self.settings, SYSTEM, user, MAX_OUTPUT_TOKENS)


def complete(s: LlmSettings, system: str, user: str, max_tokens: int) -> tuple[str, int]:
    """One chat completion of the configured endpoint: (its text, the tokens it used). Raises on any failure
    (network, timeout, HTTP status, an answer of the wrong shape). Also used by team spaces' LLM merge."""
    import httpx

    headers = {"content-type": "application/json"}
    body: dict[str, Any]
    if s.provider == "anthropic":
        url = (s.base_url or "https://api.anthropic.com").rstrip("/")
        url = url + ("/messages" if url.endswith("/v1") else "/v1/messages")
        headers["anthropic-version"] = "2023-06-01"
        if s.api_key:
            headers["x-api-key"] = s.api_key
        body = {"model": s.model or "claude-haiku-4-5", "max_tokens": max_tokens, "system": system,
                "messages": [{"role": "user", "content": user}]}
    elif s.provider == "openai":
        url = (s.base_url or "https://api.openai.com/v1").rstrip("/") + "/chat/completions"
        if s.api_key:
            headers["authorization"] = f"Bearer {s.api_key}"
        body = {"model": s.model or "gpt-4o-mini", "max_tokens": max_tokens, "temperature": 0,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
    else:
        raise ValueError(f"unknown LLM provider {s.provider!r}")
    resp = httpx.post(url, json=body, headers=headers, timeout=s.timeout)
    resp.raise_for_status()
    data = resp.json()
    usage = data.get("usage") or {}
    if s.provider == "anthropic":
        text = "".join(b.get("text", "") for b in data.get("content") or [] if isinstance(b, dict))
        used = int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
    else:
        text = ((data.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
        used = int(usage.get("total_tokens", 0)) or (
            int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0)))
    return text.strip(), used
