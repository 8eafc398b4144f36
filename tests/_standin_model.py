"""A local stand-in for the model APIs of three real agent clients, for driving their turns offline:

- OpenAI's Responses API (Codex: streamed ``POST /v1/responses``, ``GET /v1/models``);
- Google's Gemini API (Gemini CLI: ``…:streamGenerateContent``, ``…:generateContent``, ``…:countTokens``);
- Anthropic's Messages API (Claude Code: streamed ``POST /v1/messages``, ``…/count_tokens``).

It plays a model that uses memcli: a :class:`Plan` names a marker of the user's prompt, the memcli tool to call
and its arguments. On a request whose prompt holds the marker, offering that tool, with no tool result yet, it
answers with a call of the tool; once the result is in, with ``Plan.reply`` followed by the result's text (so
the client's own output shows what memcli answered). Any other request gets a short text. Every request body
is recorded. Each client names memcli's tools its own way (Codex ``remember`` in the namespace ``mcp__memcli``,
Gemini ``mcp_memcli_remember``, Claude Code ``mcp__memcli__remember``); :func:`memcli_tool` finds them all.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "standin-model"
ROUTE = json.dumps({"complexity_reasoning": "a stand-in", "complexity_score": 10, "reasoning": "a stand-in",
                    "model_choice": "flash"})


@dataclass(frozen=True)
class Plan:
    """What the model does in a turn whose prompt holds ``marker``: call memcli's ``tool`` with ``args``."""

    marker: str
    tool: str
    args: dict[str, Any]
    reply: str


@dataclass
class Seen:
    """One request as the stand-in read it."""

    api: str  # "openai" | "gemini" | "anthropic"
    path: str
    body: dict[str, Any]
    text: str  # every piece of text of the request (prompt, system, tool results), joined
    tools: list[str]  # the names of the tools offered, as the client spells them
    tool_results: list[str]  # the text of the tool results in the request


def memcli_tool(names: list[str], tool: str) -> str | None:
    """The name under which a client offers memcli's ``tool`` (None when it does not)."""
    for n in names:
        if n in (f"mcp__memcli.{tool}", f"mcp__memcli__{tool}", f"mcp_memcli_{tool}", f"memcli__{tool}",
                 f"memcli_{tool}"):
            return n
    return None


def _texts(node: Any) -> list[str]:
    """Every string under a ``text``/``content``/``output`` key of a JSON document, in order."""
    out: list[str] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("text", "content", "output", "result") and isinstance(v, str):
                out.append(v)
            else:
                out.extend(_texts(v))
    elif isinstance(node, list):
        for v in node:
            out.extend(_texts(v))
    return out


def read(api: str, path: str, body: dict[str, Any]) -> Seen:
    """The request's text, offered tools and tool results, whatever the API."""
    tools: list[str] = []
    results: list[str] = []
    if api == "openai":
        for t in body.get("tools", []):
            if t.get("type") == "namespace":
                tools += [f"{t['name']}.{s.get('name')}" for s in t.get("tools", [])]
            elif t.get("name"):
                tools.append(t["name"])
        for item in body.get("input", []):
            if item.get("type") in ("function_call_output", "mcp_tool_call_output", "custom_tool_call_output"):
                out = item.get("output")
                results.append(out if isinstance(out, str) else json.dumps(out))
    elif api == "gemini":
        for t in body.get("tools", []):
            tools += [d.get("name") for d in t.get("functionDeclarations", []) if d.get("name")]
        for c in body.get("contents", []):
            for p in c.get("parts", []):
                if "functionResponse" in p:
                    results.append(json.dumps(p["functionResponse"].get("response"), ensure_ascii=False))
    else:
        tools = [t["name"] for t in body.get("tools", []) if t.get("name")]
        for m in body.get("messages", []):
            if isinstance(m.get("content"), list):
                for b in m["content"]:
                    if b.get("type") == "tool_result":
                        results.append("\n".join(_texts(b.get("content"))) if not isinstance(b.get("content"), str)
                                       else b["content"])
    text = "\n".join(_texts({k: v for k, v in body.items() if k != "tools"}))
    return Seen(api, path, body, text, tools, results)


@dataclass
class StandIn:
    """The stand-in server (a thread of the test process) and what it has seen."""

    plans: list[Plan] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (api, tool name, args) it asked
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> "StandIn":
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet: the test reads `seen`
                pass

            def do_GET(self) -> None:  # Codex lists the provider's models
                self._json({"object": "list", "data": [{"id": MODEL, "object": "model"}], "models": []})

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(n) or b"{}")
                except json.JSONDecodeError:
                    body = {}
                standin.answer(self, self.path, body)

            def _json(self, doc: dict[str, Any], status: int = 200) -> None:
                raw = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def requests(self, api: str, marker: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.api == api and marker in s.text]

    # ------------------------------------------------------------------ deciding
    def decide(self, seen: Seen) -> tuple[str, dict[str, Any]] | str:
        """A tool call (name as the client spells it, arguments) or the reply's text."""
        for plan in self.plans:
            if plan.marker not in seen.text:
                continue
            name = memcli_tool(seen.tools, plan.tool)
            if seen.tool_results:
                return plan.reply + "\n" + "\n".join(seen.tool_results)
            if name is not None:
                return name, plan.args
            return f"{plan.reply} (memcli's {plan.tool} was not offered)"
        return "OK."

    def answer(self, h: BaseHTTPRequestHandler, path: str, body: dict[str, Any]) -> None:
        api = "openai" if path.startswith("/v1/responses") else ("anthropic" if path.startswith("/v1/messages")
                                                                   else "gemini")
        if path.endswith(":countTokens") or path.endswith("/count_tokens"):
            return self._send(h, "application/json", json.dumps({"totalTokens": 10, "input_tokens": 10}))
        seen = read(api, path, body)
        wants_json = (body.get("generationConfig") or {}).get("responseMimeType") == "application/json"
        # Gemini CLI's routing classifiers ask for JSON first: the stand-in picks the small model (both shapes)
        out = ROUTE if api == "gemini" and wants_json else self.decide(seen)
        with self._lock:
            if out is not ROUTE:
                self.seen.append(seen)
            if isinstance(out, tuple):
                self.calls.append((api, out[0], out[1]))
        if api == "openai":
            return self._send(h, "text/event-stream", _openai_events(out))
        if api == "anthropic":
            return self._send(h, "text/event-stream", _anthropic_events(out, bool(body.get("stream"))))
        stream = ":streamGenerateContent" in path
        return self._send(h, "text/event-stream" if stream else "application/json", _gemini_answer(out, stream))

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, ctype: str, text: str) -> None:
        raw = text.encode()
        h.send_response(200)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(raw)))
        h.end_headers()
        h.wfile.write(raw)


def _sse(events: list[tuple[str | None, dict[str, Any]]]) -> str:
    return "".join((f"event: {e}\n" if e else "") + f"data: {json.dumps(d)}\n\n" for e, d in events)


def _openai_events(out: tuple[str, dict[str, Any]] | str) -> str:
    rid = "resp_" + uuid.uuid4().hex[:12]
    if isinstance(out, tuple):
        ns, _, name = out[0].rpartition(".")
        item: dict[str, Any] = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:8], "name": name,
                                "arguments": json.dumps(out[1]), "call_id": "call_" + uuid.uuid4().hex[:8]}
        if ns:
            item["namespace"] = ns
    else:
        item = {"type": "message", "role": "assistant", "id": "msg_" + uuid.uuid4().hex[:8],
                "content": [{"type": "output_text", "text": out}]}
    return _sse([("response.created", {"type": "response.created", "response": {"id": rid}}),
                 ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
                 ("response.completed", {"type": "response.completed", "response": {
                     "id": rid, "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}})])


def _gemini_answer(out: tuple[str, dict[str, Any]] | str, stream: bool) -> str:
    part = {"functionCall": {"name": out[0], "args": out[1]}} if isinstance(out, tuple) else {"text": out}
    doc = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
           "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
           "modelVersion": MODEL}
    return _sse([(None, doc)]) if stream else json.dumps(doc)


def _anthropic_events(out: tuple[str, dict[str, Any]] | str, stream: bool) -> str:
    mid = "msg_" + uuid.uuid4().hex[:12]
    if isinstance(out, tuple):
        block: dict[str, Any] = {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:8], "name": out[0],
                                 "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(out[1])}
        stop = "tool_use"
    else:
        block, delta, stop = {"type": "text", "text": ""}, {"type": "text_delta", "text": out}, "end_turn"
    usage = {"input_tokens": 10, "output_tokens": 5}
    if not stream:
        whole = dict(block, input=out[1]) if isinstance(out, tuple) else {"type": "text", "text": out}
        return json.dumps({"id": mid, "type": "message", "role": "assistant", "model": MODEL, "content": [whole],
                           "stop_reason": stop, "stop_sequence": None, "usage": usage})
    return _sse([("message_start", {"type": "message_start", "message": {
                    "id": mid, "type": "message", "role": "assistant", "model": MODEL, "content": [],
                    "stop_reason": None, "stop_sequence": None, "usage": usage}}),
                 ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
                 ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
                 ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                 ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                    "usage": {"output_tokens": 5}}),
                 ("message_stop", {"type": "message_stop"})])


