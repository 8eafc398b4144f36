"""Concurrent single writes to one `memcli serve` (REST clients and real MCP sessions at once) are embedded and
committed in groups, and each writer still gets its own id, only once its memory is committed."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from _memcli_server import MEMCLI, ServerProc, hash_env, start_server
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

pytestmark = pytest.mark.slow

REST_WRITERS, REST_EACH = 8, 10
MCP_WRITERS, MCP_EACH = 3, 5


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("group")
    srv = start_server(MEMCLI, hash_env(tmp), tmp / "home")
    yield srv
    srv.stop()


def _rest_writer(srv: ServerProc, w: int, acked: list[tuple[str, str]], errors: list[str]) -> None:
    with srv.client(timeout=120) as c:
        for i in range(REST_EACH):
            text = f"rest writer {w} note {i}: shard s{w}-{i} is rebuilt nightly"
            r = c.post("/api/memories", json={"content": text})
            if r.status_code != 201:
                errors.append(f"{r.status_code} {r.text}")
                continue
            mid = r.json()["memory_id"]
            # answered only after its commit: another connection reads it at once
            got = httpx.get(f"{srv.url}/api/memories/{mid}", headers=srv.headers, timeout=30)
            if got.status_code != 200 or got.json()["content"] != text:
                errors.append(f"{mid} not readable right after its answer: {got.status_code}")
            acked.append((mid, text))


async def _mcp_writers(srv: ServerProc, acked: list[tuple[str, str]]) -> None:
    async def one(w: int) -> None:
        async with create_mcp_http_client(headers=srv.headers) as client, \
                streamable_http_client(srv.url + "/mcp", http_client=client) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            for i in range(MCP_EACH):
                text = f"mcp writer {w} note {i}: queue q{w}-{i} drains hourly"
                res = await session.call_tool("remember", {"content": text, "tags": ["mcp"]})
                assert not res.is_error, res.content
                acked.append((json.loads(res.content[0].text)["memory_id"], text))

    async with anyio.create_task_group() as tg:
        for w in range(MCP_WRITERS):
            tg.start_soon(one, w)


def test_concurrent_rest_and_mcp_writes_share_commits(server: ServerProc) -> None:
    rest: list[tuple[str, str]] = []
    mcp: list[tuple[str, str]] = []
    errors: list[str] = []
    threads = [threading.Thread(target=_rest_writer, args=(server, w, rest, errors)) for w in range(REST_WRITERS)]
    for t in threads:
        t.start()
    anyio.run(_mcp_writers, server, mcp)
    for t in threads:
        t.join(300)
    assert not errors, errors[:5]
    assert len(rest) == REST_WRITERS * REST_EACH and len(mcp) == MCP_WRITERS * MCP_EACH
    ids = [m for m, _ in rest + mcp]
    assert len(set(ids)) == len(ids)  # each writer its own id
    with server.client(timeout=60) as c:
        stored = {m["memory_id"]: m for m in c.get("/api/memories", params={"limit": 1000}).json()}
    assert len(stored) == len(ids) and set(stored) == set(ids)
    assert all(stored[m]["content"] == t and stored[m]["source"] == "api" for m, t in rest)
    assert all(stored[m]["content"] == t and stored[m]["source"] == "mcp" for m, t in mcp)
    # the log shows the groups: fewer commits than writes, some of several memories
    groups = [int(n) for n in re.findall(r"remember: (\d+) memor(?:y|ies) \([a-z+]+\) in one commit",
                                         server.log.read_text())]
    assert sum(groups) == len(ids), groups
    assert max(groups) > 1 and len(groups) < len(ids), groups


def test_concurrent_writes_of_one_key_update_in_turn(server: ServerProc) -> None:
    results: list[Any] = []

    def write(i: int) -> None:
        r = httpx.post(server.url + "/api/memories", headers=server.headers, timeout=120,
                       json={"content": f"the on-call phone is extension {100 + i}", "key": "on-call-phone"})
        results.append(r.json())

    threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len({r["memory_id"] for r in results}) == 1
    assert sorted((r["created"], r["updated"]) for r in results) == [(False, True)] * 5 + [(True, False)]
    with server.client(timeout=60) as c:
        mem = c.get(f"/api/memories/{results[0]['memory_id']}").json()
    assert mem["version"] == 6 and mem["key"] == "on-call-phone"


def test_rest_cli_and_mcp_writes_at_once_share_one_commit_each_with_its_own_source(server: ServerProc) -> None:
    """The faces of one owner share a batch: while the store's write lock is held (by this test, as by another
    process), a REST write, the CLI's write through the server and an MCP tool call queue behind the write in
    flight, then go to the store as one commit; each memory keeps its face as its source and in its history."""
    import fcntl

    from memcli.config import load_config

    lock_file = Path(load_config(server.home, env={}).data_uri) / ".write.lock"
    texts = {"api": "the staging database is restored from the nightly snapshot",
             "cli": "the build cache is pruned every sunday at noon",
             "mcp": "the pager rotation changes owners on mondays"}
    ids: dict[str, str] = {}
    errors: list[str] = []

    def rest(face: str, text: str) -> None:
        headers = {**server.headers, **({"X-Memcli-Source": "cli"} if face == "cli" else {})}
        r = httpx.post(server.url + "/api/memories", headers=headers, json={"content": text}, timeout=120)
        if r.status_code != 201:
            errors.append(f"{face}: {r.status_code} {r.text}")
        else:
            ids[face] = r.json()["memory_id"]

    async def mcp_then_release(fh: Any) -> None:
        async with create_mcp_http_client(headers=server.headers) as client, \
                streamable_http_client(server.url + "/mcp", http_client=client) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            fcntl.flock(fh, fcntl.LOCK_EX)  # the store is busy from here on
            try:
                first = threading.Thread(target=rest, args=("api", "the first write waits for the write lock"))
                first.start()
                await anyio.sleep(1.0)  # its batch is now waiting for the lock: the next writes queue behind it
                late = [threading.Thread(target=rest, args=(f, texts[f])) for f in ("api", "cli")]
                for t in late:
                    t.start()

                async def call() -> None:
                    res = await session.call_tool("remember", {"content": texts["mcp"]})
                    assert not res.is_error, res.content
                    ids["mcp"] = json.loads(res.content[0].text)["memory_id"]

                async with anyio.create_task_group() as tg:
                    tg.start_soon(call)
                    await anyio.sleep(2.0)  # all three are queued (nothing can be written meanwhile)
                    fcntl.flock(fh, fcntl.LOCK_UN)
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
            for t in [first, *late]:
                t.join(120)

    before = len(re.findall(r"in one commit", server.log.read_text()))
    with open(lock_file, "a+") as fh:
        anyio.run(mcp_then_release, fh)
    assert not errors, errors
    commits = re.findall(r"remember: (\d+) memor(?:y|ies) \(([a-z+]+)\) in one commit", server.log.read_text())
    assert commits[before:] == [("1", "api"), ("3", "api+cli+mcp")], commits[before:]
    with server.client(timeout=60) as c:
        for face, text in texts.items():
            mem = c.get(f"/api/memories/{ids[face]}").json()
            assert (mem["content"], mem["source"]) == (text, face)
            history = c.get(f"/api/memories/{ids[face]}/history").json()
            # the audit log names the face (MCP: with the client that called, "mcp (<client> <version>)")
            assert [e["action"] for e in history] == ["remember"], history
            assert history[0]["actor"] == face or (face == "mcp" and history[0]["actor"].startswith("mcp (")), history
