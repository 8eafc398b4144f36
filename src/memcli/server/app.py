"""The HTTP face: one Starlette app with REST under ``/api``, MCP (Streamable HTTP) at ``/mcp``, the Claude
Code hook routes under ``/hooks`` and ``GET /health``.

The service is opened once (in the background at startup) and shared; every service call runs in the
thread pool and is tracked, so shutdown waits for writes in flight. Requests are guarded in one place
(:class:`Guard`): Host (when bound to loopback) and Origin validation, the bearer token (always: the
configured one, else the home's, see :mod:`memcli.home`), the home identity, and activity for the idle
timeout.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from memcli import __version__
from memcli.errors import MemcliError, ValidationError
from memcli.home import HomeAuth, load_or_create_auth
from memcli.models import parse_time_ms
from memcli.server.holder import ServiceHolder
from memcli.web.routes import is_public, web_routes
from memcli.web.sessions import UiAuth

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.server.team import TeamGate
    from memcli.service import MemoryService

log = logging.getLogger("memcli.server")

MAX_BODY = 1 << 20  # 1 MiB for one memory
MAX_BATCH_BODY = 10 << 20  # 10 MiB for a batch
MAX_BATCH_ITEMS = 1000
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
OPEN_PATHS = frozenset({"/health"})  # every other route needs the token (/api, /mcp, /hooks, and 404s too)
NEW_MEMORY_FIELDS = {"content", "tags", "scope", "agent", "importance", "key", "ttl", "metadata", "namespace",
                     "project", "created_at"}
PATCH_FIELDS = {"content", "tags", "importance", "scope", "agent", "metadata", "ttl", "expected_version"}


class ApiError(Exception):
    """An HTTP-level error (bad JSON, body too large...) rendered as the JSON error shape."""

    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


def error_response(status: int, message: str, code: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"ok": False, "error": message, "code": code}, status_code=status, headers=headers)


def _host_of(value: str) -> str:
    """The host part of a Host header (`127.0.0.1:8765`, `[::1]:80`, `localhost`)."""
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def origin_allowed(origin: str | None, extra: frozenset[str] = frozenset()) -> bool:
    """No Origin (not a browser), a loopback origin, or one configured explicitly."""
    if origin is None:
        return True
    if origin in extra:
        return True
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and (parts.hostname or "") in LOOPBACK_HOSTS


class Guard:
    """ASGI middleware: activity tracking, Host/Origin validation, the bearer token and the home identity.

    The token is compared in constant time and never logged. A request that names a home (``X-Memcli-Home``,
    sent by memcli's own clients) must name this server's: otherwise 421 ``wrong_home``, nothing read or
    written. ``/health`` is open; whether its caller proved the token is left in ``scope["state"]``.
    """

    def __init__(self, app: ASGIApp, *, token: str, home_id: str, check_host: bool,
                 extra_origins: frozenset[str], activity: "Activity", ui: "UiAuth | None" = None,
                 team: "TeamGate | None" = None) -> None:
        if not token:
            raise ValueError("the server needs a token")
        self.app = app
        self.token = token.encode("utf-8")  # what a client puts on the wire
        self.home_id = home_id
        self.check_host = check_host
        self.extra_origins = extra_origins
        self.activity = activity
        self.ui = ui  # the web view's browser sessions (memcli.web.sessions), when it is served
        self.team = team

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.activity.begin()
        try:
            refusal = self._check(scope)
            if self.team is not None:  # space tokens, rate and size limits (memcli.server.team)
                refusal = await self.team.admit(scope, refusal)
            if refusal is not None:
                await refusal(scope, receive, send)
            else:
                from memcli.server.team import ADMIN, CALLER

                state = scope.get("state", {})
                who = CALLER.set(ADMIN if state.get("memcli_authorized") else state.get("memcli_caller"))
                try:
                    await self.app(scope, receive, send)
                finally:
                    CALLER.reset(who)
        finally:
            self.activity.end()

    def _authorized(self, auth: str) -> bool:
        scheme, _, given = auth.partition(" ")
        # the header's own bytes (decoded as latin-1 above), compared in constant time whatever the guess
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode("latin-1"), self.token)

    def _check(self, scope: Scope) -> Response | None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]
                   if k in (b"host", b"origin", b"authorization", b"x-memcli-home", b"cookie", b"x-memcli-ui",
                            b"sec-fetch-site")}
        if self.check_host and _host_of(headers.get("host", "")).lower() not in LOOPBACK_HOSTS:
            return error_response(421, "invalid Host header: this server only answers on its loopback address",
                                  "invalid_host")
        origin = headers.get("origin")
        if not origin_allowed(origin, self.extra_origins):
            return error_response(403, f"origin {origin!r} is not allowed", "forbidden_origin")
        via = "token" if self._authorized(headers.get("authorization", "")) else \
            "session" if self.ui is not None and self.ui.authorized(headers, scope["path"]) else None
        authorized = via is not None
        scope.setdefault("state", {}).update(memcli_authorized=authorized, memcli_auth_via=via)
        if (scope["path"] in OPEN_PATHS or (self.ui is not None and is_public(scope["path"]))) and not authorized:
            return None  # /health answers, and says nothing
        if not authorized:
            return error_response(401, "missing or wrong bearer token (Authorization: Bearer <token>; the token "
                                  "is MEMCLI_TOKEN or the server's <home>/auth.json)", "unauthorized",
                                  {"WWW-Authenticate": "Bearer"})
        home = headers.get("x-memcli-home")
        if home is not None and home != self.home_id:
            return error_response(421, "this server belongs to another memcli home: nothing was read or written",
                                  "wrong_home")
        return None


class Activity:
    """Requests in flight and the time of the last one (the idle timeout)."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.last = time.monotonic()

    def begin(self) -> None:
        self.in_flight += 1
        self.last = time.monotonic()

    def end(self) -> None:
        self.in_flight -= 1
        self.last = time.monotonic()

    def idle_for(self) -> float:
        return 0.0 if self.in_flight else time.monotonic() - self.last


# ---------------------------------------------------------------------------------------------- helpers
async def read_json(request: Request, limit: int) -> Any:
    """The request body as JSON; 413 above ``limit`` bytes (checked while reading), 400 when broken."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"request body is larger than {limit:,} bytes", "payload_too_large")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, f"request body is larger than {limit:,} bytes", "payload_too_large")
    if not body.strip():
        raise ApiError(400, "the request body is empty: send a JSON object", "invalid_json")
    try:
        return json.loads(bytes(body).decode("utf-8"))
    except UnicodeDecodeError:
        raise ApiError(400, "the request body is not valid UTF-8", "invalid_json") from None
    except json.JSONDecodeError as exc:
        raise ApiError(400, f"the request body is not valid JSON: {exc.msg} (at character {exc.pos})",
                       "invalid_json") from None
    except RecursionError:
        raise ApiError(400, "the request body is nested too deeply", "invalid_json") from None


def _object(data: Any, allowed: set[str], what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValidationError(f"{what} must be a JSON object")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ValidationError(f"unknown field(s) in {what}: {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
    return data


def _new_memory(data: Any, what: str = "the memory") -> Any:
    from memcli.service import NewMemory

    d = _object(data, NEW_MEMORY_FIELDS, what)
    if "content" not in d:
        raise ValidationError(f"{what} has no content")
    if d.get("importance") is None:
        d = {**d, "importance": 0.5}
    if d.get("created_at") is not None and not _is_int(d["created_at"]):
        raise ValidationError(f"{what}: created_at must be epoch milliseconds (an integer)")
    for name in ("key", "scope", "agent", "namespace", "project"):
        # checked here, before the write batcher groups items by these values (a dict is not a key)
        if d.get(name) is not None and not isinstance(d[name], str):
            raise ValidationError(f"{what}: {name} must be a string, got {type(d[name]).__name__}")
    return NewMemory(**d)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(params: Any, name: str, default: int | None = None) -> int | None:
    value = params.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValidationError(f"{name} must be an integer, got {value!r}") from None


def _float(params: Any, name: str, default: float) -> float:
    value = params.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ValidationError(f"{name} must be a number, got {value!r}") from None


def _time(params: Any, name: str) -> int | None:
    """``since=2d`` / an ISO date / epoch ms, or ``since_ms=<any integer>``: exact epoch milliseconds (what
    memcli's own client sends: a short or negative number would read as a duration otherwise)."""
    exact = _int(params, f"{name}_ms")
    if exact is not None:
        return exact
    value = params.get(name)
    return parse_time_ms(value) if value else None


def _tags(params: Any) -> list[str] | None:
    """`tag=a&tag=b` and/or `tags=a,b`."""
    tags = list(params.getlist("tag"))
    for t in params.getlist("tags"):
        tags += [x for x in (s.strip() for s in t.split(",")) if x]
    return tags or None


def _bool(params: Any, name: str) -> bool:
    return str(params.get(name, "")).lower() in ("1", "true", "yes", "on")


def _if_match(request: Request) -> int | None:
    value = request.headers.get("if-match")
    if value is None:
        return None
    v = value.strip()
    if v.startswith("W/"):
        v = v[2:]
    v = v.strip('"')
    if v == "*":
        return None
    try:
        return int(v)
    except ValueError:
        raise ValidationError(f"If-Match must be a memory version (an integer), got {value!r}") from None


def _etag(version: int) -> dict[str, str]:
    return {"ETag": f'"{version}"'}


# ---------------------------------------------------------------------------------------------- the app
def create_app(config: "Config", service: "MemoryService | None" = None, *, host: str | None = None,
               idle_timeout: float | None = None, on_idle: Callable[[], None] | None = None,
               allowed_origins: list[str] | None = None, holder: ServiceHolder | None = None,
               auth: HomeAuth | None = None) -> Starlette:
    """The ASGI app of ``memcli serve``.

    ``service``: an open service to share (tests); by default one is opened from ``config`` at startup, in
    the background. ``idle_timeout`` (seconds, 0/None = never) calls ``on_idle`` after that long with no
    request in flight or arriving. ``auth``: the home's identity and token (default: read or created in
    ``config.home``); ``config.server.token`` (MEMCLI_TOKEN), when set, is the token instead.
    """
    holder = holder or ServiceHolder(config, service)
    host = host or config.server.host
    auth = auth or load_or_create_auth(config.home)
    token = config.server.token or auth.token
    activity = Activity()
    from memcli.server.team import TeamGate, admin_routes, transfer_routes

    team = TeamGate(holder, config)
    holder.scoper = team.scope  # a space token's calls go to its space only
    mcp = McpEndpoint(holder)
    ui = UiAuth(auth.home_id)
    from memcli.server.batcher import WriteBatcher

    batcher = WriteBatcher(holder)

    async def call(method: str, /, *args: Any, **kwargs: Any) -> Any:
        return await run_in_threadpool(holder.call, method, *args, **kwargs)

    # ------------------------------------------------------------------ handlers
    async def health(request: Request) -> Response:
        caller = request.scope.get("state", {}).get("memcli_caller")
        if caller is not None and not isinstance(caller, str):  # a space token: its space, not the home
            return JSONResponse({"ok": True, "version": __version__, "space_id": caller.space,
                                 "agent": caller.agent, "ready": holder.ready})
        if not request.scope.get("state", {}).get("memcli_authorized"):
            return JSONResponse({"ok": True})  # a liveness probe learns nothing about whose server this is
        return JSONResponse({"ok": True, "version": __version__, "pid": os.getpid(), "home": str(config.home),
                             "home_id": auth.home_id, "ready": holder.ready})

    async def list_memories(request: Request) -> Response:
        q = request.query_params
        mems = await call("list", namespace=q.get("namespace"), all_namespaces=_bool(q, "all_namespaces"),
                          scope=q.get("scope"), agent=q.get("agent"), tags=_tags(q), since=_time(q, "since"),
                          until=_time(q, "until"), project=q.get("project"), source=q.get("source"),
                          include_expired=_bool(q, "include_expired"), limit=_int(q, "limit", 50),
                          offset=_int(q, "offset", 0), include_archived=_bool(q, "include_archived"))
        return JSONResponse([m.item() for m in mems])

    async def create_memory(request: Request) -> Response:
        item = _new_memory(await read_json(request, MAX_BODY))
        # concurrent remembers into one namespace share a commit (memcli.server.batcher)
        res = await batcher.remember(item, request.scope.get("state", {}).get("memcli_caller") or "admin")
        return JSONResponse(res.item(), status_code=201 if res.created else 200)

    async def create_batch(request: Request) -> Response:
        data = await read_json(request, MAX_BATCH_BODY)
        if isinstance(data, dict) and set(data) == {"memories"}:
            data = data["memories"]
        if not isinstance(data, list) or not data:
            raise ValidationError("send a non-empty JSON list of memories (or {\"memories\": [...]})")
        if len(data) > MAX_BATCH_ITEMS:
            raise ValidationError(f"at most {MAX_BATCH_ITEMS} memories per batch, got {len(data)}")
        items = []
        for i, d in enumerate(data):
            try:
                items.append(_new_memory(d))
            except (TypeError, ValidationError) as exc:
                raise ValidationError(f"memory {i + 1}: {getattr(exc, 'message', exc)}") from None
        results = await call("remember_many", items, source="api")
        return JSONResponse({"ok": True, "results": [r.item() for r in results]},
                            status_code=201 if any(r.created for r in results) else 200)

    async def get_memory(request: Request) -> Response:
        mem = await call("get", request.path_params["memory_id"])
        return JSONResponse(mem.item(), headers=_etag(mem.version))

    async def patch_memory(request: Request) -> Response:
        d = _object(await read_json(request, MAX_BODY), PATCH_FIELDS, "the update")
        expected = _if_match(request)
        if expected is None and d.get("expected_version") is not None:
            expected = d["expected_version"]
            if not _is_int(expected):
                raise ValidationError("expected_version must be an integer (the version you read)")
        d = {k: v for k, v in d.items() if k != "expected_version"}
        mem = await call("update", request.path_params["memory_id"], expected_version=expected, source="api", **d)
        return JSONResponse(mem.item(), headers=_etag(mem.version))

    async def delete_memory(request: Request) -> Response:
        expected = _if_match(request)  # a stale If-Match: 412, nothing deleted
        kw = {"expected_version": expected} if expected is not None else {}
        ids = await call("forget", request.path_params["memory_id"], source="api", **kw)
        return JSONResponse({"ok": True, "memory_id": ids[0]})

    async def memory_history(request: Request) -> Response:
        events = await call("history", request.path_params["memory_id"])
        return JSONResponse([e.to_dict() for e in events])

    async def search(request: Request, mode: str = "hybrid") -> Response:
        q = request.query_params
        query = q.get("q") or q.get("query") or ""
        # `project` alone filters (the REST contract); project_only=false makes it a ranking boost only
        project_only = _bool(q, "project_only") if "project_only" in q else bool(q.get("project"))
        hits = await call("recall", query, top_k=_int(q, "limit", None) or _int(q, "top_k", 5),
                          namespace=q.get("namespace"), scope=q.get("scope"), agent=q.get("agent"), tags=_tags(q),
                          since=_time(q, "since"), until=_time(q, "until"), project=q.get("project"),
                          project_only=project_only, include_expired=_bool(q, "include_expired"),
                          explain=_bool(q, "explain"), mode=mode if mode == "vector" else q.get("mode") or mode,
                          min_score=_float(q, "min_score", 0.0), include_archived=_bool(q, "include_archived"))
        return JSONResponse([h.item() for h in hits])

    async def check_duplicate(request: Request) -> Response:
        d = _object(await read_json(request, MAX_BODY), {"content", "threshold", "namespace"}, "the check")
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

    routes: list[BaseRoute] = [
        Route("/health", health, methods=["GET"]),
        Route("/api/memories", list_memories, methods=["GET"]),
        Route("/api/memories", create_memory, methods=["POST"]),
        Route("/api/memories/batch", create_batch, methods=["POST"]),
        Route("/api/memories/{memory_id}", get_memory, methods=["GET"]),
        Route("/api/memories/{memory_id}", patch_memory, methods=["PATCH"]),
        Route("/api/memories/{memory_id}", delete_memory, methods=["DELETE"]),
        Route("/api/memories/{memory_id}/history", memory_history, methods=["GET"]),
        Route("/api/search", search, methods=["GET"]),
        Route("/api/vector-search", vector_search, methods=["GET"]),
        Route("/api/check-duplicate", check_duplicate, methods=["POST"]),
        Route("/api/stats", stats, methods=["GET"]),
    ]
    routes += web_routes(call, ui)
    from memcli.server.distill_routes import distill_routes

    routes += distill_routes(call, config)
    from memcli.server.board_routes import board_routes

    routes += board_routes(holder)
    routes += admin_routes(team, read_json, MAX_BODY)
    routes += transfer_routes(holder, read_json, MAX_BATCH_BODY, MAX_BATCH_ITEMS)
    hooks = _hook_routes(holder, config)
    for r in hooks:  # a turn queued by a space token is captured into that space, whichever thread runs it
        r.runtime.whoami, r.runtime.acting_as = team.whoami, team.acting_as  # type: ignore[attr-defined]
    routes += hooks
    routes.append(Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]))

    # ------------------------------------------------------------------ errors
    async def on_memcli_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, MemcliError)
        current = getattr(exc, "current_version", None)
        if current is not None:  # a stale If-Match/expected_version: say which version to re-read from
            return JSONResponse({"ok": False, "error": exc.message, "code": exc.code, "current_version": current},
                                status_code=exc.http_status, headers=_etag(current))
        return error_response(exc.http_status, exc.message, exc.code)

    async def on_api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return error_response(exc.status, exc.message, exc.code)

    async def on_http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            return error_response(404, f"no such route: {request.method} {request.url.path}", "not_found")
        if exc.status_code == 405:
            return error_response(405, f"method {request.method} is not allowed on {request.url.path}",
                                  "method_not_allowed", dict(exc.headers or {}))
        return error_response(exc.status_code, str(exc.detail), "http_error", dict(exc.headers or {}))

    async def on_crash(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, f"internal error: {type(exc).__name__}: {exc}", "internal_error")

    # ------------------------------------------------------------------ lifecycle
    async def watch_idle() -> None:
        assert idle_timeout and on_idle
        while True:
            await anyio.sleep(min(1.0, idle_timeout / 4))
            if activity.idle_for() >= idle_timeout and holder.busy == 0:
                log.info("idle for %.0fs: shutting down", idle_timeout)
                on_idle()
                return

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        holder.warm()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(mcp.serve)
                if idle_timeout and on_idle:
                    tg.start_soon(watch_idle)
                yield
                tg.cancel_scope.cancel()
        finally:
            # uvicorn has stopped taking requests; let the writes in flight finish, then close the store.
            await anyio.to_thread.run_sync(holder.close)

    from starlette.middleware import Middleware

    app = Starlette(
        routes=routes,
        middleware=[Middleware(Guard, token=token, home_id=auth.home_id, check_host=host in LOOPBACK_HOSTS,
                               extra_origins=frozenset(allowed_origins or ()), activity=activity, ui=ui,
                               team=team)],
        exception_handlers={MemcliError: on_memcli_error, ApiError: on_api_error, HTTPException: on_http_error,
                            Exception: on_crash},
        lifespan=lifespan,
    )
    app.state.holder = holder
    app.state.activity = activity
    app.state.mcp = mcp
    return app


class McpEndpoint:
    """``/mcp``: the SDK's Streamable HTTP transport, built in the background at startup.

    Importing the MCP SDK costs ~0.8 s; ``/health`` and ``/api`` answer while it loads, and an MCP request
    that arrives first waits for it. The session manager runs for the life of the app (its lifespan task).
    """

    def __init__(self, holder: ServiceHolder) -> None:
        self.holder = holder
        self.handler: ASGIApp | None = None
        # space tokens get a stateless endpoint: each request runs in its own context (its caller's), and no
        # session outlives the request to be reused with another token
        self.space_handler: ASGIApp | None = None
        self.error: str | None = None
        self._ready: anyio.Event | None = None

    def _event(self) -> anyio.Event:
        if self._ready is None:
            self._ready = anyio.Event()
        return self._ready

    def _build(self, stateless: bool = False) -> tuple[Any, ASGIApp]:
        from mcp.server.transport_security import TransportSecuritySettings

        from memcli.mcp.server import build_server

        server = build_server(self.holder)
        # Origin/Host validation is Guard's, for every route alike.
        app = server.streamable_http_app(
            streamable_http_path="/mcp", json_response=True, stateless_http=stateless,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        return server, app

    async def serve(self) -> None:
        ready = self._event()
        try:
            server, app = await anyio.to_thread.run_sync(self._build)
            space_server, space_app = await anyio.to_thread.run_sync(self._build, True)
            async with server.session_manager.run(), space_server.session_manager.run():
                self.handler, self.space_handler = app, space_app
                ready.set()
                await anyio.sleep_forever()
        except Exception as exc:  # noqa: BLE001 - REST keeps working; /mcp reports it
            log.exception("the MCP endpoint could not start")
            self.error = f"the MCP endpoint could not start: {type(exc).__name__}: {exc}"
            ready.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._event().wait()
        if self.handler is None:
            await error_response(503, self.error or "the MCP endpoint is not running", "unavailable")(
                scope, receive, send)
            return
        caller = scope.get("state", {}).get("memcli_caller")
        if caller is not None and not isinstance(caller, str) and self.space_handler is not None:
            await self.space_handler(scope, receive, send)
            return
        await self.handler(scope, receive, send)


def _hook_routes(holder: ServiceHolder, config: "Config") -> list[BaseRoute]:
    """The Claude Code hook routes (``memcli.hooks.routes``), when that package provides them."""
    try:
        from memcli.hooks.routes import hook_routes
    except ModuleNotFoundError as exc:
        if exc.name not in ("memcli.hooks.routes", "memcli.hooks"):
            raise
        return []
    return list(hook_routes(holder.get, config))
