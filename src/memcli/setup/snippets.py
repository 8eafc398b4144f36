"""What `memcli setup --print` shows: each agent's config as the user would write it by hand."""

from __future__ import annotations

import json

from memcli.setup import openclaw as oc
from memcli.setup.agents import AGENTS, GEMINI_TRUST, SERVER_NAME, Machine
from memcli.setup.edits import toml_table_block


def http_snippets(m: Machine, agents: list[str], *, url: str, token: str) -> dict[str, str]:
    """Each agent's MCP-over-HTTP entry for a running `memcli serve` at ``url`` (its /mcp endpoint), with
    the bearer token every request needs (`memcli setup --print --http`)."""
    import shlex

    auth = {"Authorization": f"Bearer {token}"}
    out: dict[str, str] = {}
    base = url
    for agent in agents:
        url = f"{base}{'&' if '?' in base else '?'}agent={agent}"  # its writes are this agent's (memcli.mcp.callers)
        if agent == "claude-code":
            out[agent] = (f"claude mcp add --scope user --transport http {SERVER_NAME} {shlex.quote(url)} "
                          f"--header {shlex.quote('Authorization: Bearer ' + token)}\n\n# or in {m.claude_json()}:\n"
                          + json.dumps({"mcpServers": {SERVER_NAME: {"type": "http", "url": url, "headers": auth}}},
                                       indent=2))
        elif agent == "codex":
            out[agent] = f"# {m.codex_config()}\n" + toml_table_block(f"mcp_servers.{SERVER_NAME}",
                                                                      {"url": url, "http_headers": auth})
        elif agent in ("gemini", "antigravity"):
            key = "httpUrl" if agent == "gemini" else "serverUrl"
            path = AGENTS[agent].config_path(m)
            out[agent] = f"// {path}\n" + json.dumps({"mcpServers": {SERVER_NAME: {key: url, "headers": auth}}},
                                                     indent=2) + (f"\n// {GEMINI_TRUST}" if agent == "gemini" else "")
        else:
            out[agent] = f"# {AGENTS[agent].name} starts its MCP servers over stdio here: use `memcli setup --print`."
    return out


def snippets(m: Machine, agents: list[str], *, claude_hooks: str = "settings") -> dict[str, str]:
    """The config each agent needs, as the user would write it by hand (`memcli setup --print`)."""
    out: dict[str, str] = {}
    for agent in agents:
        server = m.mcp_server(agent)  # `memcli mcp --agent <agent>`: its writes are this agent's
        if agent == "claude-code":
            import shlex

            env = "".join(f" -e {shlex.quote(f'{k}={v}')}" for k, v in server.get("env", {}).items())
            text = (f"claude mcp add --scope user {SERVER_NAME}{env} -- "
                    + " ".join(shlex.quote(a) for a in [server["command"], *server["args"]]))
            if claude_hooks != "none":
                hooks = {"hooks": {ev: [g] for ev, g in m.hook_groups().items()}}
                text += (f"\n\n# hooks, merged into {m.claude_config_dir() / 'settings.json'}"
                         " (or install the plugin instead):\n" + json.dumps(hooks, indent=2))
            out[agent] = text
        elif agent == "codex":
            out[agent] = f"# {m.codex_config()}\n" + toml_table_block(f"mcp_servers.{SERVER_NAME}", server)
        elif agent == "openclaw":
            out[agent] = _openclaw(m, server)
        else:
            path = AGENTS[agent].config_path(m)
            out[agent] = f"// {path}\n" + json.dumps({"mcpServers": {SERVER_NAME: server}}, indent=2) + (
                f"\n// {GEMINI_TRUST}" if agent == "gemini" else "")
    return out


def _openclaw(m: Machine, server: dict[str, object]) -> str:
    """memcli's memory plugin (what `memcli setup` installs with OpenClaw's CLI), or the MCP server alone."""
    import shlex

    mcp = f"// {m.openclaw_config()}\n" + json.dumps({"mcp": {"servers": {SERVER_NAME: server}}}, indent=2)
    source = oc.plugin_dir()
    if source is None:
        return mcp
    commands = oc.install_commands("openclaw", source, oc.plugin_config(m))
    return ("# memcli's memory plugin: recall before each prompt, capture after each turn, the memcli_* tools\n"
            + "\n".join(shlex.join(argv) for argv in commands)
            + "\n\n# or only memcli's MCP tools:\n" + mcp)
