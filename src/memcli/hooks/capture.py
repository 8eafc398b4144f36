"""Stop: keep the turn that just ended as one memory (scope ``agent:claude-code``, tag ``turn``; another agent that
posts its turns here, like the OpenClaw plugin, names itself with the payload's ``agent``: ``agent:<agent>``).

prompt (remembered from UserPromptSubmit, else the payload, else the transcript) + ``last_assistant_message``
(else the transcript) → strip what memcli injected → redact secrets → keep it or not (:mod:`memcli.hooks.keep`;
with an LLM configured, the model also judges the turns it keeps or the rules cannot place) → summarise
(extractive, or the LLM) → de-duplicate → store. Every decision, and why, is one line of
``<home>/logs/capture.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.hooks import llm
from memcli.hooks.keep import judge_turn
from memcli.hooks.summarize import extractive
from memcli.hooks.text import last_turn, strip_injected
from memcli.project import detect_project
from memcli.redact import redact

if TYPE_CHECKING:
    from memcli.config import HooksConfig
    from memcli.hooks.state import HookState
    from memcli.memory.service import MemoryService

SCOPE = "agent:claude-code"
TAG = "turn"
SOURCE = "hook:stop"
IMPORTANCE = 0.4
_AGENT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass
class Capture:
    status: str  # stored | duplicate | skipped
    reason: str = ""
    memory_id: str | None = None
    content: str | None = None
    key: str = ""


def turn_key(session_id: str, prompt: str, reply: str) -> str:
    h = hashlib.sha256()
    for part in (session_id or "", prompt or "", reply or ""):
        h.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    return h.hexdigest()[:24]


def scope_of(payload: dict[str, Any]) -> str:
    """``agent:<agent>`` for a client that names its agent (``"agent": "openclaw"``), else Claude Code's scope.
    A name that is not a plain identifier is refused rather than stored under a scope nobody filters on."""
    agent = payload.get("agent")
    if agent is None or agent == "":
        return SCOPE
    if not isinstance(agent, str) or not _AGENT_RE.fullmatch(agent):
        from memcli.errors import ValidationError

        raise ValidationError(f"the turn's agent must be a short name (letters, digits, . _ -), got {agent!r}")
    return f"agent:{agent}"


def project_of(payload: dict[str, Any]) -> str | None:
    """The project a payload names (``project``: a remote client names its own), else the git root of its
    ``cwd`` (only this home's own client sends one: :meth:`~memcli.hooks.runtime.HookRuntime.handle` drops it
    from any other caller's, unread)."""
    from memcli.errors import ValidationError
    from memcli.models import validate_project

    named = payload.get("project")
    if named is not None and named != "":
        try:
            return validate_project(named)
        except ValidationError:
            return None
    cwd = payload.get("cwd")
    return detect_project(cwd) if isinstance(cwd, str) else None


def resolve_turn(payload: dict[str, Any]) -> tuple[str, str]:
    """(prompt, reply) of the turn, before cleaning."""
    prompt = payload.get("_memcli_prompt") or payload.get("prompt") or ""
    reply = payload.get("last_assistant_message") or ""
    if not isinstance(prompt, str):
        prompt = ""
    if not isinstance(reply, str):
        reply = ""
    if not prompt.strip() or not reply.strip():
        t_prompt, t_reply = last_turn(payload.get("transcript_path"))
        prompt = prompt if prompt.strip() else t_prompt
        reply = reply if reply.strip() else t_reply
    return prompt, reply


def journal(home: Path, payload: dict[str, Any], res: Capture) -> None:
    """One line per Stop decision in ``<home>/logs/capture.jsonl`` (why a turn was kept or not); no content."""
    rec = {"at": int(time.time() * 1000), "session_id": str(payload.get("session_id") or ""), "turn_key": res.key,
           "status": res.status, "reason": res.reason, "memory_id": res.memory_id}
    try:
        d = home / "logs"
        d.mkdir(parents=True, exist_ok=True)
        path = d / "capture.jsonl"
        try:
            if path.stat().st_size > 1_000_000:
                os.replace(path, d / "capture.jsonl.1")
        except OSError:
            pass
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    except OSError:
        pass  # the journal is a convenience: a full disk must not fail the capture


def capture_turn(service: "MemoryService", payload: dict[str, Any], cfg: "HooksConfig", state: "HookState",
                 home: Path) -> Capture:
    """Decide whether the turn is worth keeping and store it (see the module docstring)."""
    scope = scope_of(payload)
    session = str(payload.get("session_id") or "")
    raw_prompt, raw_reply = resolve_turn(payload)
    key = turn_key(session, raw_prompt, raw_reply)
    if payload.get("stop_hook_active"):
        return Capture("skipped", "stop_hook_active", key=key)
    if payload.get("agent_id") and not cfg.capture_subagents:
        return Capture("skipped", "subagent turn (hooks.capture_subagents is off)", key=key)
    prompt = redact(strip_injected(raw_prompt))
    reply = redact(strip_injected(raw_reply))
    if state.was_captured(session, key):
        return Capture("duplicate", "already captured", key=key)
    verdict = judge_turn(prompt, reply)
    if not verdict.keep and not (cfg.llm_provider and verdict.ask_llm):
        return Capture("skipped", verdict.reason, key=key)
    content = None
    if cfg.llm_provider:
        try:
            content = llm.summarize(prompt, reply, provider=cfg.llm_provider, model=cfg.llm_model,
                                    base_url=cfg.llm_base_url, api_key=cfg.llm_api_key,
                                    budget=llm.Budget(home / "hooks-state" / "llm-usage.json",
                                                      cfg.llm_daily_token_budget))
        except Exception as exc:  # noqa: BLE001 - the LLM is optional: fall back to the extractive summary
            from memcli.hooks.transport import log

            log(home, f"Stop: LLM summary failed ({type(exc).__name__}: {exc}); extractive summary used", "server")
            content = None
        if content == "":
            state.mark_captured(session, key)
            return Capture("skipped", "the LLM found nothing worth keeping", key=key)
        if content is None and not verdict.keep:  # no answer from the LLM: the rules decide
            return Capture("skipped", verdict.reason, key=key)
    why = verdict.reason if verdict.keep else "kept by the LLM (the rules were unsure)"
    if not content:
        content = extractive(prompt, reply)
    content = redact(content).strip()
    if not content:
        return Capture("skipped", "empty after cleaning", key=key)
    dup = service.check_duplicate(content)
    if dup.is_duplicate:
        state.mark_captured(session, key)
        return Capture("duplicate", "a similar memory exists", dup.similar[0].memory.id, content, key)
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    meta: dict[str, Any] = {"session_id": session, "turn_key": key}
    if cwd:
        meta["cwd"] = cwd
    if payload.get("agent_type"):
        meta["agent_type"] = str(payload.get("agent_type"))
    res = service.remember(content, tags=[TAG], scope=scope, importance=IMPORTANCE, source=SOURCE,
                           project=project_of(payload), metadata=meta, thread=session or None)
    state.mark_captured(session, key)
    return Capture("stored" if res.created else "duplicate", why if res.created else "the same text exists",
                   res.memory_id, content, key)
