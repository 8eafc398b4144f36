"""The leanest route of the CLI's fast path: the call sent to this home's warm server with the hooks' raw
transport (:mod:`memcli.hooks.transport`), and the answer printed as the typer app would print it, without
memcli.config, memcli.models or memcli.team.remote (their dataclasses, pathlib and typing cost ~60 ms a process).

It takes a command only when everything it needs is plain, and otherwise hands it on (None) to
:func:`memcli.cli.fast.run`'s full client, which decides as the typer app does:

- the environment's MEMCLI_ settings are plain (see CONFIG_ENV: no token of its own, no team server…);
- the home's config.toml is absent, or is the one the full client last read and validated (it leaves a note
  of the file's size and time and of the values that matter here: ``<home>/hooks-state/cli-config``);
- the server of ``server.json`` runs and has proven it is this home's: ``hooks-state/verified``, which the
  full client and the hooks write after a proof, holds the mark of that very process
  (:func:`memcli.proof.verified_mark`: not of an earlier server whose pid a later process got);
- no value needs the client's own parsing (--since, --until, --metadata) and forget names one id.

Its answers are rebuilt with the same fields and defaults as :class:`memcli.models.Memory`'s ``item()`` after
:mod:`memcli.team.remote`'s parsing; tests/test_cli_fast.py compares both routes on the same command lines.
"""

from __future__ import annotations

import json
import os
import sys
import time

TYPE_CHECKING = False  # typing costs ~5 ms of a process that lives ~60 ms
if TYPE_CHECKING:
    from typing import Any

from memcli.hooks import transport
from memcli.proof import VERIFIED, verified_mark

CONFIG_NOTE = ("hooks-state", "cli-config")  # what the full client found valid in config.toml


def converts(conv: Any, value: str) -> bool:
    """Does ``conv(value)`` succeed (int, float…)?"""
    try:
        conv(value)
    except ValueError:
        return False
    return True


def _int(value: str) -> bool:
    return converts(int, value)


# The variables memcli.config.load_config reads (its _ENV_MAP and MNEMO_ENV), and which values of them it accepts without a
# ConfigError and without changing how this client reaches the home's server; any other value (a token of its
# own, a team server, a store URI to validate…) hands the command on. Other MEMCLI_ variables it ignores.
CONFIG_ENV: dict[str, Any] = {
    "MEMCLI_NAMESPACE": lambda v: True, "MEMCLI_AGENT": lambda v: True,  # checked with the file's values
    "MEMCLI_STORAGE_URI": None, "MEMCLI_STORE_URI": None, "MEMCLI_SINGLE_WRITER": lambda v: True,
    "MEMCLI_AUTOSTART": lambda v: True, "MEMCLI_EMBEDDER": lambda v: v in ("local", "openai", "jina", "hash"),
    "MEMCLI_EMBED_BASE_URL": lambda v: True, "MEMCLI_EMBED_MODEL": lambda v: True, "MEMCLI_EMBED_DIMS": _int,
    "MEMCLI_EMBED_API_KEY": lambda v: True, "MEMCLI_PORT": _int, "MEMCLI_TOKEN": lambda v: True, "MEMCLI_API_URL": None,
    "MEMCLI_API_TOKEN": lambda v: True, "MEMCLI_RATE_LIMIT": None, "MEMCLI_RATE_BURST": None,
    "MEMCLI_IP_RATE_LIMIT": None, "MEMCLI_IP_RATE_BURST": None,
    # seed 002's names (memcli.config.MNEMO_ENV): the same as their MEMCLI_ twins (a team server hands on)
    "MNEMO_API_URL": None, "MNEMO_API_TOKEN": lambda v: True, "MNEMO_EMBED_API_KEY": lambda v: True,
    "MNEMO_EMBED_BASE_URL": lambda v: True, "MNEMO_EMBED_MODEL": lambda v: True, "MNEMO_EMBED_DIMS": _int,
}
REQUEST_ERRORS = frozenset({"invalid_input", "not_found", "ambiguous_id", "version_conflict", "conflict",
                            "invalid_transition"})  # memcli.team.remote's: the same answer whoever computes it
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:@/+-")
GET_TIMEOUT, WRITE_TIMEOUT = 30.0, 600.0  # as memcli.team.remote's Endpoint.timeout and WRITE_TIMEOUT


class Failed(Exception):
    """A MemcliError the typer app would print: (message, code)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message, self.code = message, code


def json_wanted(flag: bool) -> bool:
    """Whether a command prints JSON: `--json` (``flag``), `MEMCLI_JSON=1`/`0`, else when stdout is not a
    terminal (the typer app's :func:`memcli.cli.context.use_json` too)."""
    forced = os.environ.get("MEMCLI_JSON")
    if flag or forced == "1":
        return True
    if forced == "0":
        return False
    return not sys.stdout.isatty()


def config_fingerprint(path: str) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_mtime_ns} {st.st_size}"


def note_config(home: str, fingerprint: str, namespace: str, agent: str | None, token: str | None,
                plain: bool) -> None:
    """Called by the full client after config.toml was read and validated (``plain``: no team server; ``token``:
    the file's own [server] token). Never raises: the note only saves time."""
    try:
        path = os.path.join(home, *CONFIG_NOTE)
        os.makedirs(os.path.dirname(path), exist_ok=True, mode=0o700)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"fingerprint": fingerprint, "namespace": namespace, "agent": agent, "token": token,
                       "plain": plain}, fh)
        os.replace(tmp, path)
    except OSError:
        pass


def current_note(home: str, fingerprint: str) -> dict[str, Any] | None:
    """The full client's note of config.toml when it is of the file as it is now (``fingerprint``), else None."""
    raw = transport.read_file(os.path.join(home, *CONFIG_NOTE))
    try:
        note = json.loads(raw) if raw else None
    except ValueError:
        return None
    return note if isinstance(note, dict) and note.get("fingerprint") == fingerprint else None


def _file_config(home: str) -> dict[str, Any] | None:
    """{"namespace", "agent", "token"} from config.toml as the full client validated it; {} without a file;
    None when the file changed since (or is not plain)."""
    fp = config_fingerprint(os.path.join(home, "config.toml"))
    if fp is None:
        return {}
    note = current_note(home, fp)
    if note is None or note.get("plain") is not True:
        return None
    return {"namespace": note.get("namespace"), "agent": note.get("agent"), "token": note.get("token")}


def _plain_name(value: Any) -> bool:
    """A namespace memcli.models.validate_namespace accepts (ASCII only: anything else is the full client's)."""
    return isinstance(value, str) and 1 <= len(value) <= 128 and value[0].isalnum() and set(value) <= _NAME_CHARS


def detect_project(cwd: str) -> str | None:
    """memcli.project.detect_project with os.path: the git root's name, else the working directory's."""
    p = os.path.realpath(cwd)
    d = p
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return os.path.basename(d) or None
        parent = os.path.dirname(d)
        if parent == d:
            return os.path.basename(p) or None
        d = parent


class Route:
    """This home's proven server, and the caller's namespace, agent and project."""

    def __init__(self, home: str, port: int, token: str, home_id: str | None, namespace: str,
                 agent: str | None, project: str | None) -> None:
        self.home, self.port, self.token, self.home_id = home, port, token, home_id
        self.namespace, self.agent, self.project = namespace, agent, project

    def request(self, method: str, target: str, body: Any = None) -> Any:
        """The JSON answer of a 2xx; Failed for a request error; None to hand the command on (nothing was
        sent, or the server could not answer it)."""
        data = b"" if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        extra = "Accept: application/json\r\n" + ("X-Memcli-Source: cli\r\n" if method != "GET" else "")
        timeout = GET_TIMEOUT if method == "GET" else WRITE_TIMEOUT
        try:
            status, raw = transport.http(self.port, method, target, data, self.token, time.monotonic() + timeout,
                                         home_id=self.home_id, headers=extra)
        except transport.ServerDown:
            return None
        except (OSError, transport.Timeout) as exc:
            if method == "GET":
                return None
            from memcli.errors import UnreachableError

            err = UnreachableError.change_unanswered(
                _VERB.get(method, method), f"{method} {target.split('?')[0]}: {type(exc).__name__}: {exc}")
            raise Failed(err.message, err.code) from None
        try:
            payload = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, ValueError):
            return None
        if 200 <= status < 300:
            return payload
        if isinstance(payload, dict):
            code, message = payload.get("code"), payload.get("error")
            if code in REQUEST_ERRORS and isinstance(message, str) and not message.startswith("no such route"):
                raise Failed(message, code)
        return None


_VERB = {"POST": "remember", "DELETE": "forget", "PATCH": "update"}


def route(home_arg: str | None, namespace: str | None) -> Route | None:
    """The route when everything it needs is plain (see the module's docstring), else None."""
    env = os.environ
    for var, accept in CONFIG_ENV.items():
        value = env.get(var)
        if value and (accept is None or not accept(value)):
            return None
    if home_arg == "":
        return None
    home = os.path.expanduser(home_arg or transport.resolve_home(env))
    cfg = _file_config(home)
    if cfg is None:
        return None
    ns = namespace if namespace is not None else (env.get("MEMCLI_NAMESPACE") or cfg.get("namespace") or "default")
    agent = env.get("MEMCLI_AGENT") or cfg.get("agent") or None
    if not _plain_name(ns) or (agent is not None and not isinstance(agent, str)):
        return None
    sj = transport.read_server_json(home)
    port, pid = sj.get("port"), sj.get("pid")
    if not port or not pid or not 0 < port < 65536 or not transport.pid_alive(pid):
        return None
    mark = verified_mark(port, pid)
    if mark is None or transport.read_file(os.path.join(home, *VERIFIED)) != mark.encode():
        return None  # not proven yet: the full client proves it (and notes it)
    home_id, home_token = transport.read_auth(home)
    # memcli.team.remote.RemoteService.for_home: a token of its own (MEMCLI_TOKEN, [server] token) before the home's;
    # any of them may go to this server: it proved it is this home's (a wrong one is refused like the full client's)
    token = env.get("MEMCLI_TOKEN") or cfg.get("token") or home_token
    if not token or not isinstance(token, str):
        return None
    return Route(home, port, token, home_id, ns, agent, detect_project(os.getcwd()))


# ---------------------------------------------------------------------------- the answers, as item() prints them
def memory_item(d: dict[str, Any]) -> dict[str, Any]:
    """``memcli.team.remote._memory(d).item()``."""
    return {"memory_id": d["memory_id"], "content": d["content"], "tags": list(d.get("tags") or []),
            "scope": d["scope"], "namespace": d["namespace"], "importance": d["importance"], "key": d.get("key"),
            "created_at": d["created_at"], "updated_at": d["updated_at"], "project": d.get("project"),
            "source": d.get("source") or "cli", "expires_at": d.get("expires_at"),
            "version": d.get("version") or 1, "metadata": d.get("metadata") or {}, "thread": d.get("thread"),
            "status": d.get("status") or "active", "merged_from": list(d.get("merged_from") or []),
            "superseded_by": d.get("superseded_by"), "outdated_by": d.get("outdated_by"),
            "updates": list(d.get("updates") or [])}


def hit_item(d: dict[str, Any]) -> dict[str, Any]:
    """``memcli.team.remote._hit(d).item()``."""
    out = memory_item(d)
    out["score"] = round(float(d["score"]), 4)
    if d.get("explain") is not None:
        out["explain"] = d["explain"]
    out.update({k: d[k] for k in ("relation", "reason", "differences") if k in d})
    return out


def _param(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")


def quote(text: str, plus: bool = False) -> str:
    """urllib.parse's ``quote(text, safe="")`` (``quote_plus`` with ``plus``) without its imports."""
    return "".join(chr(b) if b in _UNRESERVED else "+" if plus and b == 32 else f"%{b:02X}"
                   for b in text.encode("utf-8"))


def urlencode(params: list[tuple[str, str]]) -> str:
    """urllib.parse.urlencode of (name, text) pairs."""
    return "&".join(f"{quote(k, True)}={quote(v, True)}" for k, v in params)


def call(r: Route, command: str, o: dict[str, Any], args: list[str]) -> Any:
    """The JSON the typer app prints for this command, or None to hand it on."""
    if command == "recall":
        if o.get("since") or o.get("until") or o.get("as_of"):
            return None  # parsed on the client (memcli.models.parse_time_ms)
        project = o.get("project")
        q: list[tuple[str, Any]] = [
            ("q", args[0]), ("top_k", o["top_k"]), ("namespace", r.namespace), ("scope", o.get("scope")),
            ("agent", o.get("agent")), ("project", project if project is not None else r.project),
            ("project_only", project is not None), ("include_expired", o.get("include_expired", False)),
            ("explain", o.get("explain", False)), ("mode", o["mode"]), ("min_score", o["min_score"] or None),
            ("include_archived", o.get("include_archived") or None)]
        q += [("tag", t) for t in o.get("tag") or ()]
        params = [(k, _param(v)) for k, v in q if v is not None]
        hits = r.request("GET", "/api/search?" + urlencode(params))
        return None if not isinstance(hits, list) else [hit_item(h) for h in hits]
    if command == "get":
        if o.get("all_namespaces"):  # every namespace (not with --namespace: the typer app's usage error)
            if o.get("namespace") is not None:
                return None
            where = [("all_namespaces", "true")]
        else:
            where = [("namespace", r.namespace)]
        d = r.request("GET", "/api/memories/" + quote(args[0]) + "?" + urlencode(where))
        return None if d is None else memory_item(d)
    if command == "remember":
        if o.get("metadata") is not None:
            return None  # validated on the client (memcli.models.validate_metadata)
        scope, agent = o.get("scope"), o.get("agent")
        if scope is None and agent is None:  # memcli.team.remote.RemoteService._own_defaults
            scope, agent = (None, r.agent) if r.agent else ("global", None)
        body = {k: v for k, v in {
            "content": args[0], "tags": list(o["tag"]) if o.get("tag") else None, "scope": scope, "agent": agent,
            "importance": o["importance"], "key": o.get("key"), "ttl": o.get("ttl"), "namespace": r.namespace,
            "project": r.project, "keep_secrets": o.get("keep_secrets") or None}.items() if v is not None}
        d = r.request("POST", "/api/memories", body)
        if d is None:
            return None
        return {"ok": True, "memory_id": d["memory_id"], "duplicate_of": list(d.get("duplicate_of") or []),
                "related": [dict(x) for x in d.get("related") or [] if isinstance(x, dict)],
                "created": bool(d.get("created", True)), "updated": bool(d.get("updated", False))}
    if command == "forget" and len(args) == 1:
        d = r.request("DELETE", "/api/memories/" + quote(args[0]) + "?" + urlencode([("namespace", r.namespace)]))
        if d is None:
            return None
        return {"ok": True, "forgotten": [d["memory_id"]] if isinstance(d, dict) and isinstance(
            d.get("memory_id"), str) else []}
    return None
