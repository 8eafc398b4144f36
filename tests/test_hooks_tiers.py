"""The prompt hook's two tiers: a strong match goes in full, the next ones as one index line each (id, the
memory's start, age, author) within a token budget, with how to open one; an off-topic prompt gets nothing or
only index lines within that budget; an index line's id opens the memory through `memcli get` and MCP `get`."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path

import pytest
from test_mcp_clients import call, stdio_session

from memcli.distill.condense import estimate_tokens
from memcli.hooks.inject import compose, prompt_context
from memcli.hooks.query import hook_query
from memcli.hooks.render import INDEX_TITLE
from memcli.memory.service import MemoryService, NewMemory

FACTS = [
    "The billing service stores invoices in PostgreSQL 16; the primary listens on port 5433.",
    "Billing invoices are rendered to PDF by the invoice-pdf worker using WeasyPrint.",
    "The mobile app's feature flags come from Firebase Remote Config.",
    "On-call rotation for the data platform is managed in PagerDuty schedule DP-PRIMARY.",
    "The marketing site is a static Astro build deployed to Cloudflare Pages.",
]
SETTINGS = {"budget": 3000, "top_k": 5, "min_relevance": 0.68, "index_min": 0.50, "index_top_k": 5,
            "index_budget": 110}


def _ids(text: str | None) -> list[str]:
    return re.findall(r"- \[([0-9a-f]{8})\]", text or "")


@pytest.mark.slow
def test_five_memories_strong_in_full_weaker_on_an_index_line_offtopic_quiet(real_service: MemoryService) -> None:
    svc = real_service
    ids = [r.memory_id for r in svc.remember_many([NewMemory(content=f, agent="codex") for f in FACTS])]
    text, full, listed = prompt_context(svc, "which port does the billing postgres primary listen on?",
                                        project=None, **SETTINGS)
    assert full[:1] == [ids[0]] and ids[0] not in listed
    assert text and FACTS[0] in text  # in full
    # the other billing memory is related, not the answer: an index line at most, never in full
    assert ids[1] not in full
    if listed:
        lines = text.split(INDEX_TITLE)[1].strip().splitlines()
        assert estimate_tokens("\n".join(lines[:-1])) <= SETTINGS["index_budget"]
        assert all(len(line) < 150 and "codex" in line for line in lines if line.startswith("- ["))
    quiet, qfull, qlisted = prompt_context(svc, "what's a good recipe for banana bread?", project=None, **SETTINGS)
    assert qfull == []
    assert quiet is None or estimate_tokens(quiet) <= SETTINGS["index_budget"] + 60


def test_compose_tiers_and_budget(service: MemoryService) -> None:
    """The composition itself, with relevances set by hand: full ≥ min_relevance, index ≥ index_min, token budget."""
    from memcli.hooks.inject import Scored
    from memcli.models import RecallHit

    mems = [service.get(r.memory_id) for r in service.remember_many(
        [NewMemory(content=f"fact number {i}: " + "word " * 40, agent="codex") for i in range(8)])]
    scored = [Scored(RecallHit(memory=m, score=1 - i / 10), rel, None, None)
              for i, (m, rel) in enumerate(zip(mems, [0.9, 0.6, 0.5, 0.45, 0.4, 0.35, 0.2, 0.1]))]
    text, full, listed = compose(scored, project=None, budget=3000, top_k=5, min_relevance=0.55, index_min=0.30,
                                 index_top_k=5, index_budget=80)
    assert full == [mems[0].id, mems[1].id]
    assert listed and set(listed) <= {m.id for m in mems[2:6]} and listed == [m.id for m in mems[2:2 + len(listed)]]
    index_part = text.split(INDEX_TITLE)[1]
    assert estimate_tokens(index_part) <= 80 + 10 and "memcli get" in text
    assert all(len(line.split("] ", 1)[1].split(" (")[0]) <= 91 for line in index_part.splitlines() if "- [" in line)
    none = compose(scored[6:], project=None, budget=3000, top_k=5, min_relevance=0.55, index_min=0.30,
                   index_top_k=5, index_budget=80)
    assert none == (None, [], [])
    only_index = compose(scored[2:], project=None, budget=3000, top_k=5, min_relevance=0.55, index_min=0.30,
                         index_top_k=2, index_budget=200)
    assert only_index[1] == [] and len(only_index[2]) == 2 and "notes that may relate" in only_index[0]
    # an index-only block says how to open a line in its one header line (no second title line)
    assert "memcli get <id>" in only_index[0] and INDEX_TITLE not in only_index[0]
    assert len(only_index[0].splitlines()) == 3 + 2  # the tags, the header line, two index lines


def test_a_prompt_plainly_about_the_store_gets_more_index_lines(service: MemoryService) -> None:
    """Captured turns make long index lines (~40 tokens): index_budget holds two. When the best candidate is a
    strong match (relevance ≥ strong_min), the lines may take strong_budget tokens; otherwise they may not."""
    from memcli.config import HooksConfig
    from memcli.hooks.inject import Scored, tiers
    from memcli.hooks.render import index_line
    from memcli.models import RecallHit, now_ms

    turns = [f"User: why does deploy step {i} of the ingest rollout wait so long? Assistant: because the canary "
             f"analysis of step {i} runs for ten minutes before the next weight is set" for i in range(6)]
    mems = [service.get(r.memory_id) for r in service.remember_many([NewMemory(content=t, agent="claude-code")
                                                                      for t in turns])]
    h = HooksConfig()
    cost = max(estimate_tokens(index_line(m, now_ms())) for m in mems)  # as a captured turn's line: 43
    assert 2 * cost <= h.index_budget < 3 * cost and 4 * cost <= h.index_strong_budget and h.index_top_k == 4

    def listed(best: float) -> list[str]:
        scored = [Scored(RecallHit(memory=m, score=1 - i / 10), rel, None, None)
                  for i, (m, rel) in enumerate(zip(mems, [best, 0.45, 0.4, 0.35, 0.32, 0.31]))]
        return compose(scored, project=None, **tiers(h))[2]

    assert listed(h.index_strong_score) == [m.id for m in mems[:4]]  # nothing in full: four index lines
    weak = listed(h.index_strong_score - 0.01)
    assert weak == [m.id for m in mems[:len(weak)]] and len(weak) == 2
    off = compose([Scored(RecallHit(memory=m, score=0.5), 0.6, None, None) for m in mems], project=None,
                  **{**tiers(h), "index_budget": 0})
    assert off == (None, [], [])  # index_budget = 0 still turns the index tier off, strong or not


def test_a_1000_memory_store_and_the_index_id_opens_through_cli_and_mcp(
        service: MemoryService, memcli_bin: str, subprocess_env: dict[str, str]) -> None:
    svc = service  # the hash embedder: shared words are the evidence
    svc.remember_many([NewMemory(content=f"routine note {i} about service {i % 37} and queue {i % 11}")
                       for i in range(995)])
    ids = [r.memory_id for r in svc.remember_many([NewMemory(content=f, agent="codex") for f in FACTS])]
    text, full, listed = prompt_context(svc, "billing invoices PostgreSQL primary port", project=None,
                                        budget=3000, top_k=5, min_relevance=0.55, index_min=0.05, index_top_k=5,
                                        index_budget=110)
    shown = full + listed
    assert ids[0] in shown and listed, text
    short = _ids(text)[-1]
    assert any(i.endswith(short) or i.replace("-", "").endswith(short) for i in listed)
    got = subprocess.run([memcli_bin, "get", short, "--json"], env=subprocess_env, capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
    opened = json.loads(got.stdout)
    assert opened["memory_id"] in listed

    async def via_mcp() -> dict:
        async with stdio_session(memcli_bin, subprocess_env) as session:
            return await call(session, "get", memory_id=short)

    assert asyncio.run(via_mcp())["memory_id"] == opened["memory_id"]


def test_the_query_of_a_long_noisy_prompt_is_its_question_and_identifiers() -> None:
    prompt = ("I'm getting this when I run the migration:\n\nTraceback (most recent call last):\n"
              '  File "manage.py", line 22, in <module>\n    main()\n'
              "django.db.utils.OperationalError: could not connect to server: Connection refused\n"
              '    Is the server running on host "localhost" (127.0.0.1) and accepting connections on port 5433?\n\n'
              "which port does the billing postgres listen on locally? I thought it was 5432.")
    prompt = prompt.replace("Traceback (most recent call last):\n", "Traceback (most recent call last):\n" + "    (a frame of the stack, left out here)\n" * 6)  # a long paste: over SHORT characters, the prompt is searched by its question
    assert len(prompt) > 600
    q = hook_query(prompt)
    assert "which port does the billing postgres listen on locally?" in q
    assert "5433" in q and "Traceback" not in q and 'File "manage.py"' not in q and len(q) < len(prompt)
    assert hook_query("short prompt about ports") == "short prompt about ports"
    medium = "the migrate job failed during deploy:\n\n  Applying payments.0031... " + "x " * 150 + "\nwhy so short?"
    assert len(medium) < 600 and hook_query(medium) == medium.strip()  # a few hundred characters: as it is


def test_session_start_digest_has_the_same_tiers(service: MemoryService) -> None:
    from memcli.hooks.digest import session_digest

    service.remember_many([NewMemory(content=f"decision {i}: " + "detail " * 30, project="atlas", importance=0.9 - i / 100)
                           for i in range(30)])
    text, ids = session_digest(service, project="atlas", budget=1500, index_top_k=5, index_budget=110)
    assert text and ids and INDEX_TITLE in text
    listed = _ids(text.split(INDEX_TITLE)[1])
    assert listed and not {i[-8:] for i in ids} & set(listed)  # index lines are the next ones, not repeats
    assert len(text) <= 1500 + 4 * 110 + 200
    # a small digest budget (session_start_budget = 700) still shows memories in full, within it
    small, small_ids = session_digest(service, project="atlas", budget=700, index_top_k=5, index_budget=110)
    assert small and small_ids and len(small) <= 700 and "decision 0:" in small


def test_hooks_settings_are_read_from_config(home: Path) -> None:
    from memcli.config import load_config

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[hooks]\nindex_min_score = 0.4\nindex_top_k = 2\nindex_budget = 50\n"
                                      "index_strong_score = 0.7\nindex_strong_budget = 90\nother_script_lift = 0\n")
    h = load_config(home).hooks
    assert (h.index_min_score, h.index_top_k, h.index_budget) == (0.4, 2, 50)
    assert (h.index_strong_score, h.index_strong_budget, h.other_script_lift) == (0.7, 90, 0)
