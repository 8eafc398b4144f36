"""Seed 004's MCP Inspector flow, with namespaces, run by the real Inspector CLI (npm's
@modelcontextprotocol/inspector-cli 1.0.3) against memcli over stdio (`memcli mcp`), Streamable HTTP (`/mcp`)
and legacy SSE (`/sse`): list the tools, remember into a namespace, recall and get it there (and not in the
default one), read the namespaces resource, get a prompt.

On request only (`pytest -m clients`): the Inspector comes from the clients' cache
(``$MEMCLI_TEST_CLIENTS_CACHE`` or ``~/.cache/memcli-test-clients``, see /work/shared/CLIENTS.md); the test
skips without it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _memcli_server import start_server
from test_mcp_clients import TOOLS

pytestmark = [pytest.mark.clients, pytest.mark.slow]

CACHE = Path(os.environ.get("MEMCLI_TEST_CLIENTS_CACHE") or Path.home() / ".cache" / "memcli-test-clients")
MODULES = CACHE / "npm" / "node_modules"
INSPECTOR = MODULES / ".bin" / "mcp-inspector-cli"


def _inspector(target: list[str], env: dict[str, str], *args: str) -> Any:
    # 1.0.3 needs a package.json above its working directory: node_modules' parent has one
    p = subprocess.run([str(INSPECTOR), "--cli", *target, *args], cwd=MODULES, env=env, capture_output=True,
                       text=True, timeout=180)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    return json.loads(p.stdout[p.stdout.index("{"):])


def _tool(target: list[str], env: dict[str, str], name: str, **args: str) -> Any:
    flags = [x for k, v in args.items() for x in ("--tool-arg", f"{k}={v}")]
    res = _inspector(target, env, "--method", "tools/call", "--tool-name", name, *flags)
    assert res["isError"] is False, res
    return json.loads(res["content"][0]["text"])


@pytest.mark.skipif(not INSPECTOR.exists(), reason=f"no MCP Inspector CLI under {MODULES} (see tests/_clients.py)")
@pytest.mark.parametrize("transport", ["stdio", "http", "sse"])
def test_seed_004_inspector_flow_with_namespaces(transport: str, memcli_bin: str, subprocess_env: dict[str, str],
                                                 home: Path) -> None:
    env = {**subprocess_env, "MEMCLI_HOME": str(home)}
    srv = None
    if transport == "stdio":
        target = [memcli_bin, "mcp"]
    else:
        srv = start_server(memcli_bin, subprocess_env, home)
        path = "/mcp" if transport == "http" else "/sse"
        target = [srv.url + path, "--transport", transport, "--header", f"Authorization: Bearer {srv.token}"]
    try:
        tools = _inspector(target, env, "--method", "tools/list")["tools"]
        assert {t["name"] for t in tools} == TOOLS
        ns = f"team-{transport}"
        r = _tool(target, env, "remember", content="Team A ships the mobile app on Mondays", namespace=ns,
                  agent_id="planner", ttl_seconds="86400", tags='["release"]')
        assert r["ok"] is True
        hits = _tool(target, env, "recall", query="when does the mobile app ship", namespace=ns, limit="3")
        assert hits[0]["memory_id"] == r["memory_id"] and hits[0]["scope"] == "agent:planner"
        assert _tool(target, env, "recall", query="when does the mobile app ship") == []  # the default namespace
        # a short id by its start (with its dash): the Inspector CLI reads an all-digit value, or one like
        # "12e45678", as a number, as it would any --tool-arg
        got = _tool(target, env, "get", memory_id=r["memory_id"][:13], namespace=ns)
        assert got["namespace"] == ns and got["tags"] == ["release"] and got["expires_at"]

        uris = {x["uri"] for x in _inspector(target, env, "--method", "resources/list")["resources"]}
        assert "memcli://namespaces" in uris
        read = _inspector(target, env, "--method", "resources/read", "--uri", "memcli://namespaces")
        spaces = json.loads(read["contents"][0]["text"])
        assert {n["namespace"]: n["total"] for n in spaces["namespaces"]}[ns] == 1
        prompt = _inspector(target, env, "--method", "prompts/get", "--prompt-name", "what-do-we-know",
                            "--prompt-args", "topic=mobile app release", f"namespace={ns}")
        assert r["memory_id"] in prompt["messages"][0]["content"]["text"]
        assert _tool(target, env, "forget", memory_id=r["memory_id"], namespace=ns)["ok"] is True
    finally:
        if srv is not None:
            srv.stop()
