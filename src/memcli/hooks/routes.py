"""Starlette routes for the hooks, mounted by ``memcli serve``: ``POST /hooks/{event}``.

``SessionStart`` and ``UserPromptSubmit`` answer ``200`` with ``{"hookSpecificOutput": …}`` or ``204``
(nothing to inject); ``Stop`` queues the turn and answers ``202`` at once, the capture runs after the
answer; ``SessionEnd`` answers ``204``. Bad JSON → ``400``. Errors never reach the agent: they are logged
and answered ``204``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from memcli.hooks.runtime import EVENTS, HookRuntime

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.server.workers import Workers
    from memcli.service import MemoryService

MAX_BODY = 16 * 1024 * 1024


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
        # both counted as tasks: uvicorn's graceful wait gives up on a request, the server's shutdown does not
        out = await run_in_threadpool(runtime.workers.run, f"memcli-hooks-{event}", runtime.handle, event, payload)
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
