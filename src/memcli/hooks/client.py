"""The hook client: JSON on stdin → this home's warm server → ``hookSpecificOutput`` on stdout → exit 0.

This module runs in a fresh interpreter for every hook event, so it imports **only the standard library**
and as little of it as possible (no ``json``, no ``http.client`` on the hot path: a raw HTTP/1.1 request on a
socket costs nothing to import). It never exits non-zero and never prints anything but the server's answer:
every failure is one line in ``<home>/logs/hooks.log``.

It only talks to a server of its own home, and proves it on every request: the bearer token and the home id
of ``<home>/auth.json`` (see :mod:`memcli.home`) go with it, and a server of another home refuses (401 or
421 ``wrong_home``) without reading or writing anything. Such a refusal, like no server at all, means "no
server of mine": the client starts this home's own (on another free port if the usual one is taken), which
records its port in ``<home>/server.json``, and waits for it within the hook's budget.

Settings, each first found wins (the same as :func:`memcli.config.load_config`):

- home: ``MEMCLI_HOME``, else the platform's user data dir (``$XDG_DATA_HOME/memcli`` or
  ``~/.local/share/memcli`` on Linux, ``~/Library/Application Support/memcli`` on macOS);
- the server: the port in ``<home>/server.json`` while its process runs, then ``MEMCLI_PORT``; a server it
  starts listens on ``MEMCLI_PORT``, else ``port`` under ``[server]`` in ``<home>/config.toml``, else 8765
  (any free port when that one is taken);
- token: ``MEMCLI_TOKEN``, else ``[server] token``, else ``<home>/auth.json``; home id: ``auth.json``;
- deadline: ``MEMCLI_HOOK_DEADLINE_MS``, else ``deadline_ms`` under ``[hooks]``, else 1500 ms.

Team mode: with ``MEMCLI_API_URL`` (else ``api_url`` in ``config.toml``) the hook talks to that server only —
http:// or https:// (``ssl`` is imported then, ~10 ms), with ``MEMCLI_API_TOKEN`` (else ``api_token``) — and
never starts a local one; when the server does not answer in time the hook prints nothing and exits 0.
"""

from __future__ import annotations

import os
import sys
import time

import _socket  # the C module: `socket` would import enum, selectors… (~10 ms)

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
DEFAULT_PORT = 8765
DEFAULT_DEADLINE_MS = 1500
IDLE_TIMEOUT_S = 1800
START_GRACE_S = 20.0  # another hook started the server less than this ago: do not start a second one
SESSION_START_WAIT_MS = 8000  # hooks.json gives SessionStart 10 s: most of it may go to a cold server
MAX_STDIN = 16 * 1024 * 1024
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def default_home(env: "os._Environ[str] | dict[str, str]" = os.environ) -> str:
    """platformdirs' ``user_data_dir("memcli", appauthor=False)``, computed with the standard library
    (no pathlib either: it costs ~8 ms of imports)."""
    if sys.platform == "darwin":
        return os.path.join(os.path.expanduser("~/Library/Application Support"), "memcli")
    if sys.platform.startswith("win"):  # pragma: no cover - hooks need sh anyway
        base = env.get("LOCALAPPDATA") or os.path.expanduser("~/AppData/Local")
        return os.path.join(base, "memcli")
    base = env.get("XDG_DATA_HOME", "")
    if not base.strip():
        base = os.path.expanduser("~/.local/share")
    return os.path.join(base, "memcli")


def resolve_home(env: "os._Environ[str] | dict[str, str]" = os.environ) -> str:
    return os.path.expanduser(env.get("MEMCLI_HOME") or default_home(env))


# --------------------------------------------------------------------------- logging (fail open, one line)
def log(home: "str | os.PathLike[str]", message: str, who: str = "client") -> None:
    """One line in ``<home>/logs/hooks.log``; never raises (a full disk must not break the hook)."""
    try:
        d = os.path.join(home, "logs")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "hooks.log")
        try:
            if os.stat(path).st_size > 1_000_000:
                os.replace(path, os.path.join(d, "hooks.log.1"))
        except OSError:
            pass
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        line = f"{stamp} {who}[{os.getpid()}] {' '.join(str(message).split())[:500]}\n"
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line)
    except Exception:  # noqa: BLE001
        pass


# --------------------------------------------------------------------------- settings
def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def _read_server_json(home: str) -> dict[str, int]:
    """``port`` and ``pid`` from ``<home>/server.json`` (written by this home's running server)."""
    data_b = _read(os.path.join(home, "server.json"))
    if not data_b:
        return {}
    try:
        raw = data_b.decode("utf-8")
    except UnicodeDecodeError:
        return {}
    port, pid = _int_after(raw, '"port"'), _int_after(raw, '"pid"')
    if port is None:
        try:  # an unusual layout: the real parser (~10 ms of imports, off the common path)
            import json

            data = json.loads(raw)
            port, pid = int(data["port"]), int(data.get("pid") or 0) or None
        except (ValueError, TypeError, KeyError, AttributeError):
            return {}
    return {"port": port, "pid": pid} if pid else {"port": port}


def _int_after(raw: str, key: str) -> int | None:
    """The integer after ``"key":`` in a flat JSON object, or None."""
    i = raw.find(key)
    if i < 0 or raw.count(key) != 1:
        return None
    rest = raw[i + len(key):].lstrip()
    if not rest.startswith(":"):
        return None
    rest = rest[1:].lstrip()
    digits = ""
    for c in rest:
        if not c.isdigit():
            break
        digits += c
    tail = rest[len(digits):].lstrip()[:1]
    return int(digits) if digits and tail in (",", "}") else None


def _str_after(raw: str, key: str) -> str | None:
    """The string after ``"key":`` in a flat JSON object when it needs no unescaping (ids, tokens)."""
    i = raw.find(key)
    if i < 0 or raw.count(key) != 1:
        return None
    rest = raw[i + len(key):].lstrip()
    if not rest.startswith(":"):
        return None
    rest = rest[1:].lstrip()
    if not rest.startswith('"'):
        return None
    end = rest.find('"', 1)
    value = rest[1:end] if end > 0 else ""
    return value if len(value) >= 8 and set(value) <= _SAFE else None


def read_auth(home: str) -> tuple[str | None, str | None]:
    """(home_id, token) from ``<home>/auth.json`` (made by the home's server: :mod:`memcli.home`)."""
    data_b = _read(os.path.join(home, "auth.json"))
    if not data_b:
        return None, None
    try:
        raw = data_b.decode("utf-8")
    except UnicodeDecodeError:
        return None, None
    return _str_after(raw, '"home_id"'), _str_after(raw, '"token"')


def pid_alive(pid: int | None) -> bool:
    """Does this process run (and is it ours)? Unknown pid: assume yes."""
    if not pid:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process: not our server
    except OSError:
        return True
    return True


def _read_config(home: str) -> dict[str, dict]:
    """The ``[server]`` and ``[hooks]`` tables of ``<home>/config.toml`` (tomllib only if needed)."""
    raw = _read(os.path.join(home, "config.toml"))
    if not raw:
        return {}
    if b"port" not in raw and b"token" not in raw and b"deadline_ms" not in raw and b"api_url" not in raw:
        return {}
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            return {}
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except Exception:  # noqa: BLE001 - a broken config is the server's business to report
        return {}
    out = {k: v for k, v in data.items() if k in ("server", "hooks") and isinstance(v, dict)}
    out["team"] = {k: data[k] for k in ("api_url", "api_token") if isinstance(data.get(k), str)}
    return out


def _port(value: object) -> int | None:
    try:
        port = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None
    return port if 0 < port < 65536 else None


class Settings:
    """This home, how to reach its server and prove who we are, and how long the hook may wait."""

    def __init__(self, home: str, port: int | None, token: str | None, deadline_ms: int, *,
                 home_id: str | None = None, env_port: int | None = None, start_port: int = DEFAULT_PORT,
                 token_from_home: bool = False) -> None:
        self.home, self.port, self.token, self.deadline_ms = home, port, token, deadline_ms
        self.home_id = home_id
        self.env_port = env_port  # MEMCLI_PORT: where this home's server is expected, or is to be started
        self.start_port = start_port
        self.token_from_home = token_from_home  # re-read after this hook starts the server (first start)
        self.api_url: str | None = None  # team mode: (tls, host, port, path prefix) of the team server
        self.api_token: str | None = None

    def candidates(self) -> list[int]:
        """Ports to try, best first: the running server's own record, then MEMCLI_PORT."""
        out = [p for p in (self.port, self.env_port) if p is not None]
        return out[:1] if len(out) == 2 and out[0] == out[1] else out

    def refresh(self) -> None:
        """Read auth.json and server.json again (a server this hook started writes them)."""
        home_id, token = read_auth(self.home)
        self.home_id = home_id or self.home_id
        if self.token_from_home or not self.token:
            self.token = token or self.token
            self.token_from_home = True
        sj = _read_server_json(self.home)
        self.port = sj.get("port") if sj and pid_alive(sj.get("pid")) else None


def resolve_settings(env: "os._Environ[str] | dict[str, str]" = os.environ) -> Settings:
    home = resolve_home(env)
    env_port = _port(env.get("MEMCLI_PORT"))
    token = env.get("MEMCLI_TOKEN") or None
    deadline_s = env.get("MEMCLI_HOOK_DEADLINE_MS")
    api_url = env.get("MEMCLI_API_URL") or None
    api_token = env.get("MEMCLI_API_TOKEN") or None
    cfg = _read_config(home) if (not token or not deadline_s or env_port is None or not api_url) else {}
    start_port = env_port or _port(cfg.get("server", {}).get("port")) or DEFAULT_PORT
    token = token or cfg.get("server", {}).get("token") or None
    deadline_s = deadline_s or cfg.get("hooks", {}).get("deadline_ms")
    try:
        deadline = int(deadline_s) if deadline_s else DEFAULT_DEADLINE_MS
    except (TypeError, ValueError):
        deadline = DEFAULT_DEADLINE_MS
    s = Settings(home, None, str(token) if token else None, max(50, deadline), env_port=env_port,
                 start_port=start_port)
    team = cfg.get("team", {})
    s.api_url = api_url or team.get("api_url")
    if s.api_url:  # team mode: nothing of this home's own server is needed
        s.api_token = api_token or team.get("api_token")
        return s
    s.refresh()
    return s


def split_url(url: str) -> tuple[bool, str, int, str]:
    """``http(s)://host[:port][/prefix]`` → (tls, host, port, prefix), without urllib (~5 ms of imports)."""
    scheme, sep, rest = url.strip().partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        raise ValueError(f"not an http(s) URL: {url!r}")
    tls = scheme.lower() == "https"
    hostport, slash, path = rest.partition("/")
    host, port = hostport, 443 if tls else 80
    if hostport.startswith("["):
        end = hostport.find("]")
        host = hostport[1:end]
        if hostport[end + 1:end + 2] == ":":
            port = int(hostport[end + 2:])
    elif ":" in hostport:
        host, p = hostport.rsplit(":", 1)
        port = int(p)
    if not host:
        raise ValueError(f"no host in {url!r}")
    return tls, host, port, ("/" + path).rstrip("/") if slash else ""


# --------------------------------------------------------------------------- HTTP over a raw socket
class ServerDown(Exception):
    """Nothing listens on the port (connection refused)."""


class Timeout(Exception):
    """The deadline passed."""


def http(port: int, method: str, path: str, body: bytes, token: str | None, deadline: float,
         home_id: str | None = None, host: str = "127.0.0.1", tls: bool = False) -> tuple[int, bytes]:
    """One HTTP/1.1 request to host:port (this machine's server by default) that never outlives ``deadline``
    (a monotonic time)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise Timeout("deadline passed before connecting")
    if host == "127.0.0.1":
        sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    else:  # a team server: any address family, by name (the socket module only then)
        import socket as _sockmod

        family, kind, proto, _, addr = _sockmod.getaddrinfo(host, port, type=_sockmod.SOCK_STREAM)[0]
        sock = _socket.socket(family, kind, proto)
    try:
        sock.settimeout(remaining)
        sock.connect(("127.0.0.1", port) if host == "127.0.0.1" else addr)
        if tls:
            import ssl

            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
    except ConnectionRefusedError as exc:
        sock.close()
        raise ServerDown(str(exc)) from None
    except TimeoutError:
        sock.close()
        raise Timeout("connect timed out") from None
    except BaseException:
        sock.close()
        raise
    try:
        head = (f"{method} {path} HTTP/1.1\r\nHost: {f'[{host}]' if ':' in host else host}:{port}\r\n"
                f"User-Agent: memcli-hook\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n")
        if token:
            head += f"Authorization: Bearer {token}\r\n"
        if home_id:
            head += f"X-Memcli-Home: {home_id}\r\n"
        sock.sendall(head.encode("utf-8") + b"\r\n" + body)  # a token is sent as its UTF-8 bytes
        chunks = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout("no complete answer before the deadline")
            sock.settimeout(remaining)
            try:
                data = sock.recv(65536)
            except TimeoutError:
                raise Timeout("no complete answer before the deadline") from None
            if not data:
                break
            chunks.append(data)
            resp = b"".join(chunks)
            done = _complete(resp)
            if done is not None:
                return done
        resp = b"".join(chunks)
        done = _complete(resp, eof=True)
        if done is None:
            raise OSError("malformed HTTP answer")
        return done
    finally:
        sock.close()


def _complete(resp: bytes, eof: bool = False) -> tuple[int, bytes] | None:
    """(status, body) once ``resp`` holds a whole HTTP answer, else None."""
    end = resp.find(b"\r\n\r\n")
    if end < 0:
        return None
    head, body = resp[:end].decode("latin-1"), resp[end + 4:]
    lines = head.split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise OSError("not an HTTP answer")
    status = int(parts[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        n = int(headers["content-length"])
        return (status, body[:n]) if len(body) >= n else None
    if headers.get("transfer-encoding", "").lower() == "chunked":
        out, pos = b"", 0
        while True:
            nl = body.find(b"\r\n", pos)
            if nl < 0:
                return None
            size = int(body[pos:nl].split(b";")[0] or b"0", 16)
            if size == 0:
                return status, out
            if len(body) < nl + 2 + size + 2:
                return None
            out += body[nl + 2:nl + 2 + size]
            pos = nl + 2 + size + 2
    if status in (204, 304) or 100 <= status < 200:
        return status, b""
    return (status, body) if eof else None


# --------------------------------------------------------------------------- spool and server start
def spool(home: "str | os.PathLike[str]", data: bytes, sub: str = "spool") -> str:
    """Queue a payload for the server (atomic: write a temp file, then rename). Returns its path."""
    d = os.path.join(home, sub)
    os.makedirs(d, exist_ok=True)
    name = f"{time.time_ns() // 1_000_000}-{os.urandom(4).hex()}.json"
    tmp = os.path.join(d, f".{name}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    final = os.path.join(d, name)
    os.replace(tmp, final)
    return final


def spool_pending(home: "str | os.PathLike[str]") -> bool:
    try:
        return any(n.endswith(".json") and not n.startswith(".") for n in os.listdir(os.path.join(home, "spool")))
    except OSError:
        return False


def port_taken(port: int) -> bool:
    """Does something listen on 127.0.0.1:port? (A bare connect: nothing is sent to it.)"""
    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        sock.settimeout(0.2)
        sock.connect(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        sock.close()


def start_server(s: Settings, port: int | None = None) -> bool:
    """Start this home's ``memcli serve`` detached (unless another hook just did), on ``port``, else the
    usual port when it is free, else any free one. Returns True when it started one."""
    state = os.path.join(s.home, "hooks-state")
    stamp = os.path.join(state, "server-start.stamp")
    try:
        if time.time() - os.stat(stamp).st_mtime < START_GRACE_S:
            return False
    except OSError:
        pass
    logs = os.path.join(s.home, "logs")
    os.makedirs(state, exist_ok=True)  # fails (fail open) when the home is not a usable directory
    os.makedirs(logs, exist_ok=True)
    if port is None:
        port = 0 if port_taken(s.start_port) else s.start_port
    import subprocess

    with open(stamp, "w", encoding="utf-8") as fh:
        fh.write(str(time.time()))
    cmd = [sys.executable, "-m", "memcli.cli", "serve", "--port", str(port),
           "--idle-timeout", os.environ.get("MEMCLI_HOOK_IDLE_TIMEOUT", str(IDLE_TIMEOUT_S))]
    with open(os.path.join(logs, "server.log"), "ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True, cwd=s.home)
    with open(os.path.join(state, "server.pid"), "w", encoding="utf-8") as fh:
        fh.write(str(proc.pid))
    log(s.home, f"started the server: pid {proc.pid}, port {port or 'any free one'}")
    return True


def wait_own_server(s: Settings, deadline: float) -> int | None:
    """The port of this home's server once it answers ``/health`` as this home's, or None at the deadline."""
    while time.monotonic() < deadline - 0.05:
        s.refresh()
        if s.port is not None and s.home_id and s.token:
            try:
                status, body = http(s.port, "GET", "/health", b"", s.token, min(deadline, time.monotonic() + 0.3),
                                    s.home_id)
                # the id is in the answer only when our token was accepted and the home is ours
                if status == 200 and s.home_id.encode() in body:
                    return s.port
            except (ServerDown, Timeout, OSError):
                pass
        time.sleep(0.05)
    return None


# --------------------------------------------------------------------------- the hook
def event_deadline_ms(event: str, base_ms: int) -> int:
    """How long the hook may take, from its start. UserPromptSubmit: the configured deadline (1.5 s).
    SessionStart: most of the 10 s hooks.json gives it — a server that is cold (started by this hook or by
    another a moment ago) opens the store and loads the model first, seconds on a busy machine, and the
    session's first digest is worth the wait. Stop (an async hook): at least 4 s before the payload is spooled
    instead. SessionEnd (1.5 s for every plugin): 0.5 s at most."""
    if event == "SessionStart":
        return max(2 * base_ms, SESSION_START_WAIT_MS)
    if event == "Stop":
        return max(base_ms, 4000)
    if event == "SessionEnd":
        return min(base_ms, 500)
    return base_ms


def _ask_own_server(event: str, data: bytes, s: Settings, deadline: float) -> tuple[int, bytes] | None:
    """The answer of a running server of this home, or None when none answers as ours. Only ports this home
    recorded (server.json) or was told (MEMCLI_PORT) are tried, and only with the home's id: without one (no
    server of this home ever ran) nothing is sent anywhere."""
    if not s.home_id:
        return None
    for port in s.candidates():
        try:
            status, body = http(port, "POST", f"/hooks/{event}", data, s.token, deadline, s.home_id)
        except ServerDown:
            continue
        if status in (401, 421):
            log(s.home, f"{event}: the server on port {port} is not this home's (HTTP {status}); using our own")
            continue
        s.port = port
        return status, body
    return None


def run(event: str, data: bytes, s: Settings, t0: float) -> bytes:
    """Forward one payload; returns what to print (possibly nothing)."""
    budget_ms = event_deadline_ms(event, s.deadline_ms)
    deadline = t0 + budget_ms / 1000.0
    if s.api_url:
        from memcli.hooks.team_client import run_team  # team mode only: not parsed by a local hook

        return run_team(event, data, s, deadline)
    try:
        answer = _ask_own_server(event, data, s, deadline)
        if answer is None:
            # No server of this home answers: start it. A free MEMCLI_PORT is where it is expected.
            port = None if s.env_port is None else 0 if port_taken(s.env_port) else s.env_port
            if event == "Stop":
                spool(s.home, data)
                start_server(s, port)
                log(s.home, "Stop: no server of this home; turn spooled, server started")
                return b""
            if event == "SessionEnd":
                if spool_pending(s.home):
                    start_server(s, port)
                return b""
            start_server(s, port)
            own = wait_own_server(s, deadline)
            if own is None:
                log(s.home, f"{event}: no server of this home yet; started it, nothing injected this time")
                return b""
            answer = http(own, "POST", f"/hooks/{event}", data, s.token, deadline, s.home_id)
        status, body = answer
    except (Timeout, ServerDown, OSError) as exc:
        if event == "Stop":
            spool(s.home, data)  # the server may still finish it: captures are idempotent
            log(s.home, f"Stop: no answer ({type(exc).__name__}: {exc}); turn spooled")
        else:
            log(s.home, f"{event}: no answer within {budget_ms} ms ({type(exc).__name__}: {exc})")
        return b""
    if status == 200 and body.lstrip()[:1] == b"{" and (b'"hookSpecificOutput"' in body or b'"systemMessage"' in body):
        return body
    if status not in (200, 202, 204):
        log(s.home, f"{event}: server answered HTTP {status}: {body[:200]!r}")
        if event == "Stop" and status != 400:
            spool(s.home, data)
    return b""


def main(argv: list[str] | None = None) -> None:
    """Entry point: always exits 0."""
    t0 = time.monotonic()
    argv = sys.argv if argv is None else argv
    home = None
    out = b""
    try:
        os.umask(0o077)  # the spool, logs and a server started from here are this user's alone
        s = resolve_settings()
        home = s.home
        event = argv[1] if len(argv) > 1 else ""
        if event in ("Stop", "SessionEnd"):
            # Claude Code signals async hooks when it exits (the last turn of `claude -p`, a session's end):
            # finish queueing the turn anyway. `_signal` is built in: no import cost.
            import _signal

            for sig in (_signal.SIGTERM, _signal.SIGHUP, _signal.SIGINT):
                _signal.signal(sig, _signal.SIG_IGN)
        if event not in EVENTS:
            log(home, f"unknown hook event {event!r}; expected one of {', '.join(EVENTS)}")
        else:
            data = b"" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read(MAX_STDIN + 1)
            if not data.strip()[:1] == b"{" or len(data) > MAX_STDIN:
                log(home, f"{event}: stdin is not a JSON object ({len(data)} bytes); nothing done")
            else:
                out = run(event, data, s, t0)
    except BaseException as exc:  # noqa: BLE001 - fail open, always
        try:
            log(home or resolve_home(), f"hook failed: {type(exc).__name__}: {exc}")
        except BaseException:  # noqa: BLE001
            pass
        out = b""
    try:
        if out:
            sys.stdout.buffer.write(out.rstrip(b"\n") + b"\n")
        sys.stdout.flush()
    except BaseException:  # noqa: BLE001
        pass
    os._exit(0)


if __name__ == "__main__":  # `python -S <path>/client.py <Event>`: the launcher's fast path
    main()
