"""Plumbing shared by the hook clients (:mod:`memcli.hooks.client` for this home's server,
:mod:`memcli.hooks.team_client` for a team server): where the home is, the settings, the one-line log,
one HTTP/1.1 request on a raw socket within a deadline, and the spool of turns not yet delivered.

Standard library only, and as little of it as possible: a hook is a fresh interpreter for every event
(no ``json``, no ``http.client``, no ``socket`` module, no ``pathlib`` on the hot path).
"""

from __future__ import annotations

import _socket  # the C module: `socket` would import enum, selectors… (~10 ms)
import os
import sys
import time

DEFAULT_PORT = 8765
DEFAULT_DEADLINE_MS = 1500
SPOOL_MAX = 64 << 20  # bytes of one queued turn: a 16 MiB payload (the limit of /hooks), re-encoded, with room
# The payload fields that name this machine's files: the transcript (a path the server would open) and the
# working directory (which it would resolve to a project). Only a home's own client may send them to its server.
LOCAL_PATHS = ("transcript_path", "cwd")
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
def read_file(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a socket or a directory: never read (it could block or never end)."""


def read_regular(path: str, limit: int, *, tail: bool = False, follow: bool = True) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them: a FIFO or a device (``/dev/zero``)
    is refused before anything is read (opened with O_NONBLOCK, so even the open cannot block), a larger file
    raises :class:`ValueError` unless ``tail`` (then its last ``limit`` bytes are read). ``follow=False``:
    a symlink is refused too. Raises OSError (FileNotFoundError when it is gone)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if (st.st_mode & 0o170000) != 0o100000:  # stat.S_ISREG without importing stat
            raise NotRegularFile(f"not a regular file: {path}")
        if st.st_size > limit:
            if not tail:
                raise ValueError(f"larger than {limit:,} bytes")
            os.lseek(fd, st.st_size - limit, os.SEEK_SET)
        chunks, left = [], limit  # bounded even if the file grows while it is read
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_server_json(home: str) -> dict[str, int]:
    """``port`` and ``pid`` from ``<home>/server.json`` (written by this home's running server)."""
    data_b = read_file(os.path.join(home, "server.json"))
    if not data_b:
        return {}
    try:
        raw = data_b.decode("utf-8")
    except UnicodeDecodeError:
        return {}
    port, pid = int_after(raw, '"port"'), int_after(raw, '"pid"')
    if port is None:
        try:  # an unusual layout: the real parser (~10 ms of imports, off the common path)
            import json

            data = json.loads(raw)
            port, pid = int(data["port"]), int(data.get("pid") or 0) or None
        except (ValueError, TypeError, KeyError, AttributeError):
            return {}
    return {"port": port, "pid": pid} if pid else {"port": port}


def int_after(raw: str, key: str) -> int | None:
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


def str_after(raw: str, key: str) -> str | None:
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
    data_b = read_file(os.path.join(home, "auth.json"))
    if not data_b:
        return None, None
    try:
        raw = data_b.decode("utf-8")
    except UnicodeDecodeError:
        return None, None
    return str_after(raw, '"home_id"'), str_after(raw, '"token"')


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
    raw = read_file(os.path.join(home, "config.toml"))
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
        self.pid: int | None = None  # the process of the server in server.json, when it names one

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
        sj = read_server_json(self.home)
        alive = bool(sj) and pid_alive(sj.get("pid"))
        self.port = sj.get("port") if alive else None
        self.pid = sj.get("pid") if alive else None


def resolve_settings(env: "os._Environ[str] | dict[str, str]" = os.environ) -> Settings:
    home = resolve_home(env)
    env_port = _port(env.get("MEMCLI_PORT"))
    token = env.get("MEMCLI_TOKEN") or None
    deadline_s = env.get("MEMCLI_HOOK_DEADLINE_MS")
    # seed 002's MNEMO_API_URL / MNEMO_API_TOKEN when the MEMCLI_ ones are unset (memcli.config.MNEMO_ENV: that
    # module is too heavy for a hook to import)
    api_url = env.get("MEMCLI_API_URL") or env.get("MNEMO_API_URL") or None
    api_token = env.get("MEMCLI_API_TOKEN") or env.get("MNEMO_API_TOKEN") or None
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
         home_id: str | None = None, host: str = "127.0.0.1", tls: bool = False,
         headers: str = "") -> tuple[int, bytes]:
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
        head += headers  # extra header lines, each ending in \r\n
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
            done = parse_response(resp)
            if done is not None:
                return done
        resp = b"".join(chunks)
        done = parse_response(resp, eof=True)
        if done is None:
            raise OSError("malformed HTTP answer")
        return done
    finally:
        sock.close()


def parse_response(resp: bytes, eof: bool = False) -> tuple[int, bytes] | None:
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
def spool(home: "str | os.PathLike[str]", data: bytes, sub: str = "spool", clean: bool = True) -> str:
    """Queue a payload for the server (atomic: write a temp file, then rename). Returns its path.
    ``clean``: the payload is redacted first (:func:`memcli.redact.clean_payload_bytes`): no secret ever
    waits on disk for a server to come back."""
    if clean:
        from memcli.redact import (
            clean_payload_bytes,  # json + re: only when a turn is queued
        )

        data = clean_payload_bytes(data)
    d = os.path.join(home, sub)
    os.makedirs(d, exist_ok=True)
    name = f"{time.time_ns() // 1_000_000}-{os.urandom(4).hex()}.json"
    tmp = os.path.join(d, f".{name}.tmp")
    final = os.path.join(d, name)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    except BaseException:
        try:  # a full disk leaves no half-written temp file behind
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # the rename itself on disk: a queued turn survives a power cut, not only a crash
        dfd = os.open(d, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass  # a file system that cannot sync a directory: the file's own fsync is what we have
    return final


def spool_pending(home: "str | os.PathLike[str]") -> bool:
    try:
        return any(n.endswith(".json") and not n.startswith(".") for n in os.listdir(os.path.join(home, "spool")))
    except OSError:
        return False
