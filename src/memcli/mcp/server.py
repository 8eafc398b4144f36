"""The MCP face: memcli's tools on the official SDK's :class:`MCPServer`.

One server definition serves both transports: ``memcli mcp`` (stdio, see :func:`memcli.mcp.stdio.run_stdio`) and the
``/mcp`` endpoint of ``memcli serve`` (Streamable HTTP, mounted by :mod:`memcli.server.app`). Tool results
are the CLI's JSON shapes; a :class:`MemcliError` becomes a tool error (``isError``) with its message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from memcli import __version__
from memcli.errors import MemcliError, public_message
from memcli.mcp.board_tools import register_board_tools
from memcli.mcp.results import json_result

if TYPE_CHECKING:
    from memcli.server.batcher import WriteBatcher
    from memcli.server.holder import ServiceHolder

INSTRUCTIONS = (
    "memcli is a persistent memory shared by all of the user's AI agents (Claude Code, Codex, Gemini, "
    "Antigravity, OpenClaw, scripts). Before answering questions about past decisions, conventions, bugs or "
    "preferences, call `recall`. When you learn something worth keeping for later sessions or other agents "
    "(a decision and its reason, a fix, a convention, a user preference), call `remember` with one "
    "self-contained fact. Memories are shared: write them so another agent understands them without context."
)

SOURCE = "mcp"

# Annotated parameter types: the descriptions are what an agent reads in the tool schema.
MemoryId = Annotated[str, Field(description="A memory id: the full id, its short form (last 8 hex digits) or a "
                                                   "unique prefix (at least 4 characters).")]
Namespace = Annotated[str | None, Field(description="Namespace (isolated memory pool). Default: the configured one.")]
IdNamespace = Annotated[str | None, Field(description="The namespace the memory is in (a memory of another "
                                                  "namespace is not found). Default: the configured one.")]
Tags = Annotated[list[str] | None, Field(description="Free labels, e.g. [\"decision\", \"bug\"].")]
KeepSecrets = Annotated[bool, Field(description="Store the text exactly as given. By default secrets (API keys, "
                                              "tokens, passwords, private keys) are replaced by [REDACTED:kind]; "
                                              "true keeps them and is noted in the audit log.")]
IncludeArchived = Annotated[bool, Field(description="Also memories that memcli distill merged into another "
                                                    "(superseded) or archived (expired). Default: only active ones.")]


def build_server(holder: "ServiceHolder", *, name: str = "memcli",
                 batcher: "WriteBatcher | None" = None) -> MCPServer:
    """An MCPServer whose tools call the shared service of ``holder``; with ``batcher`` (``memcli serve``),
    remembers arriving at once share a commit with each other and with REST's."""
    mcp = MCPServer(name=name, title="memcli: shared agent memory", version=__version__, instructions=INSTRUCTIONS,
                    log_level="WARNING")

    def run(method: str, /, *args: Any, **kwargs: Any) -> Any:
        """One service call, tracked by the holder; a MemcliError becomes a tool error."""
        try:
            return holder.call(method, *args, **kwargs)
        except MemcliError as exc:
            raise ToolError(public_message(exc.message, exc.http_status)) from None
        except (OSError, RuntimeError, ValueError) as exc:  # an engine error no core call named: no paths either
            raise ToolError(public_message(f"internal error: {type(exc).__name__}: {exc}", 500)) from None

    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)

    @mcp.tool(
        name="remember",
        title="Remember a fact",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                    open_world_hint=False),
    )
    def remember(
        content: Annotated[str, Field(description="The fact, decision or lesson to store, as one self-contained "
                                                  "statement (1..32,000 characters).")],
        tags: Tags = None,
        agent: Annotated[str | None, Field(description="Store it as this agent's own memory (scope agent:<name>) "
                                                       "instead of the shared global scope.")] = None,
        importance: Annotated[float, Field(ge=0.0, le=1.0, description="0.0 .. 1.0; default 0.5.")] = 0.5,
        key: Annotated[str | None, Field(description="Optional upsert handle: remembering again with the same "
                                                     "key updates that memory instead of adding one.")] = None,
        ttl: Annotated[str | None, Field(description="Expire after a duration, like 30m, 12h, 7d, 2w.")] = None,
        metadata: Annotated[dict[str, Any] | None, Field(description="Application-defined JSON object.")] = None,
        namespace: Namespace = None,
        keep_secrets: KeepSecrets = False,
    ) -> CallToolResult:
        """Store a memory that every agent of this user can recall later (by meaning or keyword, any language).

        Use it for durable knowledge: decisions and their reasons, fixes, conventions, preferences, facts about
        the project or the user. Exact repeats are not stored twice (the existing id is returned); memories that
        state the same fact are listed in `duplicate_of`; similar memories that state another value (a
        change: "conflict") or another fact ("related") are listed in `related` with what differs. Returns
        {"ok", "memory_id", "duplicate_of", "related", "created", "updated"}.
        """
        if batcher is None:
            res = run("remember", content, tags=tags, agent=agent, importance=importance,
                      key=key, ttl=ttl, metadata=metadata, namespace=namespace, source=SOURCE,
                      **({"keep_secrets": True} if keep_secrets else {}))
        else:
            from memcli.memory.service import NewMemory

            item = NewMemory(content=content, tags=tags, agent=agent, importance=importance, key=key, ttl=ttl,
                             metadata=metadata, namespace=namespace, keep_secrets=bool(keep_secrets))
            try:
                res = batcher.remember_now(item, None, SOURCE)  # None: the caller of this request
            except MemcliError as exc:
                raise ToolError(exc.message) from None
        return json_result(res.item())

    @mcp.tool(name="recall", title="Recall memories", annotations=read_only)
    def recall(
        query: Annotated[str, Field(description="What you are looking for, in natural language or keywords "
                                                "(identifiers, paths, error codes work too).")],
        top_k: Annotated[int, Field(ge=1, le=100, description="How many memories to return.")] = 5,
        agent_filter: Annotated[str | None, Field(description="Only memories of this agent (scope agent:<name>); "
                                                              "'global' for shared ones only.")] = None,
        tags: Annotated[list[str] | None, Field(description="Only memories that have all of these tags.")] = None,
        namespace: Namespace = None,
        include_archived: IncludeArchived = False,
        as_of: Annotated[str | None, Field(description="What was true then: an ISO date (2026-01-31) or a "
                                                       "duration ago (30d). Memories written by then, outdated "
                                                       "only by ones written by then.")] = None,
    ) -> CallToolResult:
        """Find the memories most relevant to a query (hybrid: meaning + keywords), best first.

        Call it before answering anything that may have been decided, solved or explained before, in this or
        another agent's session. Returns a list of {"memory_id", "content", "score" (0..1), "tags", "scope",
        "namespace", "importance", "key", "created_at", "updated_at", "outdated_by", "updates", ...}. A memory
        with "outdated_by" was changed later (another value for the same fact): the memory it names, listed just
        above it, is current.
        """
        hits = run("recall", query, top_k=top_k, scope=agent_filter, tags=tags, namespace=namespace,
                   include_archived=include_archived, **({"as_of": as_of} if as_of else {}))
        return json_result([h.item() for h in hits])

    @mcp.tool(name="list_facts", title="List memories", annotations=read_only)
    def list_facts(
        agent: Annotated[str | None, Field(description="Only this agent's memories (scope agent:<name>).")] = None,
        tag: Annotated[str | None, Field(description="Only memories with this tag.")] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="How many to return.")] = 20,
        offset: Annotated[int, Field(ge=0, description="Skip this many (paging).")] = 0,
        namespace: Namespace = None,
        include_archived: IncludeArchived = False,
    ) -> CallToolResult:
        """List stored memories, newest first, with exact filters (no search). Use `recall` to search."""
        mems = run("list", agent=agent, tags=[tag] if tag else None, limit=limit,
                   offset=offset, namespace=namespace, include_archived=include_archived)
        return json_result([m.item() for m in mems])

    @mcp.tool(name="check_duplicate", title="Check for a duplicate", annotations=read_only)
    def check_duplicate(
        content: Annotated[str, Field(description="The text you are about to remember.")],
        threshold: Annotated[float | None, Field(ge=0.0, le=1.0, description="Similarity (0..1) from which a "
                                                 "memory counts as a duplicate; default: the configured one.")] = None,
        namespace: Namespace = None,
    ) -> CallToolResult:
        """Is this fact already remembered? `is_duplicate` only when a memory states the same fact; each similar
        memory says how it relates: "same", "conflict" (same subject, another value: you are recording a
        change, not a repeat) or "related", with the differing words. Returns {"is_duplicate", "similar": [{...,
        "relation", "reason", "differences"}]}."""
        res = run("check_duplicate", content, threshold=threshold, namespace=namespace)
        return json_result(res.item())

    @mcp.tool(name="get", title="Get a memory", annotations=read_only)
    def get(memory_id: MemoryId, namespace: IdNamespace = None) -> CallToolResult:
        """One memory by id (or unique id prefix), with all its fields, including `version`."""
        mem = run("get", memory_id, namespace=namespace)
        return json_result(mem.item())

    @mcp.tool(
        name="update",
        title="Update a memory",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                                    open_world_hint=False),
    )
    def update(
        memory_id: MemoryId,
        content: Annotated[str | None, Field(description="New text (replaces the old text).")] = None,
        tags: Annotated[list[str] | None, Field(description="New tags (replace the old ones).")] = None,
        importance: Annotated[float | None, Field(ge=0.0, le=1.0, description="New importance, 0.0 .. 1.0.")] = None,
        scope: Annotated[str | None, Field(description="New scope: 'global' or 'agent:<name>'.")] = None,
        expected_version: Annotated[int | None, Field(description="Only update if the memory is still at this "
                                                                  "version (from `get`); else an error.")] = None,
        keep_secrets: KeepSecrets = False,
        namespace: IdNamespace = None,
    ) -> CallToolResult:
        """Correct or refine an existing memory; only the fields given change. Returns {"ok", "memory_id", "version"}."""
        mem = run("update", memory_id, content=content, tags=tags, namespace=namespace,
                  importance=importance, scope=scope, expected_version=expected_version, source="mcp",
                  **({"keep_secrets": True} if keep_secrets else {}))
        out = {"ok": True, "memory_id": mem.id, "version": mem.version}
        if getattr(mem, "merged_versions", None):  # a team space merged a stale update (memcli.team.conflict)
            out.update(merged=True, content=mem.content)
        return json_result(out)

    @mcp.tool(
        name="forget",
        title="Forget a memory",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                    open_world_hint=False),
    )
    def forget(memory_id: MemoryId, namespace: IdNamespace = None) -> CallToolResult:
        """Delete a memory for good (every agent loses it). Use for wrong or obsolete memories. Returns {"ok"}."""
        ids = run("forget", memory_id, source="mcp", namespace=namespace)
        return json_result({"ok": True, "memory_id": ids[0]})

    register_board_tools(mcp, holder)
    _forbid_unknown_arguments(mcp)
    return mcp


def _forbid_unknown_arguments(mcp: MCPServer) -> None:
    """An argument a tool does not have is a tool error, as an unknown field is for REST (the SDK drops it
    silently: `remember(content=…, tag="bug")` would store no tag and say nothing)."""
    from pydantic import ConfigDict

    for tool in mcp._tool_manager.list_tools():  # noqa: SLF001 - the SDK has no public hook for this
        base = tool.fn_metadata.arg_model
        tool.fn_metadata.arg_model = type(base.__name__, (base,),
                                          {"model_config": ConfigDict(**base.model_config, extra="forbid")})
        tool.parameters["additionalProperties"] = False
