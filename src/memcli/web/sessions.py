"""How the web view signs in: one-time login codes and browser sessions, held in the server's memory.

``memcli ui`` proves the home's bearer token to the server and gets a **login code** (random, 2 minutes,
single use) that it opens in the browser as ``/?code=…``. The page removes the code from the address bar
and exchanges it (``POST /api/ui/login``) for a **session**: a new random secret in an HttpOnly,
SameSite=Strict cookie, valid 12 hours or until the server stops. The home's long-lived token never
reaches the browser — not in a URL, not in the page's JavaScript — so a leaked link, the browser's history
or a script on the page cannot give anyone the key that the CLI, the hooks and MCP clients use.

A cookie alone is not enough to call the API: the request must also carry ``X-Memcli-UI: 1`` and must not
come from another site (``Sec-Fetch-Site``). Browsers share cookies between every port of 127.0.0.1, so
another local web app's page would send our cookie too; but it cannot add a custom header to a
cross-origin request without a CORS preflight, which this server never grants. Codes and sessions are
stored as SHA-256 digests: the lookup is by digest, so timing reveals nothing about a secret.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping

CODE_TTL_S = 120.0
SESSION_TTL_S = 12 * 3600.0
MAX_CODES = 32  # outstanding codes; the oldest is dropped beyond this (a loop minting codes cannot grow memory)
MAX_SESSIONS = 64
UI_HEADER = "x-memcli-ui"  # the page's marker header (lower case, as ASGI gives header names)
COOKIE_PREFIX = "memcli_ui_"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class _Expiring:
    """Digests of secrets with a deadline each, oldest first, bounded."""

    def __init__(self, ttl: float, limit: int) -> None:
        self.ttl, self.limit = ttl, limit
        self._items: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def add(self) -> tuple[str, float]:
        """A new secret and its deadline (``time.time()`` seconds)."""
        secret = secrets.token_urlsafe(24)  # 192 bits
        until = time.time() + self.ttl
        with self._lock:
            self._purge()
            self._items[_digest(secret)] = until
            while len(self._items) > self.limit:
                self._items.popitem(last=False)
        return secret, until

    def valid(self, secret: str) -> bool:
        with self._lock:
            until = self._items.get(_digest(secret))
            return until is not None and until > time.time()

    def take(self, secret: str) -> bool:
        """Remove the secret; True when it was there and still valid (single use)."""
        with self._lock:
            until = self._items.pop(_digest(secret), None)
            return until is not None and until > time.time()

    def _purge(self) -> None:
        now = time.time()
        for key in [k for k, t in self._items.items() if t <= now]:
            del self._items[key]


class UiAuth:
    """The server's login codes and browser sessions. ``home_id`` names the cookie: servers of other homes
    on other ports of the same host each find their own."""

    def __init__(self, home_id: str, *, code_ttl: float = CODE_TTL_S, session_ttl: float = SESSION_TTL_S) -> None:
        self.cookie_name = COOKIE_PREFIX + home_id
        self.codes = _Expiring(code_ttl, MAX_CODES)
        self.sessions = _Expiring(session_ttl, MAX_SESSIONS)
        self.session_ttl = session_ttl

    def mint_code(self) -> tuple[str, float]:
        """A one-time login code and when it expires."""
        return self.codes.add()

    def login(self, code: str) -> tuple[str, float] | None:
        """Exchange a code (once) for a new session secret; None when the code is unknown, used or expired."""
        if not isinstance(code, str) or not 8 <= len(code) <= 200 or not self.codes.take(code):
            return None
        return self.sessions.add()

    def logout(self, headers: Mapping[str, str]) -> None:
        session = cookie_value(headers.get("cookie", ""), self.cookie_name)
        if session:
            self.sessions.take(session)

    @staticmethod
    def from_page(headers: Mapping[str, str]) -> bool:
        """The page's marker header, and not a request from another site."""
        return headers.get(UI_HEADER) == "1" and headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none")

    def authorized(self, headers: Mapping[str, str], path: str = "/api/") -> bool:
        """A request from the page with a live session cookie, to what the page uses: ``/api`` and ``/health``
        (a browser session has no business with ``/mcp`` or ``/hooks``)."""
        if not self.from_page(headers) or not (path.startswith("/api/") or path == "/health"):
            return False
        session = cookie_value(headers.get("cookie", ""), self.cookie_name)
        return bool(session) and self.sessions.valid(session)

    def set_cookie(self, session: str) -> str:
        """The Set-Cookie header value of a new session."""
        return (f"{self.cookie_name}={session}; Path=/; Max-Age={int(self.session_ttl)}; HttpOnly; "
                "SameSite=Strict")

    def clear_cookie(self) -> str:
        return f"{self.cookie_name}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"


def cookie_value(header: str, name: str) -> str | None:
    """One cookie's value from a Cookie header (no unquoting: our values are URL-safe base64)."""
    for part in header.split(";"):
        k, sep, v = part.strip().partition("=")
        if sep and k == name:
            return v.strip() or None
    return None
