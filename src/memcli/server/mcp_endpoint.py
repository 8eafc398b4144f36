"""MCP in ``memcli serve``: the SDK's Streamable HTTP transport at ``/mcp`` and its legacy SSE transport at
``/sse`` (messages to ``/messages/``) and ``/mcp/sse`` (messages to ``/mcp/message``), one server built in the
background for all of them, behind the same guard (token, Host, Origin) and body limit."""

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
        self.server: Any = None  # the MCPServer the SSE sessions run on
        self.error: str | None = None
        self._ready: anyio.Event | None = None
        # the legacy SSE transports (the SDK's), by the path their messages are posted to
        self.sse: dict[str, Any] = {}

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
                from mcp.server.sse import SseServerTransport

                self.sse = {path: SseServerTransport(path, max_request_body_size=MAX_MCP_BODY)
                            for path in SSE_PATHS.values()}
                self.server, self.handler, self.space_handler = server, app, space_app
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



# ---------------------------------------------------------------------------------------------- legacy SSE
SSE_PATHS = {"/sse": "/messages/", "/mcp/sse": "/mcp/message"}  # the stream → where its messages are posted
CAMEL = ("/mcp/message",)  # told and taking ``sessionId=`` (the SDK's is ``session_id=``), as its clients expect


def _owner(scope: Scope) -> Any:
    """The caller a session belongs to, as the SDK's transport compares them: messages to a session must come
    with the token that opened it (another space's token finds no such session)."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    caller = scope.get("state", {}).get("memcli_caller")
    who = caller if isinstance(caller, str) else f"space:{caller.space}:{caller.token_id}"
    return AuthenticatedUser(AccessToken(token="-", client_id=str(who), scopes=[]))


class SseStream:
    """``GET /sse`` and ``GET /mcp/sse``: an SSE stream whose first event (``endpoint``) says where to post."""

    def __init__(self, mcp: McpEndpoint, path: str) -> None:
        self.mcp, self.post_path = mcp, SSE_PATHS[path]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.mcp._event().wait()  # noqa: SLF001
        transport = self.mcp.sse.get(self.post_path)
        if transport is None or self.mcp.server is None:
            await error_response(503, self.mcp.error or "the MCP endpoint is not running", "unavailable")(
                scope, receive, send)
            return
        scope["user"] = _owner(scope)
        agent = _query(scope).get("agent")  # the client entry's agent (memcli.mcp.callers): its posts say it too
        if self.post_path in CAMEL or agent:
            send = _endpoint_event(send, self.post_path in CAMEL, agent)
        low = self.mcp.server._lowlevel_server  # noqa: SLF001 - what the SDK's own sse_app runs
        try:
            async with transport.connect_sse(scope, receive, send) as (read_stream, write_stream):
                await low.run(read_stream, write_stream, low.create_initialization_options())
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:  # noqa: BLE001 - a client gone mid-stream: nothing to answer
            log.debug("an SSE session ended with an error", exc_info=True)


class SseMessages:
    """``POST /messages/?session_id=…`` and ``POST /mcp/message?sessionId=…``: one message of a session."""

    def __init__(self, mcp: McpEndpoint, path: str) -> None:
        self.mcp, self.path = mcp, path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.mcp._event().wait()  # noqa: SLF001
        transport = self.mcp.sse.get(self.path)
        if transport is None:
            await error_response(503, self.mcp.error or "the MCP endpoint is not running", "unavailable")(
                scope, receive, send)
            return
        limited = await within_limit(scope, receive, MAX_MCP_BODY)
        if limited is None:
            await error_response(413, f"request body is larger than {MAX_MCP_BODY:,} bytes",
                                 "payload_too_large")(scope, receive, send)
            return
        scope["user"] = _owner(scope)
        if self.path in CAMEL:
            from urllib.parse import parse_qsl, urlencode

            query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
            scope["query_string"] = urlencode([("session_id" if k == "sessionId" else k, v)
                                               for k, v in query]).encode("latin-1")
        await transport.handle_post_message(scope, limited, send)


def _query(scope: Scope) -> dict[str, str]:
    from urllib.parse import parse_qsl

    return dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))


def _endpoint_event(send: Send, camel: bool, agent: str | None) -> Send:
    """``send`` that rewrites the stream's first (``endpoint``) event: ``?sessionId=`` instead of the SDK's
    ``?session_id=`` (``camel``), and the stream's ``agent`` carried on to the message URL."""
    from urllib.parse import quote

    told = False

    async def wrapped(message: Message) -> None:
        nonlocal told
        body = message.get("body", b"")
        if not told and message["type"] == "http.response.body" and b"event: endpoint" in body:
            if camel:
                body = body.replace(b"?session_id=", b"?sessionId=", 1)
            if agent:
                head, sep, rest = body.partition(b"data: ")
                line, nl, tail = rest.partition(b"\r\n") if b"\r\n" in rest else rest.partition(b"\n")
                body = head + sep + line + b"&agent=" + quote(agent, safe="").encode() + nl + tail
            message = {**message, "body": body}
            told = True
        await send(message)
    return wrapped


def sse_routes(mcp: McpEndpoint) -> list[Any]:
    from starlette.routing import Route

    routes = []
    for stream, post in SSE_PATHS.items():
        routes.append(Route(stream, SseStream(mcp, stream), methods=["GET"]))
        routes.append(Route(post, SseMessages(mcp, post), methods=["POST"]))
    return routes
