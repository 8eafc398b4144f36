"""The web view's routes: the page itself (``/``, ``/static/…``, no token needed: it holds no data), how the
page signs in (``/api/ui/…``, see :mod:`memcli.web.sessions`), and two read endpoints for its sidebar and
chart (``/api/stats/scopes``, ``/api/stats/daily``; the counting is the service's).

Everything else the page shows comes from the REST API every client uses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from memcli.errors import ValidationError
from memcli.server.http import error_response, int_param, read_json
from memcli.web.sessions import UiAuth

Call = Callable[..., Awaitable[Any]]
PUBLIC_PATHS = frozenset({"/", "/api/ui/login", "/api/ui/logout"})
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}
# Scripts and styles only from this server's own files: even if some memory text slipped into the page as
# markup, no inline script or event handler in it would run.
SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the login code must never leave in a Referer header
    "X-Frame-Options": "DENY",
}
MAX_LOGIN_BODY = 4096


def is_public(path: str) -> bool:
    """Paths served without the token: the page and its files, and the login exchange."""
    return path in PUBLIC_PATHS or (path.startswith("/static/") and ".." not in path and path.count("/") == 2)


def static_files() -> dict[str, tuple[bytes, str]]:
    """The shipped static files, read once: name → (bytes, content type)."""
    out: dict[str, tuple[bytes, str]] = {}
    for entry in resources.files("memcli.web").joinpath("static").iterdir():
        name = entry.name
        ext = name[name.rfind("."):] if "." in name else ""
        if entry.is_file() and ext in TYPES:
            out[name] = (entry.read_bytes(), TYPES[ext])
    return out


def web_routes(call: Call, ui: UiAuth) -> list[BaseRoute]:
    """The routes, given the app's service caller and its :class:`UiAuth`."""
    files = static_files()

    def _file(name: str, cache: str) -> Response:
        body, ctype = files[name]
        return Response(body, media_type=ctype, headers={**SECURITY_HEADERS, "Cache-Control": cache})

    async def index(request: Request) -> Response:
        if "index.html" not in files:
            return error_response(500, "the web view's files are missing from this installation", "internal_error")
        return _file("index.html", "no-store")  # the address may hold a login code

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in files:
            return error_response(404, f"no such file: /static/{name}", "not_found")
        return _file(name, "no-cache")

    async def mint_code(request: Request) -> Response:
        # Only the home's token may mint a code: a browser session must not be able to mint more.
        if request.scope.get("state", {}).get("memcli_auth_via") != "token":
            return error_response(403, "login codes are minted with the server's bearer token (memcli ui)",
                                  "forbidden")
        code, until = ui.mint_code()
        return JSONResponse({"ok": True, "code": code, "expires_at": int(until * 1000)},
                            headers={"Cache-Control": "no-store"})

    async def login(request: Request) -> Response:
        if not ui.from_page(request.headers):
            return error_response(403, "sign in from the memcli web page (it sends X-Memcli-UI: 1)", "forbidden")
        data = await read_json(request, MAX_LOGIN_BODY)
        code = data.get("code") if isinstance(data, dict) else None
        if not isinstance(code, str) or not code:
            raise ValidationError('send {"code": "<the login code from memcli ui>"}')
        session = ui.login(code)
        if session is None:
            return error_response(401, "this login link is invalid, expired or already used: run `memcli ui` "
                                  "again for a new one", "invalid_code")
        secret, until = session
        return JSONResponse({"ok": True, "expires_at": int(until * 1000)},
                            headers={"Set-Cookie": ui.set_cookie(secret), "Cache-Control": "no-store"})

    async def logout(request: Request) -> Response:
        ui.logout(request.headers)
        return JSONResponse({"ok": True}, headers={"Set-Cookie": ui.clear_cookie()})

    async def scopes(request: Request) -> Response:
        return JSONResponse(await call("scope_counts"))

    async def daily(request: Request) -> Response:
        q = request.query_params
        ns = q.get("namespace") or None
        return JSONResponse(await call("daily_counts", days=int_param(request.query_params, "days", 30), namespace=ns,
                                       all_namespaces=q.get("all_namespaces") in ("1", "true"),
                                       tz_offset_minutes=int_param(request.query_params, "tz_offset", 0)))

    return [
        Route("/", index, methods=["GET"]),
        Route("/static/{name}", static, methods=["GET"]),
        Route("/api/ui/codes", mint_code, methods=["POST"]),
        Route("/api/ui/login", login, methods=["POST"]),
        Route("/api/ui/logout", logout, methods=["POST"]),
        Route("/api/stats/scopes", scopes, methods=["GET"]),
        Route("/api/stats/daily", daily, methods=["GET"]),
    ]
