"""A local stand-in for an OpenAI-compatible chat-completions API, for driving a real OpenClaw turn offline.

It answers ``GET /v1/models`` and streamed ``POST /v1/chat/completions`` (server-sent chunks, then
``data: [DONE]``), records every request body, and answers from a script: a function of the request's
messages that returns either a text reply or a tool call. Runs in a thread of the test process.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_ID = "fake-model"


@dataclass
class ToolCall:
    """The model asks for one tool call."""

    name: str
    arguments: dict[str, Any]


Reply = str | ToolCall
Script = Callable[[list[dict[str, Any]]], Reply]


def text_of(message: dict[str, Any]) -> str:
    """The plain text of a chat message (a string, or a list of text parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def last_user_text(messages: list[dict[str, Any]]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            return text_of(m)
    return ""


def system_text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(text_of(m) for m in messages if m.get("role") in ("system", "developer"))


@dataclass
class FakeOpenAI:
    """The stand-in server: ``requests`` holds every chat-completions body received, in order."""

    script: Script
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0
    _server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "FakeOpenAI":
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt: str, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [
                        {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "memcli-tests"}]}).encode())
                else:
                    self._send(404, b'{"error": "not found"}')

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, b'{"error": "bad json"}')
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": "not found"}')
                    return
                owner.requests.append(body)
                reply = owner.script(body.get("messages") or [])
                chunks = list(_chunks(reply))
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for c in chunks:
                        self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                    self.close_connection = True
                else:
                    self._send(200, json.dumps(_whole(reply)).encode())

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def provider_config(self) -> dict[str, Any]:
        """OpenClaw's ``models`` entry for this stand-in (provider ``fake``, model ``fake/fake-model``)."""
        return {"mode": "merge", "providers": {"fake": {
            "baseUrl": self.base_url, "apiKey": "x", "api": "openai-completions",
            "models": [{"id": MODEL_ID, "name": "Fake", "reasoning": False, "input": ["text"],
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                        "contextWindow": 128000, "maxTokens": 4096}]}}}


def _base() -> dict[str, Any]:
    return {"id": f"chatcmpl-{time.time_ns()}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": MODEL_ID}


def _chunks(reply: Reply) -> list[dict[str, Any]]:
    if isinstance(reply, ToolCall):
        call = {"index": 0, "id": f"call_{time.time_ns()}", "type": "function",
                "function": {"name": reply.name, "arguments": json.dumps(reply.arguments)}}
        return [dict(_base(), choices=[{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]},
                                        "finish_reason": None}]),
                dict(_base(), choices=[{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                     usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})]
    words = reply.split(" ")
    parts = [" ".join(words[i:i + 8]) + (" " if i + 8 < len(words) else "") for i in range(0, len(words), 8)]
    out = [dict(_base(), choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])]
    out += [dict(_base(), choices=[{"index": 0, "delta": {"content": p}, "finish_reason": None}]) for p in parts]
    out.append(dict(_base(), choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    usage={"prompt_tokens": 10, "completion_tokens": len(words), "total_tokens": 10 + len(words)}))
    return out


def _whole(reply: Reply) -> dict[str, Any]:
    if isinstance(reply, ToolCall):
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{time.time_ns()}", "type": "function",
             "function": {"name": reply.name, "arguments": json.dumps(reply.arguments)}}]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": reply}, "stop"
    return {"id": f"chatcmpl-{time.time_ns()}", "object": "chat.completion", "created": int(time.time()),
            "model": MODEL_ID, "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
