"""The agents `memcli setup` knows: where each keeps its config, how to detect it, what to add.

Each agent gets the same MCP server (stdio: the absolute path of this environment's `memcli`, `mcp`), and
Claude Code also gets the hooks. Paths are absolute and point at this interpreter's environment, never at a
shim, so the agents start memcli fast and with the right Python.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SERVER_NAME = "memcli"
HOOK_EVENTS: dict[str, dict[str, Any]] = {  # mirrors the plugin's hooks/hooks.json
    "SessionStart": {"matcher": "startup|resume|clear|compact", "timeout": 10},
    "UserPromptSubmit": {"timeout": 5},
    "Stop": {"timeout": 15, "async": True},
    "SessionEnd": {},
}
HOOK_MARKER = "-m memcli.hooks"
# Gemini CLI starts no MCP server in a folder it does not trust (`gemini mcp list`: "configured but disabled
# because this folder is untrusted"): setup says so, and how to trust one
GEMINI_TRUST = ("Gemini CLI runs MCP servers only in trusted folders: in any other, memcli is listed as \"disabled "
                "because this folder is untrusted\". Trust a project folder when Gemini asks, or add it to "
                "~/.gemini/trustedFolders.json: {\"/path/to/project\": \"TRUST_FOLDER\"}.")


@dataclass
class Machine:
    """Where things are on this machine (all overridable, so tests run against a temporary HOME)."""

    user_home: Path
    memcli_home: Path
    default_memcli_home: Path
    python: str
    memcli: list[str]  # the command that runs memcli: [abs path of the console script] or [python, -m, memcli]
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    platform: str = sys.platform
    which: Callable[[str], str | None] = shutil.which

    @classmethod
    def current(cls, memcli_home: Path, default_memcli_home: Path, env: Mapping[str, str] | None = None) -> "Machine":
        env = dict(os.environ if env is None else env)
        python = os.path.abspath(sys.executable)
        script = Path(python).parent / ("memcli.exe" if sys.platform == "win32" else "memcli")
        memcli = [str(script)] if script.exists() else [python, "-m", "memcli"]
        home = Path(env.get("HOME") or Path.home())

        def which(name: str) -> str | None:
            return shutil.which(name, path=env.get("PATH"))

        return cls(user_home=home, memcli_home=memcli_home, default_memcli_home=default_memcli_home,
                   python=python, memcli=memcli, env=env, which=which)

    # ------------------------------------------------------------------ what every agent runs
    @property
    def server_env(self) -> dict[str, str]:
        """Environment an MCP client must pass: MEMCLI_HOME, only when it is not the default one."""
        if self.memcli_home.resolve() == self.default_memcli_home.resolve():
            return {}
        return {"MEMCLI_HOME": str(self.memcli_home)}

    def mcp_server(self, agent: str | None = None) -> dict[str, Any]:
        """The stdio MCP server entry (`mcpServers` style); ``agent``: the client it is for (`memcli mcp --agent
        codex`: what the client writes is that agent's, see memcli.mcp.callers)."""
        entry: dict[str, Any] = {"command": self.memcli[0],
                                 "args": [*self.memcli[1:], "mcp", *(["--agent", agent] if agent else [])]}
        if self.server_env:
            entry["env"] = dict(self.server_env)
        return entry

    def hook_command(self, event: str) -> str:
        cmd = f"{shlex.quote(self.python)} -m memcli.hooks {event}"
        if self.server_env:
            cmd = f"MEMCLI_HOME={shlex.quote(str(self.memcli_home))} {cmd}"
        return cmd

    def hook_groups(self) -> dict[str, dict[str, Any]]:
        """Claude Code settings.json hook groups, one per event."""
        groups = {}
        for event, opts in HOOK_EVENTS.items():
            hook: dict[str, Any] = {"type": "command", "command": self.hook_command(event)}
            hook.update({k: v for k, v in opts.items() if k != "matcher"})
            group: dict[str, Any] = {"matcher": opts["matcher"]} if "matcher" in opts else {}
            group["hooks"] = [hook]
            groups[event] = group
        return groups

    # ------------------------------------------------------------------ paths
    def claude_config_dir(self) -> Path:
        d = self.env.get("CLAUDE_CONFIG_DIR")
        return Path(d).expanduser() if d else self.user_home / ".claude"

    def claude_json(self) -> Path:
        """Where Claude Code keeps user-scope MCP servers (`mcpServers` in ~/.claude.json)."""
        d = self.env.get("CLAUDE_CONFIG_DIR")
        return Path(d).expanduser() / ".claude.json" if d else self.user_home / ".claude.json"

    def codex_config(self) -> Path:
        d = self.env.get("CODEX_HOME")
        return (Path(d).expanduser() if d else self.user_home / ".codex") / "config.toml"

    def gemini_settings(self) -> Path:
        return self.user_home / ".gemini" / "settings.json"

    def antigravity_candidates(self) -> list[Path]:
        """Antigravity's mcp_config.json moved between releases: the IDE's agent dir, then the agy CLI's."""
        return [self.user_home / ".gemini" / "antigravity" / "mcp_config.json",
                self.user_home / ".gemini" / "config" / "mcp_config.json"]

    def antigravity_config(self) -> Path:
        cands = self.antigravity_candidates()
        for p in cands:  # an existing config file wins...
            if p.is_file():
                return p
        for p in cands:  # ...then an existing directory
            if p.parent.is_dir():
                return p
        return cands[0]

    def claude_desktop_config(self) -> Path:
        if self.platform == "darwin":
            base = self.user_home / "Library" / "Application Support"
        elif self.platform.startswith("win"):
            base = Path(self.env.get("APPDATA") or self.user_home / "AppData" / "Roaming")
        else:
            base = Path(self.env.get("XDG_CONFIG_HOME") or self.user_home / ".config")
        return base / "Claude" / "claude_desktop_config.json"

    def openclaw_config(self) -> Path:
        """OPENCLAW_CONFIG_PATH, else OPENCLAW_STATE_DIR/openclaw.json, else (OPENCLAW_HOME or ~)/.openclaw/."""
        p = self.env.get("OPENCLAW_CONFIG_PATH")
        if p:
            return Path(p).expanduser()
        d = self.env.get("OPENCLAW_STATE_DIR")
        if d:
            return Path(d).expanduser() / "openclaw.json"
        home = Path(self.env["OPENCLAW_HOME"]).expanduser() if self.env.get("OPENCLAW_HOME") else self.user_home
        return home / ".openclaw" / "openclaw.json"

    def claude_plugin_installed(self) -> bool:
        """Is the memcli Claude Code plugin installed (then its hooks.json already runs the hooks)?"""
        import json

        path = self.claude_config_dir() / "plugins" / "installed_plugins.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        plugins = data.get("plugins") if isinstance(data, dict) else None
        ids = [str(k) for k in plugins if str(k).split("@")[0] == "memcli"] if isinstance(plugins, dict) else []
        if not ids:
            return False
        try:  # installed but switched off (`claude plugin disable`) does not count
            enabled = json.loads((self.claude_config_dir() / "settings.json").read_text(encoding="utf-8"))
            enabled = enabled.get("enabledPlugins") or {}
        except (OSError, ValueError, AttributeError):
            enabled = {}
        return any(enabled.get(i, True) is not False for i in ids) if isinstance(enabled, dict) else True


@dataclass(frozen=True)
class Agent:
    id: str
    name: str
    detect: Callable[[Machine], tuple[bool, str]]  # (found?, why / where)
    config_path: Callable[[Machine], Path]


def _dir_or_bin(m: Machine, path: Path, binary: str | None) -> tuple[bool, str]:
    if path.exists():
        return True, str(path)
    exe = m.which(binary) if binary else None
    if exe:
        return True, f"{binary} on PATH ({exe})"
    return False, f"no {path}" + (f" and no `{binary}` on PATH" if binary else "")


def _detect_antigravity(m: Machine) -> tuple[bool, str]:
    for p in m.antigravity_candidates():
        if p.is_file() or p.parent.is_dir():
            return True, str(p.parent)
    for b in ("agy", "antigravity"):
        exe = m.which(b)
        if exe:
            return True, f"{b} on PATH ({exe})"
    return False, "no ~/.gemini/antigravity or ~/.gemini/config, no `agy`/`antigravity` on PATH"


def _detect_gemini(m: Machine) -> tuple[bool, str]:
    # ~/.gemini alone is not enough: Antigravity keeps its data there too.
    if m.gemini_settings().is_file():
        return True, str(m.gemini_settings())
    exe = m.which("gemini")
    return (True, f"gemini on PATH ({exe})") if exe else (False, "no ~/.gemini/settings.json and no `gemini` on PATH")


AGENTS: dict[str, Agent] = {a.id: a for a in (
    Agent("claude-code", "Claude Code", lambda m: _dir_or_bin(m, m.claude_config_dir(), "claude"),
          lambda m: m.claude_config_dir() / "settings.json"),
    Agent("codex", "Codex", lambda m: _dir_or_bin(m, m.codex_config().parent, "codex"), lambda m: m.codex_config()),
    Agent("gemini", "Gemini CLI", _detect_gemini, lambda m: m.gemini_settings()),
    Agent("antigravity", "Antigravity", _detect_antigravity, lambda m: m.antigravity_config()),
    Agent("claude-desktop", "Claude Desktop", lambda m: _dir_or_bin(m, m.claude_desktop_config().parent, None),
          lambda m: m.claude_desktop_config()),
    Agent("openclaw", "OpenClaw", lambda m: _dir_or_bin(m, m.openclaw_config().parent, "openclaw"),
          lambda m: m.openclaw_config()),
)}
ALIASES = {"claude": "claude-code", "claudecode": "claude-code", "gemini-cli": "gemini", "desktop": "claude-desktop",
           "claude_desktop": "claude-desktop", "claude_code": "claude-code", "agy": "antigravity"}


def resolve_agent_ids(names: list[str]) -> list[str]:
    from memcli.setup.edits import SetupError

    out = []
    for n in names:
        key = n.strip().lower()
        if not key:
            continue
        key = ALIASES.get(key, key)
        if key == "all":
            return list(AGENTS)
        if key not in AGENTS:
            raise SetupError(f"unknown agent {n!r}: choose from {', '.join(AGENTS)} (or all)")
        if key not in out:
            out.append(key)
    return out
