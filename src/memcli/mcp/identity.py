"""Who an MCP write is from: the agent of the client entry and the MCP client's own name and version.

`memcli setup` writes one entry per client, and says in it which agent that client is: ``memcli mcp --agent
codex`` (stdio), ``?agent=codex`` or the header ``X-Memcli-Agent: codex`` (HTTP, SSE). A memory remembered
through that entry is that agent's (scope ``agent:codex``) unless the call names another ``agent`` (or a
space token decides: team mode). The history (audit log) names the agent and the client, from what the client
said in ``initialize``: ``agent:codex (codex-mcp-client 0.171.0)``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from memcli.errors import MemcliError
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
