"""MCP resources and prompts, listed and read by the SDK's real client over stdio (`memcli mcp`) and Streamable
HTTP (`memcli serve`), on one home: what one face wrote, the other's resources show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from _memcli_server import start_server
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from test_mcp_clients import call, http_session, stdio_session

pytestmark = pytest.mark.slow

RESOURCES = {"memcli://stats", "memcli://namespaces", "memcli://scopes", "memcli://recent"}
TEMPLATES = {"memcli://recent/{namespace}", "memcli://export/{namespace}", "memcli://memory/{memory_id}",
             "memcli://memory/{namespace}/{memory_id}"}
PROMPTS = {"record-decision", "summarize-recent", "what-do-we-know", "session-handoff"}


async def read(session: ClientSession, uri: str) -> Any:
    res = await session.read_resource(uri)
    assert res.contents[0].mime_type == "application/json"
    return json.loads(res.contents[0].text)  # type: ignore[union-attr]


async def prompt(session: ClientSession, name: str, **args: str) -> str:
    res = await session.get_prompt(name, args)
    assert res.messages[0].role == "user"
    return res.messages[0].content.text  # type: ignore[union-attr]


def test_resources_and_prompts_on_stdio_and_http(memcli_bin: str, subprocess_env: dict[str, str], home: Path) -> None:
    srv = start_server(memcli_bin, subprocess_env, home)

    async def main() -> None:
        async with stdio_session(memcli_bin, subprocess_env) as local, \
                http_session(srv.url + "/mcp", srv.headers) as remote:
            for s in (local, remote):
                assert {str(r.uri) for r in (await s.list_resources()).resources} == RESOURCES
                assert {t.uri_template for t in (await s.list_resource_templates()).resource_templates} == TEMPLATES
                prompts = {p.name: p for p in (await s.list_prompts()).prompts}
                assert set(prompts) == PROMPTS
                assert [a.name for a in prompts["what-do-we-know"].arguments or []] == ["topic", "namespace"]

            a = await call(local, "remember", content="We chose PostgreSQL 16 for the billing service",
                           tags=["decision"], agent="codex")
            b = await call(remote, "remember", content="The billing service's CI needs Docker 25",
                           namespace="ops")

            stats = await read(remote, "memcli://stats")
            assert stats["total"] == 2 and stats["namespaces"] == {"default": 1, "ops": 1}
            spaces = await read(local, "memcli://namespaces")
            assert {n["namespace"]: n["total"] for n in spaces["namespaces"]} == {"default": 1, "ops": 1}
            scopes = await read(local, "memcli://scopes")
            assert scopes["scopes"] == {"agent:codex": 1, "global": 1}
            assert scopes["by_namespace"]["ops"] == {"global": 1}
            assert [m["memory_id"] for m in await read(remote, "memcli://recent")] == [a["memory_id"]]
            assert [m["memory_id"] for m in await read(local, "memcli://recent/ops")] == [b["memory_id"]]
            export = await read(local, "memcli://export/ops")
            assert export["count"] == 1 and export["memories"][0]["content"].endswith("Docker 25")
            one = await read(remote, f"memcli://memory/{a['memory_id']}")
            assert one["content"].startswith("We chose PostgreSQL") and one["version"] == 1
            assert (await read(local, f"memcli://memory/ops/{b['memory_id'][-8:]}"))["namespace"] == "ops"
            for s in (local, remote):  # a memory of another namespace is not found; a bad id is a clear error
                with pytest.raises(MCPError, match="no memory with id"):
                    await s.read_resource(f"memcli://memory/{b['memory_id']}")
                with pytest.raises(MCPError, match="invalid memory id"):
                    await s.read_resource("memcli://memory/zz")

            text = await prompt(local, "what-do-we-know", topic="billing database")
            assert a["memory_id"] in text and "PostgreSQL 16" in text
            assert "Docker 25" in await prompt(remote, "summarize-recent", namespace="ops")
            rec = await prompt(remote, "record-decision", decision="Use ruff", reason="one fast tool")
            assert "Decision: Use ruff" in rec and "Reason: one fast tool" in rec and "remember" in rec
            assert "PostgreSQL 16" in await prompt(local, "session-handoff", focus="billing")
            with pytest.raises(MCPError, match="limit"):
                await remote.get_prompt("summarize-recent", {"limit": "lots"})

    try:
        anyio.run(main)
    finally:
        srv.stop()
