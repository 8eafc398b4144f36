"""Hook building blocks: redaction, trivial prompts, injected blocks, summaries, transcripts, the client's
settings and HTTP parsing, and the plugin's files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memcli.hooks import client, transport
from memcli.hooks.summarize import extractive
from memcli.hooks.text import is_trivial, last_turn, strip_injected
from memcli.redact import redact

ROOT = Path(__file__).resolve().parents[1]

SECRETS = {
    "openai": "sk-proj-Abc123def456ghi789jkl012mno345",
    "anthropic": "sk-ant-api03-abcdefghijklmnopqrstuvwx",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "github": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "slack": "xoxb-2048-1234567890-AbCdEfGhIjKlMnOp",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "bearer": "Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    "password": "hunter2-Secret!",
    "pem": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----",
    "private": "my home address is 12 Elm Street",
}


def _secret_text() -> str:
    s = SECRETS
    return (f"export OPENAI_API_KEY={s['openai']}\nANTHROPIC_API_KEY=\"{s['anthropic']}\"\n"
            f"aws_access_key_id = {s['aws']}\ngit remote set-url origin https://{s['github']}@github.com/x/y\n"
            f"slack token {s['slack']} and jwt {s['jwt']}\ncurl -H 'Authorization: {s['bearer']}' x\n"
            f"db password={s['password']} and postgres://app:pa55w0rd@db:5432/app\n{s['pem']}\n"
            f"<private>{s['private']}</private> the rest is fine")


def test_redact_removes_every_kind_of_secret() -> None:
    out = redact(_secret_text())
    for kind, value in SECRETS.items():
        for piece in value.split("\n"):
            if len(piece) > 8 and kind != "bearer":
                assert piece not in out, (kind, out)
    assert "9f8e7d6c5b4a39281706f5e4d3c2b1a0" not in out
    assert "pa55w0rd" not in out
    assert "the rest is fine" in out and "[REDACTED" in out


def test_redact_leaves_ordinary_text_alone() -> None:
    text = ("author: Alice; tokenizer: icu; max_tokens: 100; the token: the one from settings; "
            "password = os.environ['PW']; use `sk-` prefixes for keys")
    assert redact(text) == text


@pytest.mark.parametrize("prompt", ["ok", "OK!", "continue", "Continue.", "yes", "yes please", "thanks!",
                                    "go on", "继续", "好的", "谢谢", "1", "  ", ""])
def test_trivial_prompts(prompt: str) -> None:
    assert is_trivial(prompt)


@pytest.mark.parametrize("prompt", ["fix the flaky upload test", "why is CI red?", "部署流程是什么", "E1042?"])
def test_real_prompts_are_not_trivial(prompt: str) -> None:
    assert not is_trivial(prompt)


def test_strip_injected_blocks() -> None:
    text = ("before <memcli-memories event=\"UserPromptSubmit\">\n- [abcd1234] secret memory\n</memcli-memories>"
            " middle <system-reminder>noise</system-reminder> after")
    out = strip_injected(text)
    assert "abcd1234" not in out and "noise" not in out
    assert out.startswith("before") and out.endswith("after")
    assert strip_injected("x <memcli-memories>unterminated") == "x"


def test_extractive_summary_keeps_the_point() -> None:
    reply = ("Sure! Let me look.\n\nThe flaky test `test_upload_timeout` failed because the S3 mock starts "
             "slowly. I fixed it by waiting for /health before the first request.\n\n```python\nwait()\n```\n"
             "| a | b |\n|---|---|\n\nAll 212 tests pass now.")
    out = extractive("why does test_upload_timeout fail?", reply)
    assert out.startswith("User: why does test_upload_timeout fail?\nAssistant: ")
    assert "because the S3 mock starts slowly" in out and "waiting for /health" in out
    assert "wait()" not in out and "| a |" not in out
    assert extractive("q", "x" * 5000).__len__() < 1600


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def transcript_records(prompt: str, reply: str) -> list[dict]:
    """A realistic Claude Code transcript: meta lines, a tool call and its result, a reply in two lines."""
    return [
        {"type": "summary", "summary": "earlier"},
        {"type": "user", "isMeta": True, "message": {"role": "user", "content": "<command-name>/clear</command-name>"}},
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "an older prompt"}},
        {"type": "assistant", "message": {"id": "m0", "role": "assistant", "content": [{"type": "text", "text": "old"}]}},
        {"type": "user", "uuid": "u2", "message": {"role": "user", "content": [{"type": "text", "text": prompt}]}},
        {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm"},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "2 failed"}]}},
        {"type": "assistant", "isSidechain": True, "message": {"role": "assistant", "content": "subagent text"}},
        {"type": "assistant", "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": reply}]}},
        "not json at all",
    ]


def test_transcript_fallback(tmp_path: Path) -> None:
    recs = transcript_records("why do two tests fail?", "Both fail because the fixture leaks a port.")
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    prompt, reply = last_turn(str(path))
    assert prompt == "why do two tests fail?"
    assert reply == "Both fail because the fixture leaks a port."
    assert last_turn(str(tmp_path / "missing.jsonl")) == ("", "")


# --------------------------------------------------------------------------- client settings
@pytest.mark.parametrize("xdg", [None, "", "  ", "/tmp/xdg-data"])
def test_client_home_matches_config_default_home(monkeypatch: pytest.MonkeyPatch, xdg: str | None) -> None:
    from memcli.config import default_home

    if xdg is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", xdg)
    assert Path(transport.default_home()) == default_home()
    monkeypatch.delenv("MEMCLI_HOME", raising=False)
    from memcli.config import load_config

    assert Path(transport.resolve_home()) == load_config().home


def test_client_settings_precedence(tmp_path: Path) -> None:
    """The server: server.json (while its pid runs), then MEMCLI_PORT; a server to start: MEMCLI_PORT, config,
    8765. Token: MEMCLI_TOKEN, config, auth.json; home id: auth.json."""
    home = tmp_path / "h"
    home.mkdir()
    env = {"MEMCLI_HOME": str(home), "HOME": str(tmp_path)}
    s = transport.resolve_settings(env)
    assert (Path(s.home), s.port, s.start_port, s.token, s.home_id, s.deadline_ms) == (home, None, 8765, None, None,
                                                                                        1500)
    assert s.candidates() == []  # no server of this home has run: nothing is tried
    (home / "auth.json").write_text(json.dumps({"home_id": "0123456789abcdef", "token": "t" * 43}))
    s = transport.resolve_settings(env)
    assert (s.home_id, s.token) == ("0123456789abcdef", "t" * 43)
    (home / "config.toml").write_text('[server]\nport = 9100\ntoken = "cfgtok-long"\n[hooks]\ndeadline_ms = 900\n')
    s = transport.resolve_settings(env)
    assert (s.port, s.start_port, s.token, s.deadline_ms) == (None, 9100, "cfgtok-long", 900)
    (home / "server.json").write_text(json.dumps({"pid": os.getpid(), "port": 9200, "host": "127.0.0.1"}))
    s = transport.resolve_settings(env)
    assert (s.port, s.candidates()) == (9200, [9200])
    (home / "server.json").write_text(json.dumps({"pid": os.getpid(), "port": 9201}, indent=1))
    assert transport.resolve_settings(env).port == 9201
    (home / "server.json").write_text('{"port": 9202}')  # no pid: trusted
    assert transport.resolve_settings(env).port == 9202
    s = transport.resolve_settings({**env, "MEMCLI_PORT": "9300", "MEMCLI_TOKEN": "envtok-long",
                                 "MEMCLI_HOOK_DEADLINE_MS": "700"})
    assert (s.candidates(), s.start_port, s.token, s.deadline_ms) == ([9202, 9300], 9300, "envtok-long", 700)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (home / "server.json").write_text(json.dumps({"pid": dead.pid, "port": 9203}))
    assert transport.resolve_settings(env).port is None  # left behind by a killed server: not trusted
    (home / "config.toml").write_text("[server\nport = ")  # broken TOML: defaults, no crash
    (home / "server.json").write_text("{not json")
    (home / "auth.json").write_text("{broken")
    s = transport.resolve_settings(env)
    assert (s.port, s.start_port, s.home_id, s.token) == (None, 8765, None, None)


def test_client_reads_the_auth_file_memcli_writes(tmp_path: Path) -> None:
    from memcli.home import load_or_create_auth

    auth = load_or_create_auth(tmp_path / "h")
    assert transport.read_auth(str(tmp_path / "h")) == (auth.home_id, auth.token)


def test_http_answer_parsing() -> None:
    ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-type: application/json\r\n\r\n{}"
    assert transport.parse_response(ok) == (200, b"{}")
    assert transport.parse_response(ok[:-1]) is None
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n3\r\n\":1\r\n1\r\n}\r\n0\r\n\r\n"
    assert transport.parse_response(chunked) == (200, b'{"a":1}')
    assert transport.parse_response(b"HTTP/1.1 204 No Content\r\n\r\n") == (204, b"")
    with pytest.raises(OSError):
        transport.parse_response(b"SSH-2.0-OpenSSH\r\n\r\n")


def test_hook_client_imports_only_the_standard_library() -> None:
    code = ("import sys; import memcli.hooks.client; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('lancedb','lance','numpy','pyarrow','typer',"
            "'rich','httpx','starlette','mcp','platformdirs','json','http','email','tomllib')]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


# --------------------------------------------------------------------------- plugin files
def test_plugin_manifests() -> None:
    plugin = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    assert plugin["name"] == "memcli" and plugin["version"] and plugin["description"]
    assert isinstance(plugin["author"], dict) and plugin["author"]["name"]
    assert isinstance(plugin["keywords"], list)
    assert "hooks" not in plugin, "hooks/hooks.json is auto-loaded; naming it in plugin.json loads it twice"
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    assert market["name"] and market["owner"]["name"]
    (entry,) = market["plugins"]
    assert entry["name"] == plugin["name"] and entry["source"] == "./" and entry["version"] == plugin["version"]
    assert sorted(p.name for p in (ROOT / ".claude-plugin").iterdir()) == ["marketplace.json", "plugin.json"]


def test_hooks_json() -> None:
    hooks = json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"}
    assert hooks["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"
    for event, groups in hooks.items():
        (group,) = groups
        (h,) = group["hooks"]
        assert h["type"] == "command"
        assert h["command"] == f'sh "${{CLAUDE_PLUGIN_ROOT}}/hooks/run.sh" {event}'
        assert isinstance(h.get("timeout", 1), int) and h.get("timeout", 1) <= 15  # seconds
    assert hooks["Stop"][0]["hooks"][0]["async"] is True
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["timeout"] <= 10


@pytest.mark.parametrize("skill", ["memory-recall", "memory-remember"])
def test_skills_have_frontmatter(skill: str) -> None:
    text = (ROOT / "skills" / skill / "SKILL.md").read_text()
    assert text.startswith("---\n")
    front = text.split("---\n")[1]
    fields = dict(line.split(":", 1) for line in front.strip().splitlines() if ":" in line)
    assert fields["name"].strip() == skill
    assert len(fields["description"].strip()) > 40
    assert "--json" in text and "memcli" in text


def _launcher(tmp_path: Path, event: str, path: str, stdin: bytes = b"{}",
              extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {"PATH": path, "HOME": str(tmp_path / "home"), "CLAUDE_PLUGIN_DATA": str(tmp_path / "plugin-data"),
           "MEMCLI_HOME": str(tmp_path / "memcli-home"), "MEMCLI_PORT": "9", **(extra or {})}
    return subprocess.run(["sh", str(ROOT / "hooks" / "run.sh"), event], input=stdin, env=env,
                          capture_output=True, timeout=30)


def test_launcher_without_memcli_says_so_once(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    first = _launcher(tmp_path, "SessionStart", "/usr/bin:/bin")
    assert first.returncode == 0
    msg = json.loads(first.stdout)
    assert "pipx install memcli" in msg["systemMessage"]
    again = _launcher(tmp_path, "UserPromptSubmit", "/usr/bin:/bin")
    assert again.returncode == 0 and again.stdout == b""
    stop = _launcher(tmp_path, "Stop", "/usr/bin:/bin")
    assert stop.returncode == 0 and stop.stdout == b""


def test_launcher_finds_the_python_of_memcli(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "memcli"
    script.write_text(f"#!{sys.executable}\nimport sys\n")  # a console script: only its shebang matters
    script.chmod(0o755)
    # port 9 (discard) is closed: the client finds no server; with an unknown event it only logs
    res = _launcher(tmp_path, "NoSuchEvent", f"{bindir}:/usr/bin:/bin")
    assert res.returncode == 0 and res.stdout == b"" and res.stderr == b""
    py, client_path = (tmp_path / "plugin-data" / "python").read_text().splitlines()
    assert py == sys.executable and client_path == client.__file__
    log = (tmp_path / "memcli-home" / "logs" / "hooks.log").read_text()
    assert "unknown hook event 'NoSuchEvent'" in log


def test_launcher_pip_long_path_form(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "memcli"
    script.write_text(f"#!/bin/sh\n'''exec' \"{sys.executable}\" \"$0\" \"$@\"\n' '''\nimport sys\n")
    script.chmod(0o755)
    res = _launcher(tmp_path, "NoSuchEvent", f"{bindir}:/usr/bin:/bin")
    assert res.returncode == 0 and res.stdout == b""
    assert (tmp_path / "plugin-data" / "python").read_text().splitlines()[0] == sys.executable


def test_memcli_python_override_and_stale_cache(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    data = tmp_path / "plugin-data"
    data.mkdir()
    (data / "python").write_text("/nonexistent/python\n")
    res = _launcher(tmp_path, "NoSuchEvent", "/usr/bin:/bin", extra={"MEMCLI_PYTHON": sys.executable})
    assert res.returncode == 0 and res.stdout == b""
    assert "unknown hook event" in (tmp_path / "memcli-home" / "logs" / "hooks.log").read_text()
    # a python without memcli in the cache: the launcher stays silent and forgets the cache
    (data / "python").write_text("/usr/bin/true\n") if os.path.exists("/usr/bin/true") else None
    res = _launcher(tmp_path, "Stop", "/usr/bin:/bin")
    assert res.returncode == 0 and res.stdout == b""
