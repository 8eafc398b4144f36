"""Team mode through the Claude Code plugin's own launcher (issue 17, item 1): `sh hooks/run.sh <Event>` runs
the hook client as `python -I -S <path>/memcli/hooks/client.py` — no site-packages — with MEMCLI_API_URL +
MEMCLI_API_TOKEN pointing at a real `memcli serve` that holds a space. SessionStart injects the space's
digest, UserPromptSubmit its relevant memories, Stop captures the turn into the space; with the server down
every hook is silent, the turn waits (redacted) in `<home>/spool-team` and is sent by the next hook that
reaches the server."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from _memcli_server import MEMCLI, ServerProc, free_port, hash_env, start_server

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = ROOT / "hooks" / "run.sh"


@dataclass
class Team:
    srv: ServerProc
    tmp: Path
    token: str  # the laptop agent's space token
    teammate: str  # another agent of the same space

    def env(self, home: str, url: str | None = None) -> dict[str, str]:
        """A hook's environment in team mode, as the plugin runs it (its data dir, the Python to use)."""
        env = hash_env(self.tmp)
        env.update(MEMCLI_HOME=str(self.tmp / home), MEMCLI_API_URL=url or self.srv.url,
                   MEMCLI_API_TOKEN=self.token, MEMCLI_PYTHON=sys.executable,
                   CLAUDE_PLUGIN_DATA=str(self.tmp / f"{home}-plugin-data"))
        return env

    def space(self) -> list[dict[str, Any]]:
        """The space's memories, as another agent of it sees them."""
        with httpx.Client(base_url=self.srv.url, timeout=30,
                          headers={"Authorization": f"Bearer {self.teammate}"}) as api:
            return api.get("/api/memories", params={"limit": 500}).json()


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("teamhooks")
    srv = start_server(MEMCLI, hash_env(tmp), tmp / "server-home")
    with srv.client(timeout=30) as admin:
        token = admin.post("/api/spaces", json={"name": "crew", "agent": "laptop-claude"}).json()["api_token"]
        mate = admin.post("/api/spaces/crew/tokens", json={"agent": "ci-bot"}).json()["api_token"]
    with httpx.Client(base_url=srv.url, timeout=30, headers={"Authorization": f"Bearer {mate}"}) as api:
        for fact in ("crew decision: feature flags live in LaunchDarkly, never in environment variables",
                     "crew convention: database migrations run through Atlas, one migration per pull request"):
            assert api.post("/api/memories", json={"content": fact, "importance": 0.9}).status_code == 201
    yield Team(srv, tmp, token, mate)
    srv.stop()


def launch(event: str, payload: dict[str, Any], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["sh", str(LAUNCHER), event], input=json.dumps(payload).encode(), env=env,
                          capture_output=True, timeout=60)


def context(p: subprocess.CompletedProcess[bytes]) -> str:
    assert p.returncode == 0 and p.stderr == b"", p
    return json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"] if p.stdout else ""


def poll(pred: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.2)
    return pred()


def test_the_plugin_launcher_injects_and_captures_in_team_mode(team: Team, tmp_path: Path) -> None:
    env = team.env("laptop")
    base = {"session_id": "team-run-1", "cwd": str(tmp_path), "transcript_path": str(tmp_path / "t.jsonl")}

    digest = context(launch("SessionStart", {**base, "hook_event_name": "SessionStart", "source": "startup"}, env))
    assert "LaunchDarkly" in digest and "Atlas" in digest

    # the launcher took its fast path: the client as a plain script, no site-packages
    py, client_path = (team.tmp / "laptop-plugin-data" / "python").read_text().splitlines()
    assert py == sys.executable and client_path.endswith("memcli/hooks/client.py")

    # (another session: the digest's memories are never injected twice in one)
    injected = context(launch("UserPromptSubmit", {**base, "session_id": "team-run-1b",
                                                  "hook_event_name": "UserPromptSubmit",
                                                  "prompt": "how do we run database migrations with Atlas?"}, env))
    assert "one migration per pull request" in injected

    turn = ("The flaky checkout test came from CI shards sharing one Redis database; each shard now gets its "
            "own database index via REDIS_DB=$CI_NODE_INDEX.")
    # the turn of that prompt ends: its prompt is the one the server remembered for the session
    stop = launch("Stop", {**base, "session_id": "team-run-1b", "hook_event_name": "Stop",
                           "stop_hook_active": False, "last_assistant_message": turn}, env)
    assert (stop.returncode, stop.stdout, stop.stderr) == (0, b"", b"")
    stored = poll(lambda: [m for m in team.space() if "REDIS_DB" in m["content"]])
    assert stored and stored[0]["namespace"] == "crew" and stored[0]["scope"] == "agent:claude-code"

    home = team.tmp / "laptop"
    log = (home / "logs" / "hooks.log").read_text() if (home / "logs" / "hooks.log").exists() else ""
    assert "ModuleNotFoundError" not in log and "hook failed" not in log
    assert not (home / "server.json").exists() and not (home / "spool").exists()  # no local server, no queue


def test_with_the_team_server_down_the_turn_waits_redacted_and_is_sent_later(team: Team, tmp_path: Path) -> None:
    down = team.env("offline", url=f"http://127.0.0.1:{free_port()}")
    base = {"session_id": "team-run-2", "cwd": str(tmp_path), "transcript_path": str(tmp_path / "t.jsonl")}
    secret = "ghp_" + "Q7x2" * 9
    turn = (f"The nightly backup skipped tables created after midnight; listing tables at job start fixed it. "
            f"The backup bot pushes with {secret}.")
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        p = launch(event, {**base, "hook_event_name": event, "prompt": "why are tables missing from backups?",
                           "last_assistant_message": turn, "stop_hook_active": False}, down)
        assert (p.returncode, p.stdout, p.stderr) == (0, b"", b""), event
    home = team.tmp / "offline"
    queued = list((home / "spool-team").glob("*.json"))
    assert len(queued) == 1
    raw = queued[0].read_bytes()
    assert b"nightly backup" in raw and secret.encode() not in raw  # kept, and no secret waits on disk
    assert "did not answer" in (home / "logs" / "hooks.log").read_text()

    # the server answers again: the next hook that reaches it sends the queued turn
    p = launch("SessionStart", {**base, "session_id": "team-run-3", "hook_event_name": "SessionStart",
                                "source": "startup"}, team.env("offline"))
    assert p.returncode == 0 and p.stderr == b""
    assert poll(lambda: not list((home / "spool-team").glob("*.json")))
    stored = poll(lambda: [m for m in team.space() if "nightly backup" in m["content"]])
    assert stored and stored[0]["namespace"] == "crew" and secret not in stored[0]["content"]
