"""Who wrote it, and seed 004's tool arguments, through real MCP client sessions.

`memcli setup` writes each client's entry with its agent: a memory written through Codex's entry is Codex's
(scope agent:codex), the history names the MCP client and its version, and an explicit `agent` still wins; over
HTTP the entry says it with `?agent=`. Seed 004's names (`agent_id`, `limit`, `ttl_seconds`, `namespace` on
get/update/forget, `request_id`) work without adding tools, and a wrong argument is one clean sentence."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import tomllib
from _memcli_server import start_server
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import Implementation
from test_mcp_clients import TOOLS, call, error, http_session

pytestmark = pytest.mark.slow


@asynccontextmanager
async def entry_session(entry: dict[str, Any], env: dict[str, str], client: str,
                        version: str) -> AsyncIterator[ClientSession]:
    """The MCP server an agent's config entry names, started the way the agent starts it."""
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env={**env, **entry.get("env", {})})
    with open(Path(env["MEMCLI_HOME"]).parent / f"{client}-stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write, client_info=Implementation(name=client, version=version)) as session:
            await session.initialize()
            yield session


def _history(memcli_bin: str, env: dict[str, str], memory_id: str) -> list[dict[str, Any]]:
    p = subprocess.run([memcli_bin, "history", memory_id, "--json"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_setup_entries_make_each_clients_writes_its_own(memcli_bin: str, subprocess_env: dict[str, str],
                                                        home: Path, tmp_path: Path) -> None:
    user_home = Path(subprocess_env["HOME"])
    (user_home / ".codex").mkdir(parents=True)
    (user_home / ".gemini").mkdir(parents=True)
    (user_home / ".gemini" / "settings.json").write_text("{}")
    p = subprocess.run([memcli_bin, "setup", "--yes", "--agents", "codex,gemini"], env=subprocess_env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    codex = tomllib.loads((user_home / ".codex" / "config.toml").read_text())["mcp_servers"]["memcli"]
    gemini = json.loads((user_home / ".gemini" / "settings.json").read_text())["mcpServers"]["memcli"]
    assert codex["args"][-2:] == ["--agent", "codex"] and gemini["args"][-2:] == ["--agent", "gemini"]

    async def main() -> tuple[str, str, str]:
        async with entry_session(codex, subprocess_env, "codex-mcp-client", "0.171.0") as c, \
                entry_session(gemini, subprocess_env, "gemini-cli-mcp-client", "0.61.0") as g:
            a = await call(c, "remember", content="The payments API rate limit is 100 requests per second")
            b = await call(g, "remember", content="Gemini prefers the staging cluster for load tests")
            d = await call(c, "remember", content="Reviewers sign off releases on Fridays", agent="reviewer")
            await call(g, "update", memory_id=a["memory_id"], tags=["limits"])
            hits = {h["memory_id"]: h["scope"] for h in await call(c, "list_facts")}
            assert hits == {a["memory_id"]: "agent:codex", b["memory_id"]: "agent:gemini",
                            d["memory_id"]: "agent:reviewer"}
            return a["memory_id"], b["memory_id"], d["memory_id"]

    a, b, d = anyio.run(main)
    history = _history(memcli_bin, subprocess_env, a)
    assert [(e["action"], e["actor"]) for e in history] == [
        ("remember", "agent:codex (codex-mcp-client 0.171.0)"),
        ("update", "agent:gemini (gemini-cli-mcp-client 0.61.0)")]
    assert _history(memcli_bin, subprocess_env, d)[0]["actor"] == "agent:reviewer (codex-mcp-client 0.171.0)"


def test_http_entries_say_their_agent_in_the_url(memcli_bin: str, subprocess_env: dict[str, str],
                                                 home: Path) -> None:
    srv = start_server(memcli_bin, subprocess_env, home)

    async def main() -> str:
        async with http_session(srv.url + "/mcp?agent=antigravity", srv.headers) as s, \
                http_session(srv.url + "/mcp", srv.headers) as plain:
            r = await call(s, "remember", content="Antigravity runs the e2e suite nightly")
            assert (await call(s, "get", memory_id=r["memory_id"]))["scope"] == "agent:antigravity"
            r2 = await call(plain, "remember", content="Nobody owns the flaky login test")
            assert (await call(plain, "get", memory_id=r2["memory_id"]))["scope"] == "global"
            return r["memory_id"]

    try:
        mid = anyio.run(main)
    finally:
        srv.stop()
    assert _history(memcli_bin, subprocess_env, mid)[0]["actor"].startswith("agent:antigravity (")


def test_seed_004_arguments_without_duplicate_tools(memcli_bin: str, subprocess_env: dict[str, str],
                                                    home: Path) -> None:
    srv = start_server(memcli_bin, subprocess_env, home)

    async def main() -> None:
        async with http_session(srv.url + "/mcp", srv.headers) as s:
            tools = (await s.list_tools()).tools
            assert sorted(t.name for t in tools) == sorted(TOOLS)  # aliases are arguments, not tools
            for t in tools:
                assert "\n        " not in (t.description or ""), t.name  # the docstring's indentation is gone
            remember = next(t for t in tools if t.name == "remember").input_schema["properties"]
            assert {"agent_id", "ttl_seconds", "request_id", "namespace"} <= set(remember)

            r = await call(s, "remember", content="Ops rotates the VPN keys every 90 days", namespace="ops",
                           agent_id="ops-bot", ttl_seconds=3600)
            got = await call(s, "get", memory_id=r["memory_id"], namespace="ops")
            assert got["scope"] == "agent:ops-bot" and got["namespace"] == "ops"
            assert abs(got["expires_at"] - (time.time() + 3600) * 1000) < 120_000
            assert "no memory with id" in await error(s, "get", memory_id=r["memory_id"])  # not in default
            assert (await call(s, "update", memory_id=r["memory_id"], namespace="ops", importance=0.9))["version"] == 2
            hits = await call(s, "recall", query="VPN keys rotation", namespace="ops", limit=1, agent_id="ops-bot")
            assert [h["memory_id"] for h in hits] == [r["memory_id"]]
            assert "top_k and limit" in await error(s, "recall", query="x", top_k=2, limit=3)
            assert [m["memory_id"] for m in await call(s, "list_facts", namespace="ops", agent_id="ops-bot")] == [
                r["memory_id"]]

            # request_id: a retried write gets the first answer and writes nothing
            first = await call(s, "update", memory_id=r["memory_id"], namespace="ops", content="Ops rotates the "
                               "VPN keys every 60 days", expected_version=2, request_id="req-7")
            again = await call(s, "update", memory_id=r["memory_id"], namespace="ops", content="Ops rotates the "
                               "VPN keys every 60 days", expected_version=2, request_id="req-7")
            assert first == again == {"ok": True, "memory_id": r["memory_id"], "version": 3}
            assert "version 3" in await error(s, "update", memory_id=r["memory_id"], namespace="ops",
                                              content="Ops rotates the VPN keys every 60 days", expected_version=2)
            assert "another call" in await error(s, "update", memory_id=r["memory_id"], namespace="ops",
                                                 content="something else", request_id="req-7")
            k1 = await call(s, "remember", content="Deploy freeze starts Dec 20", key="freeze", request_id="k-1")
            k2 = await call(s, "remember", content="Deploy freeze starts Dec 20", key="freeze", request_id="k-1")
            assert k1 == k2 and k1["created"] is True
            assert (await call(s, "get", memory_id=k1["memory_id"]))["version"] == 1
            gone = await call(s, "forget", memory_id=r["memory_id"], namespace="ops", request_id="f-1")
            assert await call(s, "forget", memory_id=r["memory_id"], namespace="ops", request_id="f-1") == gone
            assert "no memory with id" in await error(s, "forget", memory_id=r["memory_id"], namespace="ops")

            # a wrong argument: one clean sentence, no pydantic report
            bad = await error(s, "remember", content="fine", tag="bug")
            assert "unknown argument 'tag'" in bad and "tags" in bad
            assert "pydantic" not in bad and "https://" not in bad and "\n" not in bad
            assert "importance" in (bad := await error(s, "remember", content="fine", importance=2))
            assert "pydantic" not in bad
            assert "missing argument 'content'" in await error(s, "remember")

    try:
        anyio.run(main)
    finally:
        srv.stop()
