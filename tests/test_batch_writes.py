"""One batch of writes from several callers (the server's group commit): each memory keeps its own face as its
source and in its history; the batch searches its neighbours together (memcli.memory.lookups.neighbours): on a
store without an ANN index, one read of the vectors per filter gives each vector what its own exact search
gives, and a batch links, relates and de-duplicates as the same memories written one by one."""

from __future__ import annotations

import pytest

from memcli.memory.lookups import neighbours
from memcli.memory.search import build_where
from memcli.memory.service import MemoryService
from memcli.models import NewMemory, now_ms


def test_each_memory_of_a_batch_keeps_its_own_source(service: MemoryService) -> None:
    texts = ["the api gateway times out after 30 s", "the nightly build runs at 02:00",
             "the wiki lives at wiki.internal", "the vpn needs a hardware key"]
    res = service.remember_many([NewMemory(content=t) for t in texts], source="api",
                                sources=["api", "cli", "mcp", "cli"], actors=[None, None, "mcp (inspector 1.0)", None])
    got = [(service.get(r.memory_id).source, [(e.action, e.actor) for e in service.history(r.memory_id)])
           for r in res]
    assert got == [("api", [("remember", "api")]), ("cli", [("remember", "cli")]),
                   ("mcp", [("remember", "mcp (inspector 1.0)")]), ("cli", [("remember", "cli")])]
    # a key's update in a batch is recorded as its own face's too
    service.remember("the deploy freeze starts friday", key="freeze", source="api")
    again = service.remember_many([NewMemory(content="the deploy freeze starts thursday", key="freeze"),
                                   NewMemory(content="the staging cluster runs in eu-west-1")],
                                  source="api", sources=["mcp", "api"])
    assert again[0].updated
    assert service.get(again[0].memory_id).source == "mcp"
    assert service.history(again[0].memory_id)[-1].actor == "mcp"


def _fill(service: MemoryService) -> None:
    service.remember_many([NewMemory(content=f"service {i} listens on port {8000 + i} in the staging cluster",
                                     namespace="ops" if i % 3 == 0 else None) for i in range(40)], source="api")


def test_one_scan_finds_what_each_exact_search_finds(service: MemoryService) -> None:
    _fill(service)
    assert service.store.vector_nprobes("vector") is None  # a small store: every search is exact
    vecs = service.embedder.embed_passages([f"which port does service {i} use" for i in (1, 3, 7, 12, 30)])
    now = now_ms()
    queries = [(v, build_where(namespace=ns, now=now)) for v, ns in zip(vecs, ["default", "ops", "default", "ops", None])]
    together = neighbours(service.store, queries, 9)
    alone = [service.store.vector_search(v, w, 9) for v, w in queries]
    assert [len(a) for a in alone] == [9, 9, 9, 9, 9]
    for got, want in zip(together, alone):
        assert [c for _, c in got] == pytest.approx([c for _, c in want], abs=1e-5)
        # the same memories at each cosine (memories tied at the k-th cosine may be cut either way)
        assert _by_cosine(got) == _by_cosine(want)
        assert all(m.content == service.get(m.id, all_namespaces=True).content for m, _ in got)


def _by_cosine(found: list) -> dict[float, set[str]]:  # type: ignore[type-arg]
    out: dict[float, set[str]] = {}
    for m, c in found:
        out.setdefault(round(c, 4), set()).add(m.id)
    last = round(found[-1][1], 4)
    return {c: ids for c, ids in out.items() if c != last}


def test_a_batch_relates_and_links_as_one_by_one(service: MemoryService, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The same writes, batched and one by one into two stores: the same duplicates, relations and links."""
    first = ["the deploy window is tuesday 14:00", "the on-call phone is extension 4411",
             "backups are kept for 30 days"]
    later = ["the deploy window is thursday 14:00", "the on-call phone is extension 4411",
             "backups are kept for 90 days", "the staging cluster runs in eu-west-1"]
    service.remember_many([NewMemory(content=t) for t in first], source="api")
    batched = service.remember_many([NewMemory(content=t) for t in later], source="api")
    from memcli.config import load_config

    other = MemoryService.open(load_config(tmp_path_factory.mktemp("one-by-one")))
    try:
        for t in first:
            other.remember(t, source="api")
        single = [other.remember(t, source="api") for t in later]
        by_text = {service.store.get(r.memory_id).content: service.store.get(r.memory_id)  # type: ignore[union-attr]
                   for r in batched}
        by_text_single = {other.store.get(r.memory_id).content: other.store.get(r.memory_id)  # type: ignore[union-attr]
                          for r in single}

        def shape(results: list, store_get) -> list:  # type: ignore[no-untyped-def]
            return [(r.created, len(r.duplicate_of), sorted(x.get("relation", "") for x in r.related),
                     sorted(store_get(u).content for u in (store_get(r.memory_id).updates or []))) for r in results]

        assert shape(batched, service.store.get) == shape(single, other.store.get)
        assert sum(1 for m in by_text.values() if m.updates) == sum(1 for m in by_text_single.values() if m.updates) >= 1
    finally:
        other.close()
