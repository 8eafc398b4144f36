"""Team spaces: namespaces with members, each member an agent holding its own bearer token.

A space is a namespace of the store; a token (``mnemo_`` + 192 random bits) resolves to (space, agent).
Tokens are kept only as their SHA-256 (a leaked table row proves nothing), in the ``memcli_spaces`` table of
the memories' database — in the store, not in a home file, so server replicas on one shared store see the
same spaces and revocations. :class:`SpaceService` is the :class:`MemoryService` a space token gets: every
call is confined to the space's namespace whatever namespace the caller names, ids of other spaces do not
exist for it, and its changes are audited under the token's agent.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memcli.errors import (
    ForbiddenError,
    NotFoundError,
    ValidationError,
    VersionConflictError,
)
from memcli.memory import damage
from memcli.memory.reader import quote
from memcli.memory.service import MemoryService
from memcli.models import (
    Memory,
    normalise_scope,
    now_ms,
    validate_content,
    validate_namespace,
)

if TYPE_CHECKING:
    from memcli.team.conflict import ConflictResolver

SPACES_TABLE = "memcli_spaces"
TOKEN_PREFIX = "mnemo_"
CACHE_SECONDS = 2.0  # how long a resolved token is trusted: a revocation elsewhere (a replica) lands within it


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh bearer token: ``mnemo_`` + 32 url-safe characters (192 random bits)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(24)


@dataclass(frozen=True)
class Caller:
    """Who a space token speaks for."""

    space: str  # = the namespace
    agent: str
    token_id: str

    @property
    def actor(self) -> str:
        return normalise_scope(agent=self.agent)


@dataclass(frozen=True)
class TokenInfo:
    """A token as listed (never the token itself: only its id, the first 12 hex digits of its hash)."""

    token_id: str
    space: str
    agent: str
    created_at: int
    revoked_at: int | None

    def item(self) -> dict[str, Any]:
        return {"token_id": self.token_id, "space_id": self.space, "agent": self.agent,
                "created_at": self.created_at, "revoked_at": self.revoked_at, "active": self.revoked_at is None}


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([
        pa.field("kind", pa.string(), nullable=False),  # space | token
        pa.field("space", pa.string(), nullable=False), pa.field("agent", pa.string()),
        pa.field("token_id", pa.string()), pa.field("token_hash", pa.string()),
        pa.field("created_at", pa.int64(), nullable=False), pa.field("revoked_at", pa.int64()),
        _conflict_field(),
    ])


def _conflict_field() -> Any:
    """A space row's stale-update policy (memcli.team.conflict): refuse | llm-merge; NULL (rows made before the
    column existed, token rows) reads as refuse."""
    import pyarrow as pa

    return pa.field("conflict", pa.string())


def _agent(agent: Any) -> str:
    """An agent name as tokens carry it (``claude-code``; ``agent:claude-code`` is accepted)."""
    scope = normalise_scope(agent=agent)
    if not scope.startswith("agent:"):
        raise ValidationError("an agent name is required (e.g. --agent claude-code)")
    return scope[len("agent:"):]


class SpaceRegistry:
    """Spaces and tokens of one store's database."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self._table: Any = None
        self._lock = threading.RLock()
        self._cache: dict[str, tuple[Caller | None, float]] = {}

    def table(self) -> Any:
        if self._table is None:
            with self._lock:
                if self._table is None:
                    try:
                        self._table = self.db.open_table(SPACES_TABLE)
                    except (OSError, RuntimeError, ValueError) as exc:
                        missing = isinstance(exc, FileNotFoundError) or "was not found" in str(exc)
                        if not missing and "://" not in self.db.uri:  # a garbled manifest: never recreated
                            raise damage.damaged(self.db.uri, SPACES_TABLE, f"its latest version cannot be read "
                                                 f"({exc})", label="the spaces table") from exc
                        if not missing:
                            raise
                        # its manifests gone but its tokens' rows still there: recreating it would revoke every
                        # token in silence (memcli.memory.damage)
                        damage.refuse_leftovers(self.db, self.db.uri, SPACES_TABLE, label="the spaces table",
                                                opens=lambda: damage.can_open(self.db, SPACES_TABLE))
                        try:
                            self._table = self.db.create_table(SPACES_TABLE, schema=_schema())
                        except (ValueError, OSError):  # another process created it first
                            self._table = self.db.open_table(SPACES_TABLE)
                    self._migrate()
        return self._table

    def _migrate(self) -> None:
        """A table made before spaces had a conflict setting: add the nullable column (metadata only; every
        existing space reads as "refuse"). Another replica may do it at the same time."""
        if "conflict" in self._table.schema.names:
            return
        try:
            self._table.add_columns([_conflict_field()])
        except (ValueError, RuntimeError, OSError):
            self._table = self.db.open_table(SPACES_TABLE)
            if "conflict" not in self._table.schema.names:
                raise

    def _rows(self, where: str) -> list[dict[str, Any]]:
        return self.table().to_lance().to_table(filter=where).to_pylist()

    def _add(self, rows: list[dict[str, Any]]) -> None:
        import pyarrow as pa

        self.table().add(pa.Table.from_pylist(rows, schema=_schema()))

    # ------------------------------------------------------------------ admin
    def spaces(self) -> list[dict[str, Any]]:
        """Every space with its count of active tokens."""
        rows = self._rows("kind IN ('space', 'token')")
        out = {r["space"]: {"space_id": r["space"], "created_at": r["created_at"], "created_by": r["agent"],
                            "active_tokens": 0, "conflict": r.get("conflict") or "refuse"}
               for r in rows if r["kind"] == "space"}
        for r in rows:
            if r["kind"] == "token" and r["revoked_at"] is None and r["space"] in out:
                out[r["space"]]["active_tokens"] += 1
        return sorted(out.values(), key=lambda d: d["space_id"])

    def exists(self, space: str) -> bool:
        return bool(self._rows(f"kind = 'space' AND space = {quote(space)}"))

    def create(self, space: str, agent: str, conflict: str = "refuse") -> tuple[str, TokenInfo]:
        """A new space and its first token, for ``agent``; ``conflict``: refuse | llm-merge (stale updates)."""
        from memcli.team.conflict import check_mode

        space = validate_namespace(space)
        agent = _agent(agent)
        conflict = check_mode(conflict)
        exists = ValidationError(f"space {space!r} exists already: add a token with `memcli space token add "
                                 f"{space} --agent NAME`")
        with self._lock:
            if self.exists(space):
                raise exists
            # Another process (a second admin, another replica) may create the same space at this moment and
            # the table has no unique key: each row carries a random nonce, and of the rows written for one
            # name, the first committed stands (the lowest row address: fragment ids grow with each commit, so
            # a writer that sees only its own row is first); the others take theirs back and refuse.
            nonce = "space-" + secrets.token_hex(8)
            self._add([{"kind": "space", "space": space, "agent": agent, "token_id": nonce, "token_hash": None,
                        "created_at": now_ms(), "revoked_at": None, "conflict": conflict}])
            rows = self.table().to_lance().to_table(filter=f"kind = 'space' AND space = {quote(space)}",
                                                    columns=["token_id"], with_row_address=True).to_pylist()
            first = min(rows, key=lambda r: r["_rowaddr"])
            if first["token_id"] != nonce:
                self.table().delete(f"kind = 'space' AND token_id = {quote(nonce)}")
                raise exists
        return self.add_token(space, agent)

    def conflict(self, space: str) -> str:
        """The space's stale-update policy: "refuse" (also for a space that does not exist) or "llm-merge"."""
        rows = self._rows(f"kind = 'space' AND space = {quote(validate_namespace(space))}")
        return (rows[0].get("conflict") or "refuse") if rows else "refuse"

    def set_conflict(self, space: str, mode: str) -> dict[str, Any]:
        """Set a space's stale-update policy; the space as :meth:`spaces` lists it."""
        from memcli.team.conflict import check_mode

        space = validate_namespace(space)
        mode = check_mode(mode)
        if not self.exists(space):
            raise NotFoundError(f"no space {space!r}: create it with `memcli space create {space} --agent NAME`")
        self.table().update(where=f"kind = 'space' AND space = {quote(space)}", values={"conflict": mode})
        return next(s for s in self.spaces() if s["space_id"] == space)

    def add_token(self, space: str, agent: str) -> tuple[str, TokenInfo]:
        """A new token of ``space`` for ``agent``: (the token — shown once, never stored —, its info)."""
        space = validate_namespace(space)
        agent = _agent(agent)
        if not self.exists(space):
            raise NotFoundError(f"no space {space!r}: create it with `memcli space create {space} --agent NAME`")
        token = new_token()
        digest = token_hash(token)
        info = TokenInfo(token_id=digest[:12], space=space, agent=agent, created_at=now_ms(), revoked_at=None)
        self._add([{"kind": "token", "space": space, "agent": agent, "token_id": info.token_id, "token_hash": digest,
                    "created_at": info.created_at, "revoked_at": None, "conflict": None}])
        return token, info

    def tokens(self, space: str) -> list[TokenInfo]:
        space = validate_namespace(space)
        if not self.exists(space):
            raise NotFoundError(f"no space {space!r}")
        rows = self._rows(f"kind = 'token' AND space = {quote(space)}")
        return sorted((TokenInfo(r["token_id"], r["space"], r["agent"], r["created_at"], r["revoked_at"])
                       for r in rows), key=lambda t: (t.created_at, t.token_id))

    def revoke(self, space: str, ref: str) -> TokenInfo:
        """Revoke a token of ``space`` by its id (or by the token itself). Takes effect at once here, within
        :data:`CACHE_SECONDS` on other replicas."""
        ref = (ref or "").strip()
        tid = token_hash(ref)[:12] if ref.startswith(TOKEN_PREFIX) else ref.lower()
        if not tid or not set(tid) <= set("0123456789abcdef"):
            raise ValidationError(f"invalid token id {ref[:20]!r}: give the token id `memcli space token list` shows")
        match = [t for t in self.tokens(space) if t.token_id == tid]
        if not match:
            raise NotFoundError(f"space {space!r} has no token {tid}")
        if match[0].revoked_at is None:
            self.table().update(where=f"kind = 'token' AND token_id = {quote(tid)}", values={"revoked_at": now_ms()})
        self._cache.clear()
        return next(t for t in self.tokens(space) if t.token_id == tid)

    # ------------------------------------------------------------------ the hot path
    def resolve(self, token: str) -> Caller | None:
        """The (space, agent) of an active token, else None. Cached for :data:`CACHE_SECONDS`."""
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        digest = token_hash(token)
        now = time.monotonic()
        hit = self._cache.get(digest)
        if hit is not None and hit[1] > now:
            return hit[0]
        caller = None
        for r in self._rows(f"kind = 'token' AND token_hash = {quote(digest)}"):
            # the lookup is by hash; the comparison of what was found is constant-time all the same
            if hmac.compare_digest(r["token_hash"], digest) and r["revoked_at"] is None:
                caller = Caller(space=r["space"], agent=r["agent"], token_id=r["token_id"])
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[digest] = (caller, now + CACHE_SECONDS)
        return caller


class SpaceService(MemoryService):
    """A :class:`MemoryService` confined to one space: the caller's namespace is ignored (the token decides),
    another space's memory is "not found", new memories default to the agent's scope, the audit log names
    the agent, and store-wide maintenance is refused."""

    def __init__(self, base: MemoryService, caller: Caller, conflicts: "ConflictResolver | None" = None) -> None:
        super().__init__(base.store, base.embedder, namespace=caller.space, agent=caller.agent,
                         project=base.project, duplicate_threshold=base.duplicate_threshold, search=base.search,
                         actor=caller.actor)
        self.caller = caller
        self.calibration = base.calibration
        self.conflicts = conflicts  # None: every stale update is refused (412)

    def close(self) -> None:
        """The embedder and store belong to the server's own service."""

    def _ns(self, namespace: str | None) -> str:
        return self.namespace  # whatever the client sent: the token decides

    def _id_ns(self, namespace: str | None, all_namespaces: bool) -> str:
        # get, update, forget, history: in this space whatever the caller names (every namespace included), so
        # another space's id gets the same answer as an id nobody has
        return self.namespace

    def list(self, *, namespace: str | None = None, all_namespaces: bool = False,
             **kwargs: Any) -> list[Memory]:
        return super().list(namespace=self.namespace, all_namespaces=False, **kwargs)

    def update(self, ref: str, *, content: str | None = None, tags: Sequence[str] | None = None,
               expected_version: int | None = None, source: str = "cli", namespace: str | None = None,
               **other: Any) -> Memory:
        """As :meth:`MemoryService.update` (in this space, whatever ``namespace`` says); a stale content update
        of a space set to ``llm-merge`` is merged by the LLM (see :mod:`memcli.team.conflict`) instead of refused,
        when it can be."""
        try:
            return super().update(ref, content=content, tags=tags, expected_version=expected_version,
                                  source=source, **other)
        except VersionConflictError:
            if expected_version is not None and self.conflicts is not None \
                    and self.conflicts.last_writer_wins(self.namespace):
                return self._overwrite(ref, content, tags, int(expected_version), source, other)
            merged = self._merge(ref, content, tags, expected_version, source, other)
            if merged is None:
                raise
            return merged

    def _overwrite(self, ref: str, content: str | None, tags: Sequence[str] | None, based: int, source: str,
                   other: dict[str, Any]) -> Memory:
        """A stale update of an ``lww`` space: written over whatever is there now, the audit note naming the
        version it was based on and the one it overwrote (a writer that gets in meanwhile: overwritten too)."""
        kw = {k: v for k, v in other.items() if k != "note"}
        for attempt in range(3):
            mem = self.get(ref)
            try:
                return MemoryService.update(self, mem.id, content=content, tags=tags, expected_version=mem.version,
                                            source=source, note=f"last writer wins: based on v{based}, "
                                            f"overwrote v{mem.version}", **kw)
            except VersionConflictError:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _merge(self, ref: str, content: str | None, tags: Sequence[str] | None, expected: int | None,
               source: str, other: dict[str, Any]) -> Memory | None:
        """The stale update merged and written, or None: refuse. Only the content (and tags: their union) is
        merged; an update of any other field, or without content, stays refused."""
        from memcli.models import validate_tags
        from memcli.team.conflict import MergedMemory

        if self.conflicts is None or content is None or expected is None or any(
                v is not None for k, v in other.items() if k not in ("action", "note", "keep_secrets")):
            return None
        mem = self.get(ref)
        based = int(expected)
        intended = validate_content(content)
        if not other.get("keep_secrets"):  # the LLM never sees a secret the store would not keep
            from memcli.redact import redact

            intended = redact(intended)
        out = self.conflicts.merge(self.namespace, mem, intended, based,
                                   lambda: self.store.audit.history(mem.id))
        if out is None:
            return None
        union = None
        if tags is not None:
            union = list(mem.tags) + [t for t in validate_tags(tags) if t not in mem.tags]
        # conditional on the version the LLM saw: a writer that got in meanwhile makes this a 412 too
        updated = MemoryService.update(self, mem.id, content=out.text, tags=union, expected_version=mem.version,
                                       source=source, action="merge", note=f"llm-merge of v{based} with v{mem.version}",
                                       keep_secrets=bool(other.get("keep_secrets")))
        return MergedMemory.of(updated, based, mem.version)

    def export(self, *, namespace: str | None = None, **kwargs: Any) -> Iterator[Memory]:
        return super().export(namespace=self.namespace, **kwargs)

    def import_records(self, records: Iterable[dict[str, Any]], **kwargs: Any) -> dict[str, int]:
        recs = [dict(r, namespace=self.namespace) if isinstance(r, dict) else r for r in records]
        return super().import_records(recs, **kwargs)

    def stats(self) -> dict[str, Any]:
        """This space's counts only (the store-wide figures would tell other spaces' names and sizes)."""
        rows = self.store.column_values(f"namespace = {quote(self.namespace)}", ["scope", "tags", "expires_at"])
        now = now_ms()
        scopes: dict[str, int] = {}
        tags: dict[str, int] = {}
        for r in rows:
            scopes[r["scope"]] = scopes.get(r["scope"], 0) + 1
            for t in r["tags"] or []:
                tags[t] = tags.get(t, 0) + 1
        return {"total": len(rows), "expired": sum(1 for r in rows if r["expires_at"] is not None
                                                   and r["expires_at"] <= now),
                "namespaces": {self.namespace: len(rows)}, "scopes": scopes,
                "tags": dict(sorted(tags.items(), key=lambda kv: -kv[1])[:50]),
                "embedder": self.store.stored_identity, "space": self.namespace, "agent": self.caller.agent}

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise ForbiddenError("store maintenance needs the server's admin token, not a space token")

    compact = reindex = distill = _refuse  # type: ignore[assignment]
    require_owner = _refuse  # type: ignore[assignment]  # distill (memcli.distill.service) asks it

    def scope_counts(self) -> dict[str, Any]:
        """The web view's sidebar, for this space only (other spaces' names are not the caller's to see)."""
        from memcli.memory.activity import scope_counts

        return scope_counts(self.store, default_namespace=self.namespace, now=now_ms(), only=self.namespace)

    def daily_counts(self, *, days: int = 30, namespace: str | None = None, all_namespaces: bool = False,
                     tz_offset_minutes: int = 0) -> dict[str, Any]:
        return super().daily_counts(days=days, namespace=self.namespace, all_namespaces=False,
                                    tz_offset_minutes=tz_offset_minutes)
