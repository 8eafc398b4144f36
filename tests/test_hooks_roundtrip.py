"""What one session learned reaches the next: a turn captured by the Stop hook in a small, fresh store is
injected by the next session's UserPromptSubmit for a paraphrased prompt — real hook processes, a real
`memcli serve`, the real bundled embedder (the relevance gate is calibrated for it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hooks_e2e import (
    kill_spawned,
    payload,
    project_dir,
    run_hook,
    serve,
    turns,
    wait_for,
)

from memcli.config import load_config
from memcli.memory.service import MemoryService

pytestmark = pytest.mark.slow

NOTES = ["The frontend is written in TypeScript with React 18.", "Alice owns the on-call rota this month.",
         "The CI pipeline caches pip downloads between runs.",
         "Grafana dashboards show the p99 latency of every endpoint."]


def test_stop_then_next_session_prompt_on_a_five_memory_store(home: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCLI_EMBEDDER", "local")
    svc = MemoryService.open(load_config(home))
    for note in NOTES:
        svc.remember(note)
    svc.close()
    work = project_dir(tmp_path, "shop")
    srv = serve(home)
    try:
        reply = ("I checked the release workflow and the team calendar. Releases go out on Tuesdays: the release "
                 "workflow runs on the v* tag that the release manager pushes every Tuesday morning after the "
                 "standup. Hotfixes can go out any day.")
        h = run_hook("Stop", payload("Stop", "monday", work, stop_hook_active=False,
                                     prompt="when do we ship? I keep forgetting the schedule",
                                     last_assistant_message=reply), srv.env)
        assert h.rc == 0 and h.out == "" and h.err == ""
        (mem,) = wait_for(lambda: turns(home))
        assert "Releases go out on Tuesdays" in mem.content
        # a new session, a paraphrase: the turn is injected
        h = run_hook("UserPromptSubmit", payload("UserPromptSubmit", "tuesday", work,
                                                 prompt="on which weekday do releases go out?"), srv.env)
        assert h.rc == 0 and "Releases go out on Tuesdays" in h.context, h.out
        # and a short fact stored by another agent, asked for in other words
        h = run_hook("UserPromptSubmit", payload("UserPromptSubmit", "tuesday", work, prompt="who is on call?"),
                     srv.env)
        assert "Alice owns the on-call rota" in h.context, h.out
        # an unrelated prompt injects nothing
        h = run_hook("UserPromptSubmit", payload("UserPromptSubmit", "tuesday", work,
                                                 prompt="write a haiku about autumn rain"), srv.env)
        assert h.rc == 0 and h.out == ""
    finally:
        srv.stop()
        kill_spawned(home)
