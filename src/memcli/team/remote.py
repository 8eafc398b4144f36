"""A :class:`MemoryService`-shaped client of a memcli server's REST API.

:class:`RemoteService` has the memory methods of ``MemoryService`` — ``recall``, ``list``, ``get``,
``check_duplicate``, ``stats``, ``remember``, ``update``, ``forget``, ``history``, ``import_records`` — with the
same signatures and return types (the same model objects), so a face can be handed either. Errors the service raised on the server come back as the same ``MemcliError``
subclasses with the same messages; anything else (no server, another home's server, a refused token, a
5xx, a broken connection, an older server without a route) is :class:`Unavailable`: the caller then opens
the store itself and loses nothing.

The CLI uses it for the home's own warm server (:meth:`RemoteService.for_home`: ``server.json``, the home's
token and id), reads and writes alike, with a fallback to the store. Before the token leaves this process the
server must prove it holds the home's token (a challenge answered with an HMAC bound to its port,
:mod:`memcli.proof`); the proof is remembered for that server process in ``<home>/hooks-state/verified``
(:func:`memcli.proof.verified_mark`, shared with the hook client: a later process that gets the pid of a
killed server is not that process), so the hot path stays one request. In team mode
(:meth:`RemoteService.for_team`: ``MEMCLI_API_URL`` + ``MEMCLI_API_TOKEN``) it is the whole service — reads,
writes, history, export/import — of a memcli server reached over http:// or https:// (``ssl`` is imported only
then), with no fallback: every error is a :class:`MemcliError` (the server's own, or :class:`UnreachableError`
naming the URL). Standard library only, and little of it: one HTTP/1.1 exchange on a socket (``http.client``
alone imports ``email`` and ``ssl``, ~25 ms); no LanceDB, numpy, httpx or pydantic on this path.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

from memcli.errors import (
    AmbiguousIdError,
    ConfigError,
    ConflictError,
    ForbiddenError,
    MemcliError,
    NotFoundError,
    TransitionError,
    UnreachableError,
    ValidationError,
    VersionConflictError,
)
from memcli.home import HOME_HEADER, read_auth, running_server
from memcli.models import (
    DuplicateCheck,
    Memory,
    RecallHit,
    RememberResult,
    normalise_scope,
    validate_metadata,
)
from memcli.proof import CHALLENGE_HEADER, VERIFIED, proof_ok, verified_mark

if TYPE_CHECKING:
    from memcli.config import Config

# Errors the service raises about the request itself: the same answer whoever computes it. Everything else
# (token, home, 5xx, embedder or store trouble on the server's side) is worth asking the store directly.
_REQUEST_ERRORS: dict[str, type[MemcliError]] = {
    c.code: c for c in (ValidationError, NotFoundError, AmbiguousIdError, VersionConflictError, ConflictError,
                        TransitionError)}
_TEAM_ERRORS: dict[str, type[MemcliError]] = {**_REQUEST_ERRORS, ForbiddenError.code: ForbiddenError}
IMPORT_BATCH = 500
WRITE_TIMEOUT = 600.0  # seconds a change may take the server before the client gives up on the answer
SOURCE_HEADER = "X-Memcli-Source"  # the face a home's own client writes for (the server records it)


class Unavailable(Exception):
    """The server cannot answer this for us; use the store directly. ``sent``: the request may have reached
    the server (the connection broke after it was sent), so a change may have been made."""

    def __init__(self, message: str, *, sent: bool = False, refused: bool = False) -> None:
        super().__init__(message)
        self.sent = sent
        self.refused = refused  # nothing listens on the port: the server is gone


class _NotSent(OSError):
    """The connection failed before the request was sent (``refused``: nothing listens there)."""

    refused = False


@dataclass(frozen=True)
class Endpoint:
    """Where a memcli server listens and how to prove who we are."""

    port: int
    token: str
    home_id: str | None = None  # sent as X-Memcli-Home: the server refuses to answer for another home
    host: str = "127.0.0.1"
    timeout: float = 30.0
    tls: bool = False  # https://
    base_path: str = ""  # a server mounted under a path prefix (behind a proxy)

    @classmethod
    def from_url(cls, url: str, token: str, timeout: float = 30.0) -> "Endpoint":
        """``http(s)://host[:port][/prefix]`` → an Endpoint (a ConfigError for anything else)."""
        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError:
            raise ConfigError(f"MEMCLI_API_URL {url!r} is not a URL like https://memory.example.com") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"MEMCLI_API_URL {url!r} must start with http:// or https:// and name a host")
        tls = parts.scheme == "https"
        return cls(port=port or (443 if tls else 80), token=token, host=parts.hostname, timeout=timeout, tls=tls,
                   base_path=parts.path.rstrip("/"))

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        default = 443 if self.tls else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}{'' if self.port == default else f':{self.port}'}{self.base_path}"


class _StoreInfo:
    """What faces read of ``service.store`` (export's header): the server's embedder, once known."""

    stored_identity: dict[str, Any] | None = None


class RemoteEvent(dict):  # type: ignore[type-arg]
    """An audit event as the server sent it (``to_dict`` like :class:`memcli.memory.audit.AuditEvent`)."""

    def to_dict(self) -> dict[str, Any]:
        return dict(self)


class RemoteService:
    """The memory API of :class:`memcli.memory.service.MemoryService`, answered by a memcli server."""

    def __init__(self, endpoint: Endpoint, *, namespace: str, project: str | None = None,
                 strict: bool = False, agent: str | None = None, home: Path | None = None,
                 server_pid: int | None = None) -> None:
        self.endpoint = endpoint
        self.namespace = namespace  # the caller's, sent explicitly: the server's default may differ
        self.project = project  # recall ranks this project first, as MemoryService(project=…) does
        self.strict = strict  # team mode: every failure is a MemcliError, there is no store to fall back on
        self.agent = agent  # the caller's configured agent: the default scope of its remembers
        self.store = _StoreInfo()
        # the home's own server: it must prove it holds the home's token before the token is sent
        self.home = home
        self.server_pid = server_pid
        self._proven = home is None

    @classmethod
    def for_team(cls, config: "Config", *, project: str | None = None) -> "RemoteService":
        """The client of the team server ``config.api_url`` with ``config.api_token`` (team mode)."""
        if not config.api_url:
            raise ConfigError("no team server configured (MEMCLI_API_URL)")
        if not config.api_token:
            raise ConfigError(f"MEMCLI_API_URL is {config.api_url} but no token is set: set MEMCLI_API_TOKEN or run "
                              "`memcli setup --server URL --token TOKEN`")
        return cls(Endpoint.from_url(config.api_url, config.api_token), namespace=config.namespace,
                   project=project, strict=True)

    @classmethod
    def for_home(cls, config: "Config", *, project: str | None = None) -> "RemoteService | None":
        """A client of the server this home runs (``server.json`` with a live pid), or None when none runs.
        Nothing is sent until the first call, and the token only once the server has proven it is ours."""
        found = running_server(config.home)
        if found is None:
            return None
        try:
            auth = read_auth(config.home)
        except MemcliError:
            return None
        if auth is None:
            return None
        port, pid = found
        return cls(Endpoint(port=port, token=config.server.token or auth.token, home_id=auth.home_id),
                   namespace=config.namespace, project=project, agent=config.agent, home=config.home,
                   server_pid=pid)

    def close(self) -> None:
        """Nothing to release: every call is one short connection."""

    # ------------------------------------------------------------------ transport
    def _request(self, method: str, path: str, query: Sequence[tuple[str, Any]] = (),
                 body: Any = None) -> Any:
        ep = self.endpoint
        if not self._proven:
            self._prove()
        params = [(k, _param(v)) for k, v in query if v is not None]
        url = path + ("?" + urlencode(params) if params else "")
        headers = {"Authorization": f"Bearer {ep.token}", "Accept": "application/json"}
        if ep.home_id:
            headers[HOME_HEADER] = ep.home_id
        if self.home is not None and method != "GET":
            headers[SOURCE_HEADER] = "cli"  # recorded as the CLI's write, as when the CLI opens the store
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        try:
            # a write may take the server long (an import of 500 memories on a busy machine): it is waited for,
            # since giving up would leave the caller not knowing whether it was made
            timeout = ep.timeout if method == "GET" else max(ep.timeout, WRITE_TIMEOUT)
            status, raw = _http(ep.host, ep.port, method, ep.base_path + url, headers, data, timeout, ep.tls)
        except OSError as exc:  # refused, reset, timed out, or not HTTP (ssl.SSLError is an OSError too)
            if self.strict:
                raise UnreachableError(f"cannot reach memcli server at {ep.url}: {exc}") from None
            raise Unavailable(f"{method} {path}: {type(exc).__name__}: {exc}", sent=not isinstance(exc, _NotSent),
                              refused=isinstance(exc, _NotSent) and exc.refused) from None
        try:
            payload = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, ValueError):
            if self.strict:
                raise UnreachableError(f"the memcli server at {ep.url} answered HTTP {status}, not JSON "
                                       "(is this URL a memcli server?)") from None
            raise Unavailable(f"{method} {path}: HTTP {status}, not JSON") from None
        if 200 <= status < 300:
            return payload
        code = payload.get("code") if isinstance(payload, dict) else None
        message = payload.get("error") if isinstance(payload, dict) else None
        if self.strict:
            raise _team_error(ep.url, status, code, message)
        err = _REQUEST_ERRORS.get(code or "")
        if err is not None and isinstance(message, str) and not message.startswith("no such route"):
            raise err(message)
        raise Unavailable(f"{method} {path}: HTTP {status} {code or ''}".rstrip())

    def _prove(self) -> None:
        """Make sure the server on our port is this home's before anything carrying the token is sent: trusted
        when ``verified`` holds the mark of this port and of the very process ``server.json`` names
        (:func:`memcli.proof.verified_mark`), else a fresh challenge without the token, answered with an HMAC
        of the home's token bound to the port (:mod:`memcli.proof`)."""
        ep, home = self.endpoint, self.home
        assert home is not None
        cache = home.joinpath(*VERIFIED)
        mark = verified_mark(ep.port, self.server_pid)
        try:
            if mark is not None and cache.read_text(encoding="utf-8") == mark:
                self._proven = True
                return
        except (OSError, UnicodeDecodeError):
            pass
        import secrets

        nonce = secrets.token_hex(16)
        try:
            status, raw = _http(ep.host, ep.port, "GET", ep.base_path + "/health", {CHALLENGE_HEADER: nonce}, None,
                                min(ep.timeout, 5.0), ep.tls)
            d = json.loads(raw.decode("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise Unavailable(f"GET /health: {type(exc).__name__}: {exc}",
                              refused=isinstance(exc, _NotSent) and exc.refused) from None
        proof = d.get("proof") if isinstance(d, dict) else None
        if status != 200 or not isinstance(proof, str) or not proof_ok(ep.token, nonce, ep.port, proof):
            raise Unavailable(f"whatever listens on port {ep.port} did not prove it is this home's server; "
                              "nothing was sent to it")
        self._proven = True
        mark = verified_mark(ep.port, self.server_pid) if d.get("pid") == self.server_pid else None
        if mark is not None:
            try:  # remembered for this server process: the next commands send at once
                cache.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                cache.write_text(mark, encoding="utf-8")
            except OSError:
                pass

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """Any other route of the server (``memcli space`` uses the admin routes)."""
        return self._request(method, path, body=body)

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
               min_score: float = 0.0, include_archived: bool = False,
               as_of: int | None = None) -> list[RecallHit]:
        """Hybrid recall (see ``MemoryService.recall``)."""
        q: list[tuple[str, Any]] = [
            ("q", query), ("top_k", top_k), ("namespace", namespace or self.namespace), ("scope", scope),
            ("agent", agent), ("since_ms", since), ("until_ms", until),
            ("project", project if project is not None else self.project), ("project_only", project_only),
            ("include_expired", include_expired), ("explain", explain), ("mode", mode),
            ("min_score", min_score or None), ("include_archived", include_archived or None),
            ("as_of_ms", as_of)]
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

    def _id_query(self, namespace: str | None, all_namespaces: bool = False) -> list[tuple[str, Any]]:
        """The namespace an id route acts in, sent explicitly (the server's default may differ)."""
        if all_namespaces:
            return [("all_namespaces", True)]
        return [("namespace", namespace or self.namespace)]

    def get(self, ref: str, *, namespace: str | None = None, all_namespaces: bool = False) -> Memory:
        """One memory by id or unique prefix, of this client's namespace (or ``namespace``, or any)."""
        return _memory(self._request("GET", "/api/memories/" + quote(ref, safe=""),
                                     self._id_query(namespace, all_namespaces)))

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

    # ------------------------------------------------------------------ the write API (team mode)
    def remember(self, content: str, *, tags: Sequence[str] | None = None, scope: str | None = None,
                 agent: str | None = None, importance: float = 0.5, key: str | None = None,
                 ttl: str | int | None = None, metadata: dict[str, Any] | str | None = None,
                 namespace: str | None = None, project: str | None = None, source: str = "cli",
                 created_at: int | None = None, thread: str | None = None,
                 keep_secrets: bool = False) -> RememberResult:
        """Store one memory (see ``MemoryService.remember``). A team server records it as written by ``api``;
        the home's own server as the CLI's, with this client's defaults (agent scope, parsed metadata)."""
        if self.home is not None:
            scope, agent, metadata = self._own_defaults(scope, agent, metadata)
        body = _drop_none({"content": content, "tags": list(tags) if tags else None, "scope": scope,
                           "agent": agent, "importance": importance, "key": key, "ttl": ttl, "metadata": metadata,
                           "namespace": namespace or self.namespace,
                           "project": project if project is not None else self.project, "created_at": created_at,
                           "keep_secrets": keep_secrets or None})
        return _result(self._request("POST", "/api/memories", body=body))

    def _own_defaults(self, scope: str | None, agent: str | None,
                      metadata: dict[str, Any] | str | None) -> tuple[str | None, str | None, dict[str, Any] | None]:
        """What the store opened here would use: this client's agent (else ``global``) as the default scope,
        metadata parsed here (the same errors), so the home's server, whatever its own settings, writes the
        same memory."""
        if scope is None and agent is None:
            scope, agent = (None, self.agent) if self.agent else (normalise_scope("global"), None)
        return scope, agent, validate_metadata(metadata) if metadata is not None else None

    def remember_many(self, items: Sequence[Any], *, source: str = "cli",
                      progress: Any = None) -> list[RememberResult]:
        """Store several memories (``NewMemory`` objects) in one batch request."""
        fields = ("content", "tags", "scope", "agent", "importance", "key", "ttl", "metadata", "namespace",
                  "project", "created_at")
        body = [_drop_none({**{f: getattr(it, f, None) for f in fields},
                            "keep_secrets": getattr(it, "keep_secrets", False) or None}) for it in items]
        d = self._request("POST", "/api/memories/batch", body={"memories": body})
        return [_result(r) for r in (d or {}).get("results", [])]

    def update(self, ref: str, *, content: str | None = None, tags: Sequence[str] | None = None,
               importance: float | None = None, scope: str | None = None, agent: str | None = None,
               metadata: dict[str, Any] | str | None = None, ttl: str | int | None = None,
               expected_version: int | None = None, source: str = "cli", keep_secrets: bool = False,
               namespace: str | None = None) -> Memory:
        """Change a memory (see ``MemoryService.update``); a stale ``expected_version`` → VersionConflictError."""
        if self.home is not None and metadata is not None:
            metadata = validate_metadata(metadata)
        body = _drop_none({"content": content, "tags": list(tags) if tags is not None else None,
                           "importance": importance, "scope": scope, "agent": agent, "metadata": metadata,
                           "ttl": ttl, "expected_version": expected_version, "keep_secrets": keep_secrets or None})
        return _memory(self._request("PATCH", "/api/memories/" + quote(ref, safe=""), self._id_query(namespace),
                                     body=body))

    def forget(self, refs: Sequence[str] | str, *, source: str = "cli", namespace: str | None = None) -> list[str]:
        """Delete memories; every id is resolved (and must exist) before anything is deleted."""
        refs = [refs] if isinstance(refs, str) else list(refs)
        if not refs:
            raise ValidationError("give at least one memory id")
        q = self._id_query(namespace)
        if len(refs) == 1:  # the server resolves the id (or prefix) itself: one request
            d = self._request("DELETE", "/api/memories/" + quote(refs[0], safe=""), q)
            return [d["memory_id"]] if isinstance(d, dict) and isinstance(d.get("memory_id"), str) else []
        ids = list(dict.fromkeys(self.get(r, namespace=namespace).id for r in refs))
        for mid in ids:
            self._request("DELETE", "/api/memories/" + quote(mid, safe=""), q)
        return ids

    def history(self, ref: str, *, namespace: str | None = None, all_namespaces: bool = False) -> list[RemoteEvent]:
        """Who changed this memory, how and when, oldest first."""
        d = self._request("GET", "/api/memories/" + quote(ref, safe="") + "/history",
                          self._id_query(namespace, all_namespaces))
        return [RemoteEvent(e) for e in d or []]

    def export(self, *, namespace: str | None = None, scope: str | None = None, tags: Sequence[str] | None = None,
               with_vectors: bool = False, include_expired: bool = True,
               include_archived: bool = False) -> list[Memory]:
        """Every memory the token may see (its space), oldest first, as full records (no vectors)."""
        d = self.export_records(namespace=namespace, scope=scope, tags=tags, include_archived=include_archived)
        return [_memory_from_record(r) for r in d["records"]]

    def export_records(self, *, namespace: str | None = None, scope: str | None = None,
                       tags: Sequence[str] | None = None, include_archived: bool = False) -> dict[str, Any]:
        """``{"embedder", "records"}`` of ``GET /api/export``."""
        q: list[tuple[str, Any]] = [("namespace", namespace), ("scope", scope),
                                    ("include_archived", include_archived or None)] + [("tag", t) for t in tags or ()]
        d = self._request("GET", "/api/export", q)
        if not isinstance(d, dict) or not isinstance(d.get("records"), list):
            raise UnreachableError("export: the server's answer is not an export")
        self.store.stored_identity = d.get("embedder")
        return d

    def import_new(self, records: list[dict[str, Any]], *, vectors_identity: dict[str, Any] | None = None,
                   skip_same_content: bool = False, keep_secrets: bool = False) -> dict[str, int]:
        """``POST /api/import``: records not stored yet (by id; with ``skip_same_content`` by content too)."""
        d = self._request("POST", "/api/import", body=_drop_none({
            "records": records, "embedder": vectors_identity, "skip_same_content": skip_same_content or None,
            "keep_secrets": keep_secrets or None}))
        return {"read": int(d["read"]), "added": int(d["added"]), "skipped": int(d["skipped"])}

    def import_records(self, records: Iterable[dict[str, Any]], *, vectors_identity: dict[str, Any] | None = None,
                       progress: Any = None, batch: int = IMPORT_BATCH, keep_secrets: bool = False,
                       total: int | None = None) -> dict[str, int]:
        """Import export records through the server, in batches (idempotent by id), streamed: an iterator is
        never held whole. A list is checked here first, as the store opened here would: a bad one imports
        nothing (an iterator's caller checks it first: ``memcli import`` reads its file twice)."""
        if isinstance(records, Sequence):
            if self.home is not None:
                _check_records(records)
            total = len(records)
        it = iter(records)
        done = 0
        result = {"read": 0, "added": 0, "skipped": 0}
        while True:
            chunk = list(itertools.islice(it, batch))
            if not chunk:
                return result
            res = self.import_new(chunk, vectors_identity=vectors_identity, keep_secrets=keep_secrets)
            for k in result:
                result[k] += res[k]
            done += len(chunk)
            if progress:
                progress(done, max(total or 0, done))

    def _server_side(self, *args: Any, **kwargs: Any) -> Any:
        raise ForbiddenError(f"this command changes the whole store: run it on the server ({self.endpoint.url}), "
                             "not through MEMCLI_API_URL")

    compact = reindex = distill = _server_side


def _check_records(records: Sequence[Any]) -> None:
    """The validation ``MemoryService.import_records`` does before it writes anything."""
    from memcli.memory.records import record_number, record_to_memory

    for i, raw in enumerate(records):
        with record_number(i, raw) as r:
            record_to_memory(r)


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _result(d: Any) -> RememberResult:
    try:
        return RememberResult(memory_id=d["memory_id"], duplicate_of=list(d.get("duplicate_of") or []),
                              created=bool(d.get("created", True)), updated=bool(d.get("updated", False)),
                              related=[r for r in d.get("related") or [] if isinstance(r, dict)])
    except (KeyError, TypeError):
        raise UnreachableError("remember: the server's answer is not a result") from None


def _memory_from_record(r: dict[str, Any]) -> Memory:
    d = dict(r, memory_id=r.get("id"))
    mem = _memory(d)
    mem.content_hash = r.get("content_hash") or mem.content_hash
    mem.context = list(r.get("context") or [])
    return mem


def _team_error(url: str, status: int, code: str | None, message: str | None) -> MemcliError:
    """The server's refusal as a MemcliError of the same kind (same message, HTTP status and code)."""
    cls = _TEAM_ERRORS.get(code or "")
    if cls is not None and isinstance(message, str):
        return cls(message)
    if status == 401:
        err: MemcliError = UnreachableError(f"the memcli server at {url} refused the token (HTTP 401): check "
                                            "MEMCLI_API_TOKEN (a revoked token stays refused)")
    elif status == 429:
        err = UnreachableError(f"the memcli server at {url} is rate limiting this token (HTTP 429): "
                               f"{message or 'retry later'}")
    else:
        err = UnreachableError(f"the memcli server at {url} answered HTTP {status}: {message or code or 'error'}")
    err.http_status = status
    err.code = code or err.code
    return err


def _http(host: str, port: int, method: str, target: str, headers: dict[str, str], body: bytes | None,
          timeout: float, tls: bool = False) -> tuple[int, bytes]:
    """One request (``Connection: close``) → (status, body). OSError for anything but a whole HTTP answer."""
    hostport = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    head = [f"{method} {target} HTTP/1.1", f"Host: {hostport}", "Connection: close",
            f"Content-Length: {len(body or b'')}", *(f"{k}: {v}" for k, v in headers.items())]
    try:
        raw_sock = _connect(host, port, timeout, tls)
    except OSError as exc:  # nothing was sent: refused, unreachable, timed out connecting
        not_sent = _NotSent(f"{type(exc).__name__}: {exc}")
        not_sent.refused = isinstance(exc, ConnectionRefusedError)
        raise not_sent from None
    try:
        sock = raw_sock
        if tls:  # only then: ssl costs ~10 ms to import
            import ssl

            sock = ssl.create_default_context().wrap_socket(raw_sock, server_hostname=host)
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("utf-8") + (body or b""))
        chunks = []
        while True:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
    finally:
        raw_sock.close()
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


def _connect(host: str, port: int, timeout: float, tls: bool) -> Any:
    """A connected TCP socket. The home's server (a numeric loopback address) is reached with the C socket
    module alone: ``socket`` and its name resolution (``encodings.idna``) cost the CLI's hot path ~5 ms."""
    if host in ("127.0.0.1", "::1") and not tls:
        import _socket

        sock = _socket.socket(_socket.AF_INET6 if ":" in host else _socket.AF_INET, _socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect((host, port))
        except BaseException:
            sock.close()
            raise
        return sock
    import socket

    return socket.create_connection((host, port), timeout=timeout)


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
                      merged_from=list(d.get("merged_from") or []), superseded_by=d.get("superseded_by"),
                      outdated_by=d.get("outdated_by"), updates=list(d.get("updates") or []))
    except (KeyError, TypeError, AttributeError):
        raise Unavailable("the server's answer is not a memory") from None


def _hit(d: Any) -> RecallHit:
    """A RecallHit from its JSON item (the rounded score; the raw signals are in ``explain`` when asked)."""
    try:
        relation = {k: d[k] for k in ("relation", "reason", "differences") if k in d} or None
        rel = (d.get("explain") or {}).get("relevance")  # the hit's own relevance, when explained
        return RecallHit(memory=_memory(d), score=float(d["score"]), explain=d.get("explain"), relation=relation,
                         relevance=float(rel) if rel is not None else None)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise Unavailable("the server's answer is not a recall hit") from None
