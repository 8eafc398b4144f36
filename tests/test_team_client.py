"""Team mode, client side: MEMCLI_API_URL + MEMCLI_API_TOKEN (or `memcli setup --server URL --token T`) point
every face of a machine at one real `memcli serve` — the CLI commands (same JSON as local), the Claude Code
hooks (real hook processes), `memcli mcp` (a real MCP client session over stdio) — and `memcli sync` moves a
personal store into the space and back without duplicates.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from _memcli_server import MEMCLI, ServerProc, free_port, hash_env, start_server

pytestmark = pytest.mark.slow




class Remote:
    def __init__(self, srv: ServerProc, tmp: Path, token: str, other: str) -> None:
        self.srv, self.tmp, self.token, self.other = srv, tmp, token, other

    def env(self, home: str, **extra: str) -> dict[str, str]:
        env = hash_env(self.tmp)
        env.update(MEMCLI_HOME=str(self.tmp / home), MEMCLI_API_URL=self.srv.url, MEMCLI_API_TOKEN=self.token)
        env.update(extra)
        return env

    def api(self) -> httpx.Client:
        return httpx.Client(base_url=self.srv.url, timeout=30, headers={"Authorization": f"Bearer {self.token}"})


class Ran:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def cli(env: dict[str, str], *args: str, ok: bool = True) -> Any:
    """One CLI command with --json, in this process (the memcli app, whole: one import for every command,
    where a subprocess pays ~1 s of imports each on this machine); `memcli_proc` runs the real binary."""
    from typer.testing import CliRunner

    from memcli.cli.app import app

    clean = {k: None for k in os.environ if k.startswith("MEMCLI_") and k not in env}
    r = CliRunner().invoke(app, [*args, "--json"], env={**clean, **env})
    ran = Ran(r.exit_code, r.stdout, r.stderr if r.stderr_bytes is not None else "")
    if ok:
        assert ran.returncode == 0, (args, ran.stdout, ran.stderr, r.exception)
        return json.loads(ran.stdout)
    return ran


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Remote]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("teamc")
    srv = start_server(MEMCLI, hash_env(tmp), tmp / "server-home")
    with srv.client(timeout=30) as admin:
        token = admin.post("/api/spaces", json={"name": "crew", "agent": "laptop-claude"}).json()["api_token"]
        other = admin.post("/api/spaces/crew/tokens", json={"agent": "ci-bot"}).json()["api_token"]
        admin.post("/api/memories", json={"content": "admin's private note: not for the crew space"})
    yield Remote(srv, tmp, token, other)
    srv.stop()


def test_cli_commands_through_the_server_keep_the_local_json_shapes(remote: Remote) -> None:
    env = remote.env("cli-home")
    local = dict(env, MEMCLI_HOME=str(remote.tmp / "local-home"))
    del local["MEMCLI_API_URL"], local["MEMCLI_API_TOKEN"]

    p = subprocess.run([MEMCLI, "remember", "the payments service retries webhooks 5 times", "--tag", "payments",
                        "--json"], env=env, capture_output=True, text=True, timeout=120)  # the real binary once
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    loc = cli(local, "remember", "the payments service retries webhooks 5 times", "--tag", "payments")
    assert set(r) == set(loc) and r["ok"] is True
    mid = r["memory_id"]
    hits, loc_hits = (cli(e, "recall", "payments webhooks retries") for e in (env, local))
    assert hits[0]["memory_id"] == mid and set(hits[0]) == set(loc_hits[0])
    assert hits[0]["namespace"] == "crew" and hits[0]["scope"] == "agent:laptop-claude"
    listed = cli(env, "list")
    assert [m["memory_id"] for m in listed] == [mid]  # the admin's note is not in the space
    assert set(listed[0]) == set(cli(local, "list")[0])
    assert cli(env, "get", mid[-8:])["content"].startswith("the payments service")
    up = cli(env, "update", mid, "--content", "the payments service retries webhooks 7 times")
    assert set(up) == set(cli(local, "update", loc["memory_id"], "--content", "changed locally"))
    assert cli(env, "check-duplicate", "the payments service retries webhooks 7 times")["is_duplicate"] is True
    history = cli(env, "history", mid)
    assert [(e["action"], e["actor"]) for e in history] == [("remember", "agent:laptop-claude"),
                                                             ("update", "agent:laptop-claude")]
    stats = cli(env, "stats")
    assert stats["total"] == 1 and stats["namespaces"] == {"crew": 1}
    assert cli(env, "forget", mid)["ok"] is True
    assert cli(env, "list") == []
    missing = cli(env, "get", mid, ok=False)
    assert missing.returncode == 1 and json.loads(missing.stdout)["code"] == "not_found"
    # nothing was written to this machine's own store
    assert not (remote.tmp / "cli-home" / "data").exists()


def test_a_stale_update_from_the_cli_is_refused(remote: Remote) -> None:
    env = remote.env("cli-home")
    mid = cli(env, "remember", "the on-call rotation changes on mondays")["memory_id"]
    with remote.api() as api:
        assert api.patch(f"/api/memories/{mid}", json={"content": "rotation changes on tuesdays"}).status_code == 200
    p = cli(env, "update", mid, "--content", "rotation changes on fridays", "--expected-version", "1", ok=False)
    assert p.returncode == 1 and json.loads(p.stdout)["code"] == "version_conflict"


def test_a_clear_error_when_the_server_is_down_or_refuses_the_token(remote: Remote) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    p = cli(remote.env("cli-home", MEMCLI_API_URL=down), "list", ok=False)
    assert p.returncode == 1 and f"cannot reach memcli server at {down}" in json.loads(p.stdout)["error"]
    p = subprocess.run([MEMCLI, "recall", "anything"], env=remote.env("cli-home", MEMCLI_API_URL=down,
                                                                       MEMCLI_JSON="0"),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and f"cannot reach memcli server at {down}" in p.stderr
    p = cli(remote.env("cli-home", MEMCLI_API_TOKEN="mnemo_" + "z" * 32), "list", ok=False)
    assert p.returncode == 1 and "refused the token" in json.loads(p.stdout)["error"]


def _hook(event: str, payload: dict[str, Any], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "memcli.hooks", event], input=json.dumps(payload).encode(),
                          env=env, capture_output=True, timeout=60)


def test_claude_code_hooks_use_the_team_server(remote: Remote, tmp_path: Path) -> None:
    with remote.api() as api:
        api.post("/api/memories", json={"content": "crew decision: feature flags live in LaunchDarkly, "
                                                   "never in env vars"})
    env = remote.env("hook-home")
    p = _hook("UserPromptSubmit", {"session_id": "team-s1", "prompt": "where do feature flags live? LaunchDarkly?",
                                   "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit"}, env)
    assert p.returncode == 0 and p.stderr == b""
    assert "LaunchDarkly" in json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
    turn = ("We traced the flaky checkout test to a shared Redis database between CI shards; each shard now "
            "gets its own database index.")
    p = _hook("Stop", {"session_id": "team-s1", "cwd": str(tmp_path), "hook_event_name": "Stop",
                       "last_assistant_message": turn}, env)
    assert p.returncode == 0 and p.stdout == b""
    deadline = time.monotonic() + 20
    stored: list[dict[str, Any]] = []
    with httpx.Client(base_url=remote.srv.url, timeout=30,
                      headers={"Authorization": f"Bearer {remote.other}"}) as ci:  # another agent of the space
        while time.monotonic() < deadline and not stored:
            stored = [m for m in ci.get("/api/memories", params={"limit": 100}).json() if "Redis" in m["content"]]
            time.sleep(0.2)
    assert stored and stored[0]["namespace"] == "crew"
    home = remote.tmp / "hook-home"  # no local server was started, nothing spooled
    assert not (home / "server.json").exists() and not (home / "spool").exists()


def test_hooks_stay_silent_when_the_team_server_is_down_and_send_the_turn_later(remote: Remote,
                                                                              tmp_path: Path) -> None:
    env = remote.env("hook-down-home", MEMCLI_API_URL=f"http://127.0.0.1:{free_port()}")
    turn = ("While the server was down we found that the nightly backup job skips tables created after "
            "midnight; the fix is to list tables at job start.")
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        p = _hook(event, {"session_id": "s", "prompt": "why are some tables missing from backups?",
                          "cwd": str(tmp_path), "hook_event_name": event, "last_assistant_message": turn}, env)
        assert (p.returncode, p.stdout, p.stderr) == (0, b"", b""), event
    home = remote.tmp / "hook-down-home"
    assert "did not answer" in (home / "logs" / "hooks.log").read_text()
    assert not (home / "server.json").exists()
    assert len(list((home / "spool-team").glob("*.json"))) == 1  # the turn is kept
    # the server is reachable again: the next Stop sends the queued turn too
    p = _hook("Stop", {"session_id": "s2", "cwd": str(tmp_path), "hook_event_name": "Stop",
                       "last_assistant_message": "ok"}, remote.env("hook-down-home"))
    assert p.returncode == 0 and list((home / "spool-team").glob("*.json")) == []
    deadline = time.monotonic() + 20
    found: list[Any] = []
    with remote.api() as api:
        while time.monotonic() < deadline and not found:
            found = [m for m in api.get("/api/memories", params={"limit": 200}).json() if "nightly backup" in
                     m["content"]]
            time.sleep(0.2)
    assert found and found[0]["namespace"] == "crew"


def test_memcli_mcp_over_stdio_calls_the_team_server(remote: Remote) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    with remote.api() as api:
        api.post("/api/memories", json={"content": "crew fact: the staging cluster is called blue-heron"})
    env = remote.env("mcp-home")

    async def main() -> str:
        params = StdioServerParameters(command=MEMCLI, args=["mcp"], env=env)
        with open(remote.tmp / "mcp-stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                hits = json.loads((await s.call_tool("recall", {"query": "staging cluster blue-heron"})).content[0]
                                  .text)
                assert hits and "blue-heron" in hits[0]["content"] and hits[0]["namespace"] == "crew"
                res = await s.call_tool("remember", {"content": "remembered over stdio MCP into the crew space"})
                assert not res.is_error, res.content
                bad = await s.call_tool("get", {"memory_id": "ffffffff-ffff-7fff-bfff-ffffffffffff"})
                assert bad.is_error and "no memory" in bad.content[0].text
                return json.loads(res.content[0].text)["memory_id"]

    mid = anyio.run(main)
    with remote.api() as api:
        assert api.get(f"/api/memories/{mid}").json()["namespace"] == "crew"
    assert not (remote.tmp / "mcp-home" / "data").exists()


def test_sync_push_then_pull_round_trip_without_duplicates(remote: Remote) -> None:
    laptop = remote.env("laptop")
    solo = {k: v for k, v in laptop.items() if not k.startswith("MEMCLI_API")}
    facts = ["laptop fact: use uv for python envs", "laptop fact: the vpn profile is corp-2",
             "laptop fact: 中文 记忆 也要 同步"]
    for f in facts:
        cli(solo, "remember", f)
    with remote.api() as api:  # one of them is in the space already, under another id
        api.post("/api/memories", json={"content": facts[1]})
    first = cli(laptop, "sync", "push")
    assert (first["read"], first["added"], first["skipped"]) == (3, 2, 1)
    again = cli(laptop, "sync", "push")
    assert (again["added"], again["skipped"]) == (0, 3)
    fresh = remote.env("laptop-2")
    pulled = cli(fresh, "sync", "pull")
    assert pulled["added"] == pulled["read"] >= 3
    assert cli(fresh, "sync", "pull")["added"] == 0
    local = {k: v for k, v in fresh.items() if not k.startswith("MEMCLI_API")}
    contents = [m["content"] for m in cli(local, "list", "--limit", "500")]
    for f in facts:
        assert contents.count(f) == 1
    with remote.api() as api:
        space = [m["content"] for m in api.get("/api/memories", params={"limit": 500}).json()]
    assert len(space) == len(set(space)) and set(facts) <= set(space)


def test_setup_server_token_points_every_face_of_the_home_at_the_server(remote: Remote) -> None:
    env = hash_env(remote.tmp)
    env["MEMCLI_HOME"] = str(remote.tmp / "setup-home")
    p = subprocess.run([MEMCLI, "setup", "--yes", "--server", remote.srv.url, "--token", remote.token,
                        "--claude-hooks", "none", "--no-cli"], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert remote.token not in p.stdout + p.stderr and "api_token" in p.stdout  # the diff shows the key, not the token
    cfg = remote.tmp / "setup-home" / "config.toml"
    assert stat.S_IMODE(cfg.stat().st_mode) == 0o600
    text = cfg.read_text()
    assert f'api_url = "{remote.srv.url}"' in text and remote.token in text
    mid = cli(env, "remember", "configured by memcli setup --server")["memory_id"]  # no MEMCLI_API_* in env
    with remote.api() as api:
        assert api.get(f"/api/memories/{mid}").json()["namespace"] == "crew"
    p = subprocess.run([MEMCLI, "setup", "--print", "--http", "--agents", "claude-code"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert f"{remote.srv.url}/mcp" in p.stdout and f"Bearer {remote.token}" in p.stdout
    bad = subprocess.run([MEMCLI, "setup", "--yes", "--server", remote.srv.url, "--token", "mnemo_wrong",
                          "--no-cli"], env=dict(env, MEMCLI_HOME=str(remote.tmp / "setup-bad")),
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "refused the token" in bad.stdout


def test_an_https_team_server_works_for_the_cli_and_the_hooks(tmp_path: Path) -> None:
    """`memcli serve --ssl-certfile/--ssl-keyfile`, and clients that trust its certificate (SSL_CERT_FILE)."""
    import shutil

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    env = dict(hash_env(tmp_path), MEMCLI_HOME=str(tmp_path / "tls-server"))
    port = free_port()
    log = open(tmp_path / "tls-serve.log", "wb")
    proc = subprocess.Popen([MEMCLI, "serve", "--port", str(port), "--ssl-certfile", str(cert), "--ssl-keyfile",
                             str(key)], env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"https://localhost:{port}"
    import ssl

    ctx = ssl.create_default_context(cafile=str(cert))
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "tls-serve.log").read_text()
            try:
                admin = {"Authorization": "Bearer " + json.loads((tmp_path / "tls-server" / "auth.json").read_text())[
                    "token"]}
                if httpx.get(url + "/health", verify=ctx, timeout=5, headers=admin).json().get("ready"):
                    break
            except (httpx.HTTPError, OSError, ValueError, KeyError):
                pass
            time.sleep(0.1)
        r = httpx.post(url + "/api/spaces", json={"name": "tls", "agent": "a"}, verify=ctx, timeout=60, headers=admin)
        assert r.status_code == 201, r.text
        client = dict(hash_env(tmp_path), MEMCLI_HOME=str(tmp_path / "tls-client"), MEMCLI_API_URL=url,
                      MEMCLI_API_TOKEN=r.json()["api_token"], SSL_CERT_FILE=str(cert))
        mid = cli(client, "remember", "over TLS: the build cache lives in s3://ci-cache")["memory_id"]
        assert cli(client, "get", mid)["namespace"] == "tls"
        p = _hook("UserPromptSubmit", {"session_id": "t", "prompt": "where does the build cache live? s3 ci-cache",
                                       "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit"}, client)
        assert p.returncode == 0 and "ci-cache" in json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
        untrusted = cli({k: v for k, v in client.items() if k != "SSL_CERT_FILE"}, "list", ok=False)
        assert untrusted.returncode == 1 and "CERTIFICATE_VERIFY_FAILED" in json.loads(untrusted.stdout)["error"]
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def test_space_commands_on_the_local_store_and_through_the_server(remote: Remote) -> None:
    local = hash_env(remote.tmp)
    local["MEMCLI_HOME"] = str(remote.tmp / "admin-local")
    made = cli(local, "space", "create", "ops", "--agent", "ann")
    assert made["space_id"] == "ops" and made["api_token"].startswith("mnemo_")
    added = cli(local, "space", "token", "add", "ops", "--agent", "ben")
    assert [s["space_id"] for s in cli(local, "space", "list")] == ["ops"]
    assert cli(local, "space", "token", "revoke", "ops", added["token_id"])["active"] is False
    tokens = {t["agent"]: t["active"] for t in cli(local, "space", "token", "list", "ops")}
    assert tokens == {"ann": True, "ben": False}
    dup = cli(local, "space", "create", "ops", "--agent", "x", ok=False)
    assert dup.returncode == 1 and "exists already" in json.loads(dup.stdout)["error"]
    # through the server: its admin token manages its spaces, a space token may not
    admin_token = json.loads((remote.srv.home / "auth.json").read_text())["token"]
    through = remote.env("admin-remote", MEMCLI_API_TOKEN=admin_token)
    assert cli(through, "space", "create", "qa", "--agent", "quinn")["space_id"] == "qa"
    assert "qa" in {s["space_id"] for s in cli(through, "space", "list")}
    refused = cli(remote.env("admin-remote"), "space", "token", "add", "qa", "--agent", "eve", ok=False)
    assert refused.returncode == 1 and json.loads(refused.stdout)["code"] == "forbidden"
