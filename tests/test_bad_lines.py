"""Lines and payloads that are not what they should be (issue 17, item 10).

stdio `memcli mcp` answers a line it cannot use at once — garbage or a lone surrogate (`\\ud800`): -32700;
JSON that is not JSON-RPC: -32600 — with the request's id when it has one, instead of leaving the client
waiting; invalid UTF-8 is refused like the CLI and REST refuse it (nothing stored as U+FFFD), over stdio and
over `/mcp`. A Stop payload with a lone surrogate keeps the turn (the bad code point replaced) instead of
moving it to spool/failed.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from _memcli_server import MEMCLI, hash_env, start_server
from test_hooks_e2e import kill_spawned, serve, turns, wait_for

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


class Stdio:
    """`memcli mcp` driven line by line, as a client writes to its stdin."""

    def __init__(self, home: Path) -> None:
        self.proc = subprocess.Popen([MEMCLI, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env={**hash_env(home.parent), "MEMCLI_HOME": str(home)})

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def answer(self, timeout: float) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        return json.loads(self.proc.stdout.readline()) if ready else None

    def call(self, rid: int, tool: str, **args: Any) -> dict[str, Any]:
        self.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                              "params": {"name": tool, "arguments": args}}).encode())
        out = self.answer(60)
        assert out is not None and out["id"] == rid, out
        return out

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def test_stdio_mcp_answers_a_line_it_cannot_use_within_a_second(home: Path) -> None:
    mcp = Stdio(home)
    try:
        mcp.send(json.dumps(INIT).encode())
        assert mcp.answer(120)["id"] == 1  # type: ignore[index]
        mcp.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        bad = [
            (b"garbage", None, -32700),
            (b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "remember", '
             b'"arguments": {"content": "half a pair \\ud800 here"}}}', 7, -32700),
            ('{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "remember", '
             '"arguments": {"content": "broken bytes: '.encode() + b"\xff\xfe\xc3(" + b'"}}}', 8, -32700),
            (b'{"jsonrpc": "2.0", "id": 9, "params": {}}', 9, -32600),
            (b"[1, 2, 3]", None, -32600),
        ]
        for line, rid, code in bad:
            t0 = time.monotonic()
            mcp.send(line)
            out = mcp.answer(5)
            took = time.monotonic() - t0
            assert out is not None, line
            assert took < 1.0, (line, took)
            assert out["id"] == rid and out["error"]["code"] == code, out
        # the session goes on, and nothing of the refused lines was stored
        assert mcp.call(10, "remember", content="a good line after the bad ones")["result"]["isError"] is False
        listed = json.loads(mcp.call(11, "list_facts")["result"]["content"][0]["text"])
        assert [m["content"] for m in listed] == ["a good line after the bad ones"]
    finally:
        mcp.close()


def test_invalid_utf8_over_http_mcp_is_refused_and_stores_nothing(tmp_path: Path) -> None:
    srv = start_server(MEMCLI, hash_env(tmp_path), tmp_path / "server")
    try:
        headers = {**srv.headers, "Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json"}
        with httpx.Client(base_url=srv.url, timeout=60, headers=headers) as c:
            r = c.post("/mcp", content=json.dumps(INIT).encode())
            assert r.status_code == 200, r.text
            session = r.headers.get("mcp-session-id")
            if session:
                c.headers["mcp-session-id"] = session
            c.post("/mcp", content=b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
            body = ('{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "remember", '
                    '"arguments": {"content": "broken bytes: ').encode() + b"\xff\xfe" + b'"}}}'
            for bad in (body, body.replace(b"\xff\xfe", b"\\ud800")):  # invalid UTF-8, a lone surrogate
                r = c.post("/mcp", content=bad)
                assert r.status_code == 400 and r.json()["error"]["code"] == -32700, r.text
        with srv.client(timeout=60) as api:
            assert api.get("/api/memories").json() == []
    finally:
        srv.stop()


def test_a_stop_payload_with_a_lone_surrogate_keeps_the_turn(home: Path, tmp_path: Path) -> None:
    srv = serve(home, {"MEMCLI_EMBEDDER": "hash"})
    env = {**srv.env, "MEMCLI_PYTHON": sys.executable, "CLAUDE_PLUGIN_DATA": str(tmp_path / "plugin-data")}
    try:
        reply = ("The upload worker crashed because a filename held a broken emoji \\ud800 in it; the fix: it now "
                 "replaces undecodable characters and logs the original bytes.")
        raw = ('{"session_id": "sur-1", "cwd": "%s", "hook_event_name": "Stop", "stop_hook_active": false, '
               '"prompt": "why did the upload worker crash \\udfff?", "last_assistant_message": "%s"}'
               % (tmp_path, reply)).encode()
        p = subprocess.run(["sh", str(ROOT / "hooks" / "run.sh"), "Stop"], input=raw, env=env,
                           capture_output=True, timeout=60)
        assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")
        (mem,) = wait_for(lambda: turns(home), timeout=60)
        assert "broken emoji \ufffd in it" in mem.content and "upload worker" in mem.content
        failed = home / "spool" / "failed"
        assert not failed.exists() or not os.listdir(failed)
    finally:
        srv.stop()
        kill_spawned(home)
