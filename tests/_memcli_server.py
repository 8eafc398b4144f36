"""Helpers for tests that run a real `memcli serve` subprocess (used by test_server_* and test_mcp_*)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

MEMCLI = str(Path(sys.executable).parent / "memcli")  # the CLI installed beside this Python
READY_S = 90  # a store opens in ~2 s; importing LanceDB alone took 15 s on the shared 2-core box at load 14


def hash_env(tmp: Path) -> dict[str, str]:
    """The environment of a memcli process under test: none of the caller's MEMCLI_* settings, the fast
    deterministic test embedder, and a HOME of its own under ``tmp``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env.update(MEMCLI_EMBEDDER="hash", HOME=str(tmp / "user-home"), MEMCLI_AUTOSTART="0")
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def home_auth(home: Path) -> dict[str, str]:
    """The home's {"home_id", "token"} (the server creates <home>/auth.json at start)."""
    return json.loads((home / "auth.json").read_text())


def auth_headers(home: Path, token: str | None = None) -> dict[str, str]:
    """What a memcli client of this home sends: the bearer token and the home id."""
    auth = home_auth(home)
    return {"Authorization": f"Bearer {token or auth['token']}", "X-Memcli-Home": auth["home_id"]}


@dataclass
class ServerProc:
    proc: subprocess.Popen
    port: int
    home: Path
    log: Path
    token_override: str | None = None  # MEMCLI_TOKEN of the server, when the test set one

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token(self) -> str:
        return self.token_override or home_auth(self.home)["token"]

    @property
    def headers(self) -> dict[str, str]:
        """Authorization (and the home id) for requests to this server."""
        return auth_headers(self.home, self.token_override)

    def client(self, **kwargs: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self.headers, **kwargs)  # type: ignore[arg-type]

    def stop(self, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise AssertionError(f"memcli serve did not stop within {timeout}s; log:\n{self.log.read_text()}")

    def wait_ready(self, store: bool = True) -> None:
        """Wait until /health answers (and, with ``store``, the store is open: ready: true)."""
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"memcli serve exited with {self.proc.returncode}:\n{self.log.read_text()}")
            try:
                r = httpx.get(self.url + "/health", timeout=1, headers=self.headers)
                if r.status_code == 200 and (r.json().get("ready") or not store):
                    return
            except (httpx.HTTPError, OSError, ValueError, KeyError):  # auth.json not written yet
                pass
            time.sleep(0.05)
        raise AssertionError(f"memcli serve was not ready in {READY_S}s:\n{self.log.read_text()}")


def start_server(memcli_bin: str, env: dict[str, str], home: Path, *args: str, ready: bool = True) -> ServerProc:
    port = free_port()
    log = home.parent / f"serve-{port}.log"
    home.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as fh:
        proc = subprocess.Popen([memcli_bin, "serve", "--port", str(port), *args], env={**env, "MEMCLI_HOME": str(home)},
                                stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    srv = ServerProc(proc, port, home, log, env.get("MEMCLI_TOKEN") or None)
    try:
        srv.wait_ready(store=ready)
    except BaseException:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        raise
    return srv


def base_env() -> dict[str, str]:
    """The test environment (conftest's isolated_home has already set MEMCLI_HOME/HOME/MEMCLI_EMBEDDER)."""
    return dict(os.environ)
