"""The prompt hook's relevance gate with the real bundled embedder: relevant memories are injected, nothing is
injected for prompts the store knows nothing about (bench/hooks.py --gate measures the same on 10k memories)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from memcli.hooks.inject import prompt_context
from memcli.memory.service import MemoryService, NewMemory

_spec = importlib.util.spec_from_file_location(
    "memcli_bench_hooks", Path(__file__).resolve().parents[1] / "bench" / "hooks.py")
assert _spec and _spec.loader
bench = importlib.util.module_from_spec(_spec)
sys.modules["memcli_bench_hooks"] = bench
_spec.loader.exec_module(bench)
IRRELEVANT, PLANTED, RELEVANT, generated_texts = bench.IRRELEVANT, bench.PLANTED, bench.RELEVANT, bench.generated_texts

pytestmark = pytest.mark.slow


@pytest.fixture
def store(real_service: MemoryService) -> MemoryService:
    import random

    distractors = generated_texts(150, random.Random(3))
    real_service.remember_many([NewMemory(content=t, project="other") for t in distractors] +
                               [NewMemory(content=t, project="atlas") for t in PLANTED])
    return real_service


def _inject(svc: MemoryService, prompt: str) -> list[str]:
    _, ids, _ = prompt_context(svc, prompt, project="atlas", budget=3000, top_k=5, min_relevance=0.68)
    return [svc.get(i).content for i in ids]


def test_relevant_prompts_get_their_memory(store: MemoryService) -> None:
    hits = [PLANTED[i] in _inject(store, q) for q, i in RELEVANT]
    missed = [q for (q, _), ok in zip(RELEVANT, hits) if not ok]
    assert sum(hits) >= 0.8 * len(RELEVANT), missed


def test_off_topic_prompts_inject_nothing(store: MemoryService) -> None:
    noisy = {q: _inject(store, q) for q in IRRELEVANT}
    noisy = {q: v for q, v in noisy.items() if v}
    assert len(noisy) <= 0.1 * len(IRRELEVANT), noisy


def test_keyword_only_identifier_is_injected(store: MemoryService) -> None:
    store.remember("Set FOO_BAR_RETRY_LIMIT=7 in deploy/prod.env after the outage of March", project="atlas")
    assert any("FOO_BAR_RETRY_LIMIT" in c for c in _inject(store, "what is FOO_BAR_RETRY_LIMIT set to?"))
