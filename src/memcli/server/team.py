"""Team mode of ``memcli serve``: space tokens, who the caller is, rate limits and the admin routes.

The home's own token (``auth.json`` / ``MEMCLI_TOKEN``) is the admin: it sees every namespace and manages
spaces. A space token (``mnemo_…``, see :mod:`memcli.team.spaces`) resolves to (space, agent), and every memory
call it makes — REST, ``/mcp``, ``/hooks`` — goes to a :class:`~memcli.team.spaces.SpaceService` confined to that
space: whatever namespace the client sends is ignored (the token decides), another space's memory id is 404.

Who the caller is travels in a context variable (:data:`CALLER`) set by the Guard for the request and read
by :meth:`TeamGate.scope`, the ServiceHolder's ``scoper``: a call made with no caller set (a thread that
did not inherit the request's context) is refused, never answered as the admin.

Rate limits are token buckets per space token and per client IP (the IP's bucket is charged by space-token
requests and refused ones, so guessing tokens is slow); the admin is not limited. 429 carries Retry-After.
"""

from __future__ import annotations

import contextvars
import logging
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Union

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from memcli.errors import ForbiddenError, MemcliError, NotFoundError, ValidationError
from memcli.server.http import (
    MAX_BATCH_BODY,
    MAX_BATCH_ITEMS,
    MAX_BODY,
    bool_param,
    read_json,
)
from memcli.team.spaces import TOKEN_PREFIX, Caller, SpaceRegistry, SpaceService

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.memory.service import MemoryService
    from memcli.server.holder import ServiceHolder

log = logging.getLogger("memcli.server")

ADMIN = "admin"
CALLER: contextvars.ContextVar[Union[str, Caller, None]] = contextvars.ContextVar("memcli_caller")
MAX_SPACE_REQUEST = 11 << 20  # a batch (10 MiB) and its envelope; the routes check their own, smaller, limits
ADMIN_PREFIX = "/api/spaces"


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` saved up."""

    __slots__ = ("rate", "burst", "level", "at")

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, max(1, burst)
        self.level, self.at = float(self.burst), time.monotonic()

    def take(self) -> float:
        """0 when a request may go now, else the seconds until it may."""
        now = time.monotonic()
        self.level = min(self.burst, self.level + (now - self.at) * self.rate)
        self.at = now
        if self.level >= 1:
            self.level -= 1
            return 0.0
        return (1 - self.level) / self.rate


class Limiter:
    """Token buckets by key (a token id, an IP). Used from the event loop only: no lock needed."""

    def __init__(self, rate: float, burst: int, max_keys: int = 50_000) -> None:
        self.rate, self.burst, self.max_keys = rate, burst, max_keys
        self.buckets: dict[str, TokenBucket] = {}

    def wait(self, key: str) -> float:
        if self.rate <= 0:
            return 0.0
        bucket = self.buckets.get(key)
        if bucket is None:
            if len(self.buckets) >= self.max_keys:
                self.buckets.clear()  # a flood of new keys: forget them all rather than grow without bound
            bucket = self.buckets[key] = TokenBucket(self.rate, self.burst)
        return bucket.take()


def _too_many(wait: float, what: str) -> Response:
    seconds = max(1, math.ceil(wait))
    return JSONResponse({"ok": False, "error": f"too many requests from this {what}: retry in {seconds} s",
                         "code": "rate_limited"}, status_code=429, headers={"Retry-After": str(seconds)})


class TeamGate:
    """Space tokens, rate limits and request size for the Guard; the caller-scoped service for the holder."""

    def __init__(self, holder: "ServiceHolder", config: "Config") -> None:
        self.holder = holder
        srv = config.server
        self.per_token = Limiter(srv.rate_limit, srv.rate_burst)
        self.per_ip = Limiter(srv.ip_rate_limit, srv.ip_rate_burst)
        self._registry: SpaceRegistry | None = None
        self._services: dict[Caller, tuple[int, SpaceService]] = {}
        from memcli.team.conflict import ConflictResolver

        # stale updates of a space set to llm-merge go to the [hooks] llm_* endpoint (none: refused, 412)
        self.conflicts = ConflictResolver.from_config(config, lambda space: self.registry().conflict(space))

    def registry(self) -> SpaceRegistry:
        if self._registry is None:
            self._registry = SpaceRegistry(self.holder.base().store.db)
        return self._registry

    # ------------------------------------------------------------------ the holder's scoper
    def scope(self, svc: "MemoryService") -> "MemoryService":
        caller = CALLER.get(None)
        if caller == ADMIN:
            return svc
        if isinstance(caller, Caller):
            cached = self._services.get(caller)
            if cached is None or cached[0] != id(svc):
                cached = (id(svc), SpaceService(svc, caller, self.conflicts))
                self._services[caller] = cached
            return cached[1]
        raise ForbiddenError("this call has no caller identity: refused")

    # ------------------------------------------------------------------ the hooks' queue
    def whoami(self) -> dict[str, str] | None:
        """The current space caller as a tag a queued hook payload keeps (None: the admin)."""
        caller = CALLER.get(None)
        return {"space": caller.space, "agent": caller.agent, "token_id": caller.token_id} \
            if isinstance(caller, Caller) else None

    @contextmanager
    def acting_as(self, tag: Any) -> Iterator[None]:
        """Run a queued payload as the caller that queued it (untagged: the admin's own hooks)."""
        value: Union[str, Caller] = ADMIN
        if isinstance(tag, dict):
            value = Caller(space=str(tag["space"]), agent=str(tag["agent"]), token_id=str(tag["token_id"]))
        reset = CALLER.set(value)
        try:
            yield
        finally:
            CALLER.reset(reset)

    # ------------------------------------------------------------------ the Guard's hook
    async def admit(self, scope: Scope, refusal: Response | None) -> Response | None:
        """After the Guard's own checks: resolve a space token (when the admin token did not match), apply
        the rate limits and the size limit, and record the caller in ``scope["state"]``."""
        state = scope.setdefault("state", {})
        if state.get("memcli_authorized"):
            state["memcli_caller"] = ADMIN
            return refusal
        if refusal is not None and refusal.status_code != 401:
            return refusal
        headers = {k: v for k, v in scope["headers"] if k in (b"authorization", b"content-length")}
        scheme, _, given = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        token = given.strip()
        if refusal is None and not token.startswith(TOKEN_PREFIX):
            return None  # /health without a token: answers, and says nothing
        ip = (scope.get("client") or ("?", 0))[0]
        wait = self.per_ip.wait(ip)
        if wait:
            return _too_many(wait, "address")
        if scheme.lower() != "bearer" or not token.startswith(TOKEN_PREFIX):
            return refusal
        try:
            caller = await anyio.to_thread.run_sync(self.registry().resolve, token)
        except MemcliError as exc:
            log.warning("cannot check a space token: %s", exc.message)
            return JSONResponse({"ok": False, "error": "the server cannot check tokens yet: retry",
                                 "code": "unavailable"}, status_code=503, headers={"Retry-After": "1"})
        if caller is None:
            return refusal or JSONResponse(
                {"ok": False, "error": "unknown or revoked token", "code": "unauthorized"}, status_code=401,
                headers={"WWW-Authenticate": "Bearer"})
        wait = self.per_token.wait(caller.token_id)
        if wait:
            return _too_many(wait, "token")
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > MAX_SPACE_REQUEST:
            return JSONResponse({"ok": False, "error": f"request body is larger than {MAX_SPACE_REQUEST:,} bytes",
                                 "code": "payload_too_large"}, status_code=413)
        if scope["path"] == ADMIN_PREFIX or scope["path"].startswith(ADMIN_PREFIX + "/"):
            return JSONResponse({"ok": False, "error": "managing spaces needs the server's admin token",
                                 "code": "forbidden"}, status_code=403)
        state["memcli_caller"] = caller
        return None


def caller_of(request: Request) -> Union[str, Caller, None]:
    return request.scope.get("state", {}).get("memcli_caller")


def admin_routes(gate: TeamGate) -> list[BaseRoute]:
    """``/api/spaces``: create spaces and manage their tokens (admin token only)."""

    def admin_only(request: Request) -> None:
        if caller_of(request) != ADMIN:
            raise ForbiddenError("managing spaces needs the server's admin token")
        if request.scope.get("state", {}).get("memcli_auth_via") != "token":
            # a web view's browser session is the admin's, but must not mint tokens that outlive it
            raise ForbiddenError("a browser session cannot manage spaces or tokens: use `memcli space` (the "
                                 "server's admin token)")

    async def body(request: Request) -> dict[str, Any]:
        data = await read_json(request, MAX_BODY)
        if not isinstance(data, dict):
            raise ValidationError("send a JSON object")
        unknown = sorted(set(data) - {"name", "space_id", "agent", "agent_name", "agent_type", "conflict"})
        if unknown:
            raise ValidationError(f"unknown field(s): {', '.join(unknown)}; allowed: agent (or agent_name), "
                                  "agent_type, conflict, name")
        if "conflict" in data and not isinstance(data["conflict"], str):
            raise ValidationError("conflict must be \"refuse\", \"lww\" or \"llm-merge\"")
        for name in ("agent", "agent_name", "agent_type"):
            if data.get(name) is not None and not isinstance(data[name], str):
                raise ValidationError(f"{name} must be a string")
        if data.get("agent") and data.get("agent_name") and data["agent"] != data["agent_name"]:
            raise ValidationError("give the agent once: agent or agent_name (seed 002's name), not two names")
        if data.get("agent_name") and not data.get("agent"):
            data = {**data, "agent": data["agent_name"]}  # seed 002: {"name", "agent_name", "agent_type"}
        return data

    def agent_type(d: dict[str, Any]) -> dict[str, Any]:
        """Seed 002's agent_type (claude_code, openclaw…), echoed back: memcli names an agent by its name."""
        return {"agent_type": d["agent_type"]} if d.get("agent_type") else {}

    def merge_state(mode: str) -> dict[str, Any]:
        """Whether an llm-merge setting can work on this server (no [hooks] llm endpoint: it refuses)."""
        return {"llm_merge_ready": gate.conflicts.configured} if mode == "llm-merge" else {}

    async def create_space(request: Request) -> Response:
        admin_only(request)
        d = await body(request)
        name = d.get("name") or d.get("space_id")
        if not name or not d.get("agent"):
            raise ValidationError("give the space's name and the first agent: {\"name\": …, \"agent\": …}")
        conflict = d.get("conflict") or "refuse"
        token, info = await anyio.to_thread.run_sync(gate.registry().create, name, d["agent"], conflict)
        return JSONResponse({"ok": True, "space_id": info.space, "api_token": token, "token_id": info.token_id,
                             "agent": info.agent, **agent_type(d), "conflict": conflict, **merge_state(conflict)},
                            status_code=201)

    async def patch_space(request: Request) -> Response:
        admin_only(request)
        d = await body(request)
        if set(d) != {"conflict"}:
            raise ValidationError("send {\"conflict\": \"refuse\" | \"lww\" | \"llm-merge\"} (the only setting a "
                                  "space has)")
        space = await anyio.to_thread.run_sync(gate.registry().set_conflict, request.path_params["space"],
                                               d["conflict"])
        return JSONResponse({"ok": True, **space, **merge_state(space["conflict"])})

    async def list_spaces(request: Request) -> Response:
        admin_only(request)
        return JSONResponse(await anyio.to_thread.run_sync(gate.registry().spaces))

    async def add_token(request: Request) -> Response:
        admin_only(request)
        d = await body(request)
        if not d.get("agent"):
            raise ValidationError("give the agent the token is for: {\"agent\": …}")
        token, info = await anyio.to_thread.run_sync(gate.registry().add_token, request.path_params["space"],
                                                     d["agent"])
        return JSONResponse({"ok": True, "api_token": token, **info.item(), **agent_type(d)}, status_code=201)

    async def space_info(request: Request) -> Response:
        """Seed 002's ``GET /api/spaces/{space}/info``: the space as the list shows it."""
        admin_only(request)
        space = request.path_params["space"]
        found = [s for s in await anyio.to_thread.run_sync(gate.registry().spaces) if s["space_id"] == space]
        if not found:
            raise NotFoundError(f"no space {space!r}")
        return JSONResponse(found[0])

    async def list_tokens(request: Request) -> Response:
        admin_only(request)
        infos = await anyio.to_thread.run_sync(gate.registry().tokens, request.path_params["space"])
        return JSONResponse([t.item() for t in infos])

    async def revoke_token(request: Request) -> Response:
        admin_only(request)
        info = await anyio.to_thread.run_sync(gate.registry().revoke, request.path_params["space"],
                                              request.path_params["token_id"])
        return JSONResponse({"ok": True, **info.item()})

    return [
        Route(ADMIN_PREFIX, create_space, methods=["POST"]),
        Route(ADMIN_PREFIX, list_spaces, methods=["GET"]),
        Route(ADMIN_PREFIX + "/{space}", patch_space, methods=["PATCH"]),
        Route(ADMIN_PREFIX + "/{space}/info", space_info, methods=["GET"]),
        Route(ADMIN_PREFIX + "/{space}/tokens", add_token, methods=["POST"]),
        Route(ADMIN_PREFIX + "/{space}/tokens", list_tokens, methods=["GET"]),
        Route(ADMIN_PREFIX + "/{space}/tokens/{token_id}", revoke_token, methods=["DELETE"]),
    ]


def transfer_routes(holder: "ServiceHolder") -> list[BaseRoute]:
    """``GET /api/export`` and ``POST /api/import``: whole records, for ``memcli export|import|sync`` through
    a server (a space token exports and imports its own space only)."""
    from starlette.concurrency import run_in_threadpool

    from memcli.team import sync

    async def call(name: str, /, *args: Any, **kwargs: Any) -> Any:
        def run() -> Any:
            with holder.use() as svc:
                return getattr(sync, name)(svc, *args, **kwargs)
        return await run_in_threadpool(run)

    async def export(request: Request) -> Response:
        q = request.query_params
        mems = await call("export_records", namespace=q.get("namespace") or None, scope=q.get("scope") or None,
                          tags=q.getlist("tag") or None, include_archived=bool_param(q, "include_archived"))
        return JSONResponse(mems)

    async def import_(request: Request) -> Response:
        # export records, as memcli's client sends them: a broken vector may hold NaN (it is re-embedded);
        # NaN in any field that is stored is refused by the record's check
        data = await read_json(request, MAX_BATCH_BODY, finite=False)
        if not isinstance(data, dict) or not isinstance(data.get("records"), list):
            raise ValidationError("send {\"records\": [...], \"embedder\": {...}?, \"skip_same_content\": bool?, "
                                  "\"keep_secrets\": bool?}")
        unknown = sorted(set(data) - {"records", "embedder", "skip_same_content", "namespace", "keep_secrets"})
        if unknown:
            raise ValidationError(f"unknown field(s): {', '.join(unknown)}; allowed: embedder, keep_secrets, "
                                  "namespace, records, skip_same_content")
        for flag in ("skip_same_content", "keep_secrets"):
            if data.get(flag) is not None and not isinstance(data[flag], bool):
                raise ValidationError(f"{flag} must be true or false")
        if len(data["records"]) > MAX_BATCH_ITEMS:
            raise ValidationError(f"at most {MAX_BATCH_ITEMS} records per request, got {len(data['records'])}")
        identity = data.get("embedder")
        res = await call("import_new", data["records"], vectors_identity=identity if isinstance(identity, dict)
                         else None, skip_same_content=bool(data.get("skip_same_content")),
                         namespace=data.get("namespace"), keep_secrets=bool(data.get("keep_secrets")))
        return JSONResponse({"ok": True, **res})

    return [Route("/api/export", export, methods=["GET"]), Route("/api/import", import_, methods=["POST"])]
