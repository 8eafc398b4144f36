"""Team mode and REST holes found by trying memcli as a new user (issue 17, items 2, 3, 5, 6), against one real
`memcli serve` with spaces: export through the team server, import and sync push into a space whose ids
another space holds, names with a trailing newline, input the API used to coerce or crash on (with library
paths in the error body), a browser session minting tokens, and a revocation by the CLI that left the token
working for two more seconds."""

from __future__ import annotations

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
from _memcli_server import MEMCLI, ServerProc, hash_env, start_server

pytestmark = pytest.mark.slow


class World:
    def __init__(self, srv: ServerProc, tmp: Path, alpha: str, beta: str) -> None:
        self.srv, self.tmp, self.alpha, self.beta = srv, tmp, alpha, beta

    def as_(self, token: str) -> httpx.Client:
        return httpx.Client(base_url=self.srv.url, timeout=60, headers={"Authorization": f"Bearer {token}"})

    def cli(self, home: str, *args: str, token: str | None = None, ok: bool = True) -> Any:
        """The installed binary, in team mode when ``token`` is given."""
        env = {**hash_env(self.tmp), "MEMCLI_HOME": str(self.tmp / home)}
        if token:
            env.update(MEMCLI_API_URL=self.srv.url, MEMCLI_API_TOKEN=token)
        p = subprocess.run([MEMCLI, *args, "--json"], env=env, capture_output=True, text=True, timeout=180)
        if ok:
            assert p.returncode == 0, (args, p.stdout, p.stderr)
            return json.loads(p.stdout) if p.stdout.strip() else None
        return p


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("teamholes")
    srv = start_server(MEMCLI, hash_env(tmp), tmp / "server-home")
    with srv.client(timeout=60) as admin:
        alpha = admin.post("/api/spaces", json={"name": "alpha", "agent": "ann"}).json()["api_token"]
        beta = admin.post("/api/spaces", json={"name": "beta", "agent": "ben"}).json()["api_token"]
    yield World(srv, tmp, alpha, beta)
    srv.stop()


# ------------------------------------------------------------------------------------------- item 2: export
def test_export_through_the_team_server_writes_the_space(world: World) -> None:
    with world.as_(world.alpha) as ann:
        ann.post("/api/memories", json={"content": "alpha exports: the on-call handbook lives in the wiki"})
    out = world.tmp / "alpha-export.jsonl"
    for extra in ((), ("--include-archived",)):
        world.cli("exporter", "export", "-o", str(out), *extra, token=world.alpha)
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        assert lines[0]["memcli_export"] == 1
        assert any("on-call handbook" in r["content"] for r in lines[1:])
        assert {r["namespace"] for r in lines[1:]} == {"alpha"}


# ----------------------------------------------------------------------------- item 3: ids across spaces
def test_sync_push_into_a_second_space_copies_everything(world: World) -> None:
    facts = [f"laptop fact {i}: the staging database is called pg-stage-{i}" for i in range(6)]
    for f in facts:
        world.cli("laptop", "remember", f)
    first = world.cli("laptop", "sync", "push", token=world.beta)
    assert (first["added"], first["skipped"]) == (6, 0)
    second = world.cli("laptop", "sync", "push", token=world.alpha)  # the same ids are in beta already
    assert (second["added"], second["skipped"]) == (6, 0)
    assert world.cli("laptop", "sync", "push", token=world.alpha)["skipped"] == 6  # idempotent in alpha
    for token in (world.alpha, world.beta):  # the same memories, in both spaces
        with world.as_(token) as c:
            contents = [m["content"] for m in c.get("/api/memories", params={"limit": 500}).json()]
        assert sorted(x for x in contents if x.startswith("laptop fact")) == sorted(facts)


def test_import_answers_the_same_whether_an_id_exists_in_another_space(world: World) -> None:
    with world.as_(world.beta) as ben:
        taken = ben.post("/api/memories", json={"content": "beta's own memory"}).json()["memory_id"]
    fresh = "01a00000-0000-7000-8000-0000000000aa"
    with world.as_(world.alpha) as ann:
        answers = [ann.post("/api/import", json={"records": [{"id": mid, "content": f"alpha record {n}"}]}).json()
                   for n, mid in enumerate((taken, fresh))]
        assert [(a["added"], a["skipped"]) for a in answers] == [(1, 0), (1, 0)]
        again = ann.post("/api/import", json={"records": [{"id": taken, "content": "alpha record 0"}]}).json()
        assert (again["added"], again["skipped"]) == (0, 1)
        mine = [m["content"] for m in ann.get("/api/memories", params={"limit": 500}).json()]
    assert "alpha record 0" in mine and "alpha record 1" in mine
    with world.as_(world.beta) as ben:  # beta's memory is untouched
        assert ben.get(f"/api/memories/{taken}").json()["content"] == "beta's own memory"


# ---------------------------------------------------------------------------------- item 5: full-match names
def test_a_name_with_a_trailing_newline_is_refused_everywhere(world: World) -> None:
    with world.srv.client(timeout=60) as admin:
        r = admin.post("/api/spaces", json={"name": "alpha\n", "agent": "eve"})
        assert r.status_code == 422 and "invalid namespace" in r.json()["error"]
        assert [s["space_id"] for s in admin.get("/api/spaces").json()].count("alpha") == 1
        assert all("\n" not in s["space_id"] for s in admin.get("/api/spaces").json())
        assert admin.post("/api/memories", json={"content": "x", "namespace": "default\n"}).status_code == 422
        assert admin.get("/api/memories", params={"namespace": "default\n"}).status_code == 422
        assert admin.post("/api/memories", json={"content": "x", "agent": "bob\nmallory"}).status_code == 422
    p = world.cli("admin-cli", "remember", "x", "--namespace", "team\n", ok=False)
    assert p.returncode == 1 and "invalid namespace" in p.stdout


# ------------------------------------------------------------------------------------ item 6: smaller ones
def test_the_api_refuses_what_it_used_to_coerce_or_crash_on(world: World) -> None:
    with world.srv.client(timeout=60) as admin:
        mid = admin.post("/api/memories", json={"content": "the api refuses bad input"}).json()["memory_id"]
        r = admin.patch(f"/api/memories/{mid}", json={})
        assert r.status_code == 422 and "nothing to change" in r.json()["error"]
        assert admin.patch(f"/api/memories/{mid}", json={"tags": "x"}).status_code == 422
        assert admin.post("/api/memories", json={"content": "y", "tags": "x"}).status_code == 422
        assert admin.get(f"/api/memories/{mid}").json()["version"] == 1  # nothing changed
        for path, params in (("/api/search", {"q": "api", "since_ms": "9" * 23}),
                             ("/api/memories", {"until_ms": "9" * 23}),
                             ("/api/search", {"q": "api", "until_ms": str(-(2 ** 63) - 5)}),
                             ("/api/search", {"q": "api", "limit": "0"}),
                             ("/api/search", {"q": "api", "min_score": "nan"}),
                             ("/api/search", {"q": "api", "min_score": "inf"}),
                             ("/api/search", {"q": "api", "min_score": "1.5"})):
            r = admin.get(path, params=params)
            assert r.status_code == 422, (path, params, r.text)
            assert ".rs:" not in r.text and "/home/" not in r.text and "lance" not in r.text.lower()
        assert len(admin.get("/api/search", params={"q": "api", "limit": "1"}).json()) == 1


def test_a_browser_session_cannot_manage_spaces_or_mint_tokens(world: World) -> None:
    with world.srv.client(timeout=60) as admin:
        code = admin.post("/api/ui/codes", json={}).json()["code"]
    with httpx.Client(base_url=world.srv.url, timeout=60, headers={"X-Memcli-UI": "1"}) as browser:
        assert browser.post("/api/ui/login", json={"code": code}).status_code == 200
        assert browser.get("/api/stats/scopes").status_code == 200  # the session works for the page
        for method, path, body in (("POST", "/api/spaces", {"name": "gamma", "agent": "eve"}),
                                   ("POST", "/api/spaces/alpha/tokens", {"agent": "eve"}),
                                   ("GET", "/api/spaces", None), ("GET", "/api/spaces/alpha/tokens", None),
                                   ("PATCH", "/api/spaces/alpha", {"conflict": "refuse"})):
            r = browser.request(method, path, json=body)
            assert r.status_code == 403 and "mnemo_" not in r.text, (method, path, r.text)
    with world.srv.client(timeout=60) as admin:
        assert "gamma" not in [s["space_id"] for s in admin.get("/api/spaces").json()]
        assert [t["agent"] for t in admin.get("/api/spaces/alpha/tokens").json()] == ["ann"]


def test_a_token_revoked_with_the_cli_is_refused_at_once(world: World) -> None:
    """`memcli space token revoke` on the server's machine, while the server runs and has just accepted the
    token (it trusts a resolved token for 2 s): the next request is refused. In process (CliRunner), so that
    the check follows the revocation within milliseconds, as an agent's next request would."""
    from typer.testing import CliRunner

    from memcli.cli.app import app

    with world.srv.client(timeout=60) as admin:
        token = admin.post("/api/spaces/alpha/tokens", json={"agent": "temp"}).json()
    stop = threading.Event()

    def agent_at_work() -> None:  # the agent keeps using its token: the server keeps it resolved and cached
        with world.as_(token["api_token"]) as busy:
            while not stop.is_set():
                busy.get("/api/stats")
                time.sleep(0.05)

    with world.as_(token["api_token"]) as temp:
        assert temp.get("/api/memories").status_code == 200
        worker = threading.Thread(target=agent_at_work, daemon=True)
        worker.start()
        env = {k: None for k in os.environ if k.startswith("MEMCLI_")}
        env.update(MEMCLI_HOME=str(world.srv.home), MEMCLI_EMBEDDER="hash")
        try:
            r = CliRunner().invoke(app, ["space", "token", "revoke", "alpha", token["token_id"], "--json"], env=env)
        finally:
            stop.set()
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["active"] is False
        after = temp.get("/api/memories")
        assert after.status_code == 401, after.text


# --------------------------------------------------------------------- item 7: the limits the README states
def test_the_body_and_content_limits_are_the_ones_the_readme_states(world: World) -> None:
    mib = 1 << 20
    with world.srv.client(timeout=120) as admin, world.as_(world.alpha) as ann:
        big = {"content": "x" * 100, "metadata": {"pad": "y" * mib}}
        assert admin.post("/api/memories", json=big).status_code == 413  # 1 MiB for one memory
        assert ann.post("/api/memories", json=big).status_code == 413
        many = [{"content": f"batch item {i} " + "z" * 11_000} for i in range(1000)]  # ~11 MB
        assert admin.post("/api/memories/batch", json=many).status_code == 413  # 10 MiB for a batch
        message = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "p" * mib}}
        for client in (admin, ann):  # /mcp: 1 MiB, whoever sends it
            r = client.post("/mcp", json=message, headers={"Accept": "application/json, text/event-stream"})
            assert r.status_code == 413, r.text
        stop = {"session_id": "s", "last_assistant_message": "w" * (16 * mib)}
        assert admin.post("/hooks/Stop", json=stop).status_code == 413  # /hooks: 16 MiB
        assert ann.post("/hooks/Stop", json={**stop, "last_assistant_message": "w" * (11 * mib)}).status_code == 413
        assert ann.post("/api/memories", json={"content": "c" * 32_001}).status_code == 422  # 32,000 characters
        assert ann.post("/api/memories", json={"content": "c" * 32_000}).status_code == 201
