"""The core API through the library, on a real LanceDB directory."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from memcli.config import load_config
from memcli.distill.service import DistillService
from memcli.errors import (
    AmbiguousIdError,
    EmbedderMismatchError,
    NotFoundError,
    ValidationError,
    VersionConflictError,
)
from memcli.memory.service import MemoryService, NewMemory


def test_remember_then_get_roundtrips_every_field(service: MemoryService) -> None:
    res = service.remember("  The deploy script lives in ops/deploy.sh  ", tags=["ops", "ops", " infra "],
                           agent="codex", importance=0.8, metadata={"ticket": "OPS-12"}, key="deploy-script")
    mem = service.get(res.memory_id)
    assert mem.content == "The deploy script lives in ops/deploy.sh"
    assert mem.tags == ["ops", "infra"]
    assert mem.scope == "agent:codex"
    assert mem.importance == 0.8 and mem.metadata == {"ticket": "OPS-12"} and mem.key == "deploy-script"
    assert mem.namespace == "default" and mem.version == 1 and mem.source == "cli"
    assert abs(mem.created_at - time.time() * 1000) < 60_000  # milliseconds
    assert service.get(res.memory_id[-8:]).id == res.memory_id  # the short id works
    assert service.get(res.memory_id[:13]).id == res.memory_id


def test_exact_same_content_is_idempotent(service: MemoryService) -> None:
    a = service.remember("retry me once")
    b = service.remember("Retry   me once")  # whitespace and case folded
    assert b.memory_id == a.memory_id and b.created is False
    assert service.store.count() == 1
    c = service.remember("retry me once", agent="other")  # another scope is another memory
    assert c.created and service.store.count() == 2


def test_the_same_content_written_at_once_by_two_handles_is_stored_once(home: Path) -> None:
    """Two handles of one store (two processes' worth: a server and a `memcli mcp` beside it) remember the
    same text at the same moment: both look, find nothing, embed; only one may write, and both are told its id
    (each batch holding the text twice, as a server's write group of several callers does)."""
    import threading

    svcs = [MemoryService.open(load_config(home)) for _ in range(2)]
    both_looked = threading.Barrier(2, timeout=10)
    for svc in svcs:  # each embeds only once both have looked for the text (the race, every time)
        def embed(texts: list[str], _embed: Any = svc.embedder.embed_passages) -> Any:
            both_looked.wait()
            return _embed(texts)

        svc.embedder.embed_passages = embed  # type: ignore[method-assign]
    results: list[object] = [None, None]

    def write(k: int) -> None:
        results[k] = svcs[k].remember_many([NewMemory(content="the staging database is db-stg-2"),
                                            NewMemory(content=f"a fact only handle {k} knows"),
                                            NewMemory(content="The staging database is  db-stg-2")])

    threads = [threading.Thread(target=write, args=(k,)) for k in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        rows = svcs[0].store.column_values(None, ["id", "content"])
    finally:
        for svc in svcs:
            svc.close()
    same = [r["id"] for r in rows if r["content"] == "the staging database is db-stg-2"]
    assert len(same) == 1, f"stored {len(same)} times"
    assert [res[0].memory_id for res in results] == same * 2  # type: ignore[index]
    # the text twice in one batch: the second is told the id the first was told, the stored one (a server's
    # write group holds several callers' writes; each must hear the id that exists)
    assert [res[2].memory_id for res in results] == same * 2  # type: ignore[index]
    assert sorted(res[0].created for res in results) == [False, True]  # type: ignore[index]
    assert len(rows) == 3 and all(res[1].created for res in results)  # type: ignore[index]


def test_one_new_key_remembered_at_once_by_two_handles_is_one_memory(home: Path) -> None:
    """Two writers remember the same new key with different texts at the same moment: one memory holds the key
    (the later write updates it), and both are told its id; one batch naming a new key twice is one memory too."""
    import threading

    svcs = [MemoryService.open(load_config(home)) for _ in range(2)]
    both_looked = threading.Barrier(2, timeout=10)
    for svc in svcs:  # each embeds its first text only once both have looked for the key
        def embed(texts: list[str], _embed: Any = svc.embedder.embed_passages, first: list[bool] = [True]) -> Any:
            if first and first.pop():
                both_looked.wait()
            return _embed(texts)

        svc.embedder.embed_passages = embed  # type: ignore[method-assign]
    results: list[Any] = [None, None]

    def write(k: int) -> None:
        results[k] = svcs[k].remember(f"the deploy script is deploy-v{k + 1}.sh", key="deploy-script")

    threads = [threading.Thread(target=write, args=(k,)) for k in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        rows = svcs[0].store.column_values("key = 'deploy-script'", ["id", "content", "version"])
        batch = svcs[0].remember_many([NewMemory(content="on-call is alice", key="oncall"),
                                       NewMemory(content="on-call is bob", key="oncall")])
        oncall = svcs[0].store.column_values("key = 'oncall'", ["id", "content"])
    finally:
        for svc in svcs:
            svc.close()
    assert len(rows) == 1, rows
    assert {r.memory_id for r in results} == {rows[0]["id"]} and rows[0]["version"] == 2
    assert len(oncall) == 1 and oncall[0]["content"] == "on-call is bob"
    assert [b.memory_id for b in batch] == [oncall[0]["id"]] * 2 and batch[1].updated


def test_a_writer_stuck_holding_the_write_lock_delays_a_remember_but_never_hangs_it(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process holding the store's write lock (stopped by a debugger, say) makes a remember wait, then
    fail as a busy store does, with nothing written; once it lets go, the same remember works."""
    import subprocess
    import sys

    import memcli.memory.writelock as writelock
    from memcli.errors import StoreError

    svc = MemoryService.open(load_config(home))
    lock_file = Path(svc.store.uri) / writelock.LOCK_FILE
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time\n"
                               f"f = open({str(lock_file)!r}, 'a+'); fcntl.flock(f, fcntl.LOCK_EX)\n"
                               "print('held', flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        monkeypatch.setattr(writelock, "WAIT_SECONDS", 0.5)
        started = time.monotonic()
        with pytest.raises(StoreError, match="busy.*nothing was written"):
            svc.remember("written while another process holds the lock")
        assert 0.4 < time.monotonic() - started < 10
        assert svc.store.count() == 0
        holder.communicate("", timeout=10)  # it lets go
        assert svc.remember("written while another process holds the lock").created
    finally:
        if holder.poll() is None:
            holder.kill()
        svc.close()


def test_same_key_updates_the_memory(service: MemoryService) -> None:
    a = service.remember("the staging DB is on host db-1", key="staging-db")
    b = service.remember("the staging DB moved to host db-7", key="staging-db")
    assert b.memory_id == a.memory_id and b.updated
    mem = service.get(a.memory_id)
    assert "db-7" in mem.content and mem.version == 2 and service.store.count() == 1
    assert service.recall("db-7", mode="text")[0].memory.id == a.memory_id  # re-indexed text


def test_similar_memories_are_reported_but_written(service: MemoryService) -> None:
    a = service.remember("the billing service uses PostgreSQL 16 for invoices and payments")
    b = service.remember("the billing service uses PostgreSQL 16 for invoices and payment")
    assert b.created and a.memory_id in b.duplicate_of
    assert service.store.count() == 2


@pytest.mark.parametrize("bad", ["", "   \n\t ", "x" * 32_001])
def test_invalid_content_is_refused_and_nothing_written(service: MemoryService, bad: str) -> None:
    with pytest.raises(ValidationError):
        service.remember(bad)
    assert service.store.count() == 0


@pytest.mark.parametrize("kwargs", [
    {"importance": 1.5}, {"importance": "high"}, {"metadata": "{not json"}, {"metadata": "[1, 2]"},
    {"scope": "team:x"}, {"scope": "agent:a:b"}, {"ttl": "soon"}, {"tags": [""]}, {"namespace": "bad ns"},
])
def test_invalid_fields_are_refused(service: MemoryService, kwargs: dict) -> None:
    with pytest.raises(ValidationError):
        service.remember("valid text", **kwargs)
    assert service.store.count() == 0


def test_agent_name_with_or_without_the_agent_prefix_is_one_agent(service: MemoryService) -> None:
    a = service.remember("deploys go out on tuesdays", agent="agent:codex").memory_id
    b = service.remember("the cache is redis", agent="codex").memory_id
    assert service.get(a).scope == service.get(b).scope == "agent:codex"
    for agent in ("codex", "agent:codex", " agent:codex "):
        assert {m.id for m in service.list(agent=agent)} == {a, b}
        assert {h.memory.id for h in service.recall("deploys", agent=agent)} == {a, b}
    service.update(a, agent="agent:claude-code")
    assert service.get(a).scope == "agent:claude-code"
    with pytest.raises(ValidationError, match="invalid scope"):
        service.remember("two prefixes", agent="agent:agent:codex")


def test_quotes_in_filters_are_data_not_syntax(service: MemoryService) -> None:
    service.remember("a normal memory", tags=["normal"])
    evil = "x' OR '1'='1"
    assert service.recall("memory", tags=[evil]) == []
    assert service.list(tags=[evil]) == []
    with pytest.raises(ValidationError, match="invalid scope"):  # agent names are simple names
        service.recall("memory", agent="o'brien")
    with pytest.raises(ValidationError):
        service.remember("agent with a quote", agent="o'brien")
    res = service.remember("tagged with a quote", tags=[evil])
    assert [m.id for m in service.list(tags=[evil])] == [res.memory_id]
    assert [h.memory.id for h in service.recall("quote", tags=[evil])] == [res.memory_id]
    assert service.store.count() == 2


def test_update_versions_and_optimistic_concurrency(service: MemoryService) -> None:
    mid = service.remember("first text", tags=["a"]).memory_id
    before = service.store.get(mid, with_vector=True)
    m = service.update(mid, tags=["b"], importance=0.9)
    assert m.version == 2 and m.tags == ["b"] and m.importance == 0.9
    assert service.store.get(mid, with_vector=True).vector == before.vector  # no re-embed for tags
    m = service.update(mid, content="second text", expected_version=2)
    assert m.version == 3 and m.content == "second text"
    assert service.store.get(mid, with_vector=True).vector != before.vector
    with pytest.raises(VersionConflictError):
        service.update(mid, content="stale write", expected_version=2)
    assert service.get(mid).content == "second text"


def test_forget_by_prefix_unknown_and_ambiguous(service: MemoryService) -> None:
    ids = [service.remember(f"memory number {i}").memory_id for i in range(3)]
    with pytest.raises(NotFoundError):
        service.forget(["ffffffff"])
    with pytest.raises(ValidationError):
        service.forget(["zz"])
    common = ids[0][:8]  # UUIDv7: same millisecond prefix is likely; force ambiguity with a 4-char prefix
    if all(i.startswith(common[:4]) for i in ids):
        with pytest.raises(AmbiguousIdError):
            service.forget([common[:4]])
    with pytest.raises(NotFoundError):  # nothing is deleted when one id is unknown
        service.forget([ids[0], "ffffffff"])
    assert service.store.count() == 3
    assert service.forget([ids[0][-8:]]) == [ids[0]]
    assert service.store.count() == 2
    with pytest.raises(NotFoundError):
        service.get(ids[0])


def test_ids_resolve_by_prefix_or_suffix_with_or_without_dashes(service: MemoryService) -> None:
    mid = service.remember("the one memory to find by a piece of its id").memory_id
    service.remember("another memory, so that a piece must be unique")
    compact = mid.replace("-", "")
    for ref in (mid, compact, mid[:13], compact[:12], compact[-8:], compact[-14:], mid[-14:], mid[:20].upper()):
        assert service.get(ref).id == mid, ref
    for ref in (compact[:-1] + "x", "0" * 33, compact[4:20]):  # not hex, too long, a middle piece
        with pytest.raises((NotFoundError, ValidationError)):
            service.get(ref)


def test_recall_keyword_only_hit_can_win(service: MemoryService) -> None:
    for i in range(30):
        service.remember(f"routine note {i} about deployments and the search service")
    target = service.remember("flag search_v2 breaks pagination with error E4021").memory_id
    assert service.recall("E4021", top_k=3)[0].memory.id == target
    assert service.recall("search_v2", top_k=3)[0].memory.id == target


def test_recall_filters_apply_before_top_k(service: MemoryService) -> None:
    for i in range(60):
        service.remember(f"common deployment note {i}", tags=["noise"])
    rare = service.remember("common deployment note with the rare tag", tags=["rare"]).memory_id
    hits = service.recall("common deployment note", top_k=5, tags=["rare"])
    assert [h.memory.id for h in hits] == [rare]


def test_expired_memories_are_hidden_unless_asked(service: MemoryService) -> None:
    mid = service.remember("short lived fact", ttl=1).memory_id  # 1 second
    time.sleep(1.2)
    assert service.recall("short lived fact") == []
    assert service.list() == []
    assert [h.memory.id for h in service.recall("short lived fact", include_expired=True)] == [mid]
    assert DistillService(service).apply()["counts"]["archive"] == 1
    assert service.store.count() == 1 and service.get(mid).status == "archived"
    assert service.recall("short lived fact", include_expired=True) == []
    assert [h.memory.id for h in service.recall("short lived fact", include_expired=True,
                                                include_archived=True)] == [mid]


def test_namespaces_isolate(service: MemoryService) -> None:
    service.remember("team alpha uses kafka", namespace="alpha")
    service.remember("team beta uses rabbitmq", namespace="beta")
    assert [h.memory.content for h in service.recall("uses", namespace="alpha")] == ["team alpha uses kafka"]
    assert service.list() == []  # default namespace is empty
    assert len(service.list(all_namespaces=True)) == 2


def test_list_is_newest_first_and_paged(service: MemoryService) -> None:
    ids = [r.memory_id for r in service.remember_many([NewMemory(content=f"item {i}", created_at=1_700_000_000_000 + i)
                                                       for i in range(7)])]
    page1 = [m.id for m in service.list(limit=3)]
    page2 = [m.id for m in service.list(limit=3, offset=3)]
    assert page1 == ids[::-1][:3] and page2 == ids[::-1][3:6]


def test_export_import_roundtrip_into_empty_home(service: MemoryService, tmp_path: Path) -> None:
    service.remember("alpha fact", tags=["x"], agent="codex", namespace="n1", metadata={"k": 1})
    service.remember("beta fact", importance=0.9, key="b")
    recs = [m.record(with_vector=True) for m in service.export(with_vectors=True)]
    other = MemoryService.open(load_config(tmp_path / "other-home"))
    try:
        out = other.import_records(recs, vectors_identity=service.embedder.identity())
        assert out == {"read": 2, "added": 2, "skipped": 0}
        again = other.import_records(recs, vectors_identity=service.embedder.identity())
        assert again["added"] == 0 and other.store.count() == 2
        strip = lambda r: {k: v for k, v in r.items() if k != "vector"}  # noqa: E731
        assert sorted(map(strip, (m.record() for m in other.export())), key=lambda r: r["id"]) == \
            sorted(map(strip, recs), key=lambda r: r["id"])
        assert other.recall("alpha", namespace="n1")[0].memory.content == "alpha fact"
    finally:
        other.close()


def test_store_refuses_another_embedder_and_reindex_fixes_it(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    svc = MemoryService.open(load_config(home))
    mid = svc.remember("kept across reindex").memory_id
    svc.close()
    monkeypatch.setenv("MEMCLI_EMBED_DIMS", "32")  # hash embedder with another dimension
    with pytest.raises(EmbedderMismatchError, match="memcli reindex"):
        MemoryService.open(load_config(home))
    svc = MemoryService.open(load_config(home), allow_mismatch=True)
    assert svc.reindex()["reindexed"] == 1
    svc.close()
    svc = MemoryService.open(load_config(home))
    assert svc.get(mid).content == "kept across reindex" and svc.store.dim == 32
    assert svc.recall("kept")[0].memory.id == mid
    svc.close()


def test_many_single_writes_get_compacted(home: Path) -> None:
    cfg = load_config(home)
    cfg.auto_compact_fragments = 16
    svc = MemoryService.open(cfg)
    for i in range(60):
        svc.remember(f"single write number {i}")
    assert svc.store.fragment_count() < 24
    assert svc.store.count() == 60
    assert svc.recall("single write number 42", mode="text")[0].memory.content == "single write number 42"
    svc.close()


def test_traditional_and_fullwidth_forms_match(service: MemoryService) -> None:
    mid = service.remember("新的频道已经上线，ＡＰＩ版本２").memory_id
    assert service.recall("頻道", mode="text")[0].memory.id == mid
    assert service.recall("API", mode="text")[0].memory.id == mid
    assert service.get(mid).content == "新的频道已经上线，ＡＰＩ版本２"  # original text kept


def test_thread_context_is_attached_and_searchable(service: MemoryService) -> None:
    base = 1_700_000_000_000
    items = [NewMemory(content=t, thread="s1", created_at=base + i) for i, t in enumerate(
        ["Mel: we adopted a puppy named Biscuit", "Caroline: how old is it?", "Mel: eight weeks, and very loud"])]
    ids = [r.memory_id for r in service.remember_many(items)]
    third = service.get(ids[2])
    assert third.context == ["Mel: we adopted a puppy named Biscuit", "Caroline: how old is it?"]
    assert service.get(ids[0]).context == []
    # a later single remember in the same thread sees the stored previous memories
    later = service.remember("Caroline: so cute!", thread="s1", created_at=base + 10)
    assert service.get(later.memory_id).context == ["Caroline: how old is it?", "Mel: eight weeks, and very loud"]
    # "eight weeks" is only meaningful with its context: a keyword from the previous turn finds it
    found = [h.memory.id for h in service.recall("Biscuit", top_k=4, mode="text")]
    assert ids[2] in found and ids[0] == found[0]
    other = service.remember("unrelated thread memory", thread="s2")
    assert service.get(other.memory_id).context == []


def test_context_survives_export_import(service: MemoryService, tmp_path: Path) -> None:
    service.remember_many([NewMemory(content="first turn about kayaks", thread="t", created_at=1),
                           NewMemory(content="second turn", thread="t", created_at=2)])
    recs = [m.record(with_vector=True) for m in service.export(with_vectors=True)]
    assert recs[1]["context"] == ["first turn about kayaks"] and "context_vector" in recs[1]
    other = MemoryService.open(load_config(tmp_path / "h2"))
    try:
        other.import_records(recs, vectors_identity=service.embedder.identity())
        got = {m.content: m for m in other.export(with_vectors=True)}
        assert got["second turn"].context == ["first turn about kayaks"]
        assert got["second turn"].context_vector == recs[1]["context_vector"]
    finally:
        other.close()


def test_an_older_store_schema_asks_for_reindex_which_migrates_it(home: Path) -> None:
    svc = MemoryService.open(load_config(home))
    mid = svc.remember("written under the old schema").memory_id
    svc.store.write_meta({"schema_version": "1"})
    svc.close()
    with pytest.raises(EmbedderMismatchError, match="memcli reindex"):
        MemoryService.open(load_config(home))
    svc = MemoryService.open(load_config(home), allow_mismatch=True)
    svc.reindex()
    svc.close()
    svc = MemoryService.open(load_config(home))
    assert svc.get(mid).content == "written under the old schema"
    svc.close()


def test_history_records_who_changed_what(service: MemoryService) -> None:
    service.actor = None
    service.agent = "codex"
    mid = service.remember("deploys go out on tuesdays", tags=["schedule"]).memory_id
    service.update(mid, content="deploys go out on tuesdays and thursdays", importance=0.9, source="api")
    service.agent = None
    service.update(mid, tags=["schedule", "release"], source="mcp")
    events = service.history(mid[-8:])
    assert [(e.action, e.actor, e.version) for e in events] == [
        ("remember", "agent:codex", 1), ("update", "agent:codex", 2), ("update", "mcp", 3)]
    assert events[1].changes["content"] == ["deploys go out on tuesdays", "deploys go out on tuesdays and thursdays"]
    assert events[1].changes["importance"] == [0.5, 0.9] and "tags" not in events[1].changes
    assert events[2].changes == {"tags": [["schedule"], ["schedule", "release"]]}
    service.forget(mid)
    after = service.history(mid)  # a forgotten memory's full id still shows its history
    assert after[-1].action == "forget" and after[-1].changes["content"][0].startswith("deploys go out")
    with pytest.raises(NotFoundError):
        service.history("ffffffff-ffff-7fff-bfff-ffffffffffff")
