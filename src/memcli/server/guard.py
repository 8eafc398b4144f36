"""The request guard of ``memcli serve`` (ASGI middleware): Host (when bound to loopback) and Origin
validation, the bearer token (the configured one, else the home's, see :mod:`memcli.home`), the home
identity, the web view's browser sessions, team spaces' tokens and limits, and activity for the idle timeout.
"""

from __future__ import annotations

import hmac
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from memcli.proof import server_proof, valid_nonce
from memcli.server.http import error_response
from memcli.web.routes import is_public

if TYPE_CHECKING:
    from memcli.server.team import TeamGate
    from memcli.web.sessions import UiAuth

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
OPEN_PATHS = frozenset({"/health"})  # every other route needs the token (/api, /mcp, /hooks, and 404s too)


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
                            b"sec-fetch-site", b"x-memcli-challenge")}
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
        nonce = headers.get("x-memcli-challenge")
        if scope["path"] == "/health" and nonce is not None and valid_nonce(nonce):
            # a client proving whose server this is before it sends its token (memcli.proof); the port is the
            # one this request arrived on, so a squatter relaying the challenge from another port gains nothing
            port = (scope.get("server") or ("", 0))[1] or 0
            scope["state"]["memcli_proof"] = server_proof(self.token.decode("utf-8"), nonce, int(port))
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
