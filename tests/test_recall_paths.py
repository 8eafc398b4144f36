"""Recall's fast paths stay exact: filters left out of the searches are still applied to what is kept, the
shortlist of candidates that can win is never too short, and the ANN index path filters before top-k."""

from __future__ import annotations

import random
from pathlib import Path

from memcli.config import load_config
from memcli.memory.service import MemoryService, NewMemory
from memcli.models import now_ms


def _open(home: Path) -> MemoryService:
    return MemoryService.open(load_config(home))


def test_a_write_elsewhere_by_another_process_never_leaks_into_recall(home: Path) -> None:
    reader, writer = _open(home), _open(home)  # two handles: their caches are as separate as two processes'
    mine = reader.remember("the alpha team deploys with kafka streams", namespace="alpha").memory_id
    assert [h.memory.id for h in reader.recall("kafka", namespace="alpha")] == [mine]
    assert reader.store.sole_namespace() == "alpha"  # so the next search leaves the namespace filter out
    for i in range(20):
        writer.remember(f"kafka kafka kafka streams note {i}", namespace="beta")
    hits = reader.recall("kafka streams", namespace="alpha", top_k=5)
    assert [h.memory.id for h in hits] == [mine]
    assert {h.memory.namespace for h in reader.recall("kafka", namespace="beta", top_k=50)} == {"beta"}
    reader.close()
    writer.close()


def test_a_memory_imported_already_expired_by_another_process_is_not_recalled(home: Path) -> None:
    reader, writer = _open(home), _open(home)
    live = reader.remember("the staging database password rotates monthly").memory_id
    assert [h.memory.id for h in reader.recall("staging database password")] == [live]
    assert not reader.store.expiry_due(now_ms())  # so the next search leaves the expiry filter out
    writer.import_records([{"content": "the staging database password is hunter2", "expires_at": now_ms() - 1000}])
    assert [h.memory.id for h in reader.recall("staging database password")] == [live]
    with_expired = reader.recall("staging database password", include_expired=True)
    assert len(with_expired) == 2
    reader.close()
    writer.close()


def test_the_top_few_are_the_head_of_the_full_ranking(service: MemoryService) -> None:
    """Only candidates that boosts could lift into the top-k are read; with many near-equal matches of
    varied importance and age, the top 5 must still be exactly the first 5 of a ranking of (nearly) every
    candidate."""
    rng = random.Random(3)
    now = now_ms()
    filler = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    service.remember_many([
        NewMemory(content="kafka retry timeout " + " ".join(rng.sample(filler, rng.randrange(0, 4))) + f" n{i}",
                  importance=rng.choice([0.0, 0.5, 1.0]), created_at=now - rng.randrange(0, 120) * 86_400_000)
        for i in range(120)
    ])
    service.compact()
    for query in ("kafka retry timeout", "kafka timeout", "retry"):
        head = [h.memory.id for h in service.recall(query, top_k=5)]
        full = [h.memory.id for h in service.recall(query, top_k=25)]  # same candidate lists (top 50 each)
        assert head == full[:5], query


def test_project_and_importance_boosts_still_decide_ties(service: MemoryService) -> None:
    text = "the release train leaves on thursdays"  # the same text in three scopes: equal relevance
    plain = service.remember(text, scope="global").memory_id
    ours = service.remember(text, scope="agent:ci", project="apollo").memory_id
    key = service.remember(text, scope="agent:ops", importance=0.7).memory_id
    service.compact()  # all three in the keyword index: equal BM25 (rows outside it are scored apart)
    assert [h.memory.id for h in service.recall("release train", top_k=3)] == [key, ours, plain]
    assert [h.memory.id for h in service.recall("release train", top_k=3, project="apollo")] == [ours, key, plain]


def test_recall_through_the_ann_index_filters_before_top_k(service: MemoryService) -> None:
    service.remember_many([NewMemory(content=f"routine operations log entry {i}", tags=["ops"]) for i in range(400)])
    rare = service.remember("routine operations log entry about the pager", tags=["pager"]).memory_id
    other = service.remember("routine operations log entry about the pager", namespace="elsewhere").memory_id
    assert service.store.ensure_vector_index(force=True)
    assert service.store.vector_nprobes("vector") == 5  # IVF_FLAT: a quarter of √402 = 20 partitions
    assert [h.memory.id for h in service.recall("operations log", top_k=5, tags=["pager"])] == [rare]
    assert [h.memory.id for h in service.recall("the pager", top_k=3, namespace="elsewhere")] == [other]
    vec_only = service.recall("routine operations log entry about the pager", top_k=3, mode="vector")
    assert vec_only[0].memory.id == rare


def test_context_vectors_get_an_index_once_some_memory_has_context(service: MemoryService) -> None:
    service.remember_many([NewMemory(content=f"plain standalone note {i}") for i in range(300)])
    assert service.store.ensure_vector_index(force=True)
    assert service.store.vector_nprobes("vector") == 5  # IVF_FLAT: a quarter of √300 ≈ 17 partitions
    assert service.store.vector_nprobes("context_vector") is None  # never searched without context
    service.remember("which port does the billing service listen on", thread="chat-1")
    answer = service.remember("8443, behind the internal load balancer", thread="chat-1").memory_id
    assert service.store.ensure_vector_index(force=True)
    assert service.store.vector_nprobes("context_vector") == 5
    assert answer in [h.memory.id for h in service.recall("billing service port", top_k=3)]
