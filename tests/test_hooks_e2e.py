"""The hooks as Claude Code runs them: real `python -m memcli.hooks <Event>` processes with the JSON Claude
Code sends, talking to a real `memcli serve` on 127.0.0.1 (hash embedder: fast; it knows words)."""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from _memcli_server import auth_headers
from test_hooks_units import SECRETS, _secret_text, transcript_records

from memcli.config import load_config
from memcli.home import load_or_create_auth
from memcli.hooks import client
from memcli.memory.service import MemoryService

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Hook:
    rc: int
    out: str
    err: str
    seconds: float

    @property
    def context(self) -> str:
        if not self.out:
            return ""
        data = json.loads(self.out)
        return data["hookSpecificOutput"]["additionalContext"]


def run_hook(event: str, payload: Any, env: dict[str, str], *, raw: bytes | None = None) -> Hook:
    data = raw if raw is not None else json.dumps(payload).encode()
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "memcli.hooks", event], input=data, env=env, capture_output=True,
                       timeout=60)
    return Hook(p.returncode, p.stdout.decode(), p.stderr.decode(), time.monotonic() - t0)


@dataclass
class Served:
    proc: subprocess.Popen
    port: int
    home: Path
    env: dict[str, str]  # for hook processes

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def wait_health(port: int, home: Path, timeout: float = 60.0, proc: subprocess.Popen | None = None,
                ready: bool = True, token: str | None = None) -> None:
    """Wait until the server of ``home`` on ``port`` answers /health as that home's (and, with ``ready``,
    has its store open)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"memcli serve exited with {proc.returncode}")
        try:
            r = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1, headers=auth_headers(home, token))
            if r.status_code == 200 and r.json().get("home_id") and (r.json().get("ready") or not ready):
                return
        except (httpx.HTTPError, OSError, ValueError, KeyError):  # auth.json not written yet
            pass
        time.sleep(0.05)
    raise AssertionError("memcli serve did not become ready")


def serve(home: Path, env_extra: dict[str, str] | None = None, *, ready: bool = True,
          token: str | None = None) -> Served:
    """A real `memcli serve` for ``home`` (``token``: the one it was configured with, if not its own)."""
    port = free_port()
    env = {**os.environ, "MEMCLI_HOME": str(home), **(env_extra or {})}
    home.mkdir(parents=True, exist_ok=True)
    log = open(home.parent / f"serve-{port}.log", "wb")
    proc = subprocess.Popen([str(BIN / "memcli"), "serve", "--port", str(port)], env=env, stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        wait_health(port, home, proc=proc, ready=ready, token=token or (env_extra or {}).get("MEMCLI_TOKEN"))
    except BaseException:
        proc.kill()
        raise
    return Served(proc, port, home, {**env, "MEMCLI_PORT": str(port)})


def kill_spawned(home: Path) -> None:
    """Stop a server the hook client started by itself (its pid is in hooks-state/server.pid)."""
    pid_file = home / "hooks-state" / "server.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text())
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        for _ in range(200):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def project_dir(tmp_path: Path, name: str) -> Path:
    d = tmp_path / "work" / name
    (d / ".git").mkdir(parents=True, exist_ok=True)
    (d / "src").mkdir(exist_ok=True)
    return d


def payload(event: str, session: str, cwd: Path, **extra: Any) -> dict[str, Any]:
    return {"session_id": session, "transcript_path": str(cwd / "transcript.jsonl"), "cwd": str(cwd),
            "hook_event_name": event, **extra}


def turns(home: Path) -> list[Any]:
    svc = MemoryService.open(load_config(home))
    try:
        return [m for m in svc.list(tags=["turn"], limit=100) if m.metadata.get("session_id")]  # captured here
    finally:
        svc.close()


def wait_for(pred: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not reached in time")


@pytest.fixture
def seeded(home: Path, tmp_path: Path) -> Iterator[tuple[Served, Path, Path]]:
    """A store with memories of two projects and global ones, served warm."""
    alpha, beta = project_dir(tmp_path, "alpha"), project_dir(tmp_path, "beta")
    svc = MemoryService.open(load_config(home))
    svc.remember("The billing service uses PostgreSQL 16 for JSONB support", tags=["decision"], importance=0.9,
                 project="alpha")
    svc.remember("alpha deploys run through GitHub Actions when a v* tag is pushed", project="alpha")
    svc.remember("beta uses Redis only as a cache for session tokens", project="beta", importance=0.8)
    svc.remember("Always answer in British English", importance=0.7, project=None)
    svc.remember("User: what broke?\nAssistant: BETA-TURN-MARKER the cron job", project="beta", tags=["turn"],
                 importance=0.9, scope="agent:claude-code", source="hook:stop")
    for i in range(30):
        svc.remember(f"beta filler note number {i} about unrelated topic {i * 7}", project="beta", importance=0.1)
    svc.close()
    srv = serve(home)
    try:
        yield srv, alpha, beta
    finally:
        srv.stop()
        kill_spawned(home)


# --------------------------------------------------------------------------- SessionStart
def test_session_start_digest_ranks_this_project_first(seeded: tuple[Served, Path, Path]) -> None:
    srv, alpha, _ = seeded
    h = run_hook("SessionStart", payload("SessionStart", "s1", alpha, source="startup"), srv.env)
    assert h.rc == 0 and h.err == ""
    out = json.loads(h.out)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    ctx = h.context
    assert ctx.startswith("<memcli-memories") and ctx.endswith("</memcli-memories>")
    assert len(ctx) <= 6000
    mine = ctx.index("## This project (alpha)")
    other = ctx.index("## Other projects and global")
    assert mine < ctx.index("PostgreSQL 16") < other  # this project's memories first
    assert ctx.index("Redis only as a cache") > other and "British English" in ctx  # others still shown
    assert "#decision" in ctx and "global" in ctx and "just now" in ctx
    assert "BETA-TURN-MARKER" not in ctx  # another project's captured turns stay out of the digest
    # the most important of the other project before its unimportant filler
    assert ctx.index("Redis only as a cache") < ctx.index("filler note") if "filler note" in ctx else True


def test_session_start_budget_is_respected(home: Path, tmp_path: Path) -> None:
    svc = MemoryService.open(load_config(home))
    svc.remember_many([__import__("memcli.memory.service", fromlist=["NewMemory"]).NewMemory(
        content=f"long memory {i} " + "word " * 300, project="alpha") for i in range(40)])
    svc.close()
    (home / "config.toml").write_text("[hooks]\nsession_start_budget = 2500\n")
    srv = serve(home)
    try:
        h = run_hook("SessionStart", payload("SessionStart", "s", project_dir(tmp_path, "alpha"), source="clear"),
                     srv.env)
        assert h.rc == 0 and 500 < len(h.context) <= 2500
        assert h.context.count("\n- [") >= 2
    finally:
        srv.stop()


# --------------------------------------------------------------------------- UserPromptSubmit
def test_prompt_injects_relevant_memories_once_per_session(seeded: tuple[Served, Path, Path]) -> None:
    srv, alpha, _ = seeded
    p = payload("UserPromptSubmit", "s2", alpha, prompt="which database does the billing service use?")
    h = run_hook("UserPromptSubmit", p, srv.env)
    assert h.rc == 0 and h.err == ""
    assert "PostgreSQL 16" in h.context and h.context.startswith("<memcli-memories")
    assert "filler" not in h.context
    assert len(h.context) <= 3000
    again = run_hook("UserPromptSubmit", p, srv.env)
    assert again.rc == 0 and again.out == ""  # already injected in this session
    other = run_hook("UserPromptSubmit", {**p, "session_id": "s3"}, srv.env)
    assert "PostgreSQL 16" in other.context


def test_session_start_then_prompt_does_not_repeat(seeded: tuple[Served, Path, Path]) -> None:
    srv, alpha, _ = seeded
    run_hook("SessionStart", payload("SessionStart", "s4", alpha, source="startup"), srv.env)
    h = run_hook("UserPromptSubmit", payload("UserPromptSubmit", "s4", alpha,
                                             prompt="which database does the billing service use?"), srv.env)
    assert "PostgreSQL 16" not in h.context
    # after /clear the context is new: the digest shows it again and so may the prompt hook
    h = run_hook("SessionStart", payload("SessionStart", "s4", alpha, source="clear"), srv.env)
    assert "PostgreSQL 16" in h.context


@pytest.mark.parametrize("prompt", ["ok", "continue", "yes please", "thanks!", "继续", "好的"])
def test_trivial_prompts_inject_nothing(seeded: tuple[Served, Path, Path], prompt: str) -> None:
    srv, alpha, _ = seeded
    h = run_hook("UserPromptSubmit", payload("UserPromptSubmit", "s5", alpha, prompt=prompt), srv.env)
    assert h.rc == 0 and h.out == "" and h.err == ""


def test_unrelated_prompt_injects_nothing(seeded: tuple[Served, Path, Path]) -> None:
    srv, alpha, _ = seeded
    h = run_hook("UserPromptSubmit", payload("UserPromptSubmit", "s6", alpha,
                                             prompt="write a haiku about autumn leaves falling"), srv.env)
    assert h.rc == 0 and h.out == ""


# --------------------------------------------------------------------------- Stop
def test_stop_captures_the_turn_redacted_without_injected_blocks_and_next_session_recalls_it(
        seeded: tuple[Served, Path, Path]) -> None:
    srv, alpha, _ = seeded
    prompt = "why does the nightly reconciliation job crash with error RECON-7731?"
    h = run_hook("UserPromptSubmit", payload("UserPromptSubmit", "cap1", alpha, prompt=prompt), srv.env)
    assert h.rc == 0
    reply = ("The nightly reconciliation job crashes with RECON-7731 because the ledger export times out "
             "after 30 seconds. I raised the export timeout to 120 seconds in jobs/reconcile.py. "
             "<memcli-memories event=\"UserPromptSubmit\">\n- [deadbeef] INJECTED-MARKER billing memory\n"
             "</memcli-memories>\nFor the record, here is what I found in the env file:\n" + _secret_text())
    h = run_hook("Stop", payload("Stop", "cap1", alpha, stop_hook_active=False, last_assistant_message=reply),
                 srv.env)
    assert h.rc == 0 and h.out == "" and h.err == ""
    (mem,) = wait_for(lambda: turns(srv.home))
    assert mem.scope == "agent:claude-code" and mem.tags == ["turn"] and mem.source == "hook:stop"
    assert mem.project == "alpha" and mem.metadata["session_id"] == "cap1"
    assert mem.content.startswith(f"User: {prompt}")
    assert "RECON-7731 because the ledger export times out" in mem.content
    assert "INJECTED-MARKER" not in mem.content and "deadbeef" not in mem.content
    for value in SECRETS.values():
        for piece in value.replace("Bearer ", "").split("\n"):
            if len(piece) > 8:
                assert piece not in mem.content
    # the same turn again (a retry) is not stored twice
    run_hook("Stop", payload("Stop", "cap1", alpha, stop_hook_active=False, last_assistant_message=reply,
                             prompt=prompt), srv.env)
    time.sleep(1.5)
    assert len(turns(srv.home)) == 1
    # the next session, on another prompt about the same thing, is reminded of it
    h = run_hook("UserPromptSubmit", payload("UserPromptSubmit", "next-session", alpha,
                                             prompt="the reconciliation job RECON-7731 crashed again tonight"),
                 srv.env)
    assert "ledger export times out" in h.context and mem.id.replace("-", "")[-8:] in h.context


def test_stop_falls_back_to_the_transcript(seeded: tuple[Served, Path, Path]) -> None:
    srv, alpha, _ = seeded
    tr = alpha / "transcript.jsonl"
    recs = transcript_records("how do we rotate the staging TLS certificate?",
                              "Rotate the staging TLS certificate with `make rotate-cert ENV=staging`; the job "
                              "uploads it to the load balancer and restarts nginx.")
    tr.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in recs) + "\n")
    h = run_hook("Stop", payload("Stop", "tr1", alpha, stop_hook_active=False), srv.env)
    assert h.rc == 0
    (mem,) = wait_for(lambda: turns(srv.home))
    assert "User: how do we rotate the staging TLS certificate?" in mem.content
    assert "make rotate-cert ENV=staging" in mem.content


@pytest.mark.parametrize("extra", [
    {"stop_hook_active": True, "last_assistant_message": "A long and useful answer about the build " * 5},
    {"agent_id": "agent-1", "agent_type": "Explore", "last_assistant_message": "Subagent findings " * 20},
    {"prompt": "thanks!", "last_assistant_message": "You're welcome!"},
    {"prompt": "ok", "last_assistant_message": "Done."},
])
def test_stop_skips(seeded: tuple[Served, Path, Path], extra: dict[str, Any]) -> None:
    srv, alpha, _ = seeded
    h = run_hook("Stop", payload("Stop", "skip", alpha, **{"stop_hook_active": False, **extra}), srv.env)
    assert h.rc == 0 and h.out == ""
    time.sleep(1.0)
    assert wait_for(lambda: not list((srv.home / "spool").glob("*.json")))
    assert turns(srv.home) == []


def test_subagent_turns_captured_when_configured(home: Path, tmp_path: Path) -> None:
    (home).mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[hooks]\ncapture_subagents = true\n")
    srv = serve(home)
    try:
        cwd = project_dir(tmp_path, "alpha")
        run_hook("Stop", payload("Stop", "sub", cwd, stop_hook_active=False, agent_id="a1", agent_type="Explore",
                                 prompt="find where the retry policy lives",
                                 last_assistant_message="The retry policy lives in net/retry.py: 5 attempts, "
                                                        "exponential backoff from 200 ms."), srv.env)
        (mem,) = wait_for(lambda: turns(home))
        assert mem.metadata.get("agent_type") == "Explore"
    finally:
        srv.stop()


def test_stop_with_the_server_down_is_spooled_and_stored_later(home: Path, tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "MEMCLI_HOME": str(home), "MEMCLI_PORT": str(port), "MEMCLI_HOOK_IDLE_TIMEOUT": "60"}
    cwd = project_dir(tmp_path, "alpha")
    try:
        h = run_hook("Stop", payload("Stop", "down", cwd, stop_hook_active=False,
                                     prompt="what port does the metrics exporter listen on?",
                                     last_assistant_message="The metrics exporter listens on port 9464 "
                                                            "(OTEL_EXPORTER_PROMETHEUS_PORT)."), env)
        assert h.rc == 0 and h.out == "" and h.seconds < 5
        assert (home / "hooks-state" / "server.pid").exists()  # the client started the server
        (mem,) = wait_for(lambda: turns(home), timeout=90)
        assert "port 9464" in mem.content
        assert wait_for(lambda: not list((home / "spool").glob("*.json")))
        wait_health(port, home)
        # the server it started now answers the next hooks
        h = run_hook("UserPromptSubmit", payload("UserPromptSubmit", "later", cwd,
                                                 prompt="which port does the metrics exporter listen on?"), env)
        assert "9464" in h.context
    finally:
        kill_spawned(home)


# --------------------------------------------------------------------------- failure modes: exit 0, silent, quick
class _Answer500(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b'{"hookSpecificOutput": "should never be printed"}'
        self.send_response(500)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST  # noqa: N815

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize("mode", ["broken-json", "not-an-object", "empty-stdin", "no-server-no-store",
                                  "corrupt-store", "server-500", "unreachable-port", "unknown-event"])
@pytest.mark.parametrize("event", ["UserPromptSubmit", "SessionStart", "Stop"])
def test_failure_modes_exit_0_silently_within_the_deadline(home: Path, tmp_path: Path, mode: str,
                                                           event: str) -> None:
    deadline_ms = 800
    port = free_port()
    env = {**os.environ, "MEMCLI_HOME": str(home), "MEMCLI_PORT": str(port),
           "MEMCLI_HOOK_DEADLINE_MS": str(deadline_ms), "MEMCLI_HOOK_IDLE_TIMEOUT": "20"}
    cwd = project_dir(tmp_path, "alpha")
    p = payload(event, "f", cwd, prompt="which database does billing use?", stop_hook_active=False,
                last_assistant_message="Billing uses PostgreSQL 16 because of JSONB support.", source="startup")
    raw = None
    cleanup: list[Any] = []
    if mode == "broken-json":
        raw = b'{"session_id": "f", "prompt": "unterminated'
    elif mode == "not-an-object":
        raw = b'["a", "list"]'
    elif mode == "empty-stdin":
        raw = b""
    elif mode == "corrupt-store":
        (home / "data").mkdir(parents=True)
        (home / "data" / "memcli_meta.lance").write_text("this is not a lance dataset")
        (home / "data" / "memories.lance").mkdir()
        (home / "data" / "memories.lance" / "_versions").write_text("garbage")
        srv = serve(home, ready=False)
        cleanup.append(srv.stop)
        env["MEMCLI_PORT"] = str(srv.port)
    elif mode == "server-500":
        load_or_create_auth(home)  # a home whose server has run: the client asks MEMCLI_PORT, with its id
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer500)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        cleanup.append(httpd.shutdown)
        env["MEMCLI_PORT"] = str(httpd.server_address[1])
    elif mode == "unreachable-port":
        # accepts connections (the kernel's backlog) but never answers
        load_or_create_auth(home)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        cleanup.append(sock.close)
        env["MEMCLI_PORT"] = str(sock.getsockname()[1])
    try:
        if mode == "unknown-event":
            h = run_hook("PreCompact", p, env)
        else:
            h = run_hook(event, p, env, raw=raw)
        assert h.rc == 0
        assert h.out == "" and h.err == ""
        limit = client.event_deadline_ms(event, deadline_ms)  # SessionStart: 8 s (a cold server is worth it)
        assert h.seconds < limit / 1000 + 2.0, h.seconds  # the deadline plus interpreter start on a busy box
        log = (home / "logs" / "hooks.log").read_text() if (home / "logs" / "hooks.log").exists() else ""
        if mode in ("broken-json", "not-an-object", "empty-stdin", "unknown-event", "server-500",
                    "unreachable-port"):
            assert log.strip(), "every failure leaves a line in hooks.log"
        if event == "Stop" and mode in ("server-500", "unreachable-port", "no-server-no-store"):
            assert list((home / "spool").glob("*.json")), "the turn is queued, not lost"
    finally:
        for fn in cleanup:
            fn()
        kill_spawned(home)


def test_hook_routes_reject_bad_requests(seeded: tuple[Served, Path, Path]) -> None:
    srv, _, _ = seeded
    base = f"http://127.0.0.1:{srv.port}"
    h = auth_headers(srv.home)
    assert httpx.post(base + "/hooks/Nope", content=b"{}", headers=h).status_code == 404
    assert httpx.post(base + "/hooks/UserPromptSubmit", content=b"{nope", headers=h).status_code == 400
    assert httpx.post(base + "/hooks/SessionEnd", json={"session_id": "x", "reason": "exit"},
                      headers=h).status_code == 204
    assert httpx.post(base + "/hooks/Stop", json={"session_id": "x", "stop_hook_active": True},
                      headers=h).status_code == 202


def test_session_end_is_quick_and_silent(seeded: tuple[Served, Path, Path]) -> None:
    srv, alpha, _ = seeded
    h = run_hook("SessionEnd", payload("SessionEnd", "e", alpha, reason="exit"), srv.env)
    assert h.rc == 0 and h.out == "" and h.seconds < 1.5


def test_memcli_hook_command(home: Path, tmp_path: Path) -> None:
    svc = MemoryService.open(load_config(home))
    svc.remember("The billing service uses PostgreSQL 16 for JSONB support")
    svc.close()
    env = {**os.environ, "MEMCLI_HOME": str(home)}
    p = subprocess.run([str(BIN / "memcli"), "hook", "UserPromptSubmit", "--prompt",
                        "which database does the billing service use?"], env=env, capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=120)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["event"] == "UserPromptSubmit" and "PostgreSQL 16" in json.dumps(report["output"])
    p = subprocess.run([str(BIN / "memcli"), "hook", "stop", "--prompt", "what did we decide about caching?",
                        "--reply", "We decided to cache session tokens in Redis with a 15 minute TTL."],
                       env=env, capture_output=True, text=True, cwd=str(tmp_path), timeout=120)
    assert p.returncode == 0, p.stderr
    (cap,) = json.loads(p.stdout)["captures"]
    assert cap["status"] == "stored" and "Redis with a 15 minute TTL" in cap["content"]


def test_plugin_launcher_end_to_end(seeded: tuple[Served, Path, Path], tmp_path: Path) -> None:
    """`sh hooks/run.sh <Event>` as hooks.json runs it: finds the Python, takes the fast path, injects."""
    srv, alpha, _ = seeded
    root = Path(__file__).resolve().parents[1]
    env = {**srv.env, "CLAUDE_PLUGIN_DATA": str(tmp_path / "plugin-data"), "MEMCLI_PYTHON": sys.executable}
    p = subprocess.run(["sh", str(root / "hooks" / "run.sh"), "UserPromptSubmit"], env=env, capture_output=True,
                       input=json.dumps(payload("UserPromptSubmit", "launch", alpha,
                                                prompt="which database does the billing service use?")).encode(),
                       timeout=60)
    assert p.returncode == 0 and p.stderr == b""
    assert "PostgreSQL 16" in json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
    py, client_path = (tmp_path / "plugin-data" / "python").read_text().splitlines()
    assert py == sys.executable and client_path.endswith("hooks/client.py")


@pytest.mark.parametrize("via", ["launcher", "client"])
def test_stop_survives_the_signal_claude_code_sends_on_exit(seeded: tuple[Served, Path, Path], tmp_path: Path,
                                                            via: str) -> None:
    """`claude -p` signals its async Stop hook as it exits (seen with Claude Code 2.1): the turn still lands."""
    srv, alpha, _ = seeded
    root = Path(__file__).resolve().parents[1]
    cmd = (["sh", str(root / "hooks" / "run.sh"), "Stop"] if via == "launcher"
           else [sys.executable, "-m", "memcli.hooks", "Stop"])
    env = {**srv.env, "CLAUDE_PLUGIN_DATA": str(tmp_path / "plugin-data"), "MEMCLI_PYTHON": sys.executable}
    p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdin is not None
    p.stdin.write(json.dumps(payload("Stop", "sig", alpha, stop_hook_active=False,
                                     prompt="which queue does the mailer use?",
                                     last_assistant_message="The mailer consumes the `outbound-mail` queue on "
                                                            "RabbitMQ; retries go to `outbound-mail.dlq`.")).encode())
    p.stdin.close()
    time.sleep(0.15 if via == "client" else 0.03)  # the client installs its handler once Python has started
    p.send_signal(signal.SIGTERM)
    assert p.wait(30) == 0
    (mem,) = wait_for(lambda: turns(srv.home))
    assert "outbound-mail" in mem.content


def test_hooks_send_the_servers_token(home: Path, tmp_path: Path) -> None:
    """A server with a bearer token (team use): the hook reads it from the config; a wrong one is refused
    quietly."""
    svc = MemoryService.open(load_config(home))
    svc.remember("The billing service uses PostgreSQL 16 for JSONB support")
    svc.close()
    (home / "config.toml").write_text('[server]\ntoken = "s3cret-team-token"\n')
    srv = serve(home, token="s3cret-team-token")
    try:
        p = payload("UserPromptSubmit", "tok", project_dir(tmp_path, "alpha"),
                    prompt="which database does the billing service use?")
        assert "PostgreSQL 16" in run_hook("UserPromptSubmit", p, srv.env).context
        wrong = run_hook("UserPromptSubmit", {**p, "session_id": "tok2"}, {**srv.env, "MEMCLI_TOKEN": "nope"})
        # the server refuses the wrong token; the hook then treats it as not its own and may start a server of
        # its own with the token it was given (in time to answer, on a quick machine): quiet either way
        assert wrong.rc == 0 and wrong.err == ""
        assert "HTTP 401" in (home / "logs" / "hooks.log").read_text()
    finally:
        srv.stop()
        kill_spawned(home)
        kill_spawned(home)  # the refused hook started a server of its own (with its token)


def test_a_pasted_log_of_a_few_hundred_characters_is_searched_whole_through_the_launcher(
        seeded: tuple[Served, Path, Path], tmp_path: Path) -> None:
    """The lines a developer pastes often name what the memory holds while the question does not: a prompt of up
    to 600 characters is the query as it is (through `hooks/run.sh`, as Claude Code runs the hook)."""
    srv, _, beta = seeded
    root = Path(__file__).resolve().parents[1]
    # (the hash test embedder's evidence is the words: a line number each, not a new timestamp each)
    log = "\n".join(f"    [{i}] WARN beta-api redis cache miss for session tokens, refetching from the store"
                    for i in range(1, 6))
    prompt = f"is this expected?\n\n{log}\n\nit keeps happening since the deploy."
    assert 280 < len(prompt) < 600
    env = {**srv.env, "CLAUDE_PLUGIN_DATA": str(tmp_path / "plugin-data"), "MEMCLI_PYTHON": sys.executable}
    p = subprocess.run(["sh", str(root / "hooks" / "run.sh"), "UserPromptSubmit"], env=env, capture_output=True,
                       input=json.dumps(payload("UserPromptSubmit", "pasted", beta, prompt=prompt)).encode(),
                       timeout=60)
    assert p.returncode == 0 and p.stderr == b""
    assert "Redis only as a cache" in json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
