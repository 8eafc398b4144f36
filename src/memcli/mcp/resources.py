"""memcli's MCP resources and prompts (stdio and HTTP alike).

Resources (JSON): ``memcli://stats``, ``memcli://namespaces``, ``memcli://scopes``, ``memcli://recent`` (and
``memcli://recent/{namespace}``), ``memcli://export/{namespace}``, ``memcli://memory/{memory_id}`` (and
``memcli://memory/{namespace}/{memory_id}``). Prompts: ``record-decision``, ``summarize-recent``,
``what-do-we-know``, ``session-handoff``; the last three carry the memories they are about. A space token
sees its own space only, as every tool does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.shared.exceptions import MCPError
from pydantic import Field

from memcli.errors import MemcliError, NotFoundError, public_message

JSON = "application/json"
RECENT = 20  # memories in memcli://recent and the prompts that show recent ones
EXPORT_MAX = 5_000  # memories in one export resource (a larger export is `memcli export`'s)
Run = Callable[..., Any]
InNamespace = Annotated[str, Field(description="The namespace (default: the configured one).")]


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1)


def register_resources(mcp: MCPServer, call: Run) -> None:
    """``call(method, *args, **kwargs)``: one tracked service call (the holder's)."""

    def read(method: str, /, *args: Any, **kwargs: Any) -> Any:
        try:
            return call(method, *args, **kwargs)
        except NotFoundError as exc:
            raise ResourceNotFoundError(exc.message) from None
        except MemcliError as exc:
            raise ResourceError(public_message(exc.message, exc.http_status)) from None

    @mcp.resource("memcli://stats", name="stats", title="Store statistics", mime_type=JSON)
    def stats() -> str:
        """What the store holds: memories by status, namespace, scope and tag; the embedder; size and indexes."""
        return _json(read("stats"))

    @mcp.resource("memcli://namespaces", name="namespaces", title="Namespaces", mime_type=JSON)
    def namespaces() -> str:
        """Every namespace (isolated memory pool) with its number of memories and its scopes; the default one."""
        return _json(read("scope_counts"))

    @mcp.resource("memcli://scopes", name="scopes", title="Scopes", mime_type=JSON)
    def scopes() -> str:
        """Who the memories belong to: `global` (shared) or `agent:<name>`, with counts, overall and per
        namespace."""
        counts = read("scope_counts")
        total: dict[str, int] = {}
        for ns in counts["namespaces"]:
            for scope, n in ns["scopes"].items():
                total[scope] = total.get(scope, 0) + n
        return _json({"scopes": dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))),
                      "by_namespace": {ns["namespace"]: ns["scopes"] for ns in counts["namespaces"]}})

    @mcp.resource("memcli://recent", name="recent", title="Recent memories", mime_type=JSON)
    def recent() -> str:
        """The 20 newest memories of the default namespace (the CLI's `list` shape)."""
        return _json([m.item() for m in read("list", limit=RECENT)])

    @mcp.resource("memcli://recent/{namespace}", name="recent-in-namespace", title="Recent memories of a namespace",
                  mime_type=JSON)
    def recent_in(namespace: str) -> str:
        """The 20 newest memories of one namespace."""
        return _json([m.item() for m in read("list", limit=RECENT, namespace=namespace)])

    @mcp.resource("memcli://export/{namespace}", name="export", title="Export a namespace", mime_type=JSON)
    def export(namespace: str) -> str:
        """Every active memory of a namespace, oldest first, with all its fields (at most 5,000)."""
        mems = []
        for m in read("export", namespace=namespace, include_expired=False):
            mems.append(m.item())
            if len(mems) >= EXPORT_MAX:
                break
        return _json({"namespace": namespace, "count": len(mems), "memories": mems})

    @mcp.resource("memcli://memory/{memory_id}", name="memory", title="One memory", mime_type=JSON)
    def memory(memory_id: str) -> str:
        """One memory of the default namespace by id (full id, short form or unique prefix), all its fields."""
        return _json(read("get", memory_id).item())

    @mcp.resource("memcli://memory/{namespace}/{memory_id}", name="memory-in-namespace",
                  title="One memory of a namespace", mime_type=JSON)
    def memory_in(namespace: str, memory_id: str) -> str:
        """One memory of a namespace by id."""
        return _json(read("get", memory_id, namespace=namespace).item())


def register_prompts(mcp: MCPServer, call: Run) -> None:
    """The prompts; those about memories read them through ``call`` (as the resources do)."""

    def read(method: str, /, *args: Any, **kwargs: Any) -> Any:
        try:
            return call(method, *args, **kwargs)
        except MemcliError as exc:
            raise MCPError(-32602, public_message(exc.message, exc.http_status)) from None

    def listing(mems: list[Any]) -> str:
        if not mems:
            return "(no memories yet)"
        return "\n".join(f"- [{m.id}] ({m.scope}{', ' + ', '.join(m.tags) if m.tags else ''}) {m.content}"
                         for m in mems)

    @mcp.prompt(name="record-decision", title="Record a decision")
    def record_decision(decision: Annotated[str, Field(description="What was decided.")],
                        reason: Annotated[str, Field(description="Why.")] = "",
                        alternatives: Annotated[str, Field(description="The options not taken.")] = "") -> str:
        """Store a decision with its reason (and the options not taken) as one memory every agent can recall."""
        parts = [f"Decision: {decision.strip()}"]
        if reason.strip():
            parts.append(f"Reason: {reason.strip()}")
        if alternatives.strip():
            parts.append(f"Alternatives considered: {alternatives.strip()}")
        return ("Record this decision in memcli's shared memory. First call `check_duplicate` with it; if a memory "
                "states an older value (relation \"conflict\"), `update` that one instead of adding another. "
                "Otherwise call `remember` with one self-contained statement (what was decided, why, and when it "
                "applies), tags [\"decision\"] and importance 0.8.\n\n" + "\n".join(parts))

    @mcp.prompt(name="summarize-recent", title="Summarize recent memories")
    def summarize_recent(namespace: InNamespace = "",
                         limit: Annotated[str, Field(description="How many memories, 1..100 (default 20).")] = "20"
                         ) -> str:
        """A summary of the newest memories: decisions, fixes, open questions."""
        try:
            n = max(1, min(100, int(limit)))
        except ValueError:
            raise MCPError(-32602, f"limit must be a whole number from 1 to 100, not {limit!r}") from None
        mems = read("list", limit=n, namespace=namespace or None)
        return ("Summarize what these memories from memcli (newest first) say: the decisions and their reasons, "
                "the problems fixed, the conventions, and anything still open. Group related ones; name the agent "
                f"(scope) where it matters.\n\n{listing(mems)}")

    @mcp.prompt(name="what-do-we-know", title="What do we know about…")
    def what_do_we_know(topic: Annotated[str, Field(description="The subject: a component, a person, a bug...")],
                        namespace: InNamespace = "") -> str:
        """Everything memcli's memories say about a topic, with their ids, best matches first."""
        hits = read("recall", topic, top_k=10, namespace=namespace or None)
        shown = "\n".join(f"- [{h.memory.id}] (score {h.score:.2f}, {h.memory.scope}) {h.memory.content}"
                          for h in hits) or "(nothing recalled)"
        return (f"What do we know about: {topic}\n\nThese are the memories memcli recalls for it (best first). "
                "Answer from them, cite the memory ids you rely on, say what is outdated or contradictory, and say "
                "plainly what is not known. If you need more, call `recall` with other words.\n\n" + shown)

    @mcp.prompt(name="session-handoff", title="Session handoff")
    def session_handoff(focus: Annotated[str, Field(description="What the session was about (optional).")] = "",
                        namespace: InNamespace = "") -> str:
        """Write a handoff for the next session or agent: what was done, what was decided, what is next."""
        mems = read("list", limit=10, namespace=namespace or None)
        about = f" about {focus.strip()}" if focus.strip() else ""
        return (f"Write a session handoff{about} for the next session or another agent, and store it with "
                "`remember` (tags [\"handoff\"], importance 0.7): what was done, what was decided and why, what is "
                "unfinished, the next steps, and where things are (files, branches, commands). One memory, "
                "self-contained. The newest memories, for context (do not repeat what they already say):\n\n"
                + listing(mems))
