"""The REST API of a real `memcli serve` process, through httpx: CRUD, search, errors, limits, Origin, token,
concurrent writers, SIGTERM during writes, idle exit, the server.json discovery file."""

from __future__ import annotations

import json
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from _memcli_server import MEMCLI, ServerProc, hash_env, start_server

pytestmark = pytest.mark.slow




@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("rest")
    srv = start_server(MEMCLI, hash_env(tmp), tmp / "home")
    yield srv
    srv.stop()


@pytest.fixture
def api(server: ServerProc) -> Iterator[httpx.Client]:
    with server.client(timeout=30) as c:
        yield c


@pytest.fixture
def ns() -> str:
    """A fresh namespace per test: the module's tests share one server."""
    return "t-" + uuid.uuid4().hex[:10]


def test_health_and_server_file(server: ServerProc, api: httpx.Client) -> None:
    r = api.get("/health")
    assert r.status_code == 200
    body = r.json()
    assert body["ok"] is True and body["pid"] == server.proc.pid and body["home"] == str(server.home)
    assert body["version"] and body["home_id"] == json.loads((server.home / "auth.json").read_text())["home_id"]
    info = json.loads((server.home / "server.json").read_text())
    assert info["pid"] == server.proc.pid and info["port"] == server.port and info["host"] == "127.0.0.1"
    assert isinstance(info["started_at"], int)


def test_crud_roundtrip(api: httpx.Client, ns: str) -> None:
    r = api.post("/api/memories", json={"content": "The billing service uses PostgreSQL 16", "tags": ["decision", "db"],
                                        "agent": "codex", "importance": 0.8, "namespace": ns, "metadata": {"t": 1}})
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["ok"] is True and created["duplicate_of"] == [] and created["created"] is True
    mid = created["memory_id"]
    at = {"namespace": ns}  # an id route acts in the namespace named (else the server's)

    again = api.post("/api/memories", json={"content": "The billing service uses PostgreSQL 16", "agent": "codex",
                                            "namespace": ns})
    assert again.status_code == 200 and again.json()["memory_id"] == mid and again.json()["created"] is False

    got = api.get(f"/api/memories/{mid[-8:]}", params=at)  # the short id people see (in its namespace)
    assert got.status_code == 200, got.text
    item = got.json()
    assert item["memory_id"] == mid and item["scope"] == "agent:codex" and item["tags"] == ["decision", "db"]
    assert item["namespace"] == ns and item["importance"] == 0.8 and item["source"] == "api" and item["version"] == 1
    assert got.headers["etag"] == '"1"'

    r = api.patch(f"/api/memories/{mid}", json={"tags": ["decision"], "importance": 0.9}, params=at)
    assert r.status_code == 200 and r.json()["version"] == 2 and r.json()["tags"] == ["decision"]

    listed = api.get("/api/memories", params={"namespace": ns}).json()
    assert [m["memory_id"] for m in listed] == [mid]

    assert api.delete(f"/api/memories/{mid}", params=at).json() == {"ok": True, "memory_id": mid}
    r = api.get(f"/api/memories/{mid}", params=at)
    assert r.status_code == 404 and r.json()["ok"] is False and r.json()["code"] == "not_found"
    assert api.delete(f"/api/memories/{mid}", params=at).status_code == 404


def test_patch_if_match(api: httpx.Client, ns: str) -> None:
    mid = api.post("/api/memories", json={"content": "deploys go through fly.io", "namespace": ns}).json()["memory_id"]
    at = {"namespace": ns}
    ok = api.patch(f"/api/memories/{mid}", json={"content": "deploys go through fly.io (region ams)"},
                   headers={"If-Match": '"1"'}, params=at)
    assert ok.status_code == 200 and ok.json()["version"] == 2
    stale = api.patch(f"/api/memories/{mid}", json={"content": "deploys go through render"}, headers={"If-Match": "1"},
                      params=at)
    assert stale.status_code == 412
    assert stale.json()["code"] == "version_conflict" and "version 2" in stale.json()["error"]
    assert api.get(f"/api/memories/{mid}", params=at).json()["content"] == "deploys go through fly.io (region ams)"
    hist = api.get(f"/api/memories/{mid}/history", params=at).json()  # the refused update left no trace
    assert [(e["action"], e["actor"], e["version"]) for e in hist] == [("remember", "api", 1), ("update", "api", 2)]
    assert hist[1]["changes"]["content"] == ["deploys go through fly.io", "deploys go through fly.io (region ams)"]


def test_list_filters_and_paging(api: httpx.Client, ns: str) -> None:
    base = int(time.time() * 1000) - 60_000
    batch = [{"content": f"note number {i}", "tags": ["even" if i % 2 == 0 else "odd"], "namespace": ns,
              "agent": "claude-code" if i < 3 else None, "project": "alpha" if i < 5 else "beta",
              "created_at": base + i} for i in range(8)]
    r = api.post("/api/memories/batch", json=batch)
    assert r.status_code == 201, r.text
    results = r.json()["results"]
    assert len(results) == 8 and all(x["created"] for x in results)

    def ids(**params: object) -> list[str]:
        r = api.get("/api/memories", params={"namespace": ns, **params})
        assert r.status_code == 200, r.text
        return [m["content"] for m in r.json()]

    assert len(ids()) == 8
    assert ids(tag="even") == [f"note number {i}" for i in (6, 4, 2, 0)]  # newest first
    assert len(ids(agent="claude-code")) == 3 and len(ids(scope="agent:claude-code")) == 3
    assert len(ids(agent="agent:claude-code")) == 3
    assert len(ids(scope="global")) == 5
    assert len(ids(project="beta")) == 3
    assert ids(limit=3) == [f"note number {i}" for i in (7, 6, 5)]
    assert ids(limit=3, offset=3) == [f"note number {i}" for i in (4, 3, 2)]
    assert ids(tag="x' OR '1'='1") == []  # data, never query syntax
    assert len(ids(since="1h")) == 8 and ids(until="1h") == [] and ids(since=str(base + 6)) == ["note number 7",
                                                                                                 "note number 6"]
    bad = api.get("/api/memories", params={"limit": "many"})
    assert bad.status_code == 422 and bad.json()["ok"] is False


def test_search_and_vector_search(api: httpx.Client, ns: str) -> None:
    api.post("/api/memories/batch", json={"memories": [
        {"content": "error E4012 means the upload token expired", "tags": ["bug"], "namespace": ns},
        {"content": "lunch is at noon on fridays", "namespace": ns},
        {"content": "the upload service retries three times", "namespace": ns, "agent": "codex"},
    ]})
    hits = api.get("/api/search", params={"q": "E4012", "namespace": ns}).json()
    assert hits[0]["content"].startswith("error E4012") and 0 < hits[0]["score"] <= 1
    assert set(hits[0]) >= {"memory_id", "content", "score", "tags", "scope", "namespace", "importance", "key",
                            "created_at", "updated_at"}
    tagged = api.get("/api/search", params={"q": "upload", "namespace": ns, "tags": "bug"}).json()
    assert [h["content"] for h in tagged] == ["error E4012 means the upload token expired"]
    scoped = api.get("/api/search", params={"q": "upload", "namespace": ns, "scope": "agent:codex"}).json()
    assert [h["content"] for h in scoped] == ["the upload service retries three times"]
    vec = api.get("/api/vector-search", params={"q": "upload service retries", "namespace": ns, "limit": 1}).json()
    assert len(vec) == 1 and vec[0]["content"] == "the upload service retries three times"
    empty = api.get("/api/search", params={"q": " ", "namespace": ns})
    assert empty.status_code == 422 and "query is empty" in empty.json()["error"]


def test_errors(api: httpx.Client, ns: str) -> None:
    broken = api.post("/api/memories", content=b'{"content": "x"', headers={"content-type": "application/json"})
    assert broken.status_code == 400 and broken.json()["code"] == "invalid_json"
    empty = api.post("/api/memories", json={"content": "   ", "namespace": ns})
    assert empty.status_code == 422 and "empty" in empty.json()["error"]
    unknown = api.post("/api/memories", json={"content": "x", "tag": "typo"})
    assert unknown.status_code == 422 and "tag" in unknown.json()["error"]
    assert api.post("/api/memories", json={"content": "x", "created_at": "yesterday"}).status_code == 422
    assert api.post("/api/memories", json={"content": "x", "importance": "high"}).status_code == 422
    assert api.patch("/api/memories/ffff0000", json={"expected_version": "v1"}).status_code == 422
    big = api.post("/api/memories", json={"content": "x" * (1 << 20), "namespace": ns})
    assert big.status_code == 413 and big.json()["code"] == "payload_too_large"
    chunked = api.post("/api/memories", content=iter([b'{"content": "', b"y" * (1 << 20), b'"}']))
    assert chunked.status_code == 413
    assert api.post("/api/memories/batch", json=[]).status_code == 422
    assert api.post("/api/memories/batch", json=[{"content": "ok"}, {"content": ""}]).status_code == 422
    assert api.get("/api/nothing-here").status_code == 404
    assert api.get("/api/memories/ffff0000").status_code == 404
    r = api.put("/api/memories")
    assert r.status_code == 405 and r.json()["ok"] is False


def test_origin_and_host_validation(api: httpx.Client) -> None:
    for origin in ("http://localhost:3000", "http://127.0.0.1:8765", "http://[::1]:9"):
        assert api.get("/api/memories", headers={"Origin": origin}).status_code == 200, origin
    for origin in ("http://evil.example", "https://localhost.evil.example", "null"):
        r = api.post("/api/memories", json={"content": "x"}, headers={"Origin": origin})
        assert r.status_code == 403 and r.json()["code"] == "forbidden_origin", origin
    assert api.post("/mcp", json={}, headers={"Origin": "http://evil.example"}).status_code == 403
    rebinding = api.get("/api/memories", headers={"Host": "attacker.example:8765"})
    assert rebinding.status_code == 421


def test_concurrent_writers(api: httpx.Client, server: ServerProc, ns: str) -> None:
    errors: list[str] = []

    def writer(w: int) -> None:
        with server.client(timeout=60) as c:
            for i in range(25):
                r = c.post("/api/memories", json={"content": f"writer {w} wrote fact {i}", "namespace": ns})
                if r.status_code != 201:
                    errors.append(r.text)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    rows = api.get("/api/memories", params={"namespace": ns, "limit": 1000}).json()
    assert len(rows) == 100 and len({r["memory_id"] for r in rows}) == 100


def test_token_auth(tmp_path: Path) -> None:
    env = hash_env(tmp_path)
    env["MEMCLI_TOKEN"] = "s3cret-token"
    srv = start_server(MEMCLI, env, tmp_path / "home", ready=False)
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            assert c.get("/health").status_code == 200  # probes need no token
            for method, path in (("GET", "/api/memories"), ("POST", "/mcp"), ("POST", "/hooks/Stop")):
                r = c.request(method, path, json={})
                assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", path
            wrong = c.get("/api/memories", headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401 and wrong.json()["code"] == "unauthorized"
            auth = {"Authorization": "Bearer s3cret-token"}
            assert c.post("/api/memories", json={"content": "with a token"}, headers=auth).status_code == 201
            assert len(c.get("/api/memories", headers=auth).json()) == 1

        import anyio
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async def mcp_with_token() -> list[str]:
            async with create_mcp_http_client(headers=auth) as http, \
                    streamable_http_client(srv.url + "/mcp", http_client=http) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                res = await s.call_tool("list_facts", {})
                return [m["content"] for m in json.loads(res.content[0].text)]

        assert anyio.run(mcp_with_token) == ["with a token"]
    finally:
        srv.stop()


def test_sigterm_during_writes_loses_nothing_acknowledged(tmp_path: Path) -> None:
    srv = start_server(MEMCLI, hash_env(tmp_path), tmp_path / "home")
    acked: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(w: int) -> None:
        with srv.client(timeout=30) as c:
            i = 0
            while not stop.is_set():
                try:
                    r = c.post("/api/memories", json={"content": f"w{w} fact {i} before shutdown"})
                except httpx.HTTPError:
                    return  # the server went away: this write was never acknowledged
                if r.status_code // 100 == 2:
                    with lock:
                        acked.append(r.json()["memory_id"])
                i += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 20
    while len(acked) < 40 and time.monotonic() < deadline:
        time.sleep(0.02)
    srv.proc.send_signal(signal.SIGTERM)
    rc = srv.proc.wait(20)
    stop.set()
    for t in threads:
        t.join(10)
    assert rc in (0, -signal.SIGTERM), srv.log.read_text()
    assert len(acked) >= 40
    assert not (srv.home / "server.json").exists()

    from memcli.config import load_config
    from memcli.memory.service import MemoryService

    svc = MemoryService.open(load_config(srv.home, env={"MEMCLI_EMBEDDER": "hash"}))
    try:
        found = {m.id for m in svc.store.get_many(acked)}
    finally:
        svc.close()
    assert found == set(acked)


def test_idle_timeout_exits_cleanly(tmp_path: Path) -> None:
    srv = start_server(MEMCLI, hash_env(tmp_path), tmp_path / "home", "--idle-timeout", "1", ready=False)
    answered = time.monotonic()  # start_server's last /health request was answered just now
    rc = srv.proc.wait(20)
    assert rc == 0, srv.log.read_text()
    assert time.monotonic() - answered >= 0.5  # not before the idle timeout
    assert "idle for 1s: shutting down" in srv.log.read_text()
    assert not (srv.home / "server.json").exists()
