"""Secrets never reach the store, whichever way they come in (issue 17, item 9).

The 55 kinds of bench/data/redact_cases.json (vendor keys, a bare AWS secret key in prose, JWTs, headers,
passwords in assignments, URLs, flags and prose, PEM keys, `<private>` blocks, memcli's own tokens), each in
the sentence an agent would write it in, go through every write path as a user launches it: the installed
CLI (remember, its metadata, update, import), stdio MCP and `/mcp` (remember, update), REST (one, batch,
PATCH, import) with the admin token and a space token, `memcli sync push|pull`, and the Claude Code hooks
through their launcher (the prompt kept for Stop in hooks-state/, a turn queued while the server is down).
None of the values may then be found in `memcli export`, nor anywhere in the bytes of the LanceDB
directory, the hooks' spool or state. `keep_secrets` stores a value as given — the positive control that the
byte search does see stored text — and the audit log says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from _memcli_server import MEMCLI, hash_env, start_server
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from test_hooks_e2e import kill_spawned, serve, wait_for

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
CASES: list[dict[str, str]] = json.loads((ROOT / "bench" / "data" / "redact_cases.json").read_text())["secrets"]
ALL_TEXT = "\n".join(c["text"] for c in CASES)
CONTROL = "sk-ant-api03-KEEPCONTROL" + "x7Q2" * 8  # stored on purpose (keep_secrets): the byte search must see it
KEPT_NOTE = "keep_secrets"


def test_the_cases_cover_at_least_30_kinds() -> None:
    assert len({c["kind"] for c in CASES}) >= 30


def leaks(data: bytes) -> list[str]:
    """The kinds whose secret value (any 6+ character line of it) occurs in ``data``."""
    return [c["kind"] for c in CASES if any(len(p) >= 6 and p.encode() in data for p in c["secret"].split("\n"))]


def tree_bytes(*dirs: Path) -> bytes:
    """Every byte of every file under ``dirs`` (the store, the spool, the hooks' state)."""
    out = bytearray()
    for d in dirs:
        for root, _, files in os.walk(d):
            for name in files:
                try:
                    out += Path(root, name).read_bytes()
                except OSError:
                    pass
    return bytes(out)


def cli(home: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> Any:
    """The installed `memcli` binary, --json."""
    e = {**hash_env(home.parent), "MEMCLI_HOME": str(home), **(env or {})}
    p = subprocess.run([MEMCLI, *args, "--json"], env=e, capture_output=True, text=True, timeout=180, input=stdin)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return json.loads(p.stdout)


def exported(home: Path, tmp: Path) -> bytes:
    out = tmp / f"export-{home.name}.jsonl"
    subprocess.run([MEMCLI, "export", "-o", str(out), "--include-archived"], check=True, timeout=180,
                   env={**hash_env(home.parent), "MEMCLI_HOME": str(home)}, capture_output=True)
    return out.read_bytes()


def check_home(home: Path, tmp: Path, *, control: bool, redacted: int = 30) -> None:
    """No case's value in the export or the raw files; the kept control value in both (when one was kept);
    at least ``redacted`` redactions in the export (the secrets went in, and came out as markers)."""
    export, raw = exported(home, tmp), tree_bytes(home / "data", home / "spool", home / "hooks-state")
    assert leaks(export) == [] and leaks(raw) == []
    assert (CONTROL.encode() in export and CONTROL.encode() in raw) is control
    assert export.count(b"[REDACTED") >= redacted


def records(prefix: str) -> list[dict[str, Any]]:
    """Export records (one per kind) as another memcli would write them."""
    return [{"id": f"{prefix}{i:04x}-0000-7000-8000-{i:012x}", "content": c["text"], "namespace": "default",
             "scope": "global", "tags": ["imported"], "metadata": {"origin": c["text"]}}
            for i, c in enumerate(CASES)]


@asynccontextmanager
async def stdio_mcp(home: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=MEMCLI, args=["mcp"], env={**hash_env(home.parent),
                                                                      "MEMCLI_HOME": str(home)})
    with open(home.parent / "mcp-stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def http_mcp(url: str, token: str) -> AsyncIterator[ClientSession]:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as client, \
            streamable_http_client(url, http_client=client) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def tool(session: ClientSession, name: str, **args: Any) -> Any:
    res = await session.call_tool(name, args)
    assert not res.is_error, res.content
    return json.loads(res.content[0].text)


def test_cli_and_stdio_mcp_never_store_a_secret(tmp_path: Path) -> None:
    home = tmp_path / "laptop"
    cli(home, "remember", ALL_TEXT, "--tag", "cli")
    cli(home, "remember", "-", "--metadata", json.dumps({"notes": ALL_TEXT}), stdin="cli with metadata\n" + ALL_TEXT)
    mid = cli(home, "remember", "the deploy checklist, to be completed")["memory_id"]
    cli(home, "update", mid, "--content", "update path:\n" + ALL_TEXT)
    (tmp_path / "in.jsonl").write_text("\n".join(json.dumps(r) for r in records("0a0a")) + "\n")
    assert cli(home, "import", str(tmp_path / "in.jsonl"))["added"] == len(CASES)
    kept = cli(home, "remember", f"the control key {CONTROL}", "--keep-secrets")["memory_id"]

    async def mcp() -> None:
        async with stdio_mcp(home) as s:
            await tool(s, "remember", content="stdio MCP:\n" + ALL_TEXT, metadata={"why": ALL_TEXT})
            m = await tool(s, "remember", content="a note to correct over MCP")
            await tool(s, "update", memory_id=m["memory_id"], content="stdio MCP update:\n" + ALL_TEXT)
    anyio.run(mcp)

    check_home(home, tmp_path, control=True)
    history = cli(home, "history", kept)
    assert KEPT_NOTE in history[0]["note"]  # the opt-out is on the record
    assert KEPT_NOTE not in cli(home, "history", mid)[-1]["note"]


def test_rest_and_http_mcp_never_store_a_secret_for_the_admin_or_a_space(tmp_path: Path) -> None:
    srv = start_server(MEMCLI, hash_env(tmp_path), tmp_path / "server")
    try:
        with srv.client(timeout=60) as admin:
            space = admin.post("/api/spaces", json={"name": "crew", "agent": "bob"}).json()["api_token"]
            with httpx.Client(base_url=srv.url, timeout=60, headers={"Authorization": f"Bearer {space}"}) as bob:
                for api, who in ((admin, "admin"), (bob, "space")):
                    for c in CASES:
                        r = api.post("/api/memories", json={"content": f"{who} one: {c['text']}",
                                                            "metadata": {"k": c["text"]}})
                        assert r.status_code == 201, r.text
                    r = api.post("/api/memories/batch", json=[{"content": f"{who} batch: {c['text']}"} for c in CASES])
                    assert r.status_code == 201, r.text
                    mid = api.post("/api/memories", json={"content": f"{who}: to be patched"}).json()["memory_id"]
                    r = api.patch(f"/api/memories/{mid}", json={"content": f"{who} patch:\n{ALL_TEXT}",
                                                                 "metadata": {"k": ALL_TEXT}})
                    assert r.status_code == 200, r.text
                    r = api.post("/api/import", json={"records": records("0b0b" if who == "admin" else "0c0c")})
                    assert r.status_code == 200 and r.json()["added"] == len(CASES), r.text
                kept = bob.post("/api/memories", json={"content": f"space control {CONTROL}", "keep_secrets": True})
                assert kept.status_code == 201
                history = bob.get(f"/api/memories/{kept.json()['memory_id']}/history").json()
                assert KEPT_NOTE in history[0]["note"]
                assert bob.post("/api/memories", json={"content": "x", "keep_secrets": "yes"}).status_code == 422

            async def mcp() -> None:
                for token in (srv.token, space):
                    async with http_mcp(srv.url + "/mcp", token) as s:
                        await tool(s, "remember", content="http MCP:\n" + ALL_TEXT)
                        m = await tool(s, "remember", content=f"http MCP note {token[:6]}")
                        await tool(s, "update", memory_id=m["memory_id"], content="http MCP update:\n" + ALL_TEXT)
            anyio.run(mcp)
    finally:
        srv.stop()
    check_home(srv.home, tmp_path, control=True)


def test_sync_push_and_pull_redact_what_they_copy(tmp_path: Path) -> None:
    srv = start_server(MEMCLI, hash_env(tmp_path), tmp_path / "server")
    try:
        with srv.client(timeout=60) as admin:
            token = admin.post("/api/spaces", json={"name": "crew", "agent": "laptop"}).json()["api_token"]
        team = {"MEMCLI_API_URL": srv.url, "MEMCLI_API_TOKEN": token}
        laptop = tmp_path / "laptop"  # a personal store that kept its secrets on purpose
        (tmp_path / "in.jsonl").write_text("\n".join(json.dumps(r) for r in records("0d0d")) + "\n")
        cli(laptop, "import", str(tmp_path / "in.jsonl"), "--keep-secrets")
        assert leaks(exported(laptop, tmp_path))  # they are there, verbatim
        assert cli(laptop, "sync", "push", env=team)["added"] == len(CASES)
        with httpx.Client(base_url=srv.url, timeout=60, headers={"Authorization": f"Bearer {token}"}) as bob:
            assert bob.post("/api/memories/batch", json={"memories": [
                {"content": f"space kept: {c['text']}", "keep_secrets": True} for c in CASES]}).status_code == 201
            space_export = bob.get("/api/export").content
        assert set(leaks(space_export)) == {c["kind"] for c in CASES}  # only the ones kept in the space itself
        other = tmp_path / "other-laptop"
        assert cli(other, "sync", "pull", env=team)["added"] >= len(CASES)
    finally:
        srv.stop()
    check_home(other, tmp_path, control=False)
    pushed = b"\n".join(line for line in exported(srv.home, tmp_path).splitlines() if b"space kept" not in line)
    assert leaks(pushed) == [] and pushed.count(b"[REDACTED") >= 30  # what the push wrote was redacted


def test_the_hooks_keep_no_secret_in_state_spool_or_store(home: Path, tmp_path: Path) -> None:
    launcher = ["sh", str(ROOT / "hooks" / "run.sh")]
    srv = serve(home, {"MEMCLI_EMBEDDER": "hash"})
    env = {**srv.env, "MEMCLI_PYTHON": sys.executable, "CLAUDE_PLUGIN_DATA": str(tmp_path / "plugin-data")}
    base = {"session_id": "secrets-1", "cwd": str(tmp_path), "transcript_path": ""}
    try:
        p = subprocess.run([*launcher, "UserPromptSubmit"], env=env, capture_output=True, timeout=60,
                           input=json.dumps({**base, "hook_event_name": "UserPromptSubmit",
                                             "prompt": "remember these for the deploy:\n" + ALL_TEXT}).encode())
        assert p.returncode == 0
        state = tree_bytes(home / "hooks-state")
        assert b"remember these for the deploy" in state  # the prompt is kept for Stop: redacted
        assert leaks(state) == []
    finally:
        srv.stop()
    # the server is down (and was just started by another hook, so this one starts none): the turn waits in the
    # spool, redacted before it touches the disk
    (home / "hooks-state" / "server-start.stamp").write_text("now")
    reply = "Noted. Here is what you gave me, for the record:\n" + ALL_TEXT
    p = subprocess.run([*launcher, "Stop"], env=env, capture_output=True, timeout=60,
                       input=json.dumps({**base, "hook_event_name": "Stop", "stop_hook_active": False,
                                         "last_assistant_message": reply}).encode())
    assert (p.returncode, p.stdout) == (0, b"")
    spool = tree_bytes(home / "spool")
    assert b"what you gave me" in spool and leaks(spool) == []
    srv = serve(home, {"MEMCLI_EMBEDDER": "hash"})  # back: it stores the queued turn, redacted too
    try:
        from test_hooks_e2e import turns

        assert "[REDACTED" in wait_for(lambda: turns(home), timeout=60)[0].content
    finally:
        srv.stop()
        kill_spawned(home)
    check_home(home, tmp_path, control=False, redacted=1)  # the turn is a summary: not every line is kept
