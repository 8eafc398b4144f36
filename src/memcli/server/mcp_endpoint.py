"""``/mcp`` of ``memcli serve``: the MCP SDK's Streamable HTTP transport, built in the background."""

from __future__ import annotations

import logging
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memcli.server.batcher import WriteBatcher
from memcli.server.holder import ServiceHolder
from memcli.server.http import error_response

log = logging.getLogger("memcli.server")
MAX_MCP_BODY = 1 << 20  # one JSON-RPC message: a memory is at most 32,000 characters (≤ 128 KB of UTF-8)


async def within_limit(scope: Scope, receive: Receive, limit: int) -> Receive | None:
    """A ``receive`` that replays the request body once it is read whole, or None when the body is larger
    than ``limit`` bytes (declared or sent)."""
    declared = dict(scope.get("headers") or []).get(b"content-length", b"")
    if declared.isdigit() and int(declared) > limit:
        return None
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        if size > limit:
            return None
        if not message.get("more_body"):
            break

    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()
    return replay


class McpEndpoint:
    """``/mcp``: the SDK's Streamable HTTP transport, built in the background at startup.

    Importing the MCP SDK costs ~0.8 s; ``/health`` and ``/api`` answer while it loads, and an MCP request
    that arrives first waits for it. The session manager runs for the life of the app (its lifespan task).
    """

    def __init__(self, holder: ServiceHolder, batcher: "WriteBatcher | None" = None) -> None:
        self.holder = holder
        self.batcher = batcher  # the server's group commit, shared with REST
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

        server = build_server(self.holder, batcher=self.batcher)
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
        if scope.get("method") == "POST":
            limited = await within_limit(scope, receive, MAX_MCP_BODY)
            if limited is None:
                await error_response(413, f"request body is larger than {MAX_MCP_BODY:,} bytes",
                                     "payload_too_large")(scope, receive, send)
                return
            receive = limited
        caller = scope.get("state", {}).get("memcli_caller")
        if caller is not None and not isinstance(caller, str) and self.space_handler is not None:
            await self.space_handler(scope, receive, send)
            return
        await self.handler(scope, receive, send)

