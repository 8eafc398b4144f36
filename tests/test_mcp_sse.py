"""The legacy SSE transport of `memcli serve` (`GET /sse` → messages to `/messages/`, `GET /mcp/sse` → messages to
`/mcp/message?sessionId=…`), with the SDK's own SSE client and with a bare client written the way seed 000's V3
snippet is, against a real server on 127.0.0.1: the same tools and store as `/mcp`, the same token, Host and
Origin checks and body limit, and a space token's session confined to its space."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from _memcli_server import ServerProc, start_server
from mcp import ClientSession
from mcp.client.sse import sse_client

pytestmark = pytest.mark.slow
TOOLS = {"remember", "recall", "list_facts", "check_duplicate", "forget", "update", "get"}


@asynccontextmanager
async def sse_session(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    async with sse_client(url, headers=headers) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **args: Any) -> Any:
    res = await session.call_tool(tool, args)
    assert not res.is_error, res.content
    return json.loads(res.content[0].text)


class BareSse:
    """An SSE client in plain HTTP, as seed 000's V3 snippet: open the stream, read the `endpoint` event,
    POST JSON-RPC messages there, read the answers as `message` events."""

    def __init__(self, base: str, path: str, headers: dict[str, str]) -> None:
        self.base, self.headers = base, headers
        self.events: queue.Queue[tuple[str, str]] = queue.Queue()
        self.client = httpx.Client(base_url=base, headers=headers, timeout=60)
        self._stream = self.client.stream("GET", path, headers={"Accept": "text/event-stream"})
        self.response = self._stream.__enter__()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        event, data = "message", []
        try:
            for line in self.response.iter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
                elif not line and data:
                    self.events.put((event, "\n".join(data)))
                    event, data = "message", []
        except httpx.HTTPError:
            pass

    def next(self, timeout: float = 60) -> tuple[str, str]:
        return self.events.get(timeout=timeout)

    def close(self) -> None:
        self._stream.__exit__(None, None, None)
        self.client.close()


def test_sdk_sse_clients_on_both_paths_share_the_store_with_streamable_http(tmp_path: Path,
                                                                             subprocess_env: dict[str, str],
                                                                             memcli_bin: str) -> None:
    srv = start_server(memcli_bin, subprocess_env, tmp_path / "home")

    async def main() -> None:
        async with sse_session(srv.url + "/sse", srv.headers) as a, sse_session(srv.url + "/mcp/sse", srv.headers) as b:
            for s in (a, b):
                assert TOOLS <= {t.name for t in (await s.list_tools()).tools}
            r = await call(a, "remember", content="The staging database is restored every Sunday at 04:00")
            hits = await call(b, "recall", query="when is staging restored")
            assert hits[0]["memory_id"] == r["memory_id"]
            bad = await b.call_tool("remember", {"content": "   "})
            assert bad.is_error and "content is empty" in bad.content[0].text

    try:
        anyio.run(main)
        with srv.client(timeout=30) as api:  # REST sees the SSE write
            assert [m["content"] for m in api.get("/api/memories").json()] == [
                "The staging database is restored every Sunday at 04:00"]
    finally:
        srv.stop()


def test_a_bare_v3_client_on_mcp_sse_with_session_id_in_camel_case(tmp_path: Path, subprocess_env: dict[str, str],
                                                                    memcli_bin: str) -> None:
    srv = start_server(memcli_bin, subprocess_env, tmp_path / "home")
    sse = BareSse(srv.url, "/mcp/sse", srv.headers)
    try:
        event, endpoint = sse.next()
        assert event == "endpoint" and endpoint.startswith("/mcp/message?sessionId="), endpoint
        post = httpx.Client(base_url=srv.url, headers=srv.headers, timeout=60)

        def rpc(msg: dict[str, Any]) -> dict[str, Any] | None:
            r = post.post(endpoint, json=msg)
            assert r.status_code == 202, r.text
            if "id" not in msg:
                return None
            kind, data = sse.next()
            assert kind == "message"
            return json.loads(data)

        init = rpc({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "v3", "version": "1"}}})
        assert init["result"]["serverInfo"]["name"] == "memcli"  # type: ignore[index]
        rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})
        out = rpc({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "remember", "arguments": {"content": "Invoices are numbered per year"}}})
        assert out["result"]["isError"] is False  # type: ignore[index]
        # the SDK's own spelling works too, and a session that does not exist is 404
        sid = endpoint.split("sessionId=")[1]
        r = post.post(f"/mcp/message?session_id={sid}", json={"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert r.status_code == 202 and json.loads(sse.next()[1])["id"] == 3
        assert post.post("/mcp/message?sessionId=" + "0" * 32, json={"jsonrpc": "2.0", "id": 4,
                                                                    "method": "ping"}).status_code == 404
        # the body limit of /mcp
        big = post.post(endpoint, content=b'{"x": "' + b"a" * (1 << 20) + b'"}',
                        headers={"Content-Type": "application/json"})
        assert big.status_code == 413
        post.close()
        assert srv.stop() == 0  # a client still connected does not hold the shutdown
    finally:
        sse.close()
        srv.stop()


def test_an_sse_entry_says_its_agent_in_the_url(tmp_path: Path, subprocess_env: dict[str, str],
                                                memcli_bin: str) -> None:
    srv = start_server(memcli_bin, subprocess_env, tmp_path / "home")

    async def main() -> None:
        for path, agent in (("/sse?agent=gemini", "gemini"), ("/mcp/sse?agent=claude-desktop", "claude-desktop")):
            async with sse_session(srv.url + path, srv.headers) as s:
                r = await call(s, "remember", content=f"{agent} keeps its notes in English")
                assert (await call(s, "get", memory_id=r["memory_id"]))["scope"] == f"agent:{agent}"

    try:
        anyio.run(main)
    finally:
        srv.stop()


def test_sse_needs_the_token_and_refuses_a_foreign_origin_and_host(tmp_path: Path, subprocess_env: dict[str, str],
                                                                    memcli_bin: str) -> None:
    srv = start_server(memcli_bin, subprocess_env, tmp_path / "home")
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            for path in ("/sse", "/mcp/sse"):
                assert c.get(path).status_code == 401
                assert c.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401
                assert c.get(path, headers={**srv.headers, "Origin": "https://evil.example"}).status_code == 403
                assert c.get(path, headers={**srv.headers, "Host": "evil.example"}).status_code == 421
            for path in ("/messages/?session_id=" + "0" * 32, "/mcp/message?sessionId=" + "0" * 32):
                assert c.post(path, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 401
                assert c.post(path, json={}, headers={**srv.headers, "Origin": "https://evil.example"}
                              ).status_code == 403
    finally:
        srv.stop()


def _space(srv: ServerProc, name: str, agent: str) -> str:
    with srv.client(timeout=30) as admin:
        r = admin.post("/api/spaces", json={"name": name, "agent": agent})
        assert r.status_code in (200, 201), r.text
        return r.json()["api_token"]


def test_a_space_token_session_stays_in_its_space_and_is_its_own(tmp_path: Path, subprocess_env: dict[str, str],
                                                                  memcli_bin: str) -> None:
    srv = start_server(memcli_bin, subprocess_env, tmp_path / "home")
    alice, bob = _space(srv, "space-a", "alice"), _space(srv, "space-b", "bob")

    async def main() -> str:
        async with sse_session(srv.url + "/sse", {"Authorization": f"Bearer {alice}"}) as s:
            r = await call(s, "remember", content="Space A deploys on Tuesdays", namespace="space-b")
            got = await call(s, "get", memory_id=r["memory_id"])
            assert got["namespace"] == "space-a" and got["scope"] == "agent:alice"
            return r["memory_id"]

    try:
        mid = anyio.run(main)
        # bob's token cannot post into alice's session: the session is not found for him
        sse = BareSse(srv.url, "/mcp/sse", {"Authorization": f"Bearer {alice}"})
        try:
            endpoint = sse.next()[1]
            r = httpx.post(srv.url + endpoint, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                           headers={"Authorization": f"Bearer {bob}"}, timeout=30)
            assert r.status_code == 404
        finally:
            sse.close()
        with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {bob}"}, timeout=30) as c:
            assert c.get(f"/api/memories/{mid}").status_code == 404
    finally:
        srv.stop()
