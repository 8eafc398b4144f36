"""`memcli setup` (issue 29): `--print --http` names the port the home's server really runs on (server.json),
`--uninstall` gives a hand-formatted JSON config back byte for byte (inline objects are not expanded), and
setup says that Gemini CLI runs memcli only in trusted folders, and how to trust one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _memcli_server import MEMCLI, hash_env, start_server
from typer.testing import CliRunner

from memcli.cli.app import app

# how people write configs by hand: inline objects, tabs, keys on one line, no final newline
GEMINI_BY_HAND = ('{\n\t"theme": "GitHub", "selectedAuthType": "oauth-personal",\n'
                  '\t"mcpServers": { "figma": { "httpUrl": "http://127.0.0.1:3845/mcp" } },\n'
                  '\t"ui": {"hideBanner": true}\n}')
CLAUDE_BY_HAND = ('{ "model": "opus",\n  "permissions": { "allow": ["Bash(npm run test:*)"] },\n'
                  '  "hooks": { "Stop": [ { "hooks": [ { "type": "command", "command": "afplay Glass.aiff" } ] } ] }\n}\n')


def setup(user_home: Path, *args: str) -> str:
    res = CliRunner().invoke(app, ["setup", *args], env={"HOME": str(user_home), "PATH": "/usr/bin:/bin",
                                                         "XDG_CONFIG_HOME": None, "COLUMNS": "200"})
    assert res.exit_code == 0, res.stdout + (res.stderr or "")
    return res.stdout


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    h = tmp_path / "user-home-2"
    (h / ".gemini").mkdir(parents=True)
    (h / ".claude").mkdir()
    (h / ".gemini" / "settings.json").write_text(GEMINI_BY_HAND, encoding="utf-8")
    (h / ".claude" / "settings.json").write_text(CLAUDE_BY_HAND, encoding="utf-8")
    return h


def test_uninstall_gives_hand_formatted_json_back_byte_for_byte(user_home: Path) -> None:
    gemini, claude = user_home / ".gemini" / "settings.json", user_home / ".claude" / "settings.json"
    out = setup(user_home, "--yes", "--agents", "gemini,claude-code", "--claude-hooks", "settings",
                "--embedder", "hash")
    assert json.loads(gemini.read_text())["mcpServers"]["memcli"]["args"] == ["mcp", "--agent", "gemini"]
    assert "UserPromptSubmit" in json.loads(claude.read_text())["hooks"]
    assert "trusted folders" in out and "TRUST_FOLDER" in out  # Gemini's trust, said at setup
    setup(user_home, "--uninstall", "--yes")
    assert gemini.read_bytes() == GEMINI_BY_HAND.encode()
    assert claude.read_bytes() == CLAUDE_BY_HAND.encode()


def test_a_file_changed_since_setup_is_undone_by_its_entries(user_home: Path) -> None:
    gemini = user_home / ".gemini" / "settings.json"
    setup(user_home, "--yes", "--agents", "gemini", "--embedder", "hash")
    data = json.loads(gemini.read_text())
    data["theme"] = "Dracula"  # the user's own change: never thrown away by a restore
    gemini.write_text(json.dumps(data, indent=2))
    setup(user_home, "--uninstall", "--yes")
    left = json.loads(gemini.read_text())
    assert left["theme"] == "Dracula" and "memcli" not in left["mcpServers"]


def test_print_http_names_the_port_the_home_server_runs_on(tmp_path: Path, home: Path) -> None:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    srv = start_server(MEMCLI, hash_env(tmp_path), home)  # a free port, not 8765
    try:
        assert srv.port != 8765
        out = setup(tmp_path / "nobody", "--print", "--http", "--agents", "codex,gemini")
        assert f"http://127.0.0.1:{srv.port}/mcp" in out and ":8765/" not in out
        assert srv.token in out
        assert "TRUST_FOLDER" in out
    finally:
        srv.stop()
    out = setup(tmp_path / "nobody", "--print", "--http", "--agents", "codex")
    assert "http://127.0.0.1:8765/mcp" in out  # no server running: the port it would start on
