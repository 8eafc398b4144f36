"""The MCP face: memcli's tools on the official SDK's :class:`MCPServer`.

One server definition serves every transport: ``memcli mcp`` (stdio, see :mod:`memcli.mcp.front`) and the
``/mcp``, ``/sse`` and ``/mcp/sse`` endpoints of ``memcli serve`` (mounted by :mod:`memcli.server.mcp_endpoint`).
Tool results are the CLI's JSON shapes; a :class:`MemcliError` becomes a tool error (``isError``) with its
message, and so do arguments a tool does not take or cannot use (one clean sentence per argument). Seed 004's
argument names work beside memcli's: ``agent_id`` (the agent), ``limit`` (recall's ``top_k``),
``ttl_seconds``; ``request_id`` makes a retried write idempotent (:mod:`memcli.mcp.callers`).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field, ValidationError

from memcli import __version__
from memcli.errors import MemcliError, public_message
from memcli.mcp.board_tools import register_board_tools
from memcli.mcp.callers import Identity, RequestIds, acting, who
from memcli.mcp.resources import register_prompts, register_resources
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


AgentId = Annotated[str | None, Field(description="The same as `agent` (seed 004's name for it).")]
RequestId = Annotated[str | None, Field(description="Any unique string for this write: a retry with the same "
                                                    "request_id gets the first answer and writes nothing.")]


class _Server(MCPServer):
    """The SDK's server, with argument errors a model can read: "unknown argument 'tag' (remember takes: …)"
    instead of pydantic's report and its URL."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            raise ToolError(_argument_errors(name, exc.__cause__, self)) from exc.__cause__


def _argument_errors(tool: str, exc: ValidationError, server: MCPServer) -> str:
    found = server._tool_manager.get_tool(tool)  # noqa: SLF001
    takes = ", ".join(found.parameters.get("properties", {})) if found is not None else ""
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(x) for x in err["loc"]) or "arguments"
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown argument {where!r} ({tool} takes: {takes})")
        elif err["type"] == "missing":
            parts.append(f"missing argument {where!r}")
        else:
            parts.append(f"{where}: {err['msg']}")
    return f"invalid arguments for {tool}: " + "; ".join(parts)


def _one(name: str, value: Any, alias: str, other: Any) -> Any:
    """``value`` or its seed-004 alias ``other``; both and different is an error."""
    if value is not None and other is not None and value != other:
        raise ToolError(f"{name} and {alias} name the same thing: give one")
    return value if value is not None else other


def build_server(holder: "ServiceHolder", *, name: str = "memcli", batcher: "WriteBatcher | None" = None,
                 identity: Identity | None = None) -> MCPServer:
    """An MCPServer whose tools call the shared service of ``holder``; with ``batcher`` (``memcli serve``),
    remembers arriving at once share a commit with each other and with REST's. ``identity``: the agent this
    process's client is (``memcli mcp --agent``; over HTTP each request says it)."""
    mcp = _Server(name=name, title="memcli: shared agent memory", version=__version__, instructions=INSTRUCTIONS,
                  log_level="WARNING")
    requests = RequestIds()

    def run(method: str, /, *args: Any, actor: str | None = None, **kwargs: Any) -> Any:
        """One service call, tracked by the holder (its changes recorded as ``actor``'s); a MemcliError
        becomes a tool error."""
        try:
            return holder.call_with(lambda svc: getattr(acting(svc, actor), method)(*args, **kwargs))
        except MemcliError as exc:
            raise ToolError(public_message(exc.message, exc.http_status)) from None
        except (OSError, RuntimeError, ValueError) as exc:  # an engine error no core call named: no paths either
            raise ToolError(public_message(f"internal error: {type(exc).__name__}: {exc}", 500)) from None

    def once(ctx: Context, request_id: str | None, call: dict[str, Any], write: Any) -> Any:
        """``write()``'s answer; with a ``request_id``, a retry gets the first answer again and writes nothing."""
        if request_id is None:
            return write()
        owner = _owner(ctx)
        try:
            done, answer = requests.begin(owner, request_id, call)
        except MemcliError as exc:
            raise ToolError(exc.message) from None
        if done:
            return answer
        try:
            answer = write()
        except BaseException:
            requests.abandon(owner, request_id)
            raise
        requests.finish(owner, request_id, call, answer)
        return answer

    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)

    @mcp.tool(
        name="remember",
        title="Remember a fact",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                    open_world_hint=False),
    )
    def remember(
        ctx: Context,
        content: Annotated[str, Field(description="The fact, decision or lesson to store, as one self-contained "
                                                  "statement (1..32,000 characters).")],
        tags: Tags = None,
        agent: Annotated[str | None, Field(description="Store it as this agent's own memory (scope agent:<name>); "
                                                       "default: the agent of this client's entry (memcli setup), "
                                                       "else the shared global scope.")] = None,
        agent_id: AgentId = None,
        importance: Annotated[float, Field(ge=0.0, le=1.0, description="0.0 .. 1.0; default 0.5.")] = 0.5,
        key: Annotated[str | None, Field(description="Optional upsert handle: remembering again with the same "
                                                     "key updates that memory instead of adding one.")] = None,
        ttl: Annotated[str | int | None, Field(description="Expire after a duration, like 30m, 12h, 7d, 2w (a "
                                                           "number: seconds).")] = None,
        ttl_seconds: Annotated[int | None, Field(ge=1, description="Expire after this many seconds.")] = None,
        metadata: Annotated[dict[str, Any] | None, Field(description="Application-defined JSON object.")] = None,
        namespace: Namespace = None,
        keep_secrets: KeepSecrets = False,
        request_id: RequestId = None,
    ) -> CallToolResult:
        """Store a memory that every agent of this user can recall later (by meaning or keyword, any language).

        Use it for durable knowledge: decisions and their reasons, fixes, conventions, preferences, facts about
        the project or the user. Exact repeats are not stored twice (the existing id is returned); memories that
        state the same fact are listed in `duplicate_of`; similar memories that state another value (a
        change: "conflict") or another fact ("related") are listed in `related` with what differs. Returns
        {"ok", "memory_id", "duplicate_of", "related", "created", "updated"}.
        """
        caller = who(ctx, identity)
        agent = _one("agent", agent, "agent_id", agent_id) or caller.agent
        ttl = _one("ttl", ttl, "ttl_seconds", ttl_seconds)
        actor = caller.actor(agent)
        call = {"tool": "remember", "content": content, "tags": tags, "agent": agent, "importance": importance,
                "key": key, "ttl": ttl, "metadata": metadata, "namespace": namespace, "keep_secrets": keep_secrets}

        def write() -> Any:
            if batcher is None:
                res = run("remember", content, tags=tags, agent=agent, importance=importance, key=key, ttl=ttl,
                          metadata=metadata, namespace=namespace, source=SOURCE, actor=actor,
                          **({"keep_secrets": True} if keep_secrets else {}))
            else:
                from memcli.memory.service import NewMemory

                item = NewMemory(content=content, tags=tags, agent=agent, importance=importance, key=key, ttl=ttl,
                                 metadata=metadata, namespace=namespace, keep_secrets=bool(keep_secrets))
                try:
                    res = batcher.remember_now(item, None, SOURCE, actor)  # None: the caller of this request
                except MemcliError as exc:
                    raise ToolError(exc.message) from None
            return res.item()

        return json_result(once(ctx, request_id, call, write))

    @mcp.tool(name="recall", title="Recall memories", annotations=read_only)
    def recall(
        query: Annotated[str, Field(description="What you are looking for, in natural language or keywords "
                                                "(identifiers, paths, error codes work too).")],
        top_k: Annotated[int | None, Field(ge=1, le=100, description="How many memories to return (default 5).")
                         ] = None,
        limit: Annotated[int | None, Field(ge=1, le=100, description="The same as `top_k`.")] = None,
        agent_filter: Annotated[str | None, Field(description="Only memories of this agent (scope agent:<name>); "
                                                              "'global' for shared ones only.")] = None,
        agent_id: Annotated[str | None, Field(description="The same as `agent_filter`.")] = None,
        tags: Annotated[list[str] | None, Field(description="Only memories that have all of these tags.")] = None,
        namespace: Namespace = None,
        include_archived: IncludeArchived = False,
        min_score: Annotated[float, Field(ge=0.0, le=1.0, description="Only memories scoring at least this "
                                                                      "(0.5: probably answers the query).")] = 0.0,
        as_of: Annotated[str | None, Field(description="What was true then: an ISO date (2026-01-31) or a "
                                                       "duration ago (30d). Memories written by then, outdated "
                                                       "only by ones written by then.")] = None,
    ) -> CallToolResult:
        """Find the memories most relevant to a query (hybrid: meaning + keywords), best first.

        Call it before answering anything that may have been decided, solved or explained before, in this or
        another agent's session. Returns a list of {"memory_id", "content", "score" (0..1), "tags", "scope",
        "namespace", "importance", "key", "created_at", "updated_at", "outdated_by", "updates", ...}. ``score`` is
        a calibrated relevance, comparable across queries: 0.5 or more probably answers the query; the best hit
        of a question the memory knows nothing about scores well under it. A memory with "outdated_by" was
        changed later (another value for the same fact): the memory it names, listed just above it, is current.
        """
        hits = run("recall", query, top_k=_one("top_k", top_k, "limit", limit) or 5,
                   scope=_one("agent_filter", agent_filter, "agent_id", agent_id), tags=tags, namespace=namespace,
                   include_archived=include_archived, min_score=min_score, **({"as_of": as_of} if as_of else {}))
        return json_result([h.item() for h in hits])

    @mcp.tool(name="list_facts", title="List memories", annotations=read_only)
    def list_facts(
        agent: Annotated[str | None, Field(description="Only this agent's memories (scope agent:<name>).")] = None,
        agent_id: AgentId = None,
        tag: Annotated[str | None, Field(description="Only memories with this tag.")] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="How many to return.")] = 20,
        offset: Annotated[int, Field(ge=0, description="Skip this many (paging).")] = 0,
        namespace: Namespace = None,
        include_archived: IncludeArchived = False,
    ) -> CallToolResult:
        """List stored memories, newest first, with exact filters (no search). Use `recall` to search."""
        mems = run("list", agent=_one("agent", agent, "agent_id", agent_id), tags=[tag] if tag else None,
                   limit=limit, offset=offset, namespace=namespace, include_archived=include_archived)
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
        ctx: Context,
        memory_id: MemoryId,
        content: Annotated[str | None, Field(description="New text (replaces the old text).")] = None,
        tags: Annotated[list[str] | None, Field(description="New tags (replace the old ones).")] = None,
        importance: Annotated[float | None, Field(ge=0.0, le=1.0, description="New importance, 0.0 .. 1.0.")] = None,
        scope: Annotated[str | None, Field(description="New scope: 'global' or 'agent:<name>'.")] = None,
        expected_version: Annotated[int | None, Field(description="Only update if the memory is still at this "
                                                                  "version (from `get`); else an error.")] = None,
        keep_secrets: KeepSecrets = False,
        namespace: IdNamespace = None,
        request_id: RequestId = None,
    ) -> CallToolResult:
        """Correct or refine an existing memory; only the fields given change. Returns {"ok", "memory_id", "version"}."""
        call = {"tool": "update", "memory_id": memory_id, "content": content, "tags": tags, "importance": importance,
                "scope": scope, "expected_version": expected_version, "keep_secrets": keep_secrets,
                "namespace": namespace}

        def write() -> Any:
            mem = run("update", memory_id, content=content, tags=tags, namespace=namespace,
                      importance=importance, scope=scope, expected_version=expected_version, source=SOURCE,
                      actor=who(ctx, identity).actor(None), **({"keep_secrets": True} if keep_secrets else {}))
            out = {"ok": True, "memory_id": mem.id, "version": mem.version}
            if getattr(mem, "merged_versions", None):  # a team space merged a stale update (memcli.team.conflict)
                out.update(merged=True, content=mem.content)
            return out

        return json_result(once(ctx, request_id, call, write))

    @mcp.tool(
        name="forget",
        title="Forget a memory",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                    open_world_hint=False),
    )
    def forget(ctx: Context, memory_id: MemoryId, namespace: IdNamespace = None,
               request_id: RequestId = None) -> CallToolResult:
        """Delete a memory for good (every agent loses it). Use for wrong or obsolete memories. Returns {"ok"}."""
        call = {"tool": "forget", "memory_id": memory_id, "namespace": namespace}

        def write() -> Any:
            ids = run("forget", memory_id, source=SOURCE, namespace=namespace, actor=who(ctx, identity).actor(None))
            return {"ok": True, "memory_id": ids[0]}

        return json_result(once(ctx, request_id, call, write))

    register_board_tools(mcp, holder)
    register_resources(mcp, lambda method, *a, **k: holder.call(method, *a, **k))
    register_prompts(mcp, lambda method, *a, **k: holder.call(method, *a, **k))
    _finish_tools(mcp)
    return mcp


def _owner(ctx: Context) -> str:
    """Whose request ids these are: a space token's, the admin's, this process's client's."""
    try:
        request = ctx.request_context.request
    except (AttributeError, ValueError):  # outside a request (a direct call)
        request = None
    caller = getattr(request, "scope", {}).get("state", {}).get("memcli_caller") if request is not None else None
    if caller is None:
        return "local"
    return caller if isinstance(caller, str) else f"space:{caller.space}:{caller.token_id}"


def _finish_tools(mcp: MCPServer) -> None:
    """Every tool: its description without the docstring's indentation, and an argument it does not have
    refused, as an unknown field is for REST (the SDK drops it silently: `remember(content=…, tag="bug")`
    would store no tag and say nothing)."""
    from pydantic import ConfigDict

    for tool in mcp._tool_manager.list_tools():  # noqa: SLF001 - the SDK has no public hook for this
        tool.description = inspect.cleandoc(tool.description or "")
        base = tool.fn_metadata.arg_model
        tool.fn_metadata.arg_model = type(base.__name__, (base,),
                                          {"model_config": ConfigDict(**base.model_config, extra="forbid")})
        tool.parameters["additionalProperties"] = False
