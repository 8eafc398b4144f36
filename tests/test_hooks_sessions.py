"""A recorded Claude Code session replayed through the plugin's launcher (`sh hooks/run.sh`) against a real
`memcli serve`: the Stop hook keeps the turns a teammate would keep and none of the chatter.

The sessions and their keep/skip labels are bench/data/sessions (s01: English, billing-api; s05: 简体中文,
pipeline). The figures over all 34 sessions come from `python bench/sessions.py`."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_hooks_e2e import Served, kill_spawned, serve

from memcli.config import load_config
from memcli.hooks.capture import turn_key
from memcli.memory.service import MemoryService
from memcli.redact import redact

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from sessions import Session, load  # noqa: E402 - the bench's reader of the labelled transcripts

pytestmark = pytest.mark.slow

# what each kept memory must say (the fact, in the words of the turn)
MUST_SAY = {"s01#2": "5433", "s01#4": "--reuse-db", "s01#6": "VAT_RATES_PATH", "s01#7": "mock",
            "s01#9": "uv", "s05#2": "02:30", "s05#3": "snowflake_raw_loader", "s05#4": "row_number",
            "s05#7": "data-eng", "s05#8": "TRANSFORM_WH"}


def run_sh(event: str, payload: dict[str, Any], env: dict[str, str]) -> str:
    import subprocess

    p = subprocess.run(["sh", str(ROOT / "hooks" / "run.sh"), event], input=json.dumps(payload).encode(), env=env,
                       capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stderr == b"", (event, p.returncode, p.stderr)
    return p.stdout.decode()


def journal(home: Path) -> list[dict[str, Any]]:
    path = home / "logs" / "capture.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def replay(s: Session, srv: Served, env: dict[str, str], tmp: Path) -> dict[str, dict[str, Any]]:
    """Every turn of ``s`` as Claude Code drives the plugin; the capture decision of each, by turn."""
    base = {"session_id": s.session_id, "cwd": s.cwd}
    assert run_sh("SessionStart", {**base, "hook_event_name": "SessionStart", "source": "startup",
                                   "transcript_path": str(tmp / "none.jsonl")}, env) == ""  # nothing stored yet
    decisions = {}
    for t in s.turns:
        path = tmp / f"{s.tag}-{t.n}.jsonl"
        path.write_text("\n".join(s.lines[: t.last_line + 1]) + "\n", encoding="utf-8")
        run_sh("UserPromptSubmit", {**base, "hook_event_name": "UserPromptSubmit", "transcript_path": str(path),
                                    "prompt": t.prompt}, env)
        out = run_sh("Stop", {**base, "hook_event_name": "Stop", "transcript_path": str(path), "prompt": t.prompt,
                              "last_assistant_message": t.reply, "stop_hook_active": False}, env)
        assert out == ""
        key = turn_key(s.session_id, redact(t.prompt), redact(t.reply))  # the hook sees the payload redacted
        deadline = time.monotonic() + 30
        while not (found := [d for d in journal(srv.home) if d["turn_key"] == key]):
            assert time.monotonic() < deadline, f"no capture decision for {t.ref}"
            time.sleep(0.05)
        decisions[t.ref] = found[0]
    run_sh("SessionEnd", {**base, "hook_event_name": "SessionEnd", "reason": "other",
                          "transcript_path": str(tmp / "none.jsonl")}, env)
    return decisions


@pytest.mark.parametrize("tag", ["s01", "s05"])
def test_a_replayed_session_keeps_its_facts_and_not_its_chatter(home: Path, tmp_path: Path, tag: str) -> None:
    sessions, _ = load()
    (s,) = [x for x in sessions if x.tag == tag]
    srv = serve(home)
    env = {**srv.env, "CLAUDE_PLUGIN_DATA": str(tmp_path / "plugin-data"), "MEMCLI_PYTHON": sys.executable}
    try:
        decisions = replay(s, srv, env, tmp_path)
    finally:
        srv.stop()
        kill_spawned(home)
    svc = MemoryService.open(load_config(home))
    try:
        mems = {m.id: m for m in svc.list(tags=["turn"], limit=100)}
    finally:
        svc.close()
    by_turn = {ref: d for ref, d in decisions.items()}
    stored = {d["memory_id"]: ref for ref, d in by_turn.items() if d["status"] == "stored"}
    assert set(stored) == set(mems)  # the journal tells every stored memory
    kinds = {t.ref: t for t in s.turns}
    for ref, d in by_turn.items():
        t = kinds[ref]
        if t.label == "skip":
            assert d["status"] == "skipped", (ref, t.kind, t.prompt[:60], d)
            assert d["reason"], ref  # and says why
        else:  # kept: stored, or the same fact as a memory of another keep turn
            assert d["status"] in ("stored", "duplicate"), (ref, t.kind, t.prompt[:60], d)
            assert kinds[stored[d["memory_id"]]].label == "keep", (ref, d)
    for ref, word in MUST_SAY.items():
        if ref.startswith(tag):
            mem = mems[by_turn[ref]["memory_id"]]
            assert word in mem.content, (ref, mem.content)
            assert mem.project == Path(s.cwd).name and mem.metadata["session_id"] == s.session_id
    # a greeting, a command and a tool's output were among the skipped turns
    skipped_kinds = {kinds[r].kind for r, d in by_turn.items() if d["status"] == "skipped"}
    assert {"greeting", "command"} <= skipped_kinds
