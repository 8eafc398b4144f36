"""Helpers for tests that run a real `memcli serve` subprocess (used by test_server_* and test_mcp_*)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class ServerProc:
    proc: subprocess.Popen
    port: int
    home: Path
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

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
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"memcli serve exited with {self.proc.returncode}:\n{self.log.read_text()}")
            try:
                r = httpx.get(self.url + "/health", timeout=1)
                if r.status_code == 200 and (r.json().get("ready") or not store):
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"memcli serve was not ready in 30s:\n{self.log.read_text()}")


def start_server(memcli_bin: str, env: dict[str, str], home: Path, *args: str, ready: bool = True) -> ServerProc:
    port = free_port()
    log = home.parent / f"serve-{port}.log"
    home.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as fh:
        proc = subprocess.Popen([memcli_bin, "serve", "--port", str(port), *args], env={**env, "MEMCLI_HOME": str(home)},
                                stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    srv = ServerProc(proc, port, home, log)
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
