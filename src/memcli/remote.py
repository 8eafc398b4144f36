"""A :class:`MemoryService`-shaped client of a memcli server's REST API.

:class:`RemoteService` has the read methods of ``MemoryService`` — ``recall``, ``list``, ``get``,
``check_duplicate``, ``stats`` — with the same signatures and return types (the same model objects), so a
face can be handed either. Errors the service raised on the server come back as the same ``MemcliError``
subclasses with the same messages; anything else (no server, another home's server, a refused token, a
5xx, a broken connection, an older server without a route) is :class:`Unavailable`: the caller then opens
the store itself and loses nothing.

Today the CLI uses it for the home's own warm server (:meth:`RemoteService.for_home`: ``server.json``, the
home's token and id); a team server is the same class with another endpoint (plain HTTP for now: TLS is a
proxy's job). Standard library only, and little of it: one HTTP/1.1 exchange on a socket (``http.client``
alone imports ``email`` and ``ssl``, ~25 ms); no LanceDB, numpy, httpx or pydantic on this path.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from memcli.errors import AmbiguousIdError, MemcliError, NotFoundError, ValidationError, VersionConflictError
from memcli.home import HOME_HEADER, read_auth, running_server_port
from memcli.models import DuplicateCheck, Memory, RecallHit

if TYPE_CHECKING:
    from memcli.config import Config

# Errors the service raises about the request itself: the same answer whoever computes it. Everything else
# (token, home, 5xx, embedder or store trouble on the server's side) is worth asking the store directly.
_REQUEST_ERRORS: dict[str, type[MemcliError]] = {
    c.code: c for c in (ValidationError, NotFoundError, AmbiguousIdError, VersionConflictError)}


class Unavailable(Exception):
    """The server cannot answer this for us; use the store directly."""


@dataclass(frozen=True)
class Endpoint:
    """Where a memcli server listens and how to prove who we are."""

    port: int
    token: str
    home_id: str | None = None  # sent as X-Memcli-Home: the server refuses to answer for another home
    host: str = "127.0.0.1"
    timeout: float = 30.0


class RemoteService:
    """The read API of :class:`memcli.service.MemoryService`, answered by a memcli server."""

    def __init__(self, endpoint: Endpoint, *, namespace: str, project: str | None = None) -> None:
        self.endpoint = endpoint
        self.namespace = namespace  # the caller's, sent explicitly: the server's default may differ
        self.project = project  # recall ranks this project first, as MemoryService(project=…) does

    @classmethod
    def for_home(cls, config: "Config", *, project: str | None = None) -> "RemoteService | None":
        """A client of the server this home runs (``server.json`` with a live pid), or None when none runs."""
        port = running_server_port(config.home)
        if port is None:
            return None
        try:
            auth = read_auth(config.home)
        except MemcliError:
            return None
        if auth is None:
            return None
        return cls(Endpoint(port=port, token=config.server.token or auth.token, home_id=auth.home_id),
                    namespace=config.namespace, project=project)

    def close(self) -> None:
        """Nothing to release: every call is one short connection."""

    # ------------------------------------------------------------------ transport
    def _request(self, method: str, path: str, query: Sequence[tuple[str, Any]] = (),
                 body: Any = None) -> Any:
        ep = self.endpoint
        params = [(k, _param(v)) for k, v in query if v is not None]
        url = path + ("?" + urlencode(params) if params else "")
        headers = {"Authorization": f"Bearer {ep.token}", "Accept": "application/json"}
        if ep.home_id:
            headers[HOME_HEADER] = ep.home_id
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        try:
            status, raw = _http(ep.host, ep.port, method, url, headers, data, ep.timeout)
        except OSError as exc:  # refused, reset, timed out, or not HTTP
            raise Unavailable(f"{method} {path}: {type(exc).__name__}: {exc}") from None
        try:
            payload = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, ValueError):
            raise Unavailable(f"{method} {path}: HTTP {status}, not JSON") from None
        if 200 <= status < 300:
            return payload
        code = payload.get("code") if isinstance(payload, dict) else None
        message = payload.get("error") if isinstance(payload, dict) else None
        err = _REQUEST_ERRORS.get(code or "")
        if err is not None and isinstance(message, str) and not message.startswith("no such route"):
            raise err(message)
        raise Unavailable(f"{method} {path}: HTTP {status} {code or ''}".rstrip())

    def health(self) -> dict[str, Any]:
        """``/health`` as this client sees it: Unavailable unless the server accepts our token and is the
        home we expect (the home id is only in the answer when the token was accepted)."""
        d = self._request("GET", "/health")
        if not isinstance(d, dict) or not d.get("home_id"):
            raise Unavailable("the server did not accept this home's token")
        if self.endpoint.home_id and d["home_id"] != self.endpoint.home_id:
            raise Unavailable("the server belongs to another memcli home")
        return d

    def get_json(self, path: str, query: Sequence[tuple[str, Any]] = ()) -> Any:
        """Another GET of the server's API (the task board's reads) as JSON; errors as for the read API."""
        return self._request("GET", path, query)

    # ------------------------------------------------------------------ the read API
    def recall(self, query: str, *, top_k: int = 5, namespace: str | None = None, scope: str | None = None,
               agent: str | None = None, tags: Sequence[str] | None = None, since: int | None = None,
               until: int | None = None, project: str | None = None, project_only: bool = False,
               include_expired: bool = False, explain: bool = False, mode: str | None = None,
               min_score: float = 0.0, include_archived: bool = False) -> list[RecallHit]:
        """Hybrid recall (see ``MemoryService.recall``)."""
        q: list[tuple[str, Any]] = [
            ("q", query), ("top_k", top_k), ("namespace", namespace or self.namespace), ("scope", scope),
            ("agent", agent), ("since_ms", since), ("until_ms", until),
            ("project", project if project is not None else self.project), ("project_only", project_only),
            ("include_expired", include_expired), ("explain", explain), ("mode", mode),
            ("min_score", min_score or None), ("include_archived", include_archived or None)]
        q += [("tag", t) for t in tags or ()]
        return [_hit(d) for d in self._request("GET", "/api/search", q)]

    def list(self, *, namespace: str | None = None, all_namespaces: bool = False, scope: str | None = None,
             agent: str | None = None, tags: Sequence[str] | None = None, since: int | None = None,
             until: int | None = None, project: str | None = None, source: str | None = None,
             include_expired: bool = False, limit: int = 50, offset: int = 0,
             include_archived: bool = False) -> list[Memory]:
        """Memories matching exact filters, newest first (see ``MemoryService.list``)."""
        q: list[tuple[str, Any]] = [
            ("namespace", None if all_namespaces else namespace or self.namespace),
            ("all_namespaces", all_namespaces or None), ("scope", scope), ("agent", agent), ("since_ms", since),
            ("until_ms", until), ("project", project), ("source", source), ("include_expired", include_expired),
            ("limit", limit), ("offset", offset), ("include_archived", include_archived or None)]
        q += [("tag", t) for t in tags or ()]
        return [_memory(d) for d in self._request("GET", "/api/memories", q)]

    def get(self, ref: str) -> Memory:
        """One memory by id or unique prefix."""
        return _memory(self._request("GET", "/api/memories/" + quote(ref, safe="")))

    def check_duplicate(self, content: str, *, namespace: str | None = None,
                        threshold: float | None = None) -> DuplicateCheck:
        """Is this content already remembered (see ``MemoryService.check_duplicate``)?"""
        body: dict[str, Any] = {"content": content, "namespace": namespace or self.namespace}
        if threshold is not None:
            body["threshold"] = threshold
        d = self._request("POST", "/api/check-duplicate", body=body)
        if not isinstance(d, dict):
            raise Unavailable("check-duplicate: unexpected answer")
        similar = d.get("similar")
        if not isinstance(similar, list):
            raise Unavailable("check-duplicate: unexpected answer")
        return DuplicateCheck(is_duplicate=bool(d.get("is_duplicate")), similar=[_hit(h) for h in similar])

    def stats(self) -> dict[str, Any]:
        """Counts by namespace, scope and tag; size, embedder, fragments."""
        d = self._request("GET", "/api/stats")
        if not isinstance(d, dict):
            raise Unavailable("stats: unexpected answer")
        return d


def _http(host: str, port: int, method: str, target: str, headers: dict[str, str], body: bytes | None,
          timeout: float) -> tuple[int, bytes]:
    """One request (``Connection: close``) → (status, body). OSError for anything but a whole HTTP answer."""
    head = [f"{method} {target} HTTP/1.1", f"Host: {host}:{port}", "Connection: close",
            f"Content-Length: {len(body or b'')}", *(f"{k}: {v}" for k, v in headers.items())]
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("utf-8") + (body or b""))
        chunks = []
        while True:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
    raw = b"".join(chunks)
    end = raw.find(b"\r\n\r\n")
    if end < 0:
        raise OSError("incomplete HTTP answer")
    lines = raw[:end].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise OSError("not an HTTP answer")
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    payload = raw[end + 4:]
    if fields.get("transfer-encoding", "").lower() == "chunked":
        payload = _unchunk(payload)
    elif fields.get("content-length", "").isdigit():
        n = int(fields["content-length"])
        if len(payload) < n:
            raise OSError("the answer was cut short")
        payload = payload[:n]
    return int(parts[1]), payload


def _unchunk(data: bytes) -> bytes:
    out, pos = bytearray(), 0
    while True:
        nl = data.find(b"\r\n", pos)
        if nl < 0:
            raise OSError("broken chunked answer")
        try:
            size = int(data[pos:nl].split(b";")[0] or b"0", 16)
        except ValueError:
            raise OSError("broken chunked answer") from None
        if size == 0:
            return bytes(out)
        out += data[nl + 2:nl + 2 + size]
        pos = nl + 2 + size + 2
        if pos > len(data):
            raise OSError("the answer was cut short")


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _memory(d: Any) -> Memory:
    """A Memory from its JSON item (``Memory.item()``): what list/get/recall print, field for field."""
    try:
        return Memory(id=d["memory_id"], content=d["content"], namespace=d["namespace"], project=d.get("project"),
                      scope=d["scope"], tags=list(d.get("tags") or []), importance=d["importance"],
                      key=d.get("key"), metadata=d.get("metadata") or {}, source=d.get("source") or "cli",
                      created_at=d["created_at"], updated_at=d["updated_at"], expires_at=d.get("expires_at"),
                      version=d.get("version") or 1, thread=d.get("thread"), status=d.get("status") or "active",
                      merged_from=list(d.get("merged_from") or []), superseded_by=d.get("superseded_by"))
    except (KeyError, TypeError, AttributeError):
        raise Unavailable("the server's answer is not a memory") from None


def _hit(d: Any) -> RecallHit:
    """A RecallHit from its JSON item (the rounded score; the raw signals are in ``explain`` when asked)."""
    try:
        return RecallHit(memory=_memory(d), score=float(d["score"]), explain=d.get("explain"))
    except (KeyError, TypeError, ValueError, AttributeError):
        raise Unavailable("the server's answer is not a recall hit") from None
