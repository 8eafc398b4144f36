"""memcli with the real agent clients (marker ``clients``, opt-in: ``pytest -m clients``), offline.

Codex CLI, Gemini CLI, Claude Code and the MCP Inspector's CLI come from npm into a cache folder
(tests/_clients.py; skipped with the reason when npm is unreachable). Every client runs with HOME in a temporary
directory and talks to a stand-in model on 127.0.0.1 (tests/_standin_model.py) that calls memcli's tools as a
real model would. One memcli home (the default one of that HOME, the hash embedder) and its warm `memcli serve`.

1. `memcli setup --yes --agents codex,gemini,claude-code` connects all three: `codex mcp list`, `gemini mcp list`
   and `claude mcp list` report memcli, each client's model is offered memcli's tools.
2. Codex's model calls `remember`; Gemini's model calls `recall` and is answered with what Codex wrote.
3. Claude Code's UserPromptSubmit hook (the plugin's hooks/run.sh, `claude -p --plugin-dir`) injects it into
   the prompt Claude Code sends to its model.
4. The Inspector's CLI lists memcli's tools and calls `recall` over stdio, Streamable HTTP and (once `memcli
   serve` offers it) SSE.

Codex's turn reaches memcli over HTTP (`codex mcp add --url`, the warm server): over stdio Codex sends its first
model request before a slowly starting `memcli mcp` has listed its tools (0 of 8 runs had them on the busy 2-core
machine this was written on); :func:`test_codex_over_stdio_sees_the_tools` records that case.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from _clients import Clients, Unavailable, install
from _memcli_server import MEMCLI, ServerProc, start_server
from _standin_model import MODEL, Plan, StandIn, memcli_tool

pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.timeout(2400)]

ROOT = Path(__file__).resolve().parents[1]
RUN = uuid.uuid4().hex[:6]  # in every fact: a store holds nothing of an earlier run's
FACT = (f"The staging cluster's ingress certificate is renewed by cert-manager every 60 days; the renewal job "
        f"runs at 03:00 UTC (ref OPS-{RUN}).")
CODEX_TURN = "[turn codex-remember]"
GEMINI_TURN = "[turn gemini-recall]"
CODEX_STDIO_TURN = "[turn codex-stdio-recall]"
TOOLS = {"remember", "recall", "list_facts", "check_duplicate", "get", "update", "forget"}
TOKEN_VAR = "MEMCLI_TOKEN_FOR_CODEX"
# more important than Codex's fact, so that a session's first digest (700 characters) holds these and not it:
# Codex's fact then reaches Claude Code through the prompt's own recall (UserPromptSubmit)
OTHERS = ("Deploys of the web frontend go through the blue-green script deploy/bg.sh.",
          "The team prefers short pull requests, reviewed within a day.",
          "Grafana dashboards live in the ops repository under dashboards/.")
CONFIG = '[embedder]\nprovider = "hash"\n\n[hooks]\nsession_start_budget = 700\n'


@dataclass
class World:
    clients: Clients
    root: Path
    standin: StandIn
    server: ServerProc | None = None
    times: dict[str, float] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)  # `mcp list` runs until memcli was connected

    @property
    def home(self) -> Path:
        return self.root / "user-home"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def memcli_home(self) -> Path:
        return self.home / ".local" / "share" / "memcli"  # platformdirs' default under this HOME

    def env(self, **more: str) -> dict[str, str]:
        drop = ("MEMCLI_", "XDG_", "CODEX_", "GEMINI_", "GOOGLE_", "ANTHROPIC_", "CLAUDE", "OPENAI_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        env.update(HOME=str(self.home), NO_COLOR="1", DO_NOT_TRACK="1", DISABLE_AUTOUPDATER="1",
                   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", MEMCLI_AUTOSTART="0",
                   PATH=os.pathsep.join([str(self.clients.bin), str(Path(MEMCLI).parent), os.environ.get("PATH", "")]))
        env.update(more)
        return env

    def run(self, args: list[str], *, timeout: float = 300, check: bool = True, cwd: Path | None = None,
            env: dict[str, str] | None = None, what: str = "") -> subprocess.CompletedProcess[str]:
        t0 = time.monotonic()
        p = subprocess.run(args, env=env or self.env(), capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL, cwd=str(cwd or self.work))
        if what:
            self.times[what] = time.monotonic() - t0
        if check and p.returncode != 0:
            raise AssertionError(f"{' '.join(args[:4])} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        return p

    def memcli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return self.run([MEMCLI, *args], timeout=timeout)

    def inspector(self, target: list[str], *args: str) -> subprocess.CompletedProcess[str]:
        return self.run([self.clients.exe("mcp-inspector-cli"), "--cli", *target, *args], timeout=180,
                        cwd=self.clients.inspector_cwd)

    def token(self) -> str:
        return json.loads((self.memcli_home / "auth.json").read_text())["token"]


def _codex_config(standin: StandIn) -> str:
    """Codex's own settings before memcli's setup: the stand-in as its model provider."""
    return (f'model = "{MODEL}"\nmodel_provider = "standin"\n\n[model_providers.standin]\nname = "standin"\n'
            f'base_url = "{standin.url}/v1"\nwire_api = "responses"\nenv_key = "STANDIN_KEY"\n')


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment (pip install -e .)")
    t0 = time.monotonic()
    try:
        clients = install()
    except Unavailable as exc:
        pytest.skip(f"no real clients: {exc}")
    root = tmp_path_factory.mktemp("clients")
    plans = [Plan(CODEX_TURN, "remember", {"content": FACT, "agent": "codex", "tags": ["ops"]},
                  "Remembered it for the team."),
             Plan(GEMINI_TURN, "recall", {"query": "how is the staging ingress certificate renewed"},
                  "Here is what memcli knows:"),
             Plan(CODEX_STDIO_TURN, "recall", {"query": "staging ingress certificate renewal"}, "Recalled:")]
    w = World(clients, root, StandIn(plans).start())
    w.times["install (cached)"] = time.monotonic() - t0
    for d in (w.home / ".codex", w.home / ".gemini", w.work, w.memcli_home):
        d.mkdir(parents=True, exist_ok=True)
    (w.memcli_home / "config.toml").write_text(CONFIG)
    # what each user has before memcli: Codex's model provider, Gemini's API-key sign-in and a trusted folder
    # (Gemini disables MCP servers in untrusted folders); memcli's setup must keep all of it
    (w.home / ".codex" / "config.toml").write_text(_codex_config(w.standin))
    (w.home / ".gemini" / "settings.json").write_text(json.dumps({"security": {"auth": {"selectedType":
                                                                                         "gemini-api-key"}}}))
    (w.home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(w.work): "TRUST_FOLDER"}))
    try:
        yield w
    finally:
        w.standin.stop()
        with open(root / "standin-requests.jsonl", "w") as fh:  # what each client sent its model, to read on failure
            for seen in w.standin.seen:
                fh.write(json.dumps({"api": seen.api, "path": seen.path, "body": seen.body}) + "\n")
        if w.server is not None:
            w.server.stop()
        print("\nreal clients, wall times:", ", ".join(f"{k} {v:.0f}s" for k, v in w.times.items()),
              "; `mcp list` runs until connected:", w.attempts)


@pytest.fixture(scope="module")
def server(world: World) -> ServerProc:
    """The home's warm `memcli serve` (what the hooks and `memcli ui` leave running)."""
    if world.server is None:
        env = {k: v for k, v in world.env().items() if k != "MEMCLI_AUTOSTART"}
        world.server = start_server(MEMCLI, env, world.memcli_home)
        for text in OTHERS:
            world.memcli("remember", text, "--importance", "0.9")
    return world.server


# ---------------------------------------------------------------------------------------------- setup
def test_setup_connects_the_three_clients(world: World) -> None:
    p = world.memcli("setup", "--yes", "--agents", "codex,gemini,claude-code", "--claude-hooks", "none")
    assert "claude mcp add" in " ".join(p.stdout.split()), p.stdout  # Claude Code's own CLI does its part
    codex_cfg = (world.home / ".codex" / "config.toml").read_text()
    assert 'model_provider = "standin"' in codex_cfg and "[mcp_servers.memcli]" in codex_cfg, codex_cfg
    gemini = json.loads((world.home / ".gemini" / "settings.json").read_text())
    assert gemini["security"]["auth"]["selectedType"] == "gemini-api-key", gemini  # the user's keys kept
    assert gemini["mcpServers"]["memcli"]["args"] == ["mcp", "--agent", "gemini"], gemini

    codex = world.run([world.clients.exe("codex"), "mcp", "list"], what="codex mcp list")
    assert "memcli" in codex.stdout and "enabled" in codex.stdout, codex.stdout
    got = json.loads(world.run([world.clients.exe("codex"), "mcp", "get", "memcli", "--json"]).stdout)
    assert got["transport"]["command"] == MEMCLI and got["transport"]["args"] == ["mcp", "--agent", "codex"], got
    for client, mark in (("gemini", "✓ memcli"), ("claude", "memcli")):
        out = connected(world, client, mark)
        assert "memcli" in out and "Connected" in out, f"`{client} mcp list` never saw memcli connected:\n{out}"


def connected(world: World, client: str, mark: str, tries: int = 4) -> str:
    """`<client> mcp list` (which starts `memcli mcp` and gives it a few seconds) until it says memcli is
    connected, at most ``tries`` times: on 2 busy cores a cold `memcli mcp` took 6 s to answer `initialize`."""
    outs = []
    for attempt in range(1, tries + 1):
        p = world.run([world.clients.exe(client), "mcp", "list"], what=f"{client} mcp list")
        outs.append(p.stdout + p.stderr)
        line = next((x for x in outs[-1].splitlines() if mark in x), "")
        if "Connected" in line:
            world.attempts[client] = attempt
            return line
    return "\n---\n".join(outs)


# -------------------------------------------------------------------------------- one memory, three clients
def test_codex_remembers_and_gemini_recalls_it(world: World, server: ServerProc) -> None:
    codex = world.clients.exe("codex")
    # Codex over HTTP to the warm server (see the module's docstring): the bearer token stays in the environment
    world.run([codex, "mcp", "remove", "memcli"])
    world.run([codex, "mcp", "add", "memcli", "--url", f"{server.url}/mcp", "--bearer-token-env-var", TOKEN_VAR])
    env = world.env(STANDIN_KEY="x", **{TOKEN_VAR: world.token()})
    p = world.run([codex, "exec", "--skip-git-repo-check", f"Please keep this for the team: {FACT} {CODEX_TURN}"],
                  env=env, timeout=600, what="codex turn")
    first, *rest = world.standin.requests("openai", CODEX_TURN)
    assert memcli_tool(first.tools, "remember") == "mcp__memcli.remember", first.tools
    assert TOOLS <= {t.rpartition(".")[2] for t in first.tools if t.startswith("mcp__memcli.")}
    assert rest and '"created":true' in "".join(rest[0].tool_results).replace(" ", ""), [r.tool_results for r in rest]
    assert "Remembered it for the team." in p.stdout, p.stdout[-2000:]

    hits = json.loads(world.memcli("recall", "staging ingress certificate renewal", "--json").stdout)
    mine = [h for h in hits if h["content"] == FACT]
    assert mine and mine[0]["scope"] == "agent:codex" and mine[0]["source"] == "mcp", hits

    gemini_env = world.env(GEMINI_API_KEY="x", GOOGLE_GEMINI_BASE_URL=world.standin.url)
    g = world.run([world.clients.exe("gemini"), "-p", f"How is the staging ingress certificate renewed? {GEMINI_TURN}",
                   "--approval-mode", "yolo"], env=gemini_env, timeout=600, what="gemini turn")
    asked = world.standin.requests("gemini", GEMINI_TURN)
    assert asked and memcli_tool(asked[0].tools, "recall") == "mcp_memcli_recall", asked[0].tools if asked else []
    assert ("gemini", "mcp_memcli_recall", {"query": "how is the staging ingress certificate renewed"}) in \
        world.standin.calls
    answered = [r for r in asked if r.tool_results]
    assert answered and FACT in json.loads(answered[0].tool_results[0])["output"], [r.tool_results for r in asked]
    assert "agent:codex" in answered[0].tool_results[0]
    assert FACT in g.stdout.replace("\\", ""), g.stdout[-2000:]  # the model's answer, printed by Gemini CLI


def test_claude_codes_prompt_hook_injects_what_codex_wrote(world: World, server: ServerProc) -> None:
    hits = json.loads(world.memcli("recall", "staging ingress certificate renewal", "--json").stdout)
    assert any(h["content"] == FACT for h in hits), "Codex's memory is missing: run the whole module"
    prompt = f"When does the staging certificate renewal job run? [turn claude-{RUN}]"
    env = world.env(ANTHROPIC_BASE_URL=world.standin.url, ANTHROPIC_API_KEY="sk-ant-standin",
                    MEMCLI_PYTHON=sys.executable)
    p = world.run([world.clients.exe("claude"), "-p", "--plugin-dir", str(ROOT), prompt], env=env, timeout=600,
                  what="claude turn")
    assert p.returncode == 0 and "OK." in p.stdout, p.stdout + p.stderr
    seen = world.standin.requests("anthropic", f"[turn claude-{RUN}]")
    assert seen, "Claude Code sent its model no request"
    text = seen[0].text
    digest = text.partition('<memcli-memories event="SessionStart"')[2].split("</memcli-memories>")[0]
    block = text.partition('<memcli-memories event="UserPromptSubmit"')[2].split("</memcli-memories>")[0]
    shown = [text[i - 200:i + 900] for i in _all(text, "<memcli-memories")]
    assert any(o in digest for o in OTHERS) and FACT[:60] not in digest, shown  # the digest: the important ones
    # the prompt's recall: what Codex wrote, in full or as an index line (its start, its author)
    assert FACT[:60] in block and "codex" in block, shown


def _all(text: str, needle: str) -> list[int]:
    out, i = [], text.find(needle)
    while i >= 0:
        out.append(max(i, 200))
        i = text.find(needle, i + 1)
    return out


# ---------------------------------------------------------------------------------------------- the Inspector
def _tool_names(out: str) -> set[str]:
    return {t["name"] for t in json.loads(out[out.index("{"):])["tools"]}


def _recall_text(out: str) -> str:
    doc = json.loads(out[out.index("{"):])
    return "\n".join(c.get("text", "") for c in doc.get("content", []))


def test_inspector_over_stdio(world: World) -> None:
    target = [MEMCLI, "mcp"]
    assert TOOLS <= _tool_names(world.inspector(target, "--method", "tools/list").stdout)
    out = world.inspector(target, "--method", "tools/call", "--tool-name", "recall",
                          "--tool-arg", "query=staging ingress certificate renewal").stdout
    assert FACT in _recall_text(out).replace("\\", ""), out[-2000:]


def test_inspector_over_streamable_http(world: World, server: ServerProc) -> None:
    target = [f"{server.url}/mcp", "--transport", "http", "--header", f"Authorization: Bearer {world.token()}"]
    assert TOOLS <= _tool_names(world.inspector(target, "--method", "tools/list").stdout)
    out = world.inspector(target, "--method", "tools/call", "--tool-name", "recall",
                          "--tool-arg", "query=staging ingress certificate renewal").stdout
    assert FACT in _recall_text(out).replace("\\", ""), out[-2000:]
    # without the token: refused, nothing listed
    bad = world.run([world.clients.exe("mcp-inspector-cli"), "--cli", f"{server.url}/mcp", "--transport", "http",
                     "--method", "tools/list"], check=False, timeout=180, cwd=world.clients.inspector_cwd)
    assert bad.returncode != 0 and '"tools"' not in bad.stdout


def test_inspector_over_sse(world: World, server: ServerProc) -> None:
    auth = {"Authorization": f"Bearer {world.token()}"}
    with httpx.stream("GET", f"{server.url}/sse", headers={**auth, "Accept": "text/event-stream"}, timeout=30) as r:
        status = r.status_code
    if status == 404:
        pytest.skip("memcli serve has no SSE transport yet (GET /sse answers 404): the case runs once it has")
    assert status == 200, status
    target = [f"{server.url}/sse", "--transport", "sse", "--header", f"Authorization: Bearer {world.token()}"]
    assert TOOLS <= _tool_names(world.inspector(target, "--method", "tools/list").stdout)


# ---------------------------------------------------------------------------------------------- Codex over stdio
def test_codex_over_stdio_sees_the_tools(world: World) -> None:
    """Codex with the stdio entry `memcli setup` writes: is memcli offered in the first model request?"""
    codex = world.clients.exe("codex")
    world.run([codex, "mcp", "remove", "memcli"])
    world.memcli("setup", "--yes", "--agents", "codex")  # back to setup's own entry: `memcli mcp` over stdio
    prompt = f"How is the staging certificate renewed? {CODEX_STDIO_TURN}"
    p = world.run([codex, "exec", "--skip-git-repo-check", prompt], env=world.env(STANDIN_KEY="x"), timeout=600,
                  what="codex stdio turn")
    first, *rest = world.standin.requests("openai", CODEX_STDIO_TURN)
    if memcli_tool(first.tools, "recall") is None:
        pytest.xfail("Codex sent its first request before `memcli mcp` (stdio) had listed its tools: a slow cold "
                     "start of `memcli mcp`; over HTTP (above) they are there")
    assert rest and FACT in "".join(rest[0].tool_results).replace("\\", ""), [r.tool_results for r in rest]
    assert "Recalled:" in p.stdout, p.stdout[-2000:]
