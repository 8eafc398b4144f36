"""Team spaces' conflict setting against one real `memcli serve` and a local fake OpenAI-compatible LLM.

A stale update (an old If-Match / expected_version) of a space is refused with 412 and the current version by
default; a space the admin set to ``llm-merge`` has the [hooks] llm endpoint merge it (200, ``"merged": true``,
version + 1, audited as "merge" by the agent). Whenever the LLM cannot help — HTTP 500, a hang past
``[server] merge_timeout``, an empty or rambling answer — the update is refused as before and nothing
changes. Only the admin changes the setting; it lives in the store and survives a restart. The spaces table
of an older store gains the column with every space reading "refuse".
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _memcli_server import MEMCLI, ServerProc, start_server

pytestmark = pytest.mark.slow

MERGE_TIMEOUT = 1.5
MERGED = "The release train leaves on wednesdays at 10:00 from platform 9"


class FakeLlm(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint whose behaviour the test sets: ok | 500 | hang | empty | ramble."""

    mode = "ok"
    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        FakeLlm.requests.append({"path": self.path, "body": body})
        if self.mode == "hang":
            time.sleep(MERGE_TIMEOUT + 2.5)
        if self.mode == "500":
            self.send_response(500)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        answer = {"ok": MERGED, "hang": MERGED, "empty": "  ", "ramble": "blah " * 2000}[self.mode]
        raw = json.dumps({"choices": [{"message": {"content": answer}}], "usage": {"total_tokens": 321}}).encode()
        try:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        except OSError:  # the server gave up waiting (the hang case)
            pass

    def log_message(self, *args: Any) -> None:
        pass


class Team:
    def __init__(self, tmp: Path, llm_url: str) -> None:
        self.tmp, self.home = tmp, tmp / "home"
        self.home.mkdir(parents=True)
        (self.home / "config.toml").write_text(
            f'[hooks]\nllm_provider = "openai"\nllm_base_url = "{llm_url}/v1"\nllm_model = "fake-merge"\n'
            f'llm_api_key = "sk-test"\n\n[server]\nmerge_timeout = {MERGE_TIMEOUT}\n')
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
        self.env.update(MEMCLI_EMBEDDER="hash", HOME=str(tmp / "user-home"))
        self.tokens: dict[str, str] = {}
        self.start()

    def start(self) -> None:
        self.srv: ServerProc = start_server(MEMCLI, self.env, self.home)
        self.admin = self.srv.client(timeout=30)

    def stop(self) -> None:
        self.admin.close()
        self.srv.stop()

    def new_space(self, name: str, agent: str, **extra: Any) -> dict[str, Any]:
        r = self.admin.post("/api/spaces", json={"name": name, "agent": agent, **extra})
        assert r.status_code == 201, r.text
        self.tokens[agent] = r.json()["api_token"]
        return r.json()

    def new_token(self, space: str, agent: str) -> None:
        r = self.admin.post(f"/api/spaces/{space}/tokens", json={"agent": agent})
        assert r.status_code == 201, r.text
        self.tokens[agent] = r.json()["api_token"]

    def as_(self, agent: str) -> httpx.Client:
        return httpx.Client(base_url=self.srv.url, timeout=30,
                            headers={"Authorization": f"Bearer {self.tokens[agent]}"})

    def cli(self, *args: str, code: int = 0, **env: str) -> Any:
        p = subprocess.run([MEMCLI, *args, "--json"], env={**self.env, "MEMCLI_HOME": str(self.home), **env},
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == code, p.stdout + p.stderr
        return json.loads(p.stdout) if code == 0 else p


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    llm = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeLlm)
    llm.daemon_threads = True
    threading.Thread(target=llm.serve_forever, daemon=True).start()
    t = Team(tmp_path_factory.mktemp("merge"), f"http://127.0.0.1:{llm.server_address[1]}")
    t.new_space("plain", "pat")  # the default: refuse
    made = t.new_space("merging", "alice", conflict="llm-merge")
    assert made["conflict"] == "llm-merge" and made["llm_merge_ready"] is True
    t.new_token("merging", "anna")
    yield t
    t.stop()
    llm.shutdown()


def _conflict(t: Team, space_agents: tuple[str, str], content: str) -> tuple[str, httpx.Client]:
    """A memory at version 2: written by the first agent, changed by the second (If-Match 1)."""
    first, second = (t.as_(a) for a in space_agents)
    mid = first.post("/api/memories", json={"content": content, "tags": ["trains"]}).json()["memory_id"]
    r = second.patch(f"/api/memories/{mid}", json={"content": content + " (moved to wednesdays)"},
                     headers={"If-Match": "1"})
    assert r.status_code == 200 and r.json()["version"] == 2, r.text
    return mid, first


def test_default_space_refuses_a_stale_update_with_the_current_version(team: Team) -> None:
    team.new_token("plain", "pia")
    FakeLlm.mode, FakeLlm.requests = "ok", []
    mid, pat = _conflict(team, ("pat", "pia"), "the plain release train leaves on tuesdays")
    stale = pat.patch(f"/api/memories/{mid}", json={"content": "the plain release train leaves on mondays"},
                      headers={"If-Match": "1"})
    assert stale.status_code == 412, stale.text
    assert stale.json()["code"] == "version_conflict" and stale.json()["current_version"] == 2
    assert stale.headers["ETag"] == '"2"'
    assert pat.get(f"/api/memories/{mid}").json()["content"].endswith("(moved to wednesdays)")
    assert FakeLlm.requests == []  # refuse never asks the LLM


def test_llm_merge_space_merges_a_stale_content_update(team: Team) -> None:
    FakeLlm.mode, FakeLlm.requests = "ok", []
    mid, alice = _conflict(team, ("alice", "anna"), "the release train leaves on tuesdays")
    r = alice.patch(f"/api/memories/{mid}", json={"content": "the release train leaves at 10:00 from platform 9",
                                                  "tags": ["release"], "expected_version": 1})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["merged"] is True and got["merge"] == {"based_on": 1, "merged_with": 2}
    assert got["content"] == MERGED and got["version"] == 3 and r.headers["ETag"] == '"3"'
    assert set(got["tags"]) == {"trains", "release"}  # the union
    stored = team.as_("anna").get(f"/api/memories/{mid}").json()
    assert stored["content"] == MERGED and stored["version"] == 3
    events = alice.get(f"/api/memories/{mid}/history").json()
    assert [(e["action"], e["actor"]) for e in events] == [
        ("remember", "agent:alice"), ("update", "agent:anna"), ("merge", "agent:alice")]
    assert events[-1]["note"] == "llm-merge of v1 with v2" and events[-1]["version"] == 3
    # the model saw the base (v1, from the audit log), the current version and the intended change
    assert len(FakeLlm.requests) == 1
    sent = FakeLlm.requests[0]
    prompt = sent["body"]["messages"][-1]["content"]
    assert sent["path"] == "/v1/chat/completions" and sent["body"]["model"] == "fake-merge"
    assert "BASE (version 1" in prompt and "the release train leaves on tuesdays\n" in prompt
    assert "CURRENT (version 2)" in prompt and "(moved to wednesdays)" in prompt
    assert "leaves at 10:00 from platform 9" in prompt and sent["body"]["max_tokens"] <= 1000
    # the merged memory is findable by its new content (re-embedded)
    hits = alice.get("/api/search", params={"q": "platform 9 wednesdays", "limit": 3}).json()
    assert hits and hits[0]["memory_id"] == mid


@pytest.mark.parametrize("mode", ["500", "hang", "empty", "ramble"])
def test_when_the_llm_cannot_merge_the_update_is_refused_and_nothing_changes(team: Team, mode: str) -> None:
    FakeLlm.mode, FakeLlm.requests = mode, []
    mid, alice = _conflict(team, ("alice", "anna"), f"the {mode} train leaves on tuesdays")
    before = alice.get(f"/api/memories/{mid}").json()
    started = time.monotonic()
    stale = alice.patch(f"/api/memories/{mid}", json={"content": f"the {mode} train leaves on fridays"},
                        headers={"If-Match": "1"})
    took = time.monotonic() - started
    assert stale.status_code == 412, stale.text
    assert stale.json()["code"] == "version_conflict" and stale.json()["current_version"] == 2
    assert len(FakeLlm.requests) == 1
    if mode == "hang":  # the merge timeout bounds the caller's wait
        assert MERGE_TIMEOUT - 0.2 < took < MERGE_TIMEOUT + 10.0, took  # bounded (generous: CI machines are shared)
    after = alice.get(f"/api/memories/{mid}").json()
    assert (after["content"], after["version"], after["tags"]) == (before["content"], 2, before["tags"])
    assert [e["action"] for e in alice.get(f"/api/memories/{mid}/history").json()] == ["remember", "update"]
    FakeLlm.mode = "ok"


def test_only_content_updates_of_space_tokens_are_merged(team: Team) -> None:
    FakeLlm.mode, FakeLlm.requests = "ok", []
    mid, alice = _conflict(team, ("alice", "anna"), "the freight train leaves on tuesdays")
    refused = {
        "tags only": alice.patch(f"/api/memories/{mid}", json={"tags": ["x"]}, headers={"If-Match": "1"}),
        "content and importance": alice.patch(f"/api/memories/{mid}", json={"content": "x", "importance": 0.9},
                                              headers={"If-Match": "1"}),
        "delete": alice.delete(f"/api/memories/{mid}", headers={"If-Match": "1"}),
        "admin": team.admin.patch(f"/api/memories/{mid}", json={"content": "admin edit"}, headers={"If-Match": "1"},
                                  params={"namespace": "merging"}),
    }
    for what, resp in refused.items():
        assert resp.status_code == 412, (what, resp.text)
        assert resp.json()["current_version"] == 2, what
    assert FakeLlm.requests == []
    assert alice.get(f"/api/memories/{mid}").json()["version"] == 2  # not deleted, not changed
    assert alice.delete(f"/api/memories/{mid}", headers={"If-Match": "2"}).status_code == 200  # current: deleted
    assert alice.get(f"/api/memories/{mid}").status_code == 404


def test_only_the_admin_changes_the_setting_and_it_survives_a_restart(team: Team) -> None:
    alice = team.as_("alice")
    assert alice.patch("/api/spaces/merging", json={"conflict": "refuse"}).status_code == 403
    assert alice.post("/api/spaces", json={"name": "mine", "agent": "alice", "conflict": "llm-merge"}) \
        .status_code == 403
    bad = team.admin.patch("/api/spaces/merging", json={"conflict": "overwrite"})
    assert bad.status_code == 422 and "llm-merge" in bad.json()["error"]
    assert team.admin.patch("/api/spaces/nope", json={"conflict": "refuse"}).status_code == 404
    assert team.admin.post("/api/spaces", json={"name": "x", "agent": "y", "conflict": "yes"}).status_code == 422
    # the CLI: `space set` (on the server's own machine) and `space list` through the server's admin token
    assert team.cli("space", "set", "plain", "--conflict", "llm-merge")["conflict"] == "llm-merge"
    p = team.cli("space", "set", "plain", "--conflict", "bogus", code=2)
    assert "refuse, lww or llm-merge" in p.stderr
    listed = {s["space_id"]: s["conflict"] for s in team.cli(
        "space", "list", MEMCLI_API_URL=team.srv.url, MEMCLI_API_TOKEN=team.srv.token)}
    assert listed == {"plain": "llm-merge", "merging": "llm-merge"}
    back = team.admin.patch("/api/spaces/plain", json={"conflict": "refuse"}).json()
    assert back["conflict"] == "refuse" and back["space_id"] == "plain"
    team.stop()
    team.start()
    spaces = {s["space_id"]: s["conflict"] for s in team.admin.get("/api/spaces").json()}
    assert spaces == {"plain": "refuse", "merging": "llm-merge"}
    FakeLlm.mode, FakeLlm.requests = "ok", []
    mid, alice = _conflict(team, ("alice", "anna"), "the night train leaves on tuesdays")
    r = alice.patch(f"/api/memories/{mid}", json={"content": "the night train leaves at 23:00"},
                    headers={"If-Match": "1"})
    assert r.status_code == 200 and r.json()["merged"] is True and r.json()["version"] == 3


def test_an_older_spaces_table_gains_the_setting_as_refuse(tmp_path: Path) -> None:
    import lancedb
    import pyarrow as pa

    from memcli.team.spaces import SPACES_TABLE, SpaceRegistry

    old = pa.schema([pa.field("kind", pa.string(), nullable=False), pa.field("space", pa.string(), nullable=False),
                     pa.field("agent", pa.string()), pa.field("token_id", pa.string()),
                     pa.field("token_hash", pa.string()), pa.field("created_at", pa.int64(), nullable=False),
                     pa.field("revoked_at", pa.int64())])
    db = lancedb.connect(str(tmp_path / "data"))
    db.create_table(SPACES_TABLE, schema=old).add(pa.Table.from_pylist(
        [{"kind": "space", "space": "legacy", "agent": "ann", "token_id": None, "token_hash": None,
          "created_at": 1, "revoked_at": None}], schema=old))
    reg = SpaceRegistry(lancedb.connect(str(tmp_path / "data")))
    assert [(s["space_id"], s["conflict"]) for s in reg.spaces()] == [("legacy", "refuse")]
    token, _ = reg.add_token("legacy", "bob")  # old rows and new rows live in one table
    assert reg.resolve(token) is not None and reg.conflict("legacy") == "refuse"
    assert reg.set_conflict("legacy", "llm-merge")["conflict"] == "llm-merge"
    assert SpaceRegistry(lancedb.connect(str(tmp_path / "data"))).conflict("legacy") == "llm-merge"


def test_a_stale_mcp_update_of_a_space_token_is_merged_too(team: Team) -> None:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    FakeLlm.mode, FakeLlm.requests = "ok", []
    mid, _ = _conflict(team, ("alice", "anna"), "the mcp train leaves on tuesdays")

    async def main() -> tuple[Any, Any]:
        headers = {"Authorization": f"Bearer {team.tokens['alice']}"}
        async with create_mcp_http_client(headers=headers) as client, \
                streamable_http_client(team.srv.url + "/mcp", http_client=client) as (read, write), \
                ClientSession(read, write) as s:
            await s.initialize()
            merged = await s.call_tool("update", {"memory_id": mid, "content": "the mcp train leaves at noon",
                                                  "expected_version": 1})
            stale = await s.call_tool("update", {"memory_id": mid, "tags": ["x"], "expected_version": 1})
            return merged, stale

    merged, stale = anyio.run(main)
    assert not merged.is_error, merged.content
    assert json.loads(merged.content[0].text) == {"ok": True, "memory_id": mid, "version": 3, "merged": True,
                                                  "content": MERGED}
    assert stale.is_error and "version 3" in stale.content[0].text  # no content: refused
