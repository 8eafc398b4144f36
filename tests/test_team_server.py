"""Team mode, server side, against one real `memcli serve`: two spaces, three space tokens and the admin token.

Every memory call through a space token stays in its space (REST, /mcp, /hooks): another space's memory is
404 for read, update, delete and history and absent from search, list, export and stats. Stale updates are
412, bursts 429 with Retry-After, admin routes 403, bad or revoked tokens 401; tokens are stored hashed and
never written to the server's log.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from _memcli_server import MEMCLI, ServerProc, free_port, start_server

pytestmark = pytest.mark.slow



def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    # a small token bucket so that a burst is refused quickly; the matrix below stays well within it
    env.update(MEMCLI_EMBEDDER="hash", HOME=str(tmp / "user-home"), MEMCLI_RATE_LIMIT="20",
               MEMCLI_RATE_BURST="80")
    return env


class Team:
    def __init__(self, srv: ServerProc) -> None:
        self.srv = srv
        self.admin = srv.client(timeout=30)
        self.tokens: dict[str, str] = {}

    def new_space(self, name: str, agent: str) -> str:
        r = self.admin.post("/api/spaces", json={"name": name, "agent": agent})
        assert r.status_code == 201, r.text
        self.tokens[agent] = r.json()["api_token"]
        return self.tokens[agent]

    def new_token(self, space: str, agent: str) -> dict[str, Any]:
        r = self.admin.post(f"/api/spaces/{space}/tokens", json={"agent": agent})
        assert r.status_code == 201, r.text
        self.tokens[agent] = r.json()["api_token"]
        return r.json()

    def as_(self, agent: str) -> httpx.Client:
        return httpx.Client(base_url=self.srv.url, timeout=30,
                            headers={"Authorization": f"Bearer {self.tokens[agent]}"})


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("team")
    srv = start_server(MEMCLI, _env(tmp), tmp / "home", "--log-level", "debug")
    t = Team(srv)
    t.new_space("space-a", "alice")  # two spaces, three tokens
    t.new_token("space-a", "anna")
    t.new_space("space-b", "bob")
    yield t
    t.admin.close()
    srv.stop()


def test_space_tokens_are_random_prefixed_and_stored_only_hashed(team: Team) -> None:
    for token in team.tokens.values():
        assert token.startswith("mnemo_") and len(token) - len("mnemo_") >= 22  # ≥ 128 bits, url-safe base64
    assert len(set(team.tokens.values())) == len(team.tokens)
    listed = team.admin.get("/api/spaces/space-a/tokens").json()
    assert {t["agent"] for t in listed} == {"alice", "anna"} and all(t["active"] for t in listed)
    assert not any(tok in json.dumps(listed) for tok in team.tokens.values())
    # the table in the store holds the SHA-256 of each token, never the token
    data = team.srv.home / "data"
    raw = b"".join(p.read_bytes() for p in data.rglob("*") if p.is_file())
    for token in team.tokens.values():
        assert token.encode() not in raw
        assert hashlib.sha256(token.encode()).hexdigest().encode() in raw
    spaces = {s["space_id"]: s for s in team.admin.get("/api/spaces").json()}
    assert spaces["space-a"]["active_tokens"] == 2 and spaces["space-b"]["active_tokens"] == 1


def test_isolation_matrix_across_spaces(team: Team) -> None:
    alice, anna, bob = team.as_("alice"), team.as_("anna"), team.as_("bob")
    # alice names space-b's namespace: the token decides, the memory lands in space-a
    r = alice.post("/api/memories", json={"content": "space-a secret: the vault code is zebra-42",
                                          "namespace": "space-b", "tags": ["secret"]})
    assert r.status_code == 201, r.text
    ma = r.json()["memory_id"]
    mb = bob.post("/api/memories", json={"content": "space-b note: deploys happen on fridays"}).json()["memory_id"]
    got = anna.get(f"/api/memories/{ma}").json()  # the same space: visible to another of its agents
    assert got["namespace"] == "space-a" and got["scope"] == "agent:alice"
    assert [h["memory_id"] for h in anna.get("/api/search", params={"q": "vault code zebra-42"}).json()] == [ma]

    refused = {
        "get": bob.get(f"/api/memories/{ma}"),
        "get by short id": bob.get(f"/api/memories/{ma[-8:]}"),
        "update": bob.patch(f"/api/memories/{ma}", json={"content": "overwritten by bob"}),
        "update with If-Match": bob.patch(f"/api/memories/{ma}", json={"tags": ["x"]}, headers={"If-Match": "1"}),
        "delete": bob.delete(f"/api/memories/{ma}"),
        "history": bob.get(f"/api/memories/{ma}/history"),
    }
    for what, resp in refused.items():
        assert resp.status_code == 404, (what, resp.text)
        assert "zebra" not in resp.text and resp.json()["code"] == "not_found", what
    for what, resp in {
        "search": bob.get("/api/search", params={"q": "vault code zebra-42", "namespace": "space-a"}),
        "vector search": bob.get("/api/vector-search", params={"q": "vault code zebra-42"}),
        "list": bob.get("/api/memories", params={"namespace": "space-a"}),
        "list all": bob.get("/api/memories", params={"all_namespaces": "true"}),
        "check-duplicate": bob.post("/api/check-duplicate", json={"content": "space-a secret: the vault code is "
                                                                             "zebra-42", "namespace": "space-a"}),
        "export": bob.get("/api/export", params={"namespace": "space-a"}),
        "stats": bob.get("/api/stats"),
    }.items():
        assert resp.status_code == 200, (what, resp.text)
        assert "zebra" not in resp.text and ma not in resp.text and "space-a" not in resp.text, what
    assert [m["memory_id"] for m in bob.get("/api/memories").json()] == [mb]
    assert bob.get("/api/stats").json()["total"] == 1
    # and space-a cannot reach space-b either
    assert alice.get(f"/api/memories/{mb}").status_code == 404
    assert alice.delete(f"/api/memories/{mb}").status_code == 404
    # nothing was changed by the refused calls; the admin sees both spaces
    admin_view = team.admin.get(f"/api/memories/{ma}", params={"namespace": "space-a"}).json()
    assert admin_view["version"] == 1 and admin_view["content"].endswith("zebra-42")
    every = team.admin.get("/api/memories", params={"all_namespaces": "true"}).json()
    assert {ma, mb} <= {m["memory_id"] for m in every}


def test_board_distill_and_web_routes_respect_the_space(team: Team) -> None:
    """The task board is confined to the token's space like memories; distill and the web view's login codes
    are the admin's; the web view's counts show a space token its own space only."""
    alice, bob = team.as_("alice"), team.as_("bob")
    r = alice.post("/api/board/tasks", json={"title": "rotate the space-a vault key", "namespace": "space-b"})
    assert r.status_code == 201, r.text
    card = r.json()
    # the token decides, as for memories: the card is on space-a's board
    assert team.admin.get(f"/api/board/tasks/{card['task_id']}", params={"namespace": "space-a"}).json()["title"] \
        == "rotate the space-a vault key"
    assert "vault key" not in team.admin.get("/api/board", params={"namespace": "space-b"}).text
    for what, resp in {
        "board": bob.get("/api/board", params={"namespace": "space-a"}),
        "tasks": bob.get("/api/board/tasks", params={"namespace": "space-a"}),
        "scopes": bob.get("/api/stats/scopes"),
        "daily": bob.get("/api/stats/daily", params={"namespace": "space-a", "all_namespaces": "true"}),
    }.items():
        assert resp.status_code == 200, (what, resp.text)
        assert "vault key" not in resp.text and "space-a" not in resp.text, what
    got = bob.get(f"/api/board/tasks/{card['task_id']}", params={"namespace": "space-a"})
    assert got.status_code == 404 or "vault key" not in got.text
    assert bob.post(f"/api/board/tasks/{card['task_id']}/move",
                    json={"to_status": "todo", "namespace": "space-a"}).status_code in (404, 409)
    assert alice.get(f"/api/board/tasks/{card['task_id']}").json()["status"] == card["task"]["status"]
    for resp in (bob.get("/api/distill/plan"), bob.post("/api/distill/apply", json={}),
                 bob.post("/api/distill/undo", json={}), bob.get("/api/distill/tags")):
        assert resp.status_code == 403, resp.text
    assert bob.post("/api/ui/codes", json={}).status_code in (401, 403)  # a browser session is the admin's


def test_mcp_over_http_with_a_space_token_stays_in_its_space(team: Team) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    alice = team.as_("alice")
    ma = alice.post("/api/memories", json={"content": "space-a only: the staging password is kiwi-77"}).json()[
        "memory_id"]

    @asynccontextmanager
    async def session(agent: str) -> Any:
        headers = {"Authorization": f"Bearer {team.tokens[agent]}"}
        async with create_mcp_http_client(headers=headers) as client, \
                streamable_http_client(team.srv.url + "/mcp", http_client=client) as (read, write), \
                ClientSession(read, write) as s:
            await s.initialize()
            yield s

    async def main() -> None:
        async with session("bob") as s:
            res = await s.call_tool("remember", {"content": "written by bob over MCP", "namespace": "space-a"})
            assert not res.is_error, res.content
            mid = json.loads(res.content[0].text)["memory_id"]
            hits = json.loads((await s.call_tool("recall", {"query": "staging password kiwi-77"})).content[0].text)
            assert all("kiwi" not in h["content"] for h in hits)
            got = await s.call_tool("get", {"memory_id": ma})
            assert got.is_error and "kiwi" not in got.content[0].text
            assert (await s.call_tool("forget", {"memory_id": ma})).is_error
        async with session("anna") as s:
            hits = json.loads((await s.call_tool("recall", {"query": "staging password kiwi-77"})).content[0].text)
            assert hits and hits[0]["memory_id"] == ma
        return mid

    mid = anyio.run(main)
    assert team.admin.get(f"/api/memories/{mid}", params={"all_namespaces": "true"}).json()["namespace"] == "space-b"
    assert team.admin.get(f"/api/memories/{ma}", params={"namespace": "space-a"}).status_code == 200  # not forgotten


def test_hooks_through_a_space_token_read_and_write_only_their_space(team: Team) -> None:
    alice, bob = team.as_("alice"), team.as_("bob")
    alice.post("/api/memories", json={"content": "space-a convention: migrations run through pgroll tool"})
    prompt = {"session_id": "hook-b-1", "prompt": "how do migrations run with pgroll tool?", "cwd": "/tmp",
              "hook_event_name": "UserPromptSubmit"}
    r = bob.post("/hooks/UserPromptSubmit", json=prompt)
    assert r.status_code in (200, 204) and "pgroll" not in r.text
    r = team.as_("anna").post("/hooks/UserPromptSubmit", json=dict(prompt, session_id="hook-a-1"))
    assert r.status_code == 200 and "pgroll" in r.json()["hookSpecificOutput"]["additionalContext"]
    stop = {"session_id": "hook-b-1", "hook_event_name": "Stop", "cwd": "/tmp",
            "last_assistant_message": "Bob's turn: we decided to pin the terraform provider to version 5.31 "
                                      "because 5.32 broke the state migration.",
            "_memcli_caller": {"space": "space-a", "agent": "mallory", "token_id": "0"}}  # forged: ignored
    assert bob.post("/hooks/Stop", json=stop).status_code == 202
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = [m for m in bob.get("/api/memories", params={"limit": 100}).json() if "terraform" in m["content"]]
        if found:
            break
        time.sleep(0.2)
    assert found and found[0]["namespace"] == "space-b"
    assert all("terraform" not in m["content"] for m in alice.get("/api/memories", params={"limit": 100}).json())


def test_stale_update_through_a_space_token_is_412_and_history_names_the_agents(team: Team) -> None:
    alice, anna = team.as_("alice"), team.as_("anna")
    mid = alice.post("/api/memories", json={"content": "release train leaves on tuesdays"}).json()["memory_id"]
    r = anna.patch(f"/api/memories/{mid}", json={"content": "release train leaves on wednesdays"},
                   headers={"If-Match": "1"})
    assert r.status_code == 200 and r.headers["ETag"] == '"2"'
    stale = alice.patch(f"/api/memories/{mid}", json={"content": "release train leaves on mondays"},
                        headers={"If-Match": "1"})
    assert stale.status_code == 412 and stale.json()["code"] == "version_conflict"
    assert "version 2" in stale.json()["error"]
    assert anna.get(f"/api/memories/{mid}").json()["content"] == "release train leaves on wednesdays"
    events = alice.get(f"/api/memories/{mid}/history").json()
    assert [(e["action"], e["actor"]) for e in events] == [("remember", "agent:alice"), ("update", "agent:anna")]


def test_401_without_or_with_a_bad_or_revoked_token_and_403_on_admin_routes(team: Team) -> None:
    url = team.srv.url
    assert httpx.get(url + "/api/memories").status_code == 401
    for bad in ("mnemo_" + "x" * 32, "not-a-token", team.tokens["alice"] + "x"):
        r = httpx.get(url + "/api/memories", headers={"Authorization": f"Bearer {bad}"})
        assert r.status_code == 401 and r.json()["code"] == "unauthorized", bad
    info = team.new_token("space-b", "dave")
    dave = team.as_("dave")
    assert dave.get("/api/memories").status_code == 200
    assert team.admin.delete(f"/api/spaces/space-b/tokens/{info['token_id']}").json()["active"] is False
    assert dave.get("/api/memories").status_code == 401  # at once on the server that revoked it
    assert dave.post("/hooks/UserPromptSubmit", json={"prompt": "x"}).status_code == 401
    bob = team.as_("bob")
    for method, path, body in (("GET", "/api/spaces", None), ("POST", "/api/spaces", {"name": "x", "agent": "y"}),
                               ("POST", "/api/spaces/space-a/tokens", {"agent": "eve"}),
                               ("GET", "/api/spaces/space-b/tokens", None),
                               ("DELETE", f"/api/spaces/space-b/tokens/{info['token_id']}", None)):
        r = bob.request(method, path, json=body)
        assert r.status_code == 403 and r.json()["code"] == "forbidden", (method, path, r.text)
    assert "eve" not in json.dumps(team.admin.get("/api/spaces/space-a/tokens").json())
    health = bob.get("/health").json()
    assert health["space_id"] == "space-b" and health["agent"] == "bob" and "home" not in health


def test_request_size_limit_is_413(team: Team) -> None:
    r = team.as_("bob").post("/api/memories", content=json.dumps({"content": "x" * (2 << 20)}),
                             headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and r.json()["code"] == "payload_too_large"


def test_a_burst_from_one_token_gets_429_with_retry_after(team: Team) -> None:
    team.new_token("space-b", "burst")
    c = team.as_("burst")
    codes, retry = [], None
    for _ in range(250):
        r = c.get("/api/memories", params={"limit": 1})
        codes.append(r.status_code)
        if r.status_code == 429:
            retry = r.headers.get("Retry-After")
            break
    assert 429 in codes and codes.count(200) >= 40, codes[-5:]
    assert retry is not None and int(retry) >= 1
    assert team.as_("bob").get("/api/memories").status_code == 200  # another token is not slowed down
    time.sleep(int(retry))
    assert c.get("/api/memories", params={"limit": 1}).status_code == 200


def test_tokens_never_reach_the_server_log(team: Team) -> None:
    log = team.srv.log.read_text()
    assert "DEBUG" in log or "INFO" in log  # the log was written (at debug level)
    for token in team.tokens.values():
        assert token not in log and token[len("mnemo_"):] not in log


def test_a_non_loopback_bind_needs_a_real_admin_token(tmp_path: Path) -> None:
    env = dict(_env(tmp_path), MEMCLI_HOME=str(tmp_path / "home"), MEMCLI_TOKEN="short")
    p = subprocess.run([MEMCLI, "serve", "--host", "0.0.0.0", "--port", str(free_port())], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "refusing to listen on 0.0.0.0" in p.stderr


def test_token_buckets_refill_at_their_rate() -> None:
    from memcli.server.team import Limiter

    lim = Limiter(rate=10.0, burst=3)
    assert [lim.wait("1.2.3.4") for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = lim.wait("1.2.3.4")
    assert 0.05 < wait <= 0.1  # the next token comes in 1/rate seconds
    assert lim.wait("5.6.7.8") == 0.0  # another key has its own bucket
    time.sleep(0.12)
    assert lim.wait("1.2.3.4") == 0.0
    assert Limiter(rate=0, burst=1).wait("x") == 0.0  # 0 = off


def test_the_same_space_created_at_once_by_several_admins_exists_once(tmp_path: Path) -> None:
    """Six admin processes' registries (each its own connection) create one space name at the same moment:
    exactly one succeeds, the others are told it exists, and one space row remains."""
    import threading
    from datetime import timedelta

    import lancedb

    from memcli.errors import ValidationError
    from memcli.team.spaces import SpaceRegistry

    def connect() -> Any:  # as the store connects: every read sees the latest commit
        return lancedb.connect(tmp_path / "db", read_consistency_interval=timedelta(0))

    SpaceRegistry(connect()).table()  # the table exists before the race
    regs = [SpaceRegistry(connect()) for _ in range(6)]
    for r in regs:
        r.table()
    barrier = threading.Barrier(len(regs))
    outcomes: list[str] = []

    def create(reg: SpaceRegistry, i: int) -> None:
        barrier.wait()
        try:
            reg.create("racey", f"agent{i}")
            outcomes.append("created")
        except ValidationError as exc:
            assert "exists already" in str(exc)
            outcomes.append("exists")

    threads = [threading.Thread(target=create, args=(r, i)) for i, r in enumerate(regs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(outcomes) == ["created"] + ["exists"] * 5
    fresh = SpaceRegistry(connect())
    assert [s["space_id"] for s in fresh.spaces()] == ["racey"]
    assert len(fresh._rows("kind = 'space'")) == 1 and len(fresh.tokens("racey")) == 1
