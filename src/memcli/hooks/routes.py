"""Starlette routes for the hooks, mounted by ``memcli serve``: ``POST /hooks/{event}``.

``SessionStart`` and ``UserPromptSubmit`` answer ``200`` with ``{"hookSpecificOutput": …}`` or ``204``
(nothing to inject); ``Stop`` queues the turn (on disk, fsync'd) and answers ``202``, the capture runs after
the answer; a turn the spool cannot take (a full or read-only disk) is ``507`` / ``503``, logged, so that the
client keeps it. ``SessionEnd`` answers ``204``. Bad JSON → ``400``. Other errors never reach the agent: they
are logged and answered ``204``.

Only this home's own hook client may name a path the server opens (``transcript_path``) or a directory it
resolves (``cwd``): a request with the home's token, its home id (``X-Memcli-Home``, checked by the Guard)
and from a loopback address. Anyone else — a space token, the admin token from another machine — names
its ``project`` and sends the turn's text (``prompt``, ``last_assistant_message``, ``transcript_prompt``).
"""

from __future__ import annotations

import errno
import functools
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from memcli.hooks.runtime import EVENTS, HookRuntime, NotQueued

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.memory.service import MemoryService
    from memcli.server.workers import Workers

MAX_BODY = 16 * 1024 * 1024
LOOPBACK_PEERS = frozenset({"127.0.0.1", "::1", "::ffff:127.0.0.1"})
_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
log = logging.getLogger("memcli.server")


def from_own_client(request: Request, runtime: HookRuntime) -> bool:
    """Is this this home's own hook client, on this machine? The home's token (no space caller), the home's
    id (the Guard refuses another one) and a loopback peer."""
    state = request.scope.get("state", {})
    if runtime.whoami() is not None or state.get("memcli_auth_via", "token") != "token":
        return False
    peer = (request.scope.get("client") or ("", 0))[0]
    return "x-memcli-home" in request.headers and peer in LOOPBACK_PEERS


def not_queued(exc: NotQueued) -> Response:
    """The answer to a Stop turn the spool could not take: the client keeps it and sends it again."""
    log.error("hooks: a Stop turn could not be queued (%s): answered without acknowledging it", exc)
    if exc.error.errno in _FULL:
        return JSONResponse({"ok": False, "error": "the server's disk is full: the turn was not queued",
                             "code": "insufficient_storage"}, status_code=507)
    return JSONResponse({"ok": False, "error": "the server cannot queue the turn now", "code": "unavailable"},
                        status_code=503, headers={"Retry-After": "5"})


def hook_routes(get_service: Callable[[], "MemoryService"], config: "Config", *,
                warm: bool = True, workers: "Workers | None" = None) -> list[BaseRoute]:
    """The hook endpoints. When turns are queued (the server was down), a background thread stores them.
    ``workers``: the server's (its shutdown stops and joins every thread of the hooks' work)."""
    runtime = HookRuntime(get_service, config, workers)
    if warm and runtime.spool.pending():
        runtime.workers.start(runtime.warm_up, name="memcli-hooks-spool")

    async def hook(request: Request) -> Response:
        event = request.path_params["event"]
        if event not in EVENTS:
            return JSONResponse({"ok": False, "error": f"unknown hook event {event!r}", "code": "not_found"},
                                status_code=404)
        body = await request.body()
        if len(body) > MAX_BODY:
            return JSONResponse({"ok": False, "error": "payload too large", "code": "too_large"}, status_code=413)
        try:
            payload = json.loads(body.decode("utf-8"))
            if not isinstance(payload, dict):
                raise ValueError("not an object")
        except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested too deeply
            runtime.log(f"{event}: the request body is not a JSON object")
            return JSONResponse({"ok": False, "error": "the body must be a JSON object", "code": "invalid_input"},
                                status_code=400)
        local = from_own_client(request, runtime)
        # both counted as tasks: uvicorn's graceful wait gives up on a request, the server's shutdown does not
        try:
            out = await run_in_threadpool(runtime.workers.run, f"memcli-hooks-{event}",
                                          functools.partial(runtime.handle, local=local, strict=True), event, payload)
        except NotQueued as exc:
            return not_queued(exc)
        drain = BackgroundTask(run_in_threadpool, runtime.workers.run, "memcli-hooks-spool",
                               runtime._safe_drain) if runtime.spool.pending() else None
        if event == "Stop":
            return Response(status_code=202, background=drain)
        if out is None:
            return Response(status_code=204, background=drain)
        return JSONResponse(out, background=drain)

    route = Route("/hooks/{event}", hook, methods=["POST"], name="hooks")
    route.runtime = runtime  # type: ignore[attr-defined]  (tests and the server can reach it)
    return [route]
