"""The plugin inside the real Claude Code CLI, offline (skipped when no `claude` binary is available).

Install it with `npm install @anthropic-ai/claude-code` and point MEMCLI_TEST_CLAUDE at
`node_modules/.bin/claude` (or have `claude` on PATH). With HOME in a temporary directory the test validates
the plugin, adds this repo as a marketplace, installs the plugin, then runs two `claude -p` sessions against a
local stand-in for the Messages API: the turn captured by the first session's Stop hook must be injected into
the second session (its transcript records what each hook added).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
REPLY = ("The reconciliation job RECON-7731 crashes because the ledger export times out after 30 seconds; "
         "raise the timeout to 120 seconds in jobs/reconcile.py.")


def _claude() -> str | None:
    exe = os.environ.get("MEMCLI_TEST_CLAUDE") or shutil.which("claude")
    return exe if exe and os.access(exe, os.X_OK) else None


class _Messages(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        if "count_tokens" in self.path:
            return self._send("application/json", json.dumps({"input_tokens": 10}).encode())
        msg = {"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model", "m"),
               "content": [{"type": "text", "text": REPLY}], "stop_reason": "end_turn", "stop_sequence": None,
               "usage": {"input_tokens": 10, "output_tokens": 20}}
        if not body.get("stream"):
            return self._send("application/json", json.dumps(msg).encode())
        events = [
            ("message_start", {"type": "message_start", "message": {**msg, "content": [], "stop_reason": None}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": REPLY}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                               "usage": {"output_tokens": 20}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        self._send("text/event-stream", "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode())

    def do_GET(self) -> None:  # noqa: N802
        self._send("application/json", b'{"data": []}')

    def _send(self, ctype: str, data: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def messages_api() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Messages)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def _contexts(transcript: Path) -> list[str]:
    out = []
    for line in transcript.read_text().splitlines():
        rec = json.loads(line)
        att = rec.get("attachment") or {}
        if att.get("type") == "hook_additional_context":
            out += [c for c in att.get("content") or [] if isinstance(c, str)]
    return out


def test_real_claude_code_runs_the_plugin(tmp_path: Path, messages_api: str) -> None:
    claude = _claude()
    if claude is None:
        pytest.skip("no Claude Code CLI (npm install @anthropic-ai/claude-code; MEMCLI_TEST_CLAUDE=…/claude)")
    from test_hooks_e2e import free_port

    user_home = tmp_path / "claude-home"
    user_home.mkdir()
    memhome = tmp_path / "memcli-home"
    env = {**os.environ, "HOME": str(user_home), "MEMCLI_HOME": str(memhome), "MEMCLI_EMBEDDER": "hash",
           "MEMCLI_PORT": str(free_port()), "MEMCLI_HOOK_IDLE_TIMEOUT": "120", "MEMCLI_PYTHON": sys.executable,
           "ANTHROPIC_BASE_URL": messages_api, "ANTHROPIC_API_KEY": "sk-ant-test-not-a-real-key",
           "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}

    def cli(*args: str, cwd: Path = tmp_path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([claude, *args], env=env, cwd=str(cwd), capture_output=True, text=True, timeout=180)

    for args in (("plugin", "validate", str(ROOT)), ("plugin", "marketplace", "add", str(ROOT)),
                 ("plugin", "install", "memcli@memcli")):
        res = cli(*args)
        assert res.returncode == 0, (args, res.stdout, res.stderr)
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    try:
        first = cli("-p", "why does the reconciliation job RECON-7731 crash?", cwd=proj)
        assert first.returncode == 0 and REPLY in first.stdout, first.stderr
        # the Stop hook (async) captured the turn, through the server it started on first use
        from memcli.config import load_config
        from memcli.memory.service import MemoryService

        deadline = time.monotonic() + 90
        turns: list[Any] = []
        while time.monotonic() < deadline and not turns:
            svc = MemoryService.open(load_config(memhome))
            turns = svc.list(tags=["turn"])
            svc.close()
            time.sleep(0.5)
        assert turns and "ledger export times out" in turns[0].content
        second = cli("-p", "the reconciliation job crashed again, what do we know?", cwd=proj)
        assert second.returncode == 0
        transcripts = sorted((user_home / ".claude" / "projects").glob("*/*.jsonl"), key=lambda p: p.stat().st_mtime)
        injected = "\n".join(_contexts(transcripts[-1]))
        assert "<memcli-memories" in injected and "ledger export times out" in injected
    finally:
        pid_file = memhome / "hooks-state" / "server.pid"
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGTERM)
            except ProcessLookupError:
                pass
