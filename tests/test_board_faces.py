"""The task board through its faces, against one real `memcli serve` (module-scoped) on a home with jobs
configured: two real MCP client sessions racing to move the same card, the board tools and their errors, a
job triggered over MCP, REST (ETag/If-Match, 412 on a stale move, 409 on a forbidden move, 404 on an unknown
job), and the `memcli board` CLI round trip with --json on the same store."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from _memcli_server import MEMCLI, ServerProc, hash_env, start_server
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

pytestmark = pytest.mark.slow

BOARD_TOOLS = {"get_board", "get_task", "create_task", "move_card", "trigger_job", "list_tasks_by_status"}
CONFIG = """
[jobs.check]
command = ["sh", "-c", "echo checking $MEMCLI_TASK_ID; exit 0"]
timeout = 30

[jobs.broken]
command = ["sh", "-c", "echo broken >&2; exit 7"]
"""



@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("board")
    home = tmp / "home"
    home.mkdir()
    (home / "config.toml").write_text(CONFIG)
    srv = start_server(MEMCLI, hash_env(tmp), home)
    yield srv
    srv.stop()


@pytest.fixture
def api(server: ServerProc) -> Iterator[httpx.Client]:
    with server.client(timeout=30) as c:
        yield c


@pytest.fixture
def ns() -> str:
    """A fresh namespace (its own board) per test: the module's tests share one server."""
    return "b-" + uuid.uuid4().hex[:10]


@asynccontextmanager
async def mcp_session(server: ServerProc) -> AsyncIterator[ClientSession]:
    async with create_mcp_http_client(headers=server.headers) as client, \
            streamable_http_client(server.url + "/mcp", http_client=client) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def stdio_session(server: ServerProc) -> AsyncIterator[ClientSession]:
    """`memcli mcp` on the server's home: another process, with its own connection to the same store."""
    env = {**hash_env(server.home.parent), "MEMCLI_HOME": str(server.home)}
    with open(server.home.parent / "mcp-stdio.log", "w") as errlog:
        async with stdio_client(StdioServerParameters(command=MEMCLI, args=["mcp"], env=env), errlog=errlog) as (
                read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def tool(session: ClientSession, name: str, **args: Any) -> Any:
    res = await session.call_tool(name, args)
    assert not res.is_error, res.content
    return json.loads(res.content[0].text)


async def tool_error(session: ClientSession, name: str, **args: Any) -> str:
    res = await session.call_tool(name, args)
    assert res.is_error, res.content
    return res.content[0].text


def test_two_mcp_clients_move_the_same_card_at_once(server: ServerProc, ns: str) -> None:
    """Both read version 1 and move at the same moment: exactly one move lands, the other is a clear error —
    whether both sessions are served by one process or by two (a stdio `memcli mcp` and `memcli serve`)."""

    async def main() -> None:
        # two HTTP sessions of one server, then an HTTP session against a stdio server (another process)
        async with mcp_session(server) as codex, mcp_session(server) as http_claude, \
                stdio_session(server) as stdio_claude:
            assert BOARD_TOOLS <= {t.name for t in (await codex.list_tools()).tools}
            assert BOARD_TOOLS <= {t.name for t in (await stdio_claude.list_tools()).tools}
            for round_ in range(4):
                claude = http_claude if round_ < 2 else stdio_claude
                card = await tool(codex, "create_task", title=f"Race {round_}", status="doing", namespace=ns)
                tid, version = card["task_id"], card["task"]["version"]
                results: dict[str, Any] = {}

                async def move(who: str, session: ClientSession, target: str) -> None:
                    results[who] = await session.call_tool("move_card", {
                        "task_id": tid, "to_status": target, "expected_version": version, "agent": who,
                        "reason": f"{who} takes it", "namespace": ns})

                async with anyio.create_task_group() as tg:
                    tg.start_soon(move, "codex", codex, "review")
                    tg.start_soon(move, "claude", claude, "todo")
                winners = [w for w, r in results.items() if not r.is_error]
                losers = [w for w, r in results.items() if r.is_error]
                assert len(winners) == 1 and len(losers) == 1, results
                message = results[losers[0]].content[0].text
                assert "version" in message and "read it again" in message.lower()
                final = await tool(claude, "get_task", task_id=tid, namespace=ns)
                assert final["version"] == version + 1
                assert final["status"] == ("review" if winners[0] == "codex" else "todo")
                moves = [m for m in final["memories"] if "moved" in m["content"]]
                assert len(moves) == 1 and moves[0]["scope"] == f"agent:{winners[0]}"

    anyio.run(main)


def test_mcp_board_tools_and_jobs(server: ServerProc, ns: str) -> None:
    marker = server.home.parent / "never-created"

    async def main() -> None:
        async with mcp_session(server) as s:
            card = await tool(s, "create_task", title="Check the release", labels=["release"], assignee="codex",
                              namespace=ns)
            tid = card["task_id"]
            assert tid == "T-1" and card["task"]["status"] == "backlog"
            assert "forward one column" in await tool_error(s, "move_card", task_id=tid, to_status="done",
                                                            namespace=ns)
            moved = await tool(s, "move_card", task_id=tid, to_status="todo", reason="scheduled", namespace=ns)
            assert (moved["from"], moved["to"], moved["version"]) == ("backlog", "todo", 2)
            board = await tool(s, "get_board", namespace=ns)
            assert [c["status"] for c in board["columns"]] == ["backlog", "todo", "doing", "review", "done"]
            assert board["columns"][1]["tasks"][0]["task_id"] == tid and board["jobs"] == ["broken", "check"]
            listed = await tool(s, "list_tasks_by_status", status="todo", namespace=ns)
            assert [t["task_id"] for t in listed] == [tid]
            assert "unknown status" in await tool_error(s, "list_tasks_by_status", status="nope", namespace=ns)

            # only configured names run; a command given by the caller never does
            err = await tool_error(s, "trigger_job", task_id=tid, job=f"touch {marker}", namespace=ns)
            assert "no job named" in err and "configured jobs: broken, check" in err
            assert await tool_error(s, "trigger_job", task_id=tid, job="check", command=f"touch {marker}",
                                    namespace=ns)
            run = (await tool(s, "trigger_job", task_id=tid, job="check", namespace=ns))["run"]
            bad = (await tool(s, "trigger_job", task_id=tid, job="broken", namespace=ns))["run"]
            assert run["status"] == bad["status"] == "running"
            deadline = time.monotonic() + 30
            while True:
                detail = await tool(s, "get_task", task_id=tid, namespace=ns)
                runs = {r["job"]: r for r in detail["jobs"]}
                if all(r["status"] != "running" for r in runs.values()) or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.2)
            assert (runs["check"]["status"], runs["check"]["exit_code"]) == ("succeeded", 0)
            assert f"checking {tid}" in Path(runs["check"]["log_path"]).read_text()
            latest = detail["jobs"][-1]  # its log's end comes with the card: the agent may be elsewhere
            assert latest["log_tail"] and latest["log_tail"] in Path(latest["log_path"]).read_text()
            assert "[memcli] exit code" in latest["log_tail"]
            assert (runs["broken"]["status"], runs["broken"]["exit_code"]) == ("failed", 7)
            assert detail["job"]["run_id"] in {r["run_id"] for r in detail["jobs"]}
            assert detail["version"] == 2  # job runs do not bump the card
        assert not marker.exists()

    anyio.run(main)


def test_rest_board(api: httpx.Client, ns: str) -> None:
    r = api.post("/api/board/tasks", params={"namespace": ns}, json={"title": "REST card", "labels": ["api"]})
    assert r.status_code == 201 and r.headers["etag"] == '"1"'
    tid = r.json()["task_id"]
    assert api.post(f"/api/board/tasks/{tid}/move", params={"namespace": ns},
                    json={"to_status": "todo", "reason": "go"}).status_code == 200
    # a stale move: 412, nothing changed
    stale = api.post(f"/api/board/tasks/{tid}/move", params={"namespace": ns}, json={"to_status": "doing"},
                     headers={"If-Match": '"1"'})
    assert stale.status_code == 412 and stale.json()["code"] == "version_conflict"
    stale = api.post(f"/api/board/tasks/{tid}/move", params={"namespace": ns},
                     json={"to_status": "doing", "expected_version": 1})
    assert stale.status_code == 412
    got = api.get(f"/api/board/tasks/{tid}", params={"namespace": ns})
    assert got.status_code == 200 and got.json()["status"] == "todo" and got.headers["etag"] == '"2"'
    assert any("moved" in m["content"] for m in got.json()["memories"])
    skip = api.post(f"/api/board/tasks/{tid}/move", params={"namespace": ns}, json={"to_status": "done"})
    assert skip.status_code == 409 and skip.json()["code"] == "invalid_transition"
    ok = api.post(f"/api/board/tasks/{tid}/move", params={"namespace": ns}, json={"to_status": "doing"},
                  headers={"If-Match": '"2"'})
    assert ok.status_code == 200 and ok.json()["version"] == 3
    patched = api.patch(f"/api/board/tasks/{tid}", params={"namespace": ns},
                        json={"assignee": "gemini", "expected_version": 3})
    assert patched.status_code == 200 and patched.json()["assignee"] == "gemini" and patched.json()["version"] == 4
    assert api.patch(f"/api/board/tasks/{tid}", params={"namespace": ns},
                     json={"title": "x", "expected_version": 3}).status_code == 412
    assert [t["task_id"] for t in api.get("/api/board/tasks", params={"namespace": ns, "status": "doing"}).json()] \
        == [tid]
    board = api.get("/api/board", params={"namespace": ns}).json()
    assert board["total"] == 1 and board["columns"][2]["tasks"][0]["assignee"] == "gemini"
    # errors are clear 4xx, never 500
    for method, path, body, status in (
            ("POST", "/api/board/tasks", {"title": ""}, 422),
            ("POST", "/api/board/tasks", {"title": "x", "command": "rm -rf /"}, 422),
            ("POST", f"/api/board/tasks/{tid}/move", {"reason": "no target"}, 422),
            ("POST", f"/api/board/tasks/{tid}/move", {"to_status": "shipped"}, 422),
            ("GET", "/api/board/tasks/T-999", None, 404),
            ("GET", "/api/board/tasks/DROP TABLE", None, 422),
            ("POST", f"/api/board/tasks/{tid}/jobs/rm -rf", None, 404),
            ("POST", f"/api/board/tasks/{tid}/jobs/check", {"command": "id"}, 422)):
        r = api.request(method, path, params={"namespace": ns}, json=body)
        assert r.status_code == status, (path, body, r.text)
        assert r.json()["ok"] is False
    job = api.post(f"/api/board/tasks/{tid}/jobs/check", params={"namespace": ns})
    assert job.status_code == 202 and job.json()["run"]["job"] == "check"
    # the move records are memories: recallable through the memory API
    hits = api.get("/api/search", params={"q": f"moved {tid} REST card", "namespace": ns, "tag": "board"}).json()
    assert hits and all(tid in h["tags"] for h in hits)
    assert httpx.get(api.base_url.join("/api/board")).status_code == 401  # the same token guards the board


def _cli(server: ServerProc, *args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = hash_env(server.home.parent)
    env.update(MEMCLI_HOME=str(server.home), **extra_env)
    return subprocess.run([MEMCLI, "board", *args], env=env, capture_output=True, text=True, timeout=120)


def test_cli_round_trip(server: ServerProc, api: httpx.Client, ns: str) -> None:
    r = _cli(server, "add", "CLI card", "-l", "cli", "-a", "codex", "-n", ns, "--json")
    assert r.returncode == 0, r.stderr
    tid = json.loads(r.stdout)["task_id"]
    r = _cli(server, "move", tid, "todo", "-r", "picked up", "--agent", "codex", "-n", ns, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["to"] == "todo"
    r = _cli(server, "move", tid, "review", "-n", ns, "--json")  # skipping doing: refused, exit 1, JSON error
    assert r.returncode == 1 and json.loads(r.stdout)["code"] == "invalid_transition"
    r = _cli(server, "show", tid.lower(), "-n", ns, "--json")  # a read: answered by the warm server
    shown = json.loads(r.stdout)
    # the server refuses a wrong token: the CLI opens the store itself, and says the same
    local = _cli(server, "show", tid, "-n", ns, "--json", MEMCLI_TOKEN="not-the-token")
    assert local.returncode == 0 and json.loads(local.stdout) == shown
    assert shown["status"] == "todo" and shown["version"] == 2 and shown["labels"] == ["cli"]
    assert any(m["content"].startswith(f'codex moved {tid} "CLI card" backlog → todo: picked up')
               for m in shown["memories"])
    r = _cli(server, "list", "--status", "todo", "-n", ns, "--json")
    assert [t["task_id"] for t in json.loads(r.stdout)] == [tid]
    r = _cli(server, "--json", "-n", ns)  # the board itself
    assert json.loads(r.stdout)["columns"][1]["tasks"][0]["task_id"] == tid
    human = _cli(server, "-n", ns, MEMCLI_JSON="0", COLUMNS="120")  # the rich columns view
    assert human.returncode == 0 and "todo (1)" in human.stdout and "backlog (0)" in human.stdout
    assert tid in human.stdout and "@codex" in human.stdout
    human = _cli(server, "show", tid, "-n", ns, MEMCLI_JSON="0", COLUMNS="160")
    assert human.returncode == 0 and "picked up" in human.stdout and "memories of" in human.stdout
    # the server sees what the CLI wrote: one store
    assert api.get(f"/api/board/tasks/{tid}", params={"namespace": ns}).json()["version"] == 2
    r = _cli(server, "run", "broken", "--task", tid, "--wait", "-n", ns, "--json")  # waits, exit 1: it failed
    assert r.returncode == 1 and json.loads(r.stdout)["run"]["exit_code"] == 7
    r = _cli(server, "move", tid, "-n", ns)  # usage error
    assert r.returncode == 2
