"""Shared helpers of the reliability suite: real `memcli serve` processes, CLI and hook subprocesses, and a
reaper that leaves no process behind.

Every server started here gets an explicit ``MEMCLI_TOKEN`` and every client (REST, CLI, hooks, MCP over
HTTP) sends the same token, so the suite keeps working when the server requires a token by default.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

BIN = Path(sys.executable).parent
MEMCLI = str(BIN / "memcli")
PYTHON = sys.executable
TOKEN = "rel-" + secrets.token_hex(16)
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of every memcli process of a test: its home, the token, the hash embedder (unless the
    test names another), no stray MEMCLI_* settings of the developer's shell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env.update(MEMCLI_HOME=str(home), MEMCLI_TOKEN=TOKEN, MEMCLI_EMBEDDER=os.environ.get("MEMCLI_EMBEDDER", "hash"),
               PYTHONDONTWRITEBYTECODE="1", MEMCLI_AUTOSTART="0")
    env.update(extra)
    return env


def wait_for(pred: Callable[[], Any], timeout: float = 30.0, interval: float = 0.05, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout:.0f}s")
        time.sleep(interval)


# --------------------------------------------------------------------------------------------- processes
@dataclass
class Reaper:
    """Every process a test starts, killed at teardown (and the servers the hook client starts by itself)."""

    procs: list[subprocess.Popen] = field(default_factory=list)
    homes: list[Path] = field(default_factory=list)
    cleanups: list[Callable[[], None]] = field(default_factory=list)

    def track(self, proc: subprocess.Popen) -> subprocess.Popen:
        self.procs.append(proc)
        return proc

    def watch_home(self, home: Path) -> None:
        """Kill, at teardown, a server the hook client started for this home (hooks-state/server.pid)."""
        self.homes.append(home)

    def reap(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass
        for home in self.homes:
            kill_spawned_server(home)
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception:  # noqa: BLE001 - teardown goes on
                pass


def kill_spawned_server(home: Path) -> None:
    """SIGKILL a server that a hook client started detached for ``home``: its pid is in hooks-state/server.pid
    or server.json (killed only if that pid still runs `memcli … serve`)."""
    pids = set()
    try:
        pids.add(int((home / "hooks-state" / "server.pid").read_text()))
    except (OSError, ValueError):
        pass
    try:
        pids.add(int(json.loads((home / "server.json").read_text())["pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"memcli" not in cmdline or b"serve" not in cmdline:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        for _ in range(200):
            try:  # our child when this process started it; else init reaps it (it runs in its own session)
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            if not Path(f"/proc/{pid}").exists() or b"(Z)" in _stat(pid):
                break
            time.sleep(0.05)


def _stat(pid: int) -> bytes:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        return b"(Z)" if b") Z " in stat else b""
    except OSError:
        return b""


@dataclass
class Server:
    """A real `memcli serve` on 127.0.0.1 with the suite's token."""

    proc: subprocess.Popen
    port: int
    home: Path
    env: dict[str, str]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self, timeout: float = 60.0) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=AUTH, timeout=timeout)

    def hook_env(self, **extra: str) -> dict[str, str]:
        """The environment of hook subprocesses talking to this server."""
        return {**self.env, "MEMCLI_PORT": str(self.port), **extra}

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"memcli serve exited with {self.proc.returncode}:\n{self.log_text()}")
            try:
                r = httpx.get(self.url + "/health", headers=AUTH, timeout=1)  # "ready" is told to the token only
                if r.status_code == 200 and r.json().get("ready"):
                    return
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.05)
        raise AssertionError(f"memcli serve was not ready within {timeout:.0f}s:\n{self.log_text()}")

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-5000:]
        except OSError:
            return ""


def start_server(reaper: Reaper, home: Path, *, port: int | None = None, ready: bool = True,
                 env: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> Server:
    home.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    env = env or make_env(home)
    log = home.parent / f"serve-{home.name}-{port}-{time.monotonic_ns()}.log"
    with open(log, "wb") as fh:
        proc = reaper.track(subprocess.Popen([MEMCLI, "serve", "--port", str(port), *args], env=env, stdout=fh,
                                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
    srv = Server(proc, port, home, env, log)
    if ready:
        srv.wait_ready()
    return srv


# --------------------------------------------------------------------------------------------- clients
def cli(args: list[str], env: dict[str, str], *, input: bytes | None = None, timeout: float = 120,
        cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`memcli ARGS` as a real process (stdout not a terminal: JSON output)."""
    return subprocess.run([MEMCLI, *args], env=env, input=input, capture_output=True, timeout=timeout, cwd=cwd)


@dataclass
class HookRun:
    rc: int
    out: bytes
    err: bytes
    seconds: float


def run_hook(event: str, data: bytes, env: dict[str, str], timeout: float = 60) -> HookRun:
    """`python -m memcli.hooks EVENT` exactly as Claude Code runs it: the payload on stdin."""
    t0 = time.monotonic()
    p = subprocess.run([PYTHON, "-m", "memcli.hooks", event], input=data, env=env, capture_output=True,
                       timeout=timeout)
    return HookRun(p.returncode, p.stdout, p.stderr, time.monotonic() - t0)


def hook_timeouts() -> dict[str, float]:
    """The timeout Claude Code gives each hook (hooks/hooks.json of the plugin; 60 s when none is set)."""
    spec = json.loads((HERE.parents[1] / "hooks" / "hooks.json").read_text())
    out = {}
    for event, groups in spec["hooks"].items():
        out[event] = float(groups[0]["hooks"][0].get("timeout", 60))
    return out


# --------------------------------------------------------------------------------------------- the store
def open_service(home: Path, **env: str) -> Any:
    from memcli.config import load_config
    from memcli.memory.service import MemoryService

    return MemoryService.open(load_config(home, env={"MEMCLI_EMBEDDER": "hash", **env}))


def all_rows(home: Path, columns: tuple[str, ...] = ("id", "content"), **env: str) -> list[dict[str, Any]]:
    """Every row of the store (every namespace), read by a fresh handle."""
    svc = open_service(home, **env)
    try:
        return svc.store.column_values(None, list(columns))
    finally:
        svc.close()


def snapshot(home: Path, **env: str) -> list[dict[str, Any]]:
    """Every memory with every field (versions and timestamps included): equal snapshots = nothing changed."""
    svc = open_service(home, **env)
    try:
        return sorted((m.record() for m in svc.export()), key=lambda r: r["id"])
    finally:
        svc.close()


def doctor(env: dict[str, str]) -> dict[str, Any]:
    """`memcli doctor --json` as a process; asserts it printed JSON and exited 0/1 consistently."""
    p = cli(["doctor", "--json"], env)
    report = json.loads(p.stdout)
    assert p.returncode == (0 if report["ok"] else 1), (p.returncode, report, p.stderr)
    assert b"Traceback" not in p.stderr, p.stderr.decode(errors="replace")
    return report


def failed_checks(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in report["checks"] if c["status"] == "fail"]
