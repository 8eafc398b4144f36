"""REST for memories, under ``/api`` (the CLI's JSON shapes): list (or search, with ``q``), remember (one, or a
batch; an ``Idempotency-Key`` makes a retry answer the first write again), get, update (PATCH changes the fields
sent; PUT, seed 002's full update, replaces content, tags and metadata), forget, history, search, vector search,
check-duplicate and stats."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from memcli.errors import ValidationError
from memcli.memory.idempotency import IdempotencyKeys, fingerprint
from memcli.server.http import (
    MAX_BATCH_BODY,
    MAX_BATCH_ITEMS,
    MAX_BODY,
    bool_param,
    etag,
    float_param,
    if_match,
    int_param,
    is_int,
    json_object,
    read_json,
    tags_param,
    time_param,
    write_source,
)

if TYPE_CHECKING:
    from memcli.memory.service import NewMemory
    from memcli.server.batcher import WriteBatcher

Call = Callable[..., Awaitable[Any]]
NEW_MEMORY_FIELDS = {"content", "tags", "scope", "agent", "importance", "key", "ttl", "metadata", "namespace",
                     "project", "created_at", "keep_secrets"}
PATCH_FIELDS = {"content", "tags", "importance", "scope", "agent", "metadata", "ttl", "expected_version",
                "keep_secrets"}
PUT_FIELDS = PATCH_FIELDS | {"key"}
MAX_TOP_K = 1000  # recall's: a search's offset + limit


def search_window(q: Any, default_limit: int) -> tuple[int, int]:
    """(limit, offset) of a search: ``limit`` (or ``top_k``) results after the first ``offset`` ones."""
    limit = int_param(q, "limit", None)  # limit=0 is refused like top_k=0, not read as "the default"
    limit = int_param(q, "top_k", default_limit) if limit is None else limit
    offset = int_param(q, "offset", 0) or 0
    if offset < 0:
        raise ValidationError("offset must be 0 or more")
    if offset and limit is not None and limit >= 1 and limit + offset > MAX_TOP_K:  # else recall's own error
        raise ValidationError(f"a search reaches at most its best {MAX_TOP_K}: offset + limit must be ≤ {MAX_TOP_K}")
    return limit, offset


def owner_of(request: Request) -> str:
    """Whose idempotency keys a request uses: its space token's, else the admin's."""
    caller = request.scope.get("state", {}).get("memcli_caller")
    return f"token:{caller.token_id}" if hasattr(caller, "token_id") else "admin"


def check_types(d: dict[str, Any], what: str) -> None:
    """JSON types the service would otherwise coerce: tags are a list (``"x"`` is not ``["x"]``),
    keep_secrets is a boolean."""
    if d.get("tags") is not None and not isinstance(d["tags"], list):
        raise ValidationError(f"{what}: tags must be a list of strings, got {type(d['tags']).__name__}")
    if "keep_secrets" in d and not isinstance(d["keep_secrets"], bool):
        raise ValidationError(f"{what}: keep_secrets must be true or false")


def new_memory(data: Any, what: str = "the memory") -> "NewMemory":
    """A JSON object as a :class:`NewMemory` (unknown fields and wrongly typed values are a 422)."""
    from memcli.memory.service import NewMemory

    d = json_object(data, NEW_MEMORY_FIELDS, what)
    if "content" not in d:
        raise ValidationError(f"{what} has no content")
    if d.get("importance") is None:
        d = {**d, "importance": 0.5}
    check_types(d, what)
    if d.get("created_at") is not None and not is_int(d["created_at"]):
        raise ValidationError(f"{what}: created_at must be epoch milliseconds (an integer)")
    for name in ("key", "scope", "agent", "namespace", "project"):
        # checked here, before the write batcher groups items by these values (a dict is not a key)
        if d.get(name) is not None and not isinstance(d[name], str):
            raise ValidationError(f"{what}: {name} must be a string, got {type(d[name]).__name__}")
    return NewMemory(**d)


def id_namespace(request: Request, every: bool = True) -> dict[str, Any]:
    """The namespace an id route acts in: ``?namespace=`` (else the server's; a space token's is its space
    whatever it sends); ``?all_namespaces=true`` (reads only, ``every``) looks in every namespace."""
    q = request.query_params
    if every and bool_param(q, "all_namespaces"):
        if q.get("namespace"):
            raise ValidationError("give namespace or all_namespaces, not both")
        return {"all_namespaces": True}
    if not every and bool_param(q, "all_namespaces"):
        raise ValidationError("all_namespaces is for reads: a change names its memory's namespace")
    return {"namespace": q["namespace"]} if q.get("namespace") else {}


def memory_routes(call: Call, batcher: "WriteBatcher") -> list[BaseRoute]:
    """The memory routes; ``call(method, ...)`` runs a service method in the thread pool, ``batcher`` groups
    concurrent remembers into one commit."""
    keys = IdempotencyKeys()  # answers of the writes sent with an Idempotency-Key, per caller

    async def list_memories(request: Request) -> Response:
        q = request.query_params
        if q.get("q"):  # seed 002: GET /api/memories?q= searches, with the same filters
            return await search(request, default_limit=50)
        mems = await call("list", namespace=q.get("namespace"), all_namespaces=bool_param(q, "all_namespaces"),
                          scope=q.get("scope"), agent=q.get("agent"), tags=tags_param(q),
                          since=time_param(q, "since"), until=time_param(q, "until"), project=q.get("project"),
                          source=q.get("source"), include_expired=bool_param(q, "include_expired"),
                          limit=int_param(q, "limit", 50), offset=int_param(q, "offset", 0),
                          include_archived=bool_param(q, "include_archived"), key=q.get("key") or None)
        return JSONResponse([m.item() for m in mems])

    async def once(request: Request, data: Any, write: Callable[[], Awaitable[tuple[Any, int]]]) -> Response:
        """``write()`` → (JSON, status); with an ``Idempotency-Key``, done once: a retry gets the same answer
        (``Idempotent-Replayed: true``) and writes nothing."""
        key = request.headers.get("idempotency-key")
        if key is None:
            body, status = await write()
            return JSONResponse(body, status_code=status)
        owner, digest = owner_of(request), fingerprint([request.url.path, data])
        done, answer = keys.begin(owner, key, digest)
        if done:
            return JSONResponse(answer[0], status_code=answer[1], headers={"Idempotent-Replayed": "true"})
        try:
            body, status = await write()
        except BaseException:
            keys.abandon(owner, key)
            raise
        keys.finish(owner, key, (body, status))
        return JSONResponse(body, status_code=status)

    async def create_memory(request: Request) -> Response:
        data = await read_json(request, MAX_BODY)
        item = new_memory(data)

        async def write() -> tuple[Any, int]:
            # concurrent remembers into one namespace share a commit (memcli.server.batcher)
            res = await batcher.remember(item, request.scope.get("state", {}).get("memcli_caller") or "admin",
                                         write_source(request))
            return res.item(), 201 if res.created else 200
        return await once(request, data, write)

    async def create_batch(request: Request) -> Response:
        data = await read_json(request, MAX_BATCH_BODY)
        raw = data
        if isinstance(data, dict) and set(data) == {"memories"}:
            data = data["memories"]
        if not isinstance(data, list) or not data:
            raise ValidationError("send a non-empty JSON list of memories (or {\"memories\": [...]})")
        if len(data) > MAX_BATCH_ITEMS:
            raise ValidationError(f"at most {MAX_BATCH_ITEMS} memories per batch, got {len(data)}")
        items = []
        for i, d in enumerate(data):
            try:
                items.append(new_memory(d))
            except (TypeError, ValidationError) as exc:
                raise ValidationError(f"memory {i + 1}: {getattr(exc, 'message', exc)}") from None

        async def write() -> tuple[Any, int]:
            results = await call("remember_many", items, source="api")
            return ({"ok": True, "results": [r.item() for r in results]},
                    201 if any(r.created for r in results) else 200)
        return await once(request, raw, write)

    async def get_memory(request: Request) -> Response:
        mem = await call("get", request.path_params["memory_id"], **id_namespace(request))
        return JSONResponse(mem.item(), headers=etag(mem.version))

    async def patch_memory(request: Request) -> Response:
        d = json_object(await read_json(request, MAX_BODY), PATCH_FIELDS, "the update")
        check_types(d, "the update")
        if not set(d) - {"expected_version", "keep_secrets"}:
            raise ValidationError("nothing to change: give at least one of agent, content, importance, metadata, "
                                  "scope, tags, ttl")
        expected = if_match(request)
        if expected is None and d.get("expected_version") is not None:
            expected = d["expected_version"]
            if not is_int(expected):
                raise ValidationError("expected_version must be an integer (the version you read)")
        d = {k: v for k, v in d.items() if k != "expected_version"}
        mem = await call("update", request.path_params["memory_id"], expected_version=expected,
                         source=write_source(request), **id_namespace(request, every=False), **d)
        return JSONResponse(mem.item(), headers=etag(mem.version))

    async def put_memory(request: Request) -> Response:
        """Seed 002's ``PUT``: the memory as sent — content, and tags and metadata (absent: none) — replace
        what it holds; importance, scope and ttl change when sent. ``If-Match`` as for PATCH (without it the
        write simply wins)."""
        d = json_object(await read_json(request, MAX_BODY), PUT_FIELDS, "the memory")
        check_types(d, "the memory")
        if "content" not in d:
            raise ValidationError("a PUT sends the whole memory: content is missing (PATCH changes single fields)")
        expected = if_match(request)
        if expected is None and d.get("expected_version") is not None:
            expected = d["expected_version"]
            if not is_int(expected):
                raise ValidationError("expected_version must be an integer (the version you read)")
        ns = id_namespace(request, every=False)
        if d.get("key") is not None:
            current = await call("get", request.path_params["memory_id"], **ns)
            if d["key"] != current.key:
                raise ValidationError("a memory's key cannot be changed: remember the content under the new key "
                                      "(and forget this one)")
        d = {k: v for k, v in d.items() if k not in ("expected_version", "key")}
        d.setdefault("tags", [])
        if d.get("metadata") is None:
            d["metadata"] = {}
        mem = await call("update", request.path_params["memory_id"], expected_version=expected,
                         source=write_source(request), **ns, **d)
        return JSONResponse(mem.item(), headers=etag(mem.version))

    async def delete_memory(request: Request) -> Response:
        expected = if_match(request)  # a stale If-Match: 412, nothing deleted
        kw = {"expected_version": expected} if expected is not None else {}
        ids = await call("forget", request.path_params["memory_id"], source=write_source(request), **kw,
                         **id_namespace(request, every=False))
        return JSONResponse({"ok": True, "memory_id": ids[0]})

    async def memory_history(request: Request) -> Response:
        events = await call("history", request.path_params["memory_id"], **id_namespace(request))
        return JSONResponse([e.to_dict() for e in events])

    async def search(request: Request, mode: str = "hybrid", default_limit: int = 5) -> Response:
        q = request.query_params
        query = q.get("q") or q.get("query") or ""
        # `project` alone filters (the REST contract); project_only=false makes it a ranking boost only
        project_only = bool_param(q, "project_only") if "project_only" in q else bool(q.get("project"))
        limit, offset = search_window(q, default_limit)
        # the best offset + limit, then the page after the first offset (the ranking is the same either way)
        top_k = limit + offset if limit is not None and limit >= 1 else limit
        hits = await call("recall", query, top_k=top_k,
                          namespace=q.get("namespace"), scope=q.get("scope"), agent=q.get("agent"),
                          tags=tags_param(q), since=time_param(q, "since"), until=time_param(q, "until"),
                          project=q.get("project"), project_only=project_only,
                          include_expired=bool_param(q, "include_expired"), explain=bool_param(q, "explain"),
                          mode=mode if mode == "vector" else q.get("mode") or mode,
                          min_score=float_param(q, "min_score", 0.0),
                          include_archived=bool_param(q, "include_archived"), key=q.get("key") or None,
                          source=q.get("source") or None,
                          **({"as_of": time_param(q, "as_of")} if "as_of" in q or "as_of_ms" in q else {}))
        return JSONResponse([h.item() for h in hits[offset:]])

    async def check_duplicate(request: Request) -> Response:
        d = json_object(await read_json(request, MAX_BODY), {"content", "threshold", "namespace"}, "the check")
        if "content" not in d:
            raise ValidationError("the check has no content")
        threshold = d.get("threshold")
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))):
            raise ValidationError("threshold must be a number between 0 and 1")
        res = await call("check_duplicate", d["content"], namespace=d.get("namespace"), threshold=threshold)
        return JSONResponse(res.item())

    async def stats(request: Request) -> Response:
        return JSONResponse(await call("stats"))

    async def vector_search(request: Request) -> Response:
        return await search(request, mode="vector")

    return [
        Route("/api/memories", list_memories, methods=["GET"]),
        Route("/api/memories", create_memory, methods=["POST"]),
        Route("/api/memories/batch", create_batch, methods=["POST"]),
        Route("/api/memories/bulk", create_batch, methods=["POST"]),  # seed 002's name
        Route("/api/memories/{memory_id}", get_memory, methods=["GET"]),
        Route("/api/memories/{memory_id}", patch_memory, methods=["PATCH"]),
        Route("/api/memories/{memory_id}", put_memory, methods=["PUT"]),
        Route("/api/memories/{memory_id}", delete_memory, methods=["DELETE"]),
        Route("/api/memories/{memory_id}/history", memory_history, methods=["GET"]),
        Route("/api/search", search, methods=["GET"]),
        Route("/api/vector-search", vector_search, methods=["GET"]),
        Route("/api/check-duplicate", check_duplicate, methods=["POST"]),
        Route("/api/stats", stats, methods=["GET"]),
    ]
