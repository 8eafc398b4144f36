"""The HTTP face: one Starlette app with REST under ``/api``, MCP (Streamable HTTP) at ``/mcp`` and legacy SSE
at ``/sse`` and ``/mcp/sse``, the Claude Code hook routes under ``/hooks``, the web view and ``GET /health``.

This module only composes: the routes live in their own modules (:mod:`memory_routes`, :mod:`board_routes`,
:mod:`distill_routes`, :mod:`team`, :mod:`memcli.web.routes`, :mod:`memcli.hooks.routes`), the request guard in
:mod:`guard`, the MCP endpoint in :mod:`mcp_endpoint` and the shared request helpers in :mod:`http`.
The service is opened once (in the background at startup) and shared; every service call runs in the
thread pool and is tracked, so shutdown waits for writes in flight.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from memcli import __version__
from memcli.distill.service import DistillService
from memcli.errors import MemcliError
from memcli.home import HomeAuth, load_or_create_auth
from memcli.server.batcher import WriteBatcher
from memcli.server.board_routes import board_routes
from memcli.server.distill_routes import distill_routes
from memcli.server.guard import LOOPBACK_HOSTS, Activity, Guard
from memcli.server.holder import ServiceHolder
from memcli.server.http import ApiError, error_response, etag
from memcli.server.mcp_endpoint import McpEndpoint, sse_routes
from memcli.server.memory_routes import memory_routes
from memcli.server.team import CALLER, TeamGate, admin_routes, transfer_routes
from memcli.web.routes import web_routes
from memcli.web.sessions import UiAuth

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.memory.service import MemoryService

__all__ = ["LOOPBACK_HOSTS", "create_app"]

log = logging.getLogger("memcli.server")


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
    team = TeamGate(holder, config)
    holder.scoper = team.scope  # a space token's calls go to its space only
    # concurrent remembers (REST, /mcp, the CLI through this server) share commits; a caller not named is the
    # one the Guard set for the request (team mode: a space's token)
    batcher = WriteBatcher(holder, current_caller=lambda: CALLER.get(None) or "admin")
    mcp = McpEndpoint(holder, batcher)
    ui = UiAuth(auth.home_id)

    async def call(method: str, /, *args: Any, **kwargs: Any) -> Any:
        return await run_in_threadpool(holder.call, method, *args, **kwargs)

    # ------------------------------------------------------------------ handlers
    async def health(request: Request) -> Response:
        caller = request.scope.get("state", {}).get("memcli_caller")
        if caller is not None and not isinstance(caller, str):  # a space token: its space, not the home
            return JSONResponse({"ok": True, "version": __version__, "space_id": caller.space,
                                 "agent": caller.agent, "ready": holder.ready})
        proof = request.scope.get("state", {}).get("memcli_proof")
        if not request.scope.get("state", {}).get("memcli_authorized"):
            # a liveness probe learns nothing about whose server this is; a challenge gets its proof
            return JSONResponse({"ok": True, "proof": proof, "pid": os.getpid()} if proof else {"ok": True})
        return JSONResponse({"ok": True, "version": __version__, "pid": os.getpid(), "home": str(config.home),
                             "home_id": auth.home_id, "ready": holder.ready})

    async def distill(method: str, /, *args: Any, **kwargs: Any) -> Any:
        def run(svc: Any) -> Any:
            return getattr(DistillService(svc), method)(*args, **kwargs)

        return await run_in_threadpool(holder.call_with, run)

    routes: list[BaseRoute] = [Route("/health", health, methods=["GET"])]
    routes += memory_routes(call, batcher)
    routes += web_routes(call, ui)
    routes += distill_routes(distill, config)
    routes += board_routes(holder)
    routes += admin_routes(team)
    routes += transfer_routes(holder)
    hooks = _hook_routes(holder, config)
    for r in hooks:  # a turn queued by a space token is captured into that space, whichever thread runs it
        r.runtime.whoami, r.runtime.acting_as = team.whoami, team.acting_as  # type: ignore[attr-defined]
    routes += hooks
    routes.append(Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]))
    routes += sse_routes(mcp)  # the legacy SSE transport, for clients that speak only it

    # ------------------------------------------------------------------ errors
    async def on_memcli_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, MemcliError)
        current = getattr(exc, "current_version", None)
        if current is not None:  # a stale If-Match/expected_version: say which version to re-read from
            return JSONResponse({"ok": False, "error": exc.message, "code": exc.code, "current_version": current},
                                status_code=exc.http_status, headers=etag(current))
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
                # the idle countdown starts now: starting up (imports, on a busy machine seconds) is not idling,
                # and a server that stopped before its first request could be answered helped nobody
                activity.last = time.monotonic()
                yield
                tg.cancel_scope.cancel()
        finally:
            # uvicorn has stopped taking requests; let the writes in flight and the background threads finish,
            # then close the store (what could not be joined is ended with the process: memcli.server.run)
            await anyio.to_thread.run_sync(holder.shutdown)

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


def _hook_routes(holder: ServiceHolder, config: "Config") -> list[BaseRoute]:
    """The Claude Code hook routes (``memcli.hooks.routes``), when that package provides them."""
    try:
        from memcli.hooks.routes import hook_routes
    except ModuleNotFoundError as exc:
        if exc.name not in ("memcli.hooks.routes", "memcli.hooks"):
            raise
        return []
    return list(hook_routes(holder.get, config, workers=holder.workers))
