"""What a team space does with a stale update: refuse it (412, the default), let the last writer win, or let
an LLM merge it.

A space's ``conflict`` setting (``memcli space set NAME --conflict llm-merge``, kept in the spaces table) is
``refuse``, ``lww`` (seed 002's last-writer-wins: a stale update overwrites, and the audit log says what it
overwrote: :meth:`memcli.team.spaces.SpaceService.update`) or ``llm-merge``. With ``llm-merge``, an update through a space token whose ``expected_version`` is
older than the stored one, and which changes the content, is handed to the LLM endpoint configured for the
hooks (``[hooks] llm_provider``/``llm_base_url``/``llm_model``/``llm_api_key``): the stored memory (content,
version), the caller's intended content and the version it was based on (and that version's content, when
the audit log has it whole). The answer becomes the memory's content, version + 1, audited as "merge".

Every doubt refuses: no endpoint configured, a request over ``[server] merge_token_budget`` tokens, an
error, a timeout (``[server] merge_timeout``), an empty, over-long or "CONFLICT" answer → the caller gets the
412 it would have had, with the current version. Nothing is ever overwritten silently. The core does not
import a face; :mod:`memcli.team.spaces` calls :meth:`ConflictResolver.merge` from ``SpaceService.update``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from memcli.distill.condense import LlmSettings, complete, estimate_tokens
from memcli.errors import MemcliError, ValidationError
from memcli.memory.audit import MAX_VALUE_CHARS, AuditEvent
from memcli.models import Memory, validate_content

if TYPE_CHECKING:
    from memcli.config import Config

log = logging.getLogger("memcli.team.conflict")

REFUSE, LWW, LLM_MERGE = "refuse", "lww", "llm-merge"
MODES = (REFUSE, LWW, LLM_MERGE)
MAX_OUTPUT_TOKENS = 600
GIVE_UP = "CONFLICT"  # what the model answers when the two versions cannot be reconciled
SYSTEM = (
    "You resolve an edit conflict in a memory store shared by AI coding agents. Agent B edited a memory "
    "starting from an older version, while someone else had already changed it. Write the merged memory: one "
    "self-contained text that keeps every fact of the CURRENT version and applies the change agent B INTENDED. "
    "Where they contradict, keep the intended change and say what it replaced only if that matters. Do not add "
    "anything that is in neither. Answer with the merged memory text only: no preamble, no quotes, no "
    f"markdown. If the two cannot be reconciled into one memory, answer exactly {GIVE_UP}."
)


def check_mode(mode: Any) -> str:
    """A valid conflict setting, or a clear error."""
    value = str(mode or "").strip().lower()
    if value not in MODES:
        raise ValidationError(f"conflict must be one of {', '.join(MODES)}, got {str(mode)[:40]!r}")
    return value


def content_at(events: Sequence[AuditEvent], version: int, current: Memory) -> str | None:
    """A memory's content at ``version``, from its audit events: the old value of the first content change
    after that version (the current content when nothing changed it since). None when the log does not have
    it whole (clipped, or no record)."""
    later = [e for e in events if e.version > version and "content" in e.changes and e.action != "forget"]
    if not later:
        return current.content if any(e.version <= version for e in events) else None
    old = min(later, key=lambda e: (e.version, e.at)).changes["content"][0]
    if not isinstance(old, str) or (len(old) > MAX_VALUE_CHARS and old.endswith("…")):
        return None
    return old


@dataclass
class MergeOutcome:
    """A merged text and what it cost (for the log)."""

    text: str
    tokens: int


class LlmMerger:
    """Asks one LLM endpoint for a merge, within a token budget and a timeout."""

    def __init__(self, settings: LlmSettings, token_budget: int) -> None:
        self.settings = settings
        self.token_budget = int(token_budget)

    def merge(self, *, current: str, current_version: int, intended: str, based_version: int,
              base: str | None) -> MergeOutcome | None:
        """The merged content, or None (refuse)."""
        parts = [f"CURRENT (version {current_version}):\n{current}"]
        if base is not None and base != current:
            parts.insert(0, f"BASE (version {based_version}, what agent B started from):\n{base}")
        parts.append(f"INTENDED by agent B (based on version {based_version}):\n{intended}")
        user = "\n\n".join(parts)
        need = estimate_tokens(SYSTEM + user) + MAX_OUTPUT_TOKENS
        if need > self.token_budget and base is not None and len(parts) == 3:
            user = "\n\n".join(parts[1:])  # the base is a help, not a need: drop it before giving up
            need = estimate_tokens(SYSTEM + user) + MAX_OUTPUT_TOKENS
        if need > self.token_budget:
            log.info("llm-merge skipped: the request needs ~%d tokens, the budget is %d", need, self.token_budget)
            return None
        try:
            text, used = complete(self.settings, SYSTEM, user, MAX_OUTPUT_TOKENS)
        except Exception as exc:  # noqa: BLE001 - network, timeout, HTTP status, a malformed answer: refuse
            log.warning("llm-merge failed (%s): the stale update is refused", type(exc).__name__)
            return None
        text = _clean(text)
        # an answer much longer than both inputs is not a merge of them (a ramble, an echo of the prompt)
        if not text or text.upper().strip(" .") == GIVE_UP or len(text) > 2 * (len(current) + len(intended)) + 200:
            log.warning("llm-merge answer unusable (%d characters): the stale update is refused", len(text))
            return None
        try:
            return MergeOutcome(validate_content(text), used or need)
        except MemcliError:
            return None


def _clean(text: str) -> str:
    """The answer without a code fence or wrapping quotes a model may add despite being told not to."""
    t = (text or "").strip()
    if t.startswith("```") and t.endswith("```") and len(t) >= 6:
        t = t[3:-3]
        t = t.split("\n", 1)[1] if "\n" in t and not t.split("\n", 1)[0].strip().count(" ") else t
        t = t.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        t = t[1:-1].strip()
    return t


class ConflictResolver:
    """Decides, for one stale content update of a space, whether and how it is merged."""

    def __init__(self, mode_of: Callable[[str], str], merger: LlmMerger | None) -> None:
        self.mode_of = mode_of  # the space's setting, read from the store at each conflict (replicas agree)
        self.merger = merger  # None: no LLM endpoint configured, every conflict is refused

    @classmethod
    def from_config(cls, config: "Config", mode_of: Callable[[str], str]) -> "ConflictResolver":
        h, srv = config.hooks, config.server
        merger = None
        if h.llm_provider in ("openai", "anthropic"):
            merger = LlmMerger(LlmSettings(provider=h.llm_provider, model=h.llm_model, base_url=h.llm_base_url,
                                           api_key=h.llm_api_key, timeout=float(srv.merge_timeout)),
                               srv.merge_token_budget)
        return cls(mode_of, merger)

    @property
    def configured(self) -> bool:
        return self.merger is not None

    def last_writer_wins(self, space: str) -> bool:
        """Whether the space is set to ``lww`` (an unreadable setting: no, refuse)."""
        try:
            return self.mode_of(space) == LWW
        except MemcliError:
            return False

    def merge(self, space: str, current: Memory, intended: str, based_version: int,
              events: Callable[[], Sequence[AuditEvent]]) -> MergeOutcome | None:
        """The merged content of ``current`` and the caller's ``intended`` content, or None: refuse."""
        if self.merger is None or based_version >= current.version:
            return None
        try:
            if self.mode_of(space) != LLM_MERGE:
                return None
        except MemcliError:
            return None
        base = content_at(events(), based_version, current)
        return self.merger.merge(current=current.content, current_version=current.version, intended=intended,
                                 based_version=based_version, base=base)


@dataclass
class MergedMemory(Memory):
    """A memory an LLM merge has just written: its JSON says so (``"merged": true``) and from what."""

    merged_versions: tuple[int, int] = (0, 0)  # (the caller's base version, the version it was merged with)

    @classmethod
    def of(cls, mem: Memory, based: int, current: int) -> "MergedMemory":
        return cls(**{f.name: getattr(mem, f.name) for f in fields(Memory)}, merged_versions=(based, current))

    def item(self) -> dict[str, Any]:
        based, current = self.merged_versions
        return {**super().item(), "merged": True, "merge": {"based_on": based, "merged_with": current}}
