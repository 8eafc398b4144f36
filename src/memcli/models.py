"""The memory record, recall hits and the validation rules every face shares."""

from __future__ import annotations

import json
import os
import re
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memcli.errors import ValidationError
from memcli.strictjson import check_tree, loads

MAX_CONTENT_CHARS = 32_000
MAX_TAGS = 64
MAX_TAG_CHARS = 100
MAX_KEY_CHARS = 512
MAX_METADATA_BYTES = 64_000
MAX_METADATA_DEPTH = 32  # nesting levels: deeper is no application's metadata, and recursion has limits
MIN_PREFIX = 4
MAX_DURATION_MS = 1000 * 31_536_000_000  # 1000 years: TTLs and "ago" stay far inside int64
MAX_TIME_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
DEFAULT_NAMESPACE = "default"
DEFAULT_SCOPE = "global"
SOURCES = ("cli", "hook:stop", "mcp", "api", "distill", "import")
# A memory's lifecycle (memcli distill): recall, list and the hooks see only active ones unless asked.
ACTIVE, SUPERSEDED, ARCHIVED = "active", "superseded", "archived"
STATUSES = (ACTIVE, SUPERSEDED, ARCHIVED)

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,127}")  # always fullmatch
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d|w|y)?\s*$", re.IGNORECASE)
_DURATION_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000,
                   "d": 86_400_000, "w": 604_800_000, "y": 31_536_000_000}


def now_ms() -> int:
    """Milliseconds since the Unix epoch."""
    return time.time_ns() // 1_000_000


def new_id() -> str:
    """A UUIDv7 string: 48 bits of time then 74 random bits, so ids sort by creation."""
    ms = now_ms()
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 62) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def short_id(memory_id: str) -> str:
    """The short form shown to people: the last 8 hex digits (the random part, unique in practice)."""
    return memory_id.replace("-", "")[-8:]


def normalise_content(text: str) -> str:
    """Trim and NFC-normalise; the stored text."""
    return unicodedata.normalize("NFC", text).strip()


def content_hash(text: str) -> str:
    """Hash of the content with whitespace folded and case ignored: exact duplicates and retries."""
    folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    import hashlib  # here: a CLI read through the server never hashes

    return hashlib.sha256(folded.encode("utf-8")).hexdigest()[:32]


def validate_content(text: Any) -> str:
    """Return the normalised content or raise ValidationError."""
    if not isinstance(text, str):
        raise ValidationError("content must be a string")
    if "\x00" in text:
        raise ValidationError("content must not contain NUL characters")
    if _has_surrogate(text):
        raise ValidationError("content is not valid Unicode (lone surrogate: invalid UTF-8 input?)")
    clean = normalise_content(text)
    if not clean or all(_invisible(c) for c in clean):
        raise ValidationError("content is empty: give the text to remember")
    if len(clean) > MAX_CONTENT_CHARS:
        raise ValidationError(
            f"content is {len(clean):,} characters; the limit is {MAX_CONTENT_CHARS:,}. Split it into smaller memories."
        )
    return clean


def validate_namespace(namespace: Any) -> str:
    """A namespace is a simple name: letters, digits and ._:@/+- (max 128)."""
    if not isinstance(namespace, str) or not _NAME_RE.fullmatch(namespace):  # fullmatch: `$` lets "a\n" in
        raise ValidationError(
            f"invalid namespace {namespace!r}: use letters, digits and . _ : @ / + - (1-128 characters)"
        )
    return namespace


def normalise_scope(scope: Any = None, agent: Any = None) -> str:
    """`global`, `agent:<name>`; a bare agent name (`claude-code`) becomes `agent:claude-code`, and an agent
    given as `agent:<name>` is taken as it is."""
    if scope is not None and agent is not None:
        raise ValidationError("give either a scope or an agent, not both")
    if agent is not None:
        # `--agent codex` and `--agent agent:codex` mean the same agent
        if not isinstance(agent, str):
            raise ValidationError("agent must be a string")
        agent = agent.strip()
        scope = agent if agent.startswith("agent:") else f"agent:{agent}"
    if scope is None:
        return DEFAULT_SCOPE
    if not isinstance(scope, str):
        raise ValidationError("scope must be a string")
    scope = scope.strip()
    if scope == "global":
        return scope
    name = scope[len("agent:"):] if scope.startswith("agent:") else scope
    if ":" in name or not _NAME_RE.fullmatch(name):
        raise ValidationError(
            f"invalid scope {scope!r}: use 'global' or 'agent:<name>' (name: letters, digits, . _ @ / + -)"
        )
    return f"agent:{name}"


def validate_tags(tags: Any) -> list[str]:
    """Trim, de-duplicate (keeping order) and check each tag."""
    if tags is None:
        return []
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, (list, tuple)):
        raise ValidationError("tags must be a list of strings")
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str):
            raise ValidationError("each tag must be a string")
        tag = unicodedata.normalize("NFC", tag).strip()
        if not tag:
            raise ValidationError("a tag must not be empty")
        if len(tag) > MAX_TAG_CHARS or any(unicodedata.category(c)[0] == "C" for c in tag):
            raise ValidationError(f"invalid tag {tag[:40]!r}: at most {MAX_TAG_CHARS} printable characters")
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise ValidationError(f"at most {MAX_TAGS} tags")
    return out


def validate_importance(value: Any) -> float:
    """Importance is a number in 0..1 (a JSON true/false is not a number)."""
    if isinstance(value, bool):
        raise ValidationError(f"importance must be a number between 0 and 1, got {value!r}")
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ValidationError(f"importance must be a number between 0 and 1, got {value!r}") from None
    if not 0.0 <= f <= 1.0 or f != f:
        raise ValidationError(f"importance must be between 0 and 1, got {value!r}")
    return f


def validate_thread(thread: Any) -> str | None:
    """An optional thread (conversation/session) id."""
    if thread is None:
        return None
    if not isinstance(thread, str) or not thread.strip() or len(thread) > MAX_KEY_CHARS:
        raise ValidationError(f"invalid thread: a non-empty string of at most {MAX_KEY_CHARS} characters")
    return thread.strip()


def validate_key(key: Any) -> str | None:
    """An optional caller key (upsert handle)."""
    if key is None:
        return None
    if not isinstance(key, str) or not key.strip() or len(key) > MAX_KEY_CHARS:
        raise ValidationError(f"invalid key: a non-empty string of at most {MAX_KEY_CHARS} characters")
    if _has_surrogate(key):
        raise ValidationError("key is not valid Unicode (lone surrogate: invalid UTF-8 input?)")
    return key.strip()


def validate_project(project: Any) -> str | None:
    """An optional project name (a string; filled in from the working directory when not given)."""
    if project is None:
        return None
    if not isinstance(project, str) or len(project) > MAX_KEY_CHARS or _has_surrogate(project) or "\x00" in project:
        raise ValidationError(f"invalid project: a string of at most {MAX_KEY_CHARS} characters, without NUL")
    return project


def validate_time_ms(value: Any, name: str) -> int:
    """An epoch-milliseconds timestamp given by a caller (created_at): an integer from 1970 to year 9999."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TIME_MS:
        raise ValidationError(f"{name} must be epoch milliseconds between 0 and year 9999, got {value!r}")
    return value


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


# Content made only of these shows nothing, so it is empty: besides whitespace, control (Cc) and format (Cf:
# zero-width, direction marks, soft hyphen, BOM) characters, the combining grapheme joiner, the Hangul, Khmer
# and Braille blanks, and the variation selectors.
_INVISIBLE = frozenset([0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0,
                        *range(0x180B, 0x1810), *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)])


def _invisible(c: str) -> bool:
    return c.isspace() or unicodedata.category(c) in ("Cc", "Cf") or ord(c) in _INVISIBLE


def validate_metadata(value: Any) -> dict[str, Any]:
    """Metadata is a JSON object (given as a dict or as JSON text) of finite numbers and integers within
    64 bits, at most MAX_METADATA_DEPTH levels deep and MAX_METADATA_BYTES long."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = loads(value, max_depth=MAX_METADATA_DEPTH, what="metadata")
        except json.JSONDecodeError as exc:
            raise ValidationError(f"metadata is not valid JSON: {exc.msg} (at character {exc.pos})") from None
    if not isinstance(value, dict):
        raise ValidationError("metadata must be a JSON object, like {\"ticket\": \"OPS-12\"}")
    # before anything recursive (json.dumps, redaction) sees it: NaN or Infinity stored would make every JSON
    # answer that includes the memory fail
    check_tree(value, max_depth=MAX_METADATA_DEPTH, what="metadata", numbers=True)
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("metadata is not valid Unicode (lone surrogate: invalid UTF-8 input?)") from None
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"metadata must be JSON-serialisable: {exc}") from None
    if len(encoded) > MAX_METADATA_BYTES:
        raise ValidationError(f"metadata is larger than {MAX_METADATA_BYTES:,} bytes")
    return value


def parse_duration_ms(text: Any) -> int:
    """`7d`, `12h`, `30m`, `90s`, `2w` (a bare number is seconds) → milliseconds."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        amount = float(text) * 1000
    else:
        m = _DURATION_RE.match(str(text or ""))
        if not m:
            raise ValidationError(f"invalid duration {text!r}: use a number and a unit, like 30m, 12h, 7d, 2w")
        amount = float(m.group(1)) * _DURATION_UNITS[(m.group(2) or "s").lower()]
    if not 0 < amount <= MAX_DURATION_MS:  # also refuses NaN and infinity
        raise ValidationError("a duration must be positive and at most 1000 years")
    return int(amount)


def parse_time_ms(text: Any, *, now: int | None = None) -> int:
    """A point in time: a duration ago (`2d`), epoch ms, or an ISO-8601 date/time."""
    from datetime import datetime, timezone

    s = str(text).strip()
    if isinstance(text, int) and not isinstance(text, bool) or s.isdigit() and len(s) >= 10:
        value = int(s)
        if not 0 <= value <= MAX_TIME_MS:
            raise ValidationError(f"invalid time {text!r}: epoch milliseconds must be between 0 and year 9999")
        return value
    if _DURATION_RE.match(s):
        return (now if now is not None else now_ms()) - parse_duration_ms(s)
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(f"invalid time {text!r}: use a duration ago (2d), an ISO date (2026-01-31) or epoch ms") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


@dataclass
class Memory:
    """One memory, as stored (without its vector unless asked)."""

    id: str
    content: str
    namespace: str = DEFAULT_NAMESPACE
    project: str | None = None
    scope: str = DEFAULT_SCOPE
    tags: list[str] = field(default_factory=list)
    importance: float = 0.5
    key: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str = "cli"
    created_at: int = 0
    updated_at: int = 0
    expires_at: int | None = None
    version: int = 1
    content_hash: str = ""
    thread: str | None = None  # the conversation/session it belongs to (hooks: the session id)
    context: list[str] = field(default_factory=list)  # the thread's previous memories at write time
    vector: list[float] | None = None
    context_vector: list[float] | None = None
    status: str = ACTIVE  # active | superseded (merged into ``superseded_by``) | archived (expired)
    merged_from: list[str] = field(default_factory=list)  # ids distill merged into this memory
    superseded_by: str | None = None
    outdated_by: str | None = None  # the later memory that states another value for this fact
    updates: list[str] = field(default_factory=list)  # the memories this one made outdated

    @property
    def active(self) -> bool:
        return self.status == ACTIVE

    def context_text(self) -> str | None:
        """What the context vector embeds: the previous memory of the thread, then this one."""
        return f"{self.context[-1]}\n{self.content}" if self.context else None

    def item(self) -> dict[str, Any]:
        """The JSON shape of list/get (DESIGN.md contract) plus a few extra fields."""
        return {
            "memory_id": self.id,
            "content": self.content,
            "tags": list(self.tags),
            "scope": self.scope,
            "namespace": self.namespace,
            "importance": self.importance,
            "key": self.key,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "project": self.project,
            "source": self.source,
            "expires_at": self.expires_at,
            "version": self.version,
            "metadata": self.metadata,
            "thread": self.thread,
            "status": self.status,
            "merged_from": list(self.merged_from),
            "superseded_by": self.superseded_by,
            "outdated_by": self.outdated_by,
            "updates": list(self.updates),
        }

    def record(self, *, with_vector: bool = False) -> dict[str, Any]:
        """Full-fidelity record for export (JSONL)."""
        rec = {
            "id": self.id, "content": self.content, "namespace": self.namespace, "project": self.project,
            "scope": self.scope, "tags": list(self.tags), "importance": self.importance, "key": self.key,
            "metadata": self.metadata, "source": self.source, "created_at": self.created_at,
            "updated_at": self.updated_at, "expires_at": self.expires_at, "version": self.version,
            "content_hash": self.content_hash, "thread": self.thread, "context": list(self.context),
            "status": self.status, "merged_from": list(self.merged_from), "superseded_by": self.superseded_by,
            "outdated_by": self.outdated_by, "updates": list(self.updates),
        }
        if with_vector and self.vector is not None:
            rec["vector"] = [float(x) for x in self.vector]
        if with_vector and self.context_vector is not None and self.context:
            rec["context_vector"] = [float(x) for x in self.context_vector]
        return rec


@dataclass
class RecallHit:
    """A memory found by recall, with its score in 0..1 and, on request, each signal."""

    memory: Memory
    score: float
    explain: dict[str, Any] | None = None
    similarity: float = 0.0  # calibrated vector similarity, 0..1 (absolute: comparable across queries)
    keyword: bool = False  # found by the keyword (full-text) search too
    # the hit's own calibrated relevance to the query (``score`` is it, capped by the hit ranked above)
    relevance: float | None = None
    # check-duplicate: how this memory relates to the text checked ({"relation", "reason", "differences"})
    relation: dict[str, Any] | None = None

    def item(self) -> dict[str, Any]:
        out = self.memory.item()
        out["score"] = round(float(self.score), 4)
        if self.explain is not None:
            out["explain"] = self.explain
        if self.relation is not None:
            out.update(self.relation)
        return out


@dataclass
class RememberResult:
    """What remember did: the id, similar memories, and whether a row was written."""

    memory_id: str
    duplicate_of: list[str] = field(default_factory=list)  # memories that state the same fact
    created: bool = True
    updated: bool = False
    # similar memories that state another fact: {"memory_id", "relation": "conflict"|"related", "reason",
    # "differences"} — a conflict is the same subject with another value (a change, not a repeat)
    related: list[dict[str, Any]] = field(default_factory=list)

    def item(self) -> dict[str, Any]:
        return {"ok": True, "memory_id": self.memory_id, "duplicate_of": list(self.duplicate_of),
                "related": [dict(r) for r in self.related], "created": self.created, "updated": self.updated}


@dataclass
class DuplicateCheck:
    """check-duplicate's answer."""

    is_duplicate: bool  # a memory states the same fact (not merely a similar one)
    similar: list[RecallHit]  # each with its relation: "same", "conflict" or "related"

    def item(self) -> dict[str, Any]:
        return {"is_duplicate": self.is_duplicate, "similar": [h.item() for h in self.similar]}


@dataclass
class NewMemory:
    """One memory to write (remember_many, batch API)."""

    content: str
    tags: Sequence[str] | None = None
    scope: str | None = None
    agent: str | None = None
    importance: float = 0.5
    key: str | None = None
    ttl: str | int | None = None
    metadata: dict[str, Any] | str | None = None
    namespace: str | None = None
    project: str | None = None
    created_at: int | None = None
    thread: str | None = None
    keep_secrets: bool = False  # store the text as given: an explicit opt-out, noted in the audit log


KEPT_SECRETS = "keep_secrets: stored as given, secrets not redacted"


def write_note(keep_secrets: bool, note: str = "") -> str:
    """The audit note of a write; a write that opted out of redaction says so."""
    return "; ".join(n for n in (note, KEPT_SECRETS if keep_secrets else "") if n)
