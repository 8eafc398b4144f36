"""Scores that mean something (issue 28), with the real bundled embedder: on a store of four engineering facts
an unrelated question's best hit scores well under 0.5 and an answering memory 0.5 or more — through the
core, the CLI (`recall --json`), REST (/api/search), an MCP client session (the recall tool) and the prompt
hook run as Claude Code runs it (`sh hooks/run.sh UserPromptSubmit`), which injects nothing for it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _memcli_server import ServerProc, start_server
from test_mcp_clients import call, http_session

from memcli.config import load_config
from memcli.memory.service import MemoryService, NewMemory

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]

FACTS = ["The billing service uses PostgreSQL 16 for its JSONB support",
         "Deploys run through GitHub Actions when a v* tag is pushed",
         "Redis is only a cache for session tokens, with a 15 minute TTL",
         "The public API allows 100 requests per minute per token"]
NONSENSE = "what is the capital of France"
ANSWERED = "which database does the billing service use?"


@pytest.fixture
def facts_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMCLI_EMBEDDER", "local")
    svc = MemoryService.open(load_config(home))
    svc.remember_many([NewMemory(content=t) for t in FACTS])
    svc.close()
    return home


@pytest.fixture
def served(facts_home: Path, memcli_bin: str, subprocess_env: dict[str, str]) -> Iterator[ServerProc]:
    srv = start_server(memcli_bin, {**subprocess_env, "MEMCLI_EMBEDDER": "local"}, facts_home)
    yield srv
    srv.stop()


def check(nonsense: list[dict[str, Any]], answered: list[dict[str, Any]]) -> None:
    """The contract on what a face returned for the two questions."""
    assert nonsense and nonsense[0]["score"] < 0.5, nonsense  # rank fusion alone gave it ~0.96
    assert answered[0]["content"] == FACTS[0] and answered[0]["score"] >= 0.5, answered
    # best-first: a lower-ranked hit never shows a higher score
    assert all(a["score"] >= b["score"] for a, b in zip(answered, answered[1:]))


def test_core_scores_and_min_score(facts_home: Path) -> None:
    svc = MemoryService.open(load_config(facts_home))
    try:
        check([h.item() for h in svc.recall(NONSENSE)], [h.item() for h in svc.recall(ANSWERED)])
        assert svc.recall(NONSENSE, min_score=0.5) == []
        assert [h.memory.content for h in svc.recall(ANSWERED, min_score=0.5)] == [FACTS[0]]
        ex = svc.recall(ANSWERED, explain=True)[0].explain
        # explain says what the score is made of, and what rank fusion alone would have said
        assert ex and ex["relevance"] >= 0.5 and 0 <= ex["fused"] <= 1 and ex["baseline_cosine"] is not None
    finally:
        svc.close()


def test_cli_recall_json(facts_home: Path, memcli_bin: str, subprocess_env: dict[str, str]) -> None:
    def recall(q: str, *extra: str) -> list[dict[str, Any]]:
        p = subprocess.run([memcli_bin, "recall", q, "--json", *extra], env={**subprocess_env,
                           "MEMCLI_EMBEDDER": "local"}, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    check(recall(NONSENSE), recall(ANSWERED))
    assert recall(NONSENSE, "--min-score", "0.5") == []


def test_rest_mcp_and_the_prompt_hook(served: ServerProc, tmp_path: Path) -> None:
    with served.client(timeout=60) as api:
        def search(q: str, **params: Any) -> list[dict[str, Any]]:
            r = api.get("/api/search", params={"q": q, **params})
            assert r.status_code == 200, r.text
            return r.json()

        check(search(NONSENSE), search(ANSWERED))
        assert search(NONSENSE, min_score=0.5) == []

    async def mcp() -> tuple[Any, Any, Any]:
        async with http_session(served.url + "/mcp", served.headers) as session:
            return (await call(session, "recall", query=NONSENSE), await call(session, "recall", query=ANSWERED),
                    await call(session, "recall", query=NONSENSE, min_score=0.5))

    nonsense, answered, filtered = anyio.run(mcp)
    check(nonsense, answered)
    assert filtered == []

    # the hook's gate reads the same score: the nonsense prompt injects nothing, the answered one its memory
    cwd = tmp_path / "work"
    cwd.mkdir()
    env = {**served_env(served), "CLAUDE_PLUGIN_DATA": str(tmp_path / "plugin-data"), "MEMCLI_PYTHON": sys.executable}

    def hook(prompt: str) -> str:
        payload = {"session_id": f"s-{len(prompt)}", "transcript_path": str(cwd / "t.jsonl"), "cwd": str(cwd),
                   "hook_event_name": "UserPromptSubmit", "prompt": prompt}
        p = subprocess.run(["sh", str(ROOT / "hooks" / "run.sh"), "UserPromptSubmit"], env=env,
                           input=json.dumps(payload).encode(), capture_output=True, timeout=60)
        assert p.returncode == 0 and p.stderr == b""
        return p.stdout.decode()

    assert hook(NONSENSE + "?") == ""
    assert "PostgreSQL 16" in json.loads(hook(ANSWERED))["hookSpecificOutput"]["additionalContext"]


def served_env(srv: ServerProc) -> dict[str, str]:
    import os

    return {**os.environ, "MEMCLI_HOME": str(srv.home), "MEMCLI_PORT": str(srv.port), "MEMCLI_EMBEDDER": "local"}
