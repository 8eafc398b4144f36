"""`memcli setup` against a temporary HOME holding realistic config files of every agent: the right entries,
the user's settings untouched, a byte-identical second run, a clean uninstall that restores every byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memcli.setup.agents import AGENTS, Machine
from memcli.setup.core import SetupOptions, apply_plan, plan_install, plan_uninstall
from memcli.setup.edits import tomllib
from memcli.setup.snippets import snippets

ROOT = Path(__file__).resolve().parents[1]
MEMCLI = str(Path(sys.executable).parent / "memcli")


def _json(data: object) -> str:
    """What Claude Code, Gemini and friends write: JSON.stringify(data, null, 2) + newline."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


CLAUDE_SETTINGS = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {"allow": ["Bash(npm run test:*)", "Read(~/.zshrc)"], "deny": ["Read(./.env)"]},
    "env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "0"},
    "hooks": {
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "prettier --write"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "afplay /System/Library/Sounds/Glass.aiff"}]}],
    },
    "model": "opus",
}
CLAUDE_JSON = {
    "numStartups": 42,
    "theme": "dark",
    "mcpServers": {"github": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                              "env": {"GITHUB_TOKEN": "ghp_xxx"}}},
    "projects": {"/home/me/app": {"allowedTools": [], "mcpServers": {}, "hasTrustDialogAccepted": True}},
}
CODEX_TOML = """\
# Codex configuration — hand-written, with comments that must survive
model = "gpt-5-codex"
approval_policy = "on-request"   # ask before running commands

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]

[profiles.fast]
model = "gpt-5-mini"
"""
GEMINI_SETTINGS = {"theme": "GitHub", "selectedAuthType": "oauth-personal",
                   "mcpServers": {"memcli": {"command": "/old/venv/bin/memcli", "args": ["mcp"]}}}
ANTIGRAVITY = {"mcpServers": {"figma": {"serverUrl": "http://127.0.0.1:3845/mcp"}}}
OPENCLAW = {"agents": {"defaults": {"model": "anthropic/claude-sonnet-4-5"}}, "gateway": {"port": 18789},
            "mcp": {"servers": {"filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]}}}}


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    """A HOME with every agent installed and configured the way people have them."""
    h = tmp_path / "user-home"
    files = {
        ".claude/settings.json": _json(CLAUDE_SETTINGS),
        ".claude.json": _json(CLAUDE_JSON),
        ".codex/config.toml": CODEX_TOML,
        ".gemini/settings.json": _json(GEMINI_SETTINGS),
        ".gemini/antigravity/mcp_config.json": _json(ANTIGRAVITY),
        ".openclaw/openclaw.json": _json(OPENCLAW),
    }
    for rel, text in files.items():
        p = h / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    (h / ".config" / "Claude").mkdir(parents=True)  # Claude Desktop installed, never configured
    return h


def _machine(user_home: Path, memcli_home: Path, *, default_home: Path | None = None, **env: str) -> Machine:
    m = Machine.current(memcli_home, default_home or memcli_home,
                        env={"HOME": str(user_home), "PATH": "/usr/bin:/bin", **env})
    m.platform = "linux"
    return m


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "backups" not in p.parts}


def _install(m: Machine, agents: list[str] | None = None, **kw: object) -> None:
    plan = plan_install(m, SetupOptions(agents=agents or list(AGENTS), **kw))  # type: ignore[arg-type]
    assert not plan.errors, plan.errors
    result = apply_plan(plan)
    assert result.ok


def test_detects_every_agent(user_home: Path, tmp_path: Path) -> None:
    m = _machine(user_home, tmp_path / "memcli-home")
    assert {a: AGENTS[a].detect(m)[0] for a in AGENTS} == dict.fromkeys(AGENTS, True)
    empty = _machine(tmp_path / "nobody", tmp_path / "memcli-home")
    assert not any(AGENTS[a].detect(empty)[0] for a in AGENTS)


def test_install_writes_each_agent_and_preserves_user_settings(user_home: Path, tmp_path: Path) -> None:
    memcli_home = tmp_path / "memcli-home"
    m = _machine(user_home, memcli_home, default_home=tmp_path / "elsewhere")
    _install(m, namespace="team")
    def server(agent: str) -> dict[str, object]:  # each entry says which agent its client is (memcli mcp --agent)
        return {"command": MEMCLI, "args": ["mcp", "--agent", agent], "env": {"MEMCLI_HOME": str(memcli_home)}}

    claude_json = json.loads((user_home / ".claude.json").read_text())
    assert claude_json["mcpServers"]["memcli"] == {"type": "stdio", **server("claude-code")}
    assert {k: v for k, v in claude_json.items() if k != "mcpServers"} == {k: v for k, v in CLAUDE_JSON.items()
                                                                              if k != "mcpServers"}
    assert claude_json["mcpServers"]["github"] == CLAUDE_JSON["mcpServers"]["github"]

    settings = json.loads((user_home / ".claude" / "settings.json").read_text())
    for key in ("$schema", "permissions", "env", "model"):
        assert settings[key] == CLAUDE_SETTINGS[key]
    assert settings["hooks"]["PostToolUse"] == CLAUDE_SETTINGS["hooks"]["PostToolUse"]
    assert settings["hooks"]["Stop"][0] == CLAUDE_SETTINGS["hooks"]["Stop"][0]  # the user's own Stop hook stays
    py = sys.executable
    for event in ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"):
        cmds = [h["command"] for g in settings["hooks"][event] for h in g["hooks"]]
        assert f"MEMCLI_HOME={memcli_home} {py} -m memcli.hooks {event}" in cmds

    codex = (user_home / ".codex" / "config.toml").read_text()
    assert codex.startswith(CODEX_TOML)  # every byte of the user's file, comments included
    assert tomllib.loads(codex)["mcp_servers"]["memcli"] == server("codex")
    assert tomllib.loads(codex)["mcp_servers"]["context7"]["command"] == "npx"

    gemini = json.loads((user_home / ".gemini" / "settings.json").read_text())
    assert gemini["mcpServers"]["memcli"] == server("gemini") and gemini["theme"] == "GitHub"
    anti = json.loads((user_home / ".gemini" / "antigravity" / "mcp_config.json").read_text())
    assert anti == {"mcpServers": {**ANTIGRAVITY["mcpServers"], "memcli": server("antigravity")}}
    desktop = json.loads((user_home / ".config" / "Claude" / "claude_desktop_config.json").read_text())
    assert desktop == {"mcpServers": {"memcli": server("claude-desktop")}}
    openclaw = json.loads((user_home / ".openclaw" / "openclaw.json").read_text())
    assert openclaw["mcp"]["servers"]["memcli"] == server("openclaw") and openclaw["gateway"] == OPENCLAW["gateway"]
    assert openclaw["mcp"]["servers"]["filesystem"] == OPENCLAW["mcp"]["servers"]["filesystem"]

    assert (memcli_home / "config.toml").read_text() == 'namespace = "team"\n'
    backups = list((memcli_home / "backups").rglob("settings.json"))
    assert any(b.read_text() == _json(CLAUDE_SETTINGS) for b in backups)


def test_second_run_changes_no_byte_and_uninstall_restores_every_byte(user_home: Path, tmp_path: Path) -> None:
    memcli_home = tmp_path / "memcli-home"
    m = _machine(user_home, memcli_home)
    before = _tree(user_home)
    _install(m, namespace="team")
    after_first = {**_tree(user_home), **{f"memcli/{k}": v for k, v in _tree(memcli_home).items()}}

    again = plan_install(m, SetupOptions(agents=list(AGENTS), namespace="team"))
    assert again.empty and again.state is None
    apply_plan(again)
    assert {**_tree(user_home), **{f"memcli/{k}": v for k, v in _tree(memcli_home).items()}} == after_first

    undo = plan_uninstall(m)
    assert not undo.errors
    apply_plan(undo)
    assert _tree(user_home) == before  # Gemini's replaced memcli entry is back, created files are gone
    assert not (memcli_home / "setup-state.json").exists() and not (memcli_home / "config.toml").exists()
    assert plan_uninstall(m).empty  # nothing left to undo


def test_uninstall_leaves_what_the_user_changed_since(user_home: Path, tmp_path: Path) -> None:
    m = _machine(user_home, tmp_path / "memcli-home")
    _install(m, ["gemini", "codex"])
    gemini = user_home / ".gemini" / "settings.json"
    data = json.loads(gemini.read_text())
    data["mcpServers"]["memcli"]["args"] = ["mcp", "--namespace", "mine"]  # the user's own tweak
    data["newSetting"] = True
    gemini.write_text(_json(data))
    undo = plan_uninstall(m)
    assert any("changed since setup" in n for n in undo.notes["gemini"])
    apply_plan(undo)
    assert json.loads(gemini.read_text()) == data
    assert (user_home / ".codex" / "config.toml").read_text() == CODEX_TOML


def test_an_unreadable_config_skips_that_agent_only(user_home: Path, tmp_path: Path) -> None:
    jsonc = '{\n  // Gemini settings with a comment\n  "theme": "GitHub"\n}\n'
    (user_home / ".gemini" / "settings.json").write_text(jsonc)
    m = _machine(user_home, tmp_path / "memcli-home")
    plan = plan_install(m, SetupOptions(agents=["gemini", "codex"]))
    assert "not plain JSON" in plan.errors["gemini"]
    assert [c.path.name for c in plan.files] == ["config.toml"]
    apply_plan(plan)
    assert (user_home / ".gemini" / "settings.json").read_text() == jsonc


def test_codex_replaces_an_existing_memcli_table_in_place(tmp_path: Path) -> None:
    home = tmp_path / "u"
    (home / ".codex").mkdir(parents=True)
    original = '[mcp_servers.memcli]\ncommand = "memcli"\nargs = ["mcp"]\n\n[mcp_servers.other]\ncommand = "x"\n'
    (home / ".codex" / "config.toml").write_text(original)
    m = _machine(home, tmp_path / "mh")
    _install(m, ["codex"])
    text = (home / ".codex" / "config.toml").read_text()
    assert text == (f'[mcp_servers.memcli]\ncommand = "{MEMCLI}"\nargs = ["mcp", "--agent", "codex"]\n\n'
                    '[mcp_servers.other]\ncommand = "x"\n')
    apply_plan(plan_uninstall(m))
    assert (home / ".codex" / "config.toml").read_text() == original


def test_antigravity_config_location_is_detected(tmp_path: Path) -> None:
    home = tmp_path / "u"
    (home / ".gemini" / "config").mkdir(parents=True)  # the agy CLI's layout
    m = _machine(home, tmp_path / "mh")
    assert m.antigravity_config() == home / ".gemini" / "config" / "mcp_config.json"
    (home / ".gemini" / "antigravity").mkdir()
    (home / ".gemini" / "config" / "mcp_config.json").write_text("")  # an existing (empty) file wins
    assert m.antigravity_config() == home / ".gemini" / "config" / "mcp_config.json"
    _install(m, ["antigravity"])
    assert json.loads((home / ".gemini" / "config" / "mcp_config.json").read_text())["mcpServers"]["memcli"]


def test_claude_cli_is_used_when_on_path(user_home: Path, tmp_path: Path) -> None:
    m = _machine(user_home, tmp_path / "mh")
    m.which = lambda name: "/opt/bin/claude" if name == "claude" else None  # plan only: nothing is run
    plan = plan_install(m, SetupOptions(agents=["claude-code"]))
    assert [s.argv for s in plan.commands] == [["/opt/bin/claude", "mcp", "add", "--scope", "user", "memcli", "--",
                                                MEMCLI, "mcp", "--agent", "claude-code"]]
    assert user_home / ".claude.json" not in [c.path for c in plan.files]


def test_plugin_installed_means_no_settings_hooks(user_home: Path, tmp_path: Path) -> None:
    plugins = user_home / ".claude" / "plugins" / "installed_plugins.json"
    plugins.parent.mkdir(parents=True)
    plugins.write_text(json.dumps({"version": 2, "plugins": {"memcli@memcli": [{"scope": "user"}]}}))
    m = _machine(user_home, tmp_path / "mh")
    plan = plan_install(m, SetupOptions(agents=["claude-code"]))
    assert [c.path.name for c in plan.files] == [".claude.json"]
    assert any("plugin is installed" in n for n in plan.notes["claude-code"])
    settings = user_home / ".claude" / "settings.json"
    settings.write_text(_json({**CLAUDE_SETTINGS, "enabledPlugins": {"memcli@memcli": False}}))  # disabled
    plan = plan_install(m, SetupOptions(agents=["claude-code"]))
    assert sorted(c.path.name for c in plan.files) == [".claude.json", "settings.json"]


def test_hooks_mirror_the_plugin_hooks_json(tmp_path: Path) -> None:
    hooks_json = ROOT / "hooks" / "hooks.json"
    if not hooks_json.exists():
        pytest.skip("no plugin hooks.json in this checkout")
    plugin = json.loads(hooks_json.read_text())["hooks"]
    ours = _machine(tmp_path, tmp_path / "mh").hook_groups()
    assert set(plugin) == set(ours)
    for event, groups in plugin.items():
        (group,) = groups
        strip = lambda g: {**g, "hooks": [{k: v for k, v in h.items() if k != "command"} for h in g["hooks"]]}  # noqa: E731
        assert strip(group) == strip(ours[event]), event


def test_print_snippets(tmp_path: Path) -> None:
    m = _machine(tmp_path, tmp_path / "mh")
    out = snippets(m, list(AGENTS))
    assert out["claude-code"].startswith(f"claude mcp add --scope user memcli -- {MEMCLI} mcp --agent claude-code")
    assert tomllib.loads(out["codex"].split("\n", 1)[1])["mcp_servers"]["memcli"] == {
        "command": MEMCLI, "args": ["mcp", "--agent", "codex"]}
    gemini, trust = out["gemini"].split("\n", 1)[1].rsplit("\n// ", 1)  # the entry, then how to trust a folder
    assert json.loads(gemini) == {"mcpServers": {"memcli": {"command": MEMCLI, "args": ["mcp", "--agent", "gemini"]}}}
    assert "TRUST_FOLDER" in trust


@pytest.mark.slow
def test_cli_setup_then_the_written_config_starts_a_working_mcp_server(user_home: Path, tmp_path: Path,
                                                                      home: Path) -> None:
    """The real command end to end, then an MCP client started exactly as Codex would start it."""
    env = {**os.environ, "HOME": str(user_home), "PATH": "/usr/bin:/bin", "MEMCLI_HOME": str(home)}
    env.pop("XDG_CONFIG_HOME", None)
    run = lambda *a: subprocess.run([MEMCLI, "setup", *a], env=env, capture_output=True, text=True,  # noqa: E731
                                    timeout=60, stdin=subprocess.DEVNULL)
    before = _tree(user_home)
    first = run("--yes", "--agents", "codex,gemini", "--embedder", "hash")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "mcp_servers.memcli" in first.stdout  # the change is shown before it is made
    snapshot = _tree(user_home)
    second = run("--yes", "--agents", "codex,gemini", "--embedder", "hash")
    assert second.returncode == 0 and "Nothing to change" in second.stdout, second.stdout
    assert _tree(user_home) == snapshot
    no_tty = run("--agents", "claude-desktop")
    assert no_tty.returncode == 1 and "--yes" in no_tty.stdout

    server = tomllib.loads((user_home / ".codex" / "config.toml").read_text())["mcp_servers"]["memcli"]
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def main() -> list[str]:
        params = StdioServerParameters(command=server["command"], args=server["args"],
                                       env={**server.get("env", {}), "HOME": str(user_home)})
        with open(tmp_path / "mcp-stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                return [t.name for t in (await s.list_tools()).tools]

    assert "remember" in anyio.run(main)

    undo = run("--uninstall", "--yes")
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert _tree(user_home) == before


@pytest.mark.slow
def test_with_the_real_claude_cli(tmp_path: Path, home: Path) -> None:
    """With Claude Code's own CLI (`claude` on PATH or CLAUDE_BIN; `npm i @anthropic-ai/claude-code`): setup
    registers the server through `claude mcp add`, Claude Code connects to it, uninstall restores the old entry."""
    import shutil

    claude = os.environ.get("CLAUDE_BIN") or shutil.which("claude")
    if not claude:
        pytest.skip("Claude Code's CLI is not installed (set CLAUDE_BIN or put `claude` on PATH)")
    user_home = tmp_path / "u"
    user_home.mkdir()
    old = {"numStartups": 3, "mcpServers": {"memcli": {"type": "stdio", "command": "/old/memcli", "args": ["mcp"],
                                                       "env": {}}}}
    (user_home / ".claude.json").write_text(_json(old))
    env = {**os.environ, "HOME": str(user_home), "MEMCLI_HOME": str(home),
           "PATH": f"{Path(claude).parent}:/usr/bin:/bin"}
    run = lambda *a: subprocess.run(a, env=env, capture_output=True, text=True, timeout=120,  # noqa: E731
                                    stdin=subprocess.DEVNULL)
    first = run(MEMCLI, "setup", "--yes", "--agents", "claude-code", "--claude-hooks", "none")
    assert first.returncode == 0, first.stdout + first.stderr
    entry = json.loads((user_home / ".claude.json").read_text())["mcpServers"]["memcli"]
    assert entry["command"] == MEMCLI and entry["args"] == ["mcp"]
    assert "Nothing to change" in run(MEMCLI, "setup", "--yes", "--agents", "claude-code",
                                      "--claude-hooks", "none").stdout
    listed = run(claude, "mcp", "list")
    assert "memcli" in listed.stdout and "Connected" in listed.stdout, listed.stdout + listed.stderr
    assert run(MEMCLI, "setup", "--uninstall", "--yes").returncode == 0
    assert json.loads((user_home / ".claude.json").read_text())["mcpServers"] == old["mcpServers"]
