"""The MCP face with the official SDK's real client: over stdio (spawning `memcli mcp`) and over Streamable
HTTP (a real `memcli serve`), both on one home, so what one client remembers the other recalls."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from _memcli_server import start_server
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

pytestmark = pytest.mark.slow

TOOLS = {"remember", "recall", "list_facts", "check_duplicate", "forget", "update", "get",
         "get_board", "get_task", "create_task", "move_card", "trigger_job", "list_tasks_by_status"}


@asynccontextmanager
async def stdio_session(memcli_bin: str, env: dict[str, str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=memcli_bin, args=["mcp"], env=env)
    with open(Path(env["MEMCLI_HOME"]).parent / "mcp-stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    async with create_mcp_http_client(headers=headers) as client, \
            streamable_http_client(url, http_client=client) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **args: Any) -> Any:
    """A tool call that must succeed; its JSON text (the CLI shape)."""
    res = await session.call_tool(tool, args)
    assert not res.is_error, res.content
    data = json.loads(res.content[0].text)
    assert res.structured_content == (data if isinstance(data, dict) else {"result": data})
    return data


async def error(session: ClientSession, tool: str, **args: Any) -> str:
    res = await session.call_tool(tool, args)
    assert res.is_error, res
    return res.content[0].text


def test_stdio_and_http_clients_share_one_memory(memcli_bin: str, subprocess_env: dict[str, str],
                                                 home: Path) -> None:
    srv = start_server(memcli_bin, subprocess_env, home, ready=False)  # the store opens while stdio starts

    async def main() -> None:
        async with stdio_session(memcli_bin, subprocess_env) as local, \
                http_session(srv.url + "/mcp", srv.headers) as remote:
            for session in (local, remote):
                tools = {t.name: t for t in (await session.list_tools()).tools}
                assert set(tools) == TOOLS
                assert tools["recall"].annotations.read_only_hint is True
                assert tools["forget"].annotations.destructive_hint is True
                assert tools["remember"].annotations.read_only_hint is False
                assert all(len(t.description or "") > 40 for t in tools.values())

            # stdio writes, HTTP reads
            r = await call(local, "remember", content="Codex found that the flaky upload test needs a 5 s timeout",
                           tags=["bug"], agent="codex")
            assert r["ok"] is True and r["created"] is True and r["duplicate_of"] == []
            hits = await call(remote, "recall", query="flaky upload test timeout")
            assert hits[0]["memory_id"] == r["memory_id"] and hits[0]["scope"] == "agent:codex"
            assert {"memory_id", "content", "score", "tags", "scope", "namespace", "importance", "key",
                    "created_at", "updated_at"} <= set(hits[0])

            # HTTP writes, stdio reads
            r2 = await call(remote, "remember", content="Claude Code decided to use ruff instead of flake8",
                            tags=["decision"], importance=0.9)
            assert (await call(local, "recall", query="ruff flake8", top_k=1))[0]["memory_id"] == r2["memory_id"]
            listed = await call(local, "list_facts", tag="decision")
            assert [m["memory_id"] for m in listed] == [r2["memory_id"]]
            assert [m["memory_id"] for m in await call(remote, "list_facts", agent="codex")] == [r["memory_id"]]
            assert [m["memory_id"] for m in await call(remote, "list_facts", agent="agent:codex")] == [r["memory_id"]]

            dup = await call(remote, "check_duplicate", content="Claude Code decided to use ruff instead of flake8")
            assert dup["is_duplicate"] is True and dup["similar"][0]["memory_id"] == r2["memory_id"]

            got = await call(local, "get", memory_id=r2["memory_id"][-8:])
            assert got["content"].startswith("Claude Code decided") and got["version"] == 1
            upd = await call(remote, "update", memory_id=r2["memory_id"], tags=["decision", "lint"], expected_version=1)
            assert upd == {"ok": True, "memory_id": r2["memory_id"], "version": 2}
            assert (await call(local, "get", memory_id=r2["memory_id"]))["tags"] == ["decision", "lint"]
            assert "version 2" in await error(local, "update", memory_id=r2["memory_id"], importance=0.1,
                                              expected_version=1)

            assert await call(local, "forget", memory_id=r["memory_id"]) == {"ok": True, "memory_id": r["memory_id"]}
            assert "no memory with id" in await error(remote, "get", memory_id=r["memory_id"])
            assert [h["memory_id"] for h in await call(remote, "recall", query="flaky upload")] == [r2["memory_id"]]

            # bad input: a tool error with a clear message, and the server carries on
            for s in (local, remote):
                assert "content is empty" in await error(s, "remember", content="   ")
                assert "32,000" in await error(s, "remember", content="x" * 32_001)
                assert "importance" in await error(s, "remember", content="fine", importance=2)
                assert "invalid duration" in await error(s, "remember", content="fine", ttl="soon")
                assert "query is empty" in await error(s, "recall", query="")
                assert "top_k" in await error(s, "recall", query="x", top_k=0)
                assert "invalid memory id" in await error(s, "get", memory_id="zz")
                assert "no memory with id" in await error(s, "forget", memory_id="abcdef12")
                assert "content" in await error(s, "remember")
                assert "unknown tool" in (await error(s, "nope")).lower()
            assert "invalid tag" in await error(local, "remember", content="fine", tags=["bad\ttag"])
            assert (await call(local, "remember", content="still works after errors"))["created"] is True

    try:
        anyio.run(main)
    finally:
        srv.stop()
    mems = _service_rows(home)
    assert [(m.content, m.source) for m in mems] == [("still works after errors", "mcp"),
                                                     ("Claude Code decided to use ruff instead of flake8", "mcp")]


def test_stdio_stdout_carries_only_json_rpc(memcli_bin: str, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    """Raw bytes on `memcli mcp`'s stdout: every line is a JSON-RPC message, through a store open, a write,
    a tool error, a malformed line and SIGTERM."""
    env = {**subprocess_env, "PYTHONWARNINGS": "always", "RUST_LOG": "debug"}
    errlog = tmp_path / "stderr.log"
    with open(errlog, "wb") as err:
        proc = subprocess.Popen([memcli_bin, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env)
    assert proc.stdin and proc.stdout

    def send(msg: dict[str, Any] | str) -> None:
        proc.stdin.write(((msg if isinstance(msg, str) else json.dumps(msg)) + "\n").encode())
        proc.stdin.flush()

    def reply() -> dict[str, Any]:
        line = proc.stdout.readline()
        assert line, errlog.read_text()
        return json.loads(line)

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert reply()["result"]["serverInfo"]["name"] == "memcli"
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
          "params": {"name": "remember", "arguments": {"content": "stdout stays clean", "tags": ["t"]}}})
    r = reply()
    assert r["id"] == 2 and r["result"]["isError"] is False
    send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get", "arguments": {"memory_id": "0"}}})
    assert reply()["result"]["isError"] is True
    send("this is not json")
    send({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
    msgs = [reply()]  # every line parses as JSON...
    while msgs[-1].get("id") != 4:
        msgs.append(reply())
    assert len(msgs[-1]["result"]["tools"]) == len(TOOLS)
    proc.send_signal(signal.SIGTERM)  # a client stopping its server: exit 0, nothing else on stdout
    rest = proc.stdout.read()
    assert proc.wait(30) == 0, errlog.read_text()
    proc.stdin.close()
    msgs += [json.loads(ln) for ln in rest.decode().splitlines() if ln.strip()]
    assert all(m.get("jsonrpc") == "2.0" for m in msgs)  # ...and is JSON-RPC


def _service_rows(home: Path) -> list[Any]:
    from memcli.config import load_config
    from memcli.memory.service import MemoryService

    svc = MemoryService.open(load_config(home))
    try:
        return svc.list(limit=100)
    finally:
        svc.close()
