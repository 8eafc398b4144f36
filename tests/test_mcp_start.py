"""A cold `memcli mcp` answers the handshake (initialize, tools/list, the resource and prompt lists) before the
MCP SDK, LanceDB or the embedder are loaded — an MCP client like Codex gives a server about a second — and
the same answers the SDK's own server gives (the shipped catalog is checked against a fresh capture)."""

from __future__ import annotations

import json
import select
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from _memcli_server import MEMCLI, hash_env

from memcli.mcp import catalog

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "start-test", "version": "1.2"}}}

# imported by Python at start (PYTHONPATH): the MCP SDK and LanceDB take 4 s more to import than they do
SLOW_IMPORTS = '''
import sys, time
class _Slow:
    def find_spec(self, name, path=None, target=None):
        if name in ("mcp", "lancedb"):
            time.sleep(4)
        return None
sys.meta_path.insert(0, _Slow())
'''


class Proc:
    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen([MEMCLI, "mcp", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self.buf = b""

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self, timeout: float) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            chunk = self.proc.stdout.read1(65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> tuple[int, str]:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        code = self.proc.wait(60)
        return code, self.proc.stderr.read().decode()


def test_the_shipped_catalog_is_what_the_sdk_answers() -> None:
    assert catalog.PATH.read_text(encoding="utf-8") == catalog.render(catalog.capture()), \
        "the MCP tools changed: run `python -m memcli.mcp.catalog`"


@pytest.mark.slow
def test_a_cold_mcp_answers_the_handshake_before_the_sdk_and_the_store_are_loaded(home: Path, tmp_path: Path) -> None:
    slow = tmp_path / "slow-imports"
    slow.mkdir()
    (slow / "sitecustomize.py").write_text(SLOW_IMPORTS)
    env = {**hash_env(home.parent), "MEMCLI_HOME": str(home), "PYTHONPATH": str(slow)}
    p = Proc(env)
    try:
        started = time.monotonic()
        p.send(INIT)
        init = p.read(30)
        p.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for n, method in enumerate(("tools/list", "resources/list", "resources/templates/list", "prompts/list"), 2):
            p.send({"jsonrpc": "2.0", "id": n, "method": method})
        lists = [p.read(30) for _ in range(4)]
        handshake = time.monotonic() - started
        assert handshake < 3.0, handshake  # the SDK alone takes 4 s more to import here
        assert init is not None and init["id"] == 1
        assert init["result"]["protocolVersion"] == "2025-06-18"
        assert init["result"]["serverInfo"]["name"] == "memcli" and init["result"]["serverInfo"]["version"]
        assert [m["id"] for m in lists] == [2, 3, 4, 5]  # type: ignore[index]
        tools = {t["name"] for t in lists[0]["result"]["tools"]}  # type: ignore[index]
        assert {"remember", "recall", "get", "forget", "update", "list_facts", "check_duplicate"} <= tools

        # the first tool call is answered by the SDK, once loaded, on the session the front began
        p.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                "params": {"name": "remember", "arguments": {"content": "The nightly export runs at 02:00 UTC"}}})
        first = p.read(120)
        assert time.monotonic() - started >= 4.0  # it did wait for the SDK
        assert first is not None and first["id"] == 9 and first["result"]["isError"] is False, first
        p.send({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "recall",
                                                                                "arguments": {"query": "nightly"}}})
        hits = json.loads(p.read(60)["result"]["content"][0]["text"])  # type: ignore[index]
        assert hits[0]["content"] == "The nightly export runs at 02:00 UTC"
        p.send({"jsonrpc": "2.0", "id": 11, "method": "tools/list"})  # now the SDK's own answer
        assert {t["name"] for t in p.read(30)["result"]["tools"]} == tools  # type: ignore[index]
        assert p.read(0.5) is None  # nothing else: the SDK's answer to the replayed initialize is not sent
    finally:
        code, err = p.close()
    assert code == 0, err


@pytest.mark.slow
def test_a_bad_config_is_a_clear_tool_error(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("namespace = [1, 2\n")
    p = Proc({**hash_env(home.parent), "MEMCLI_HOME": str(home)})
    try:
        p.send(INIT)
        assert p.read(30)["id"] == 1  # type: ignore[index]
        p.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "recall", "arguments": {"query": "x"}}})
        out = p.read(60)
        assert out is not None and out["result"]["isError"] is True
        assert "config.toml" in out["result"]["content"][0]["text"]
    finally:
        code, err = p.close()
    assert "config.toml" in err
