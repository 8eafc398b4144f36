"""memcli's memory plugin in a real OpenClaw (issue 20), end to end, as a user sets it up and uses it.

Node 26 and openclaw 2026.9.6 come from npm into a cache folder (tests/_openclaw.py; skipped with the reason
when npm is unreachable); the model is a local stand-in for an OpenAI-compatible API that records every
request (tests/_fake_openai.py). In order, sharing one OpenClaw state and one memcli home (a turn costs
30–80 s here, so there are only two):

1. `memcli setup --yes --agents openclaw` installs the plugin with OpenClaw's CLI (slot, conversation access,
   config); a second run changes nothing; `openclaw plugins inspect` sees its hooks and tools.
2. A fact remembered with `memcli remember` reaches the model's request in an OpenClaw turn; the model calls
   memcli_recall through OpenClaw's tool_call and gets memcli's answer; the decision stated in the turn is
   captured as agent:openclaw, found by `memcli recall` and injected into Claude Code's prompt hook (run.sh).
3. `openclaw memcli status` and `openclaw memcli search` answer from the same memory.
4. memcli's server stopped: the turn still completes (nothing injected within the deadline), the plugin starts
   the server again, and the turn is kept.
5. `memcli setup --uninstall --yes` leaves openclaw.json byte for byte as it was before setup.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _fake_openai import FakeOpenAI, Reply, ToolCall, system_text, text_of
from _memcli_server import MEMCLI, ServerProc, free_port
from _openclaw import OpenClaw, Unavailable, agent_config, install

pytestmark = [pytest.mark.openclaw, pytest.mark.slow, pytest.mark.timeout(3000)]

ROOT = Path(__file__).resolve().parents[1]
FACT = "The billing service stores its invoices in PostgreSQL 16 on db-billing-01."
OTHERS = ("Deploys of the web frontend go through the blue-green script deploy/bg.sh.",
          "The team prefers short pull requests, reviewed within a day.",
          "Grafana dashboards live in the ops repository under dashboards/.")
PROMPT_1 = ("We decided to route all billing events through the Zephyr queue from now on. "
            "Also, which database stores the invoices of the billing service?")
REPLY_1 = ("Noted: from now on all billing events go through the Zephyr queue. The invoices of the billing "
           "service are stored in PostgreSQL 16 on db-billing-01, according to memcli.")
PROMPT_2 = "We agreed to move the nightly export job from 02:00 to 04:30 UTC, after the backup window."
REPLY_2 = ("Understood: the nightly export job now runs at 04:30 UTC, once the backup window has closed; "
           "I will update the cron entry and the runbook accordingly.")
INTERNAL = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"


def stand_in(messages: list[dict[str, Any]]) -> Reply:
    """The stand-in model: turn 1 asks memcli_recall through OpenClaw's tool_call, then answers; turn 2 answers."""
    real = [i for i, m in enumerate(messages) if m.get("role") == "user" and not text_of(m).startswith(INTERNAL)]
    prompt = text_of(messages[real[-1]]) if real else ""
    tool_done = any(m.get("role") == "tool" for m in messages[real[-1]:]) if real else False
    if "Zephyr" in prompt:
        if tool_done:
            return REPLY_1
        return ToolCall("tool_call", {"id": "memcli_recall", "args": {"query": "which database stores billing invoices",
                                                                       "top_k": 3}})
    if "nightly export" in prompt:
        return REPLY_2
    return "I have nothing to add to that."


@dataclass
class World:
    oc: OpenClaw
    fake: FakeOpenAI
    memcli_home: Path
    original: str  # openclaw.json before memcli setup, byte for byte
    after_setup: str = ""
    server: ServerProc | None = None
    times: dict[str, float] = field(default_factory=dict)

    def memcli_env(self) -> dict[str, str]:
        env = self.oc.env()
        env.update(MEMCLI_HOME=str(self.memcli_home), PATH=self.oc.inst.path_env(str(Path(MEMCLI).parent)))
        return env

    def memcli(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
        p = subprocess.run([MEMCLI, *args], env=self.memcli_env(), capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL, cwd=str(self.oc.workspace))
        if check and p.returncode != 0:
            raise AssertionError(f"memcli {' '.join(args)} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        return p

    def requests_for(self, marker: str) -> list[dict[str, Any]]:
        return [r for r in self.fake.requests if any(marker in text_of(m) for m in r.get("messages", [])
                                                     if m.get("role") == "user")]

    def hooks_log(self) -> str:
        p = self.memcli_home / "logs" / "hooks.log"
        return p.read_text(encoding="utf-8") if p.exists() else ""


def wait_for(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    end = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(1.0)


def stop_pid(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(300):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


def serve(world: World) -> ServerProc:
    """`memcli serve` of the home, detached as the hooks start it; waits (generously: 2 busy cores) until ready."""
    port = free_port()
    log = world.memcli_home.parent / f"serve-{port}.log"
    world.memcli_home.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as fh:
        proc = subprocess.Popen([MEMCLI, "serve", "--port", str(port), "--idle-timeout", "1800"],
                                env=world.memcli_env(), stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    srv = ServerProc(proc, port, world.memcli_home, log)

    def ready() -> bool:
        assert proc.poll() is None, log.read_text()
        try:
            return bool(srv.client(timeout=2).get("/health").json().get("ready"))
        except Exception:  # noqa: BLE001 - not listening yet, auth.json not written yet
            return False

    wait_for(ready, 180, "memcli serve")
    return srv


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    t0 = time.monotonic()
    try:
        inst = install()
    except Unavailable as exc:
        pytest.skip(f"no OpenClaw: {exc}")
    root = tmp_path_factory.mktemp("openclaw-e2e")
    fake = FakeOpenAI(stand_in).start()
    oc = OpenClaw(inst, root)
    doc = agent_config(oc.workspace, fake.provider_config())
    doc["plugins"] = {"slots": {"memory": "memory-core"}}  # the slot's owner before memcli, to be restored
    w = World(oc, fake, root / "memcli-home", oc.write_config(doc))
    w.times["install (cached)"] = time.monotonic() - t0
    yield w
    fake.stop()
    if w.server is not None and w.server.proc.poll() is None:
        w.server.stop()
    sj = w.memcli_home / "server.json"
    if sj.exists():  # a server the plugin started
        stop_pid(int(json.loads(sj.read_text())["pid"]))
    print("\nOpenClaw e2e wall times:", ", ".join(f"{k} {v:.0f}s" for k, v in w.times.items()))


def test_setup_installs_the_plugin_once(world: World) -> None:
    t0 = time.monotonic()
    p = world.memcli("setup", "--yes", "--agents", "openclaw")
    out = " ".join((p.stdout + p.stderr).split())  # rich wraps long lines
    assert "plugins install --link" in out and "--accept-capabilities" in out, out
    assert "memory slot" in out, out  # what will change is shown before it is applied
    doc = json.loads(world.oc.config.read_text())
    assert doc["plugins"]["slots"]["memory"] == "memcli"
    entry = doc["plugins"]["entries"]["memcli"]
    assert entry["enabled"] is True and entry["hooks"]["allowConversationAccess"] is True
    assert entry["config"] == {"command": [MEMCLI], "home": str(world.memcli_home)}
    assert str(ROOT / "openclaw") in doc["plugins"]["load"]["paths"]
    world.after_setup = world.oc.config.read_text()

    again = world.memcli("setup", "--yes", "--agents", "openclaw")
    again_out = " ".join(again.stdout.split())
    assert "installed already" in again_out and "plugins install" not in again_out, again_out
    assert world.oc.config.read_text() == world.after_setup  # idempotent: not a byte changed

    inspect = json.loads(world.oc.run("plugins", "inspect", "memcli", "--runtime", "--json").stdout)
    hooks = {h["name"] for h in inspect["typedHooks"]}
    assert {"before_prompt_build", "agent_end"} <= hooks
    tools = {n for t in inspect["tools"] for n in t["names"]}
    assert tools == {"memcli_recall", "memcli_remember", "memcli_get", "memcli_update", "memcli_forget"}
    assert inspect["policy"]["allowConversationAccess"] is True
    assert "memcli" in inspect["cliCommands"]
    world.times["setup x2 + inspect"] = time.monotonic() - t0


def test_a_fact_reaches_the_model_and_the_decision_reaches_claude_code(world: World, tmp_path: Path) -> None:
    assert world.after_setup, "setup did not run"
    # a short digest (a setting of memcli's), so that the fact reaches the model through the prompt's own recall
    # (UserPromptSubmit), not through the session's first digest, which shows the more important memories
    (world.memcli_home / "config.toml").write_text("[hooks]\nsession_start_budget = 700\n")
    world.memcli("remember", FACT)
    for text in OTHERS:
        world.memcli("remember", text, "--importance", "0.9")
    # the home's warm server, as the hooks leave it running (the plugin's cold start is tests/js/failure.test.mjs)
    world.server = serve(world)
    world.memcli("recall", "warm up the embedder", "--json")  # through the server: its model is loaded

    p, seconds = world.oc.turn(PROMPT_1)
    world.times["turn 1"] = seconds
    assert p.returncode == 0, p.stderr[-4000:]
    assert "Zephyr queue" in p.stdout and "db-billing-01" in p.stdout

    first, *rest = world.requests_for("Zephyr")
    user = [text_of(m) for m in first["messages"] if m.get("role") == "user" and "Zephyr" in text_of(m)][0]
    digest, _, rest_of_user = user.partition('<memcli-memories event="UserPromptSubmit"')
    assert '<memcli-memories event="SessionStart"' in digest and FACT not in digest, user[:3000]
    assert FACT in rest_of_user.split("</memcli-memories>")[0], user[:3000]  # `memcli remember` → the prompt's recall
    assert user.index("</memcli-memories>", len(digest)) < user.index("We decided")  # in front of the user's message
    assert "## Memory (memcli)" in system_text(first["messages"])
    tool_results = [text_of(m) for r in rest for m in r["messages"] if m.get("role") == "tool"]
    assert any("db-billing-01" in t and "memory_id" in t for t in tool_results), tool_results  # memcli_recall ran

    def captured() -> dict[str, Any] | None:
        r = world.memcli("recall", "Zephyr queue for billing events", "--json", check=False)
        hits = json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else []
        return next((h for h in hits if h["scope"] == "agent:openclaw" and "turn" in h["tags"]), None)

    hit = wait_for(captured, 120, "the OpenClaw turn in `memcli recall`")
    assert "Zephyr" in hit["content"] and "<memcli-memories" not in hit["content"]

    env = {**world.memcli_env(), "CLAUDE_PLUGIN_DATA": str(tmp_path / "claude-plugin-data"), "MEMCLI_PYTHON": sys.executable}
    payload = {"session_id": "claude-1", "cwd": str(world.oc.workspace), "hook_event_name": "UserPromptSubmit",
               "transcript_path": "", "prompt": "Which queue do the billing events go through now?"}
    cc = subprocess.run(["sh", str(ROOT / "hooks" / "run.sh"), "UserPromptSubmit"], env=env, input=json.dumps(payload),
                        capture_output=True, text=True, timeout=120)
    assert cc.returncode == 0 and cc.stdout.strip(), cc.stderr
    injected = json.loads(cc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Zephyr" in injected and "agent:openclaw" in injected, injected


def test_openclaw_memcli_commands(world: World) -> None:
    assert world.server is not None, "the turn test did not run"
    t0 = time.monotonic()
    status = json.loads(world.oc.run("memcli", "status", "--json").stdout)
    assert status["ok"] is True and status["mode"] == "local" and status["home"] == str(world.memcli_home)
    assert status["server"]["proven"] is True and status["stats"]["total"] >= 5
    found = world.oc.run("memcli", "search", "which", "database", "stores", "the", "invoices", "--json")
    hits = json.loads(found.stdout)
    assert FACT in [h["content"] for h in hits[:3]], hits  # (the captured turn asked the same question)
    world.times["openclaw memcli status + search"] = time.monotonic() - t0


def test_the_turn_completes_with_memcli_stopped(world: World) -> None:
    assert world.server is not None, "the turn test did not run"
    world.server.stop()
    p, seconds = world.oc.turn(PROMPT_2)
    world.times["turn 2 (memcli stopped)"] = seconds
    assert p.returncode == 0, p.stderr[-4000:]
    assert "04:30 UTC" in p.stdout
    (req, *_) = world.requests_for("nightly export")
    user = [text_of(m) for m in req["messages"] if m.get("role") == "user" and "nightly export" in text_of(m)][0]
    assert "<memcli-memories" not in user  # nothing could be recalled in time, and nothing broke
    log = world.hooks_log()
    assert "UserPromptSubmit: no answer within" in log or "no server of this home yet" in log, log[-2000:]
    assert "started the server" in log, log[-2000:]

    # the next hook of any agent reaches the server the plugin started (a turn queued while it was starting is
    # stored then); here Claude Code's prompt hook
    nudge = {"session_id": "claude-2", "cwd": str(world.oc.workspace), "hook_event_name": "UserPromptSubmit",
             "transcript_path": "", "prompt": "Is there anything about the grafana dashboards?"}
    env = {**world.memcli_env(), "MEMCLI_PYTHON": sys.executable,
           "CLAUDE_PLUGIN_DATA": str(world.memcli_home.parent / "claude-plugin-data")}
    wait_for(lambda: (world.memcli_home / "server.json").exists(), 120, "the server the plugin started")
    subprocess.run(["sh", str(ROOT / "hooks" / "run.sh"), "UserPromptSubmit"], env=env, input=json.dumps(nudge),
                   capture_output=True, text=True, timeout=120)

    def kept() -> bool:  # the plugin started the home's server again; the turn is not lost
        r = world.memcli("recall", "nightly export job schedule", "--json", check=False)
        return r.returncode == 0 and any("04:30" in h["content"] and h["scope"] == "agent:openclaw"
                                         for h in json.loads(r.stdout or "[]"))

    wait_for(kept, 180, "the turn taken while memcli was stopped")


def test_uninstall_restores_openclaw_json_byte_for_byte(world: World) -> None:
    assert world.after_setup, "setup did not run"
    t0 = time.monotonic()
    p = world.memcli("setup", "--uninstall", "--yes")
    assert "plugins uninstall memcli" in " ".join(p.stdout.split()), p.stdout
    assert world.oc.config.read_bytes() == world.original.encode("utf-8")
    state = world.memcli_home / "setup-state.json"
    assert not state.exists() or "openclaw" not in state.read_text()
    assert (ROOT / "openclaw" / "index.js").is_file()  # OpenClaw's uninstall kept memcli's files
    world.times["uninstall"] = time.monotonic() - t0
