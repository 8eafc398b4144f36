"""The local server belongs to its home and its user: a real `memcli serve` requires the home's token on
every route but /health (which says nothing without it), never logs it, and the home's files are private."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from _memcli_server import MEMCLI, ServerProc, free_port, hash_env, start_server
from typer.testing import CliRunner

from memcli.home import exposed, load_or_create_auth, read_auth

SECRET_CONTENT = "PRIVATE-NOTE-9931: the staging database password rotates on Mondays"



@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("sec")
    srv = start_server(MEMCLI, hash_env(tmp), tmp / "home")
    with srv.client(timeout=30) as c:
        assert c.post("/api/memories", json={"content": SECRET_CONTENT}).status_code == 201
    yield srv
    srv.stop()


def _count(srv: ServerProc) -> int:
    with srv.client(timeout=30) as c:
        return len(c.get("/api/memories", params={"limit": 1000}).json())


PROBES = [("GET", "/api/memories", None), ("GET", "/api/search?q=staging+database", None),
          ("GET", "/api/memories/ffff0000", None), ("GET", "/api/stats", None),
          ("POST", "/api/memories", {"content": "injected by another local user"}),
          ("POST", "/api/memories/batch", [{"content": "injected by another local user"}]),
          ("POST", "/api/check-duplicate", {"content": SECRET_CONTENT}),
          ("POST", "/hooks/UserPromptSubmit", {"session_id": "evil", "prompt": "staging database password"}),
          ("POST", "/hooks/SessionStart", {"session_id": "evil", "source": "startup"}),
          ("POST", "/hooks/Stop", {"session_id": "evil", "stop_hook_active": False, "prompt": "p",
                                   "last_assistant_message": "injected by another local user " * 5}),
          ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "list_facts", "arguments": {}}}),
          ("GET", "/no-such-route", None)]


@pytest.mark.parametrize("auth", [None, "Bearer wrong-token", "Basic {token}", "Bearer {token}x", "{token}",
                                  "Bearer", "Bearer {short}"])
def test_requests_without_the_token_are_refused_and_read_nothing(server: ServerProc, auth: str | None) -> None:
    before = _count(server)
    headers = {} if auth is None else {"Authorization": auth.format(token=server.token, short=server.token[:-1])}
    for method, path, body in PROBES:
        r = httpx.request(method, server.url + path, json=body, headers=headers, timeout=30)
        assert r.status_code == 401, (method, path, r.status_code, r.text)
        assert r.json()["code"] == "unauthorized" and r.headers["www-authenticate"] == "Bearer"
        assert "PRIVATE-NOTE" not in r.text and server.token not in r.text
    time.sleep(0.5)  # a Stop that got through would be stored by now
    assert _count(server) == before


def test_the_token_in_a_query_string_does_not_count(server: ServerProc) -> None:
    r = httpx.get(server.url + "/api/memories", params={"token": server.token, "access_token": server.token})
    assert r.status_code == 401


def test_with_the_token_everything_answers(server: ServerProc) -> None:
    with server.client(timeout=30) as c:
        assert SECRET_CONTENT in c.get("/api/search", params={"q": "staging database"}).text
        assert c.get("/api/stats").json()["total"] >= 1
        # without the home header (curl, MCP clients): the token alone is enough
        plain = httpx.get(server.url + "/api/memories", headers={"Authorization": f"Bearer {server.token}"})
        assert plain.status_code == 200 and SECRET_CONTENT in plain.text


def test_health_reveals_nothing_without_the_token(server: ServerProc) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}, {"X-Memcli-Home": "0000111122223333"}):
        r = httpx.get(server.url + "/health", headers=headers)
        assert r.status_code == 200 and r.json() == {"ok": True}, r.text
    with server.client() as c:
        full = c.get("/health").json()
    assert full["pid"] == server.proc.pid and full["home"] == str(server.home) and full["ready"] is True
    assert full["home_id"] == read_auth(server.home).home_id and full["version"]


def test_home_and_its_files_are_private(server: ServerProc) -> None:
    home = server.home
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    for name in ("auth.json", "server.json"):
        assert stat.S_IMODE((home / name).stat().st_mode) == 0o600, name
    auth = json.loads((home / "auth.json").read_text())
    assert len(auth["token"]) >= 43 and len(auth["home_id"]) >= 16  # ≥ 128 bits (256 here)
    seen = 0
    for root, dirs, files in os.walk(home):  # the store, the logs, the spool: nothing for other users
        for d in dirs:
            assert stat.S_IMODE((Path(root) / d).stat().st_mode) & 0o077 == 0, Path(root) / d
        for f in files:
            assert stat.S_IMODE((Path(root) / f).stat().st_mode) & 0o077 == 0, Path(root) / f
            seen += 1
    assert seen > 5 and (home / "data").is_dir() and (home / "logs").is_dir()
    assert exposed(home) == []


def test_the_token_is_never_logged(server: ServerProc) -> None:
    wrong = "Zz9-wrong-token-that-must-not-be-logged"
    for auth in (f"Bearer {server.token}", f"Bearer {wrong}", f"Basic {wrong}"):
        httpx.get(server.url + "/api/memories", headers={"Authorization": auth})
        httpx.post(server.url + "/hooks/UserPromptSubmit", content=b"{broken", headers={"Authorization": auth})
    logs = [server.log, *(server.home / "logs").glob("*.log")]
    text = "".join(p.read_text(errors="replace") for p in logs if p.exists())
    assert text.strip(), "the server logs something"
    assert server.token not in text and wrong not in text


def test_the_auth_file_is_created_once_by_racing_processes(tmp_path: Path) -> None:
    home = tmp_path / "race"
    start = time.time() + 1.0
    code = ("import sys, time; from pathlib import Path; from memcli.home import load_or_create_auth\n"
            f"time.sleep(max(0, {start} - time.time()))\n"
            "a = load_or_create_auth(Path(sys.argv[1])); print(a.home_id, a.token)")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(home)], stdout=subprocess.PIPE, text=True)
             for _ in range(8)]
    answers = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert len(answers) == 1 and answers == {f"{read_auth(home).home_id} {read_auth(home).token}"}
    assert stat.S_IMODE((home / "auth.json").stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert sorted(p.name for p in home.iterdir()) == ["auth.json"]  # no temporary file left behind


def test_an_open_home_of_an_older_memcli_is_reported_then_tightened(tmp_path: Path) -> None:
    from memcli.cli.app import app

    home = tmp_path / "old-home"
    (home / "data").mkdir(parents=True)
    os.chmod(home, 0o755)
    os.chmod(home / "data", 0o755)
    (home / "config.toml").write_text('namespace = "default"\n')
    os.chmod(home / "config.toml", 0o644)
    load_or_create_auth(home)
    os.chmod(home / "auth.json", 0o644)
    os.chmod(home, 0o755)
    env = {"MEMCLI_HOME": str(home), "MEMCLI_EMBEDDER": "hash"}
    r = CliRunner().invoke(app, ["doctor", "--json"], env=env)
    checks = {c["name"]: c for c in json.loads(r.output)["checks"]}
    assert r.exit_code == 1 and checks["permissions"]["status"] == "fail"
    assert str(home / "auth.json") in checks["permissions"]["detail"] and "chmod 700" in checks["permissions"]["fix"]
    r = CliRunner().invoke(app, ["list", "--json"], env=env)  # opening the store tightens the home
    assert r.exit_code == 0, r.output
    assert exposed(home) == []
    r = CliRunner().invoke(app, ["doctor", "--json"], env=env)
    assert {c["name"]: c for c in json.loads(r.output)["checks"]}["permissions"]["status"] == "ok"


def test_a_server_beyond_loopback_still_requires_the_token(tmp_path: Path) -> None:
    srv = start_server(MEMCLI, hash_env(tmp_path), tmp_path / "home", "--host", "0.0.0.0", ready=False)
    try:
        assert httpx.get(srv.url + "/api/memories").status_code == 401
        assert httpx.get(srv.url + "/health").json() == {"ok": True}
        with srv.client(timeout=30) as c:
            assert c.get("/api/memories").status_code == 200
        assert "clients need the bearer token" in srv.log.read_text()
    finally:
        srv.stop()


def test_setup_prints_http_configs_with_the_homes_token(tmp_path: Path) -> None:
    import tomllib

    from memcli.cli.app import app

    home = tmp_path / "h"
    env = {"MEMCLI_HOME": str(home), "HOME": str(tmp_path), "MEMCLI_PORT": str(free_port())}
    r = CliRunner().invoke(app, ["setup", "--print", "--http", "--agents", "codex,gemini,claude-code"], env=env)
    assert r.exit_code == 0, r.output
    token = read_auth(home).token
    codex = tomllib.loads(r.output.split("# ", 1)[1].split("\n", 1)[1].split("──")[0])
    entry = codex["mcp_servers"]["memcli"]
    assert entry["url"] == f"http://127.0.0.1:{env['MEMCLI_PORT']}/mcp?agent=codex"  # its writes are Codex's
    assert entry["http_headers"] == {"Authorization": f"Bearer {token}"}
    assert r.output.count(f"Bearer {token}") >= 4  # codex, gemini, claude mcp add, ~/.claude.json
    assert stat.S_IMODE((home / "auth.json").stat().st_mode) == 0o600


def test_a_shared_directory_as_home_is_left_open(tmp_path: Path) -> None:
    """MEMCLI_HOME=/tmp (sticky) or ~ must not lock other users or programs out of that directory; memcli's
    own entries in it are still made private."""
    from memcli.home import secure_home

    shared = tmp_path / "like-tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    (shared / "data").mkdir(mode=0o755)
    os.chmod(shared / "data", 0o755)
    secure_home(shared)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    assert stat.S_IMODE((shared / "data").stat().st_mode) == 0o700
    assert exposed(shared) == []
