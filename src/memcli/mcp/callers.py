"""Who calls an MCP tool, and what they asked before.

**Who wrote it.** `memcli setup` writes one entry per client, and says in it which agent that client is:
``memcli mcp --agent codex`` (stdio), ``?agent=codex`` or the header ``X-Memcli-Agent: codex`` (HTTP, SSE). A
memory remembered through that entry is that agent's (scope ``agent:codex``) unless the call names another ``agent`` (or a
space token decides: team mode). The history (audit log) names the agent and the client, from what the client
said in ``initialize``: ``agent:codex (codex-mcp-client 0.171.0)``.

**request_id** on MCP writes (remember, update, forget): a retry with the same id gets the first answer again
and writes nothing (seed 004's tools; REST's ``Idempotency-Key``).

Kept per owner (a space token's id, the admin, this stdio process) for 24 hours in the server's process, at
most :data:`MAX_IDS` ids: a retry after a restart is answered by the store's own rule instead (an exact repeat
of a text returns the id it already has). The same id with other arguments is refused: it names another write.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from memcli.errors import MemcliError, ValidationError
from memcli.memory.idempotency import IdempotencyKeys, fingerprint
from memcli.models import normalise_scope

AGENT_HEADER = "x-memcli-agent"


@dataclass(frozen=True)
class Identity:
    """The agent a server's entry stands for (``memcli mcp --agent codex``); None: said per request (HTTP)."""

    agent: str | None = None


@dataclass(frozen=True)
class Who:
    agent: str | None  # the entry's agent
    client: str | None  # "name version" of the MCP client

    def actor(self, agent: str | None) -> str | None:
        """The audit log's actor for a change made by ``agent`` (the call's, else the entry's); None: the
        service's own rule (the configured agent, else "mcp")."""
        agent = agent or self.agent
        if agent is None and self.client is None:
            return None
        try:
            who = normalise_scope(agent=agent) if agent else "mcp"
        except MemcliError:
            return None  # the call itself says what is wrong with the name
        return f"{who} ({self.client})" if self.client else who


def who(ctx: Any, identity: Identity | None) -> Who:
    """Who is calling: the entry's agent (the process's, else the HTTP request's) and the client's name."""
    agent = identity.agent if identity is not None else None
    try:
        request_context = ctx.request_context
    except (AttributeError, ValueError):  # outside a request (a direct call)
        request_context = None
    if agent is None and request_context is not None:
        request = getattr(request_context, "request", None)
        if request is not None and hasattr(request, "query_params"):
            agent = request.query_params.get("agent") or request.headers.get(AGENT_HEADER) or None
    client = None
    session = getattr(request_context, "session", None) if request_context is not None else None
    params = getattr(session, "client_params", None) if session is not None else None
    info = getattr(params, "client_info", None)
    if info is not None:
        client = " ".join(str(x)[:80] for x in (info.name, info.version) if x)
    return Who(agent=agent, client=client or None)


def acting(svc: Any, actor: str | None) -> Any:
    """The service, its changes recorded as ``actor``'s. Only a local store's own service takes it: a space's
    (team mode) records its token's agent, and a team client's server decides by the token."""
    if actor is None or getattr(svc, "actor", "") is not None:
        return svc
    view = copy.copy(svc)  # shares the store and embedder; only who the audit log names differs
    view.actor = actor
    return view


# ---------------------------------------------------------------------------------------------- request ids
TTL_S = 86_400.0
MAX_IDS = 10_000
MAX_ID_CHARS = 255


def check_request_id(value: str) -> str:
    value = value.strip()
    if not value or len(value) > MAX_ID_CHARS or not value.isprintable():
        raise ValidationError(f"request_id must be 1 to {MAX_ID_CHARS} printable characters")
    return value


class RequestIds(IdempotencyKeys):
    """The answers of writes that carried a ``request_id``, by (owner, id): REST's Idempotency-Key store with
    MCP's id rule (any printable characters) and words. Thread-safe."""

    check = staticmethod(check_request_id)
    reused = "this request_id was used for another call: use a new request_id for a new write"
    running = "a call with this request_id is still running: retry in a moment"

    def __init__(self) -> None:
        super().__init__(ttl=TTL_S, max_keys=MAX_IDS)

    def begin(self, owner: str, request_id: str, request: Any) -> tuple[bool, Any]:  # type: ignore[override]
        """(True, the first answer) for a retry; (False, None): do the write, then :meth:`finish` or
        :meth:`abandon`."""
        return super().begin(owner, request_id, fingerprint(request))

    def finish(self, owner: str, request_id: str, request: Any, answer: Any) -> None:  # type: ignore[override]
        super().finish(owner, request_id, answer)