"""`memcli setup` for OpenClaw's memory plugin, below the real-OpenClaw test (tests/test_openclaw_e2e.py): what
--uninstall puts back when the user edited openclaw.json since setup, when setup installs or leaves the plugin
alone, and the Stop route's `agent` (the scope a turn posted by another agent is stored under)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memcli.config import load_config
from memcli.hooks.runtime import HookRuntime
from memcli.memory.service import MemoryService
from memcli.setup import openclaw as oc
from memcli.setup.agents import Machine
from memcli.setup.core import SetupOptions, plan_install

BEFORE = {"agents": {"defaults": {"workspace": "/w"}}, "plugins": {"slots": {"memory": "memory-lancedb"},
                                                                      "entries": {"memory-lancedb": {"enabled": True}}}}
SOURCE = "/opt/memcli/openclaw"


def after_install(before: dict) -> dict:
    """openclaw.json as `openclaw plugins install --link` + `config set` leave it (seen with 2026.9.6)."""
    doc = json.loads(json.dumps(before))
    plugins = doc["plugins"]
    plugins["load"] = {"paths": [SOURCE]}
    plugins["entries"]["memory-lancedb"]["enabled"] = False  # the slot's previous owner is switched off
    plugins["entries"]["memcli"] = oc.wanted_entry({"command": ["/venv/bin/memcli"]})
    plugins["slots"]["memory"] = "memcli"
    doc["meta"] = {"lastTouchedVersion": "2026.9.6"}
    return doc


def entry(previous: str, written: str) -> dict:
    return {"agent": "openclaw", "kind": oc.KIND, "file": "/x/openclaw.json", "plugin_dir": SOURCE,
            "previous": previous, "written": written}


def test_unchanged_since_setup_gets_the_exact_old_bytes_back() -> None:
    previous = json.dumps(BEFORE, separators=(",", ":"))  # no newline, compact: not how OpenClaw writes
    written = json.dumps(after_install(BEFORE), indent=2) + "\n"
    text, exact = oc.restored_text(entry(previous, written), written, Path("/x/openclaw.json"))
    assert exact and text == previous


def test_no_file_before_setup_means_no_file_after_uninstall() -> None:
    written = json.dumps(after_install({"plugins": {"slots": {}, "entries": {"memory-lancedb": {}}}}), indent=2)
    assert oc.restored_text(entry(None, written), written, Path("/x/openclaw.json")) == (None, True)  # type: ignore[arg-type]


def test_edited_since_setup_keeps_the_users_changes_and_undoes_memclis() -> None:
    previous = json.dumps(BEFORE, indent=2)
    installed = after_install(BEFORE)
    written = json.dumps(installed, indent=2)
    now = json.loads(written)
    now["agents"]["defaults"]["workspace"] = "/new-workspace"  # the user's edits after setup
    now["plugins"]["load"]["paths"].append("/home/me/other-plugin")
    now["plugins"]["entries"]["memcli"]["config"]["deadlineMs"] = 900
    text, exact = oc.restored_text(entry(previous, written), json.dumps(now, indent=2), Path("/x/openclaw.json"))
    assert not exact
    doc = json.loads(text)
    assert doc["agents"]["defaults"]["workspace"] == "/new-workspace"
    assert doc["plugins"]["load"]["paths"] == ["/home/me/other-plugin"]
    assert doc["plugins"]["slots"]["memory"] == "memory-lancedb"
    assert doc["plugins"]["entries"] == {"memory-lancedb": {"enabled": True}}  # memcli's entry gone, old owner on
    assert "meta" not in doc


def test_edited_slot_since_setup_is_left_to_the_user() -> None:
    written = json.dumps(after_install(BEFORE), indent=2)
    now = json.loads(written)
    now["plugins"]["slots"]["memory"] = "memory-core"  # the user moved the slot on themselves
    text, _ = oc.restored_text(entry(json.dumps(BEFORE), written), json.dumps(now), Path("/x/openclaw.json"))
    assert json.loads(text)["plugins"]["slots"]["memory"] == "memory-core"


def test_installed_checks_every_part(tmp_path: Path) -> None:
    cfg = {"command": ["/venv/bin/memcli"]}
    doc = after_install(BEFORE)
    path = tmp_path / "openclaw.json"
    assert oc.installed(json.dumps(doc), path, Path(SOURCE), cfg)
    doc["plugins"]["entries"]["memcli"]["config"]["deadlineMs"] = 900  # the user's own settings are fine
    assert oc.installed(json.dumps(doc), path, Path(SOURCE), cfg)
    for breaks in (lambda d: d["plugins"]["slots"].update(memory="memory-core"),
                   lambda d: d["plugins"]["entries"]["memcli"]["hooks"].update(allowConversationAccess=False),
                   lambda d: d["plugins"]["load"].update(paths=[]),
                   lambda d: d["plugins"]["entries"]["memcli"]["config"].update(command=["/old/memcli"])):
        broken = json.loads(json.dumps(doc))
        breaks(broken)
        assert not oc.installed(json.dumps(broken), path, Path(SOURCE), cfg)
    assert not oc.installed("{ // JSON5\n}", path, Path(SOURCE), cfg)  # unknown: run OpenClaw's idempotent CLI


def machine(tmp_path: Path, which: dict[str, str]) -> Machine:
    home = tmp_path / "memcli-home"
    return Machine(user_home=tmp_path / "user", memcli_home=home, default_memcli_home=tmp_path / "default-home",
                   python="/venv/bin/python", memcli=["/venv/bin/memcli"],
                   env={"OPENCLAW_CONFIG_PATH": str(tmp_path / "oc" / "openclaw.json")}, which=which.get)


def test_setup_plans_the_plugin_with_openclaws_cli_and_shows_what_changes(tmp_path: Path) -> None:
    m = machine(tmp_path, {"openclaw": "/usr/bin/openclaw"})
    (tmp_path / "oc").mkdir()
    (tmp_path / "oc" / "openclaw.json").write_text(json.dumps(BEFORE))
    plan = plan_install(m, SetupOptions(agents=["openclaw"]))
    argvs = [s.argv for s in plan.commands]
    assert argvs[0][:4] == ["/usr/bin/openclaw", "plugins", "install", "--link"]
    assert "--accept-capabilities" in argvs[0] and Path(argvs[0][4], "openclaw.plugin.json").is_file()
    assert argvs[1][:4] == ["/usr/bin/openclaw", "config", "set", "plugins.entries.memcli"]
    assert json.loads(argvs[1][4]) == oc.wanted_entry({"command": ["/venv/bin/memcli"], "home": str(m.memcli_home)})
    assert not plan.files  # OpenClaw's CLI edits its own file; setup only records it
    assert any("'memory-lancedb'" in n and "memory slot" in n for n in plan.notes["openclaw"])
    (recorded,) = [e for e in plan.entries if e["kind"] == oc.KIND]
    assert recorded["previous"] == json.dumps(BEFORE)


def test_setup_without_openclaws_cli_keeps_the_mcp_entry(tmp_path: Path) -> None:
    plan = plan_install(machine(tmp_path, {}), SetupOptions(agents=["openclaw"]))
    assert not plan.commands
    (change,) = plan.files
    assert json.loads(change.after or "")["mcp"]["servers"]["memcli"]["command"] == "/venv/bin/memcli"
    assert any("`openclaw` CLI" in n for n in plan.notes["openclaw"])


@pytest.mark.parametrize(("agent", "scope"), [(None, "agent:claude-code"), ("openclaw", "agent:openclaw"),
                                              ("openclaw-work", "agent:openclaw-work")])
def test_stop_payload_names_the_agent(home: Path, agent: str | None, scope: str) -> None:
    config = load_config(home)
    svc = MemoryService.open(config)
    try:
        rt = HookRuntime(lambda: svc, config)
        payload = {"session_id": f"s-{agent}", "cwd": str(home), "prompt": "Why did the nightly export job move?",
                   "last_assistant_message": "Because the backup window overlapped it; it now starts at 04:30 UTC "
                                             "and finishes before the morning reports."}
        if agent:
            payload["agent"] = agent
        rt.handle("Stop", payload)
        rt.drain()
        (mem,) = svc.list(tags=["turn"])
        assert mem.scope == scope
    finally:
        svc.close()


def test_stop_payload_with_a_bad_agent_name_is_not_stored(home: Path) -> None:
    config = load_config(home)
    svc = MemoryService.open(config)
    try:
        rt = HookRuntime(lambda: svc, config)
        rt.handle("Stop", {"session_id": "bad", "agent": "../../etc x", "prompt": "Why did the export job move?",
                           "last_assistant_message": "Because the backup window overlapped it; it now starts at 04:30."})
        rt.drain()
        assert svc.list(tags=["turn"]) == []
        assert list((home / "spool" / "failed").glob("*.json"))  # kept aside, not lost
    finally:
        svc.close()
