"""The home directory belongs to its user: private file modes, and the secret that identifies it.

``<home>/auth.json`` = ``{"home_id": "<16 hex>", "token": "<43 url-safe chars, 256 bits>"}``, mode 0600, made
once by whoever needs it first (``memcli serve`` at start, ``memcli setup``), atomically and race-free: two
processes creating it at once end with one value. The server requires the token on every route but
``/health``; memcli's own clients also send the home id (header ``X-Memcli-Home``) and the server refuses a
request meant for another home, so one home's hooks never read or write another home's store.

Standard library only. The hook client (:mod:`memcli.hooks.client`) parses the same file on its own: both
values use an alphabet that needs no JSON escaping.
"""

from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memcli.errors import ConfigError

AUTH_FILE = "auth.json"
SERVER_FILE = "server.json"  # written by a running `memcli serve`: {"pid", "port", "host", "started_at"}
HOME_HEADER = "X-Memcli-Home"
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
# What memcli keeps in a home; each is made private, and tightened when an older memcli left it readable.
PRIVATE_DIRS = ("data", "logs", "spool", "hooks-state", "backups")
PRIVATE_FILES = (AUTH_FILE, SERVER_FILE, "config.toml", "setup-state.json")
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


@dataclass(frozen=True)
class HomeAuth:
    """The home's identity (not a secret) and its bearer token (a secret)."""

    home_id: str
    token: str


def _tighten(path: Path, mode: int) -> None:
    """Drop group/other permissions of a path we own (best effort: a read-only mount stays as it is)."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o077:
            return
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return
        os.chmod(path, stat.S_IMODE(st.st_mode) & mode)
    except OSError:
        pass


def _shared(path: Path) -> bool:
    """A directory that is not memcli's to lock down: sticky (``/tmp``), the user's home, the root."""
    try:
        if os.stat(path).st_mode & stat.S_ISVTX:
            return True
        return path.resolve() in (Path.home().resolve(), Path(path.anchor or "/"))
    except (OSError, RuntimeError):
        return True


def private_dir(path: Path) -> Path:
    """``mkdir -p path`` with the last component 0700 (an existing one is tightened, unless it is shared)."""
    existed = path.is_dir()
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    if existed and not _shared(path):
        _tighten(path, PRIVATE_DIR)
    return path


def secure_home(home: Path) -> Path:
    """Create the home 0700, or tighten one an older memcli created 0755, with its sub-directories and files.

    Not recursive: a private home already keeps everyone else out of what lies below it. A home that is a
    shared directory (``MEMCLI_HOME=/tmp`` or ``~``) is left as it is; its memcli entries are still tightened.
    """
    private_dir(home)
    for name in PRIVATE_DIRS:
        _tighten(home / name, PRIVATE_DIR)
    for name in PRIVATE_FILES:
        _tighten(home / name, PRIVATE_FILE)
    return home


def exposed(home: Path) -> list[str]:
    """The home, its sub-directories and its private files that other users can read or enter, as
    ``"<path> (mode 0755)"`` lines (for ``memcli doctor``)."""
    found = []
    own = [home] if not _shared(home) else []
    for path in (*own, *(home / n for n in PRIVATE_DIRS), *(home / n for n in PRIVATE_FILES)):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_mode & 0o077:
            found.append(f"{path} (mode {stat.S_IMODE(st.st_mode):04o})")
    return found


def auth_path(home: Path) -> Path:
    return Path(home) / AUTH_FILE


def _parse(raw: bytes, path: Path) -> HomeAuth:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        data = None
    values = [data.get(k) if isinstance(data, dict) else None for k in ("home_id", "token")]
    if not all(isinstance(v, str) and len(v) >= 8 and set(v) <= _SAFE for v in values):
        raise ConfigError(f"{path} is damaged. Delete it: memcli makes a new token and home id at the next "
                          "start (clients configured with the old token need the new one).")
    return HomeAuth(home_id=values[0], token=values[1])


def read_auth(home: Path) -> HomeAuth | None:
    """The home's auth file, or None when it does not exist (yet). A damaged file is a ConfigError."""
    path = auth_path(home)
    for attempt in range(25):
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            return None
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
        try:
            return _parse(raw, path)
        except ConfigError:
            # Only the no-hard-link fallback below can expose a half-written file, and only for a moment.
            if attempt == 24 or time.time() - _mtime(path) > 2:
                raise
            time.sleep(0.02)
    return None  # pragma: no cover


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def load_or_create_auth(home: Path) -> HomeAuth:
    """The home's identity and token, created on first use (0600; the home 0700).

    Race-free: the new file is written in full under a temporary name, then hard-linked into place, which
    fails if another process got there first; then everyone reads the one file that won.
    """
    home = Path(home)
    existing = read_auth(home)
    if existing is not None:
        return existing
    import secrets  # only when creating (base64, hmac, random…: not on a client's path)

    secure_home(home)
    body = json.dumps({"home_id": secrets.token_hex(8), "token": secrets.token_urlsafe(32)}).encode()
    path = auth_path(home)
    tmp = home / f".{AUTH_FILE}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    _write_new(tmp, body)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links: create the file itself exclusively
        try:
            _write_new(path, body)
        except FileExistsError:
            pass
    finally:
        try:
            tmp.unlink()
        except OSError:
            pass
    auth = read_auth(home)
    if auth is None:  # pragma: no cover - deleted between the link and the read
        raise ConfigError(f"{path} vanished while it was being created")
    return auth


def _write_new(path: Path, body: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    try:
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_server_file(home: Path) -> dict[str, Any] | None:
    """What a running server of this home wrote about itself (pid, port, host, started_at), or None."""
    try:
        data = json.loads((Path(home) / SERVER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def running_server(home: Path) -> tuple[int, int | None] | None:
    """(port, pid) of this home's server when ``server.json`` names one whose process still runs, else None.

    Only a file in this (private) home counts: a client never sends its token to a port merely because
    something listens there (and it asks the server to prove it is this home's first: :mod:`memcli.proof`).
    """
    info = read_server_file(home)
    if not info:
        return None
    port, pid = info.get("port"), info.get("pid")
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        return None
    if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0:
        if not process_alive(pid):
            return None  # left behind by a server that was killed, or another user's process took the pid
        return port, pid
    return port, None


def process_alive(pid: int) -> bool:
    """Does this process of ours run? (Not when it is gone, another user's, or killed and not yet reaped.)"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    except OSError:
        return True
    try:  # a zombie: killed, its parent has not reaped it (an orphan, where init does not reap)
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def running_server_port(home: Path) -> int | None:
    """The port of this home's running server (see :func:`running_server`), else None."""
    found = running_server(home)
    return found[0] if found else None
