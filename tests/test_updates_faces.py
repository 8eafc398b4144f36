"""Updates on every face (issue 28): the CLI (a real `memcli` process), REST (a real `memcli serve`), MCP (the
official SDK's stdio client) and the Claude Code hooks through `hooks/run.sh` — a change is linked and shown, a
look-alike is left alone, A-B-A makes the last current, forgetting the newer clears the older, `as_of` recalls
what was true then, and the hooks never show an outdated memory without the one that replaced it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from _memcli_server import start_server
from test_hooks_e2e import kill_spawned, payload, project_dir, serve
from test_mcp_clients import call, stdio_session

from memcli.config import load_config
from memcli.memory.service import MemoryService

DAY = 86_400_000
OLD, NEW = "The docs site is built with MkDocs.", "We moved the docs site to Docusaurus."


def cli(bin_: str, env: dict[str, str], *args: str) -> Any:
    p = subprocess.run([bin_, *args, "--json"], env={**env, "MEMCLI_AUTOSTART": "0"}, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def seed(home: Path, texts: list[tuple[str, float]]) -> list[str]:
    """Remember each (text, days ago) in order, as one would have over time; their ids."""
    svc = MemoryService.open(load_config(home))
    try:
        now = int(time.time() * 1000)
        return [svc.remember(t, created_at=int(now - d * DAY)).memory_id for t, d in texts]
    finally:
        svc.close()


def test_cli_links_shows_and_clears_a_change(memcli_bin: str, subprocess_env: dict[str, str]) -> None:
    old = cli(memcli_bin, subprocess_env, "remember", OLD)["memory_id"]
    other = cli(memcli_bin, subprocess_env, "remember", "The staging database is PostgreSQL 13.")["memory_id"]
    new = cli(memcli_bin, subprocess_env, "remember", NEW)["memory_id"]
    cli(memcli_bin, subprocess_env, "remember", "The production database is PostgreSQL 15.")
    assert cli(memcli_bin, subprocess_env, "get", old)["outdated_by"] == new
    assert cli(memcli_bin, subprocess_env, "get", new)["updates"] == [old]
    assert cli(memcli_bin, subprocess_env, "get", other)["outdated_by"] is None  # the look-alike
    hits = cli(memcli_bin, subprocess_env, "recall", "what builds the docs site", "-k", "3")
    ids = [h["memory_id"] for h in hits]
    assert ids.index(new) + 1 == ids.index(old) and hits[ids.index(old)]["outdated_by"] == new
    events = cli(memcli_bin, subprocess_env, "history", old)
    assert events[-1]["action"] == "outdated" and new in events[-1]["note"]
    listed = {m["memory_id"]: m for m in cli(memcli_bin, subprocess_env, "list")}
    assert listed[old]["outdated_by"] == new
    cli(memcli_bin, subprocess_env, "forget", new)
    assert cli(memcli_bin, subprocess_env, "get", old)["outdated_by"] is None


def test_cli_recall_as_of_and_a_change_back(memcli_bin: str, subprocess_env: dict[str, str], home: Path) -> None:
    a1, b, a2 = seed(home, [("Public sign-ups are enabled.", 30), ("Public sign-ups are disabled.", 10),
                            ("Public sign-ups are enabled.", 1)])
    then = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 20 * 86400))
    past = cli(memcli_bin, subprocess_env, "recall", "public sign-ups", "--as-of", then)
    assert [h["memory_id"] for h in past] == [a1] and past[0]["outdated_by"] is None
    mid = cli(memcli_bin, subprocess_env, "recall", "public sign-ups", "--as-of", "5d")
    assert [h["memory_id"] for h in mid][:2] == [b, a1] and mid[0]["outdated_by"] is None
    now = cli(memcli_bin, subprocess_env, "recall", "public sign-ups")
    assert [h["memory_id"] for h in now] == [a2, b, a1]
    p = subprocess.run([memcli_bin, "recall", "x", "--as-of", "not a date", "--json"],
                       env={**subprocess_env, "MEMCLI_AUTOSTART": "0"}, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "invalid time" in (p.stdout + p.stderr)


@pytest.mark.slow
def test_rest_links_shows_as_of_and_forget(memcli_bin: str, subprocess_env: dict[str, str], home: Path) -> None:
    old, look = seed(home, [(OLD, 20), ("The staging database is PostgreSQL 13.", 20)])
    srv = start_server(memcli_bin, subprocess_env, home)
    try:
        with srv.client(timeout=30) as c:
            r = c.post("/api/memories", json={"content": NEW})
            assert r.status_code in (200, 201), r.text
            new = r.json()["memory_id"]
            c.post("/api/memories", json={"content": "The production database is PostgreSQL 15."})
            assert c.get(f"/api/memories/{old}").json()["outdated_by"] == new
            assert c.get(f"/api/memories/{new}").json()["updates"] == [old]
            assert c.get(f"/api/memories/{look}").json()["outdated_by"] is None
            hist = c.get(f"/api/memories/{old}/history").json()
            assert hist[-1]["action"] == "outdated"
            hits = c.get("/api/search", params={"q": "what builds the docs site", "top_k": 3}).json()
            assert [h["memory_id"] for h in hits][:2] == [new, old]
            then = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 10 * 86400))
            past = c.get("/api/search", params={"q": "what builds the docs site", "as_of": then}).json()
            assert old in [h["memory_id"] for h in past] and new not in [h["memory_id"] for h in past]
            assert c.get("/api/search", params={"q": "x", "as_of": "soon"}).status_code == 422  # a ValidationError
            assert c.delete(f"/api/memories/{new}").status_code == 200
            assert c.get(f"/api/memories/{old}").json()["outdated_by"] is None
    finally:
        srv.stop()


@pytest.mark.slow
def test_mcp_links_shows_and_recalls_as_of(memcli_bin: str, subprocess_env: dict[str, str], home: Path) -> None:
    (old,) = seed(home, [(OLD, 20)])

    async def main() -> None:
        async with stdio_session(memcli_bin, subprocess_env) as s:
            new = (await call(s, "remember", content=NEW))["memory_id"]
            assert (await call(s, "get", memory_id=old))["outdated_by"] == new
            hits = (await call(s, "recall", query="what builds the docs site", top_k=3))
            assert [h["memory_id"] for h in hits][:2] == [new, old]
            then = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 10 * 86400))
            past = (await call(s, "recall", query="what builds the docs site", as_of=then))
            assert [h["memory_id"] for h in past] == [old] and past[0]["outdated_by"] is None
            await call(s, "forget", memory_id=new)
            assert (await call(s, "get", memory_id=old))["outdated_by"] is None

    anyio.run(main)


def _short(mid: str) -> str:
    from memcli.models import short_id

    return short_id(mid)


def test_hooks_never_show_an_outdated_memory_without_its_replacement(home: Path, tmp_path: Path) -> None:
    work = project_dir(tmp_path, "docs")
    old, new = seed(home, [(OLD, 30), (NEW, 1)])
    svc = MemoryService.open(load_config(home))
    for i in range(20):
        svc.remember(f"unrelated note {i} about the release checklist item {i * 3}")
    svc.close()
    srv = serve(home)
    root = Path(__file__).resolve().parents[1]
    env = {**srv.env, "CLAUDE_PLUGIN_DATA": str(tmp_path / "plugin-data"), "MEMCLI_PYTHON": sys.executable}
    try:
        def hook(event: str, **extra: Any) -> str:
            p = subprocess.run(["sh", str(root / "hooks" / "run.sh"), event], env=env, capture_output=True,
                               input=json.dumps(payload(event, "s-upd", work, **extra)).encode(), timeout=60)
            assert p.returncode == 0 and p.stderr == b""
            return json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"] if p.stdout.strip() else ""

        start = hook("SessionStart", source="startup")
        assert _short(new) in start and _short(old) not in start  # the digest shows what is current
        for prompt in ("is the docs site built with MkDocs?", "what builds the docs site?"):
            text = hook("UserPromptSubmit", prompt=prompt, session_id=f"s-{prompt[:8]}")
            if _short(old) in text:
                assert _short(new) in text and f"outdated by {_short(new)}" in text
        text = hook("UserPromptSubmit", prompt="what builds the docs site?", session_id="s-fresh")
        assert _short(new) in text
    finally:
        srv.stop()
        kill_spawned(home)
