"""The hook client: JSON on stdin → the warm server → ``hookSpecificOutput`` on stdout → exit 0.

This module runs in a fresh interpreter for every hook event, so it imports **only the standard library**
and as little of it as possible (no ``json``, no ``http.client`` on the hot path: a raw HTTP/1.1 request on a
socket costs nothing to import). It never exits non-zero and never prints anything but the server's answer:
every failure is one line in ``<home>/logs/hooks.log``.

Settings, each first found wins (the same as :func:`memcli.config.load_config`):

- home: ``MEMCLI_HOME``, else the platform's user data dir (``$XDG_DATA_HOME/memcli`` or
  ``~/.local/share/memcli`` on Linux, ``~/Library/Application Support/memcli`` on macOS);
- port: ``MEMCLI_PORT``, else ``<home>/server.json`` (``"port"``), else ``port`` under ``[server]`` in
  ``<home>/config.toml``, else 8765; token: ``MEMCLI_TOKEN``, else ``server.json``, else ``[server] token``;
- deadline: ``MEMCLI_HOOK_DEADLINE_MS``, else ``deadline_ms`` under ``[hooks]``, else 1500 ms.
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
MAX_STDIN = 16 * 1024 * 1024


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


def _read_server_json(home: str) -> dict[str, str]:
    """``port`` and ``token`` from ``<home>/server.json``."""
    data_b = _read(os.path.join(home, "server.json"))
    if not data_b:
        return {}
    try:
        raw = data_b.decode("utf-8")
    except UnicodeDecodeError:
        return {}
    port = _int_after(raw, '"port"')
    if port is not None and '"token"' not in raw:
        return {"port": str(port)}  # the common case, without importing json (~10 ms)
    try:
        import json

        data = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    out = {}
    for k in ("port", "token"):
        if data.get(k) not in (None, ""):
            out[k] = str(data[k])
    return out


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


def _read_config(home: str) -> dict[str, dict]:
    """The ``[server]`` and ``[hooks]`` tables of ``<home>/config.toml`` (tomllib only if needed)."""
    raw = _read(os.path.join(home, "config.toml"))
    if not raw:
        return {}
    if b"port" not in raw and b"token" not in raw and b"deadline_ms" not in raw:
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
    return {k: v for k, v in data.items() if k in ("server", "hooks") and isinstance(v, dict)}


class Settings:
    """Where the server is and how long the hook may wait for it."""

    def __init__(self, home: str, port: int, token: str | None, deadline_ms: int) -> None:
        self.home, self.port, self.token, self.deadline_ms = home, port, token, deadline_ms


def resolve_settings(env: "os._Environ[str] | dict[str, str]" = os.environ) -> Settings:
    home = resolve_home(env)
    port_s, token = env.get("MEMCLI_PORT"), env.get("MEMCLI_TOKEN") or None
    deadline_s = env.get("MEMCLI_HOOK_DEADLINE_MS")
    if not port_s or not token:
        sj = _read_server_json(home)
        port_s = port_s or sj.get("port")
        token = token or sj.get("token")
    cfg: dict[str, dict] | None = None
    if not port_s or not token or not deadline_s:
        cfg = _read_config(home)
        port_s = port_s or cfg.get("server", {}).get("port")
        token = token or cfg.get("server", {}).get("token") or None
        deadline_s = deadline_s or cfg.get("hooks", {}).get("deadline_ms")
    try:
        port = int(port_s) if port_s else DEFAULT_PORT
    except (TypeError, ValueError):
        port = DEFAULT_PORT
    try:
        deadline = int(deadline_s) if deadline_s else DEFAULT_DEADLINE_MS
    except (TypeError, ValueError):
        deadline = DEFAULT_DEADLINE_MS
    return Settings(home, port, str(token) if token else None, max(50, deadline))


# --------------------------------------------------------------------------- HTTP over a raw socket
class ServerDown(Exception):
    """Nothing listens on the port (connection refused)."""


class Timeout(Exception):
    """The deadline passed."""


def http(port: int, method: str, path: str, body: bytes, token: str | None, deadline: float) -> tuple[int, bytes]:
    """One HTTP/1.1 request to 127.0.0.1:port that never outlives ``deadline`` (a monotonic time)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise Timeout("deadline passed before connecting")
    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        sock.settimeout(remaining)
        sock.connect(("127.0.0.1", port))
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
        head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: memcli-hook\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n")
        if token:
            head += f"Authorization: Bearer {token}\r\n"
        sock.sendall(head.encode("latin-1") + b"\r\n" + body)
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
def spool(home: "str | os.PathLike[str]", data: bytes) -> str:
    """Queue a payload for the server (atomic: write a temp file, then rename). Returns its path."""
    d = os.path.join(home, "spool")
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


def start_server(s: Settings) -> bool:
    """Start ``memcli serve`` detached (unless another hook just did). Returns True when it started one."""
    state = os.path.join(s.home, "hooks-state")
    stamp = os.path.join(state, "server-start.stamp")
    try:
        if time.time() - os.stat(stamp).st_mtime < START_GRACE_S:
            return False
    except OSError:
        pass
    import subprocess

    logs = os.path.join(s.home, "logs")
    os.makedirs(state, exist_ok=True)
    os.makedirs(logs, exist_ok=True)
    with open(stamp, "w", encoding="utf-8") as fh:
        fh.write(str(time.time()))
    cmd = [sys.executable, "-m", "memcli.cli", "serve", "--port", str(s.port),
           "--idle-timeout", os.environ.get("MEMCLI_HOOK_IDLE_TIMEOUT", str(IDLE_TIMEOUT_S))]
    with open(os.path.join(logs, "server.log"), "ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True, cwd=s.home)
    with open(os.path.join(state, "server.pid"), "w", encoding="utf-8") as fh:
        fh.write(str(proc.pid))
    log(s.home, f"started the server: pid {proc.pid}, port {s.port}")
    return True


def wait_healthy(s: Settings, deadline: float) -> bool:
    while time.monotonic() < deadline - 0.05:
        try:
            status, _ = http(s.port, "GET", "/health", b"", s.token, min(deadline, time.monotonic() + 0.3))
            if status == 200:
                return True
        except (ServerDown, Timeout, OSError):
            pass
        time.sleep(0.05)
    return False


# --------------------------------------------------------------------------- the hook
def event_deadline_ms(event: str, base_ms: int) -> int:
    """UserPromptSubmit: the configured deadline (1.5 s); SessionStart: twice that; Stop (an async hook):
    at least 4 s before the payload is spooled instead; SessionEnd (1.5 s for every plugin): 0.5 s at most."""
    if event == "SessionStart":
        return 2 * base_ms
    if event == "Stop":
        return max(base_ms, 4000)
    if event == "SessionEnd":
        return min(base_ms, 500)
    return base_ms


def run(event: str, data: bytes, s: Settings, t0: float) -> bytes:
    """Forward one payload; returns what to print (possibly nothing)."""
    budget_ms = event_deadline_ms(event, s.deadline_ms)
    deadline = t0 + budget_ms / 1000.0
    path = f"/hooks/{event}"
    try:
        try:
            status, body = http(s.port, "POST", path, data, s.token, deadline)
        except ServerDown:
            if event == "Stop":
                spool(s.home, data)
                start_server(s)
                log(s.home, "Stop: server down; turn spooled, server started")
                return b""
            if event == "SessionEnd":
                if spool_pending(s.home):
                    start_server(s)
                return b""
            start_server(s)
            if not wait_healthy(s, deadline):
                log(s.home, f"{event}: server not running; started it, nothing injected this time")
                return b""
            status, body = http(s.port, "POST", path, data, s.token, deadline)
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
