"""`memcli setup`: wire the agents on this machine (Claude Code, Codex, Gemini CLI, Antigravity, Claude Desktop,
OpenClaw) to memcli, reversibly. The logic lives here; the prompts live in :mod:`memcli.cli.setup`."""
