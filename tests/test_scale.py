"""A store that grows (issue 30): streamed imports in few commits, indexes that a background maintainer builds
and refreshes while reads and writes go on, and what `stats` and `doctor` say of them. Stores stay small: the
maintainer's thresholds are lowered for them (bench/scale.py measures 10k–1M)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcli.config import load_config
from memcli.memory.maintenance import Maintainer
from memcli.memory.service import MemoryService
from memcli.server.holder import ServiceHolder


def records(n: int, start: int = 0) -> Iterator[dict[str, Any]]:
    for i in range(start, start + n):
        yield {"content": f"turn {i} of the nightly run: deploy svc-{i} after the {('red', 'blue', 'green')[i % 3]} "
                          f"checks", "scope": f"agent:a{i % 4}"}


def versions(svc: MemoryService) -> int:
    return len(svc.store.table.to_lance().versions())


def test_an_import_streams_its_records_in_few_commits(service: MemoryService) -> None:
    pulled = []

    def source() -> Iterator[dict[str, Any]]:
        for r in records(900):
            pulled.append(r)
            yield r

    service.store.background_maintenance = True  # the rows alone: no compaction folds versions meanwhile
    before = versions(service)
    seen: list[tuple[int, int]] = []
    res = service.import_records(source(), progress=lambda done, total: seen.append((done, len(pulled))),
                                 total=900)
    assert res == {"read": 900, "added": 900, "skipped": 0}
    # one commit per chunk of 4,096: not one per 64 records (15 here)
    assert versions(service) - before <= 2
    assert seen[-1][0] == 900
    service.store.background_maintenance = False
    again = service.import_records(iter(list(records(900))))  # nothing twice: the same texts get new ids here
    assert again["read"] == 900


def test_a_generator_is_not_held_whole(service: MemoryService) -> None:
    from memcli.memory import records as recs

    pulled = []

    def source() -> Iterator[dict[str, Any]]:
        for r in records(250):
            pulled.append(r)
            yield r

    seen: list[int] = []
    recs.import_records(service, source(), chunk=100, progress=lambda done, total: seen.append(len(pulled)))
    assert seen == [100, 200, 250]  # each chunk written before the next is read
    assert service.store.count() == 250


def test_the_maintainer_builds_and_refreshes_indexes_while_recall_goes_on(service: MemoryService) -> None:
    store = service.store
    store.vector_index_min_rows, store.fts_refresh_rows = 300, 50
    maint = Maintainer(store)  # from now on writes never compact or index themselves
    service.import_records(list(records(400)))
    assert store.maintenance_due() == ["vector"] or "vector" in store.maintenance_due()
    # exact search meanwhile, filters before top-k
    hits = service.recall("deploy after the checks", top_k=5, scope="agent:a1")
    assert len(hits) == 5 and all(h.memory.scope == "agent:a1" for h in hits)

    stop = threading.Event()
    answers: list[int] = []

    def reader() -> None:  # recall keeps answering while the index is built
        while not stop.is_set():
            answers.append(len(service.recall("svc-7 nightly", top_k=3)))

    t = threading.Thread(target=reader)
    t.start()
    try:
        assert "vector" in store.maintain()
    finally:
        stop.set()
        t.join()
    assert answers and all(a == 3 for a in answers)
    vec = [d for d in store.index_status() if d["column"] == "vector"]
    assert vec and vec[0]["kind"] == "IvfFlat" and vec[0]["indexed_rows"] == 400
    assert store.maintenance_due() == []
    assert store.warm_vector_indexes() == ["vector"]  # a server loads it whole into the cache after a build
    dim = len(service.embedder.embed_query("x"))
    assert store.warm_vector_indexes(budget=400 * dim * 4 - 1) == []  # not an index bigger than the budget
    hits = service.recall("deploy after the checks", top_k=5, scope="agent:a2")  # through the index
    assert len(hits) == 5 and all(h.memory.scope == "agent:a2" for h in hits)
    assert service.recall("svc-123 nightly checks", top_k=1)[0].memory.content.startswith("turn 123 ")

    service.import_records(list(records(60, start=400)))
    assert store.maintenance_due() == ["keyword"]  # 60 new rows outside the keyword index, few for the vectors
    assert maint.store.maintain() == ["keyword"]
    fts = next(d for d in store.index_status() if d["kind"] == "FTS")
    assert fts["indexed_rows"] == 460 and fts["unindexed_rows"] == 0
    assert service.recall("svc-433 nightly", top_k=1)[0].memory.content.startswith("turn 433 ")


def test_a_server_keeps_its_store_indexed_in_the_background(isolated_home: Path) -> None:
    svc = MemoryService.open(load_config(isolated_home))
    svc.import_records(list(records(300)))
    svc.store.vector_index_min_rows = 256
    holder = ServiceHolder(load_config(isolated_home), service=svc)
    try:
        holder.warm()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (holder.maintainer and holder.maintainer.rounds):
            time.sleep(0.1)
        assert holder.maintainer is not None and holder.maintainer.rounds >= 1
        assert svc.store.background_maintenance  # its writes no longer compact themselves
        assert any(d["column"] == "vector" and d["indexed_rows"] == 300 for d in svc.store.index_status())
        assert holder.maintainer.warmed == ["vector"]  # the index it built, loaded whole for the next searches
    finally:
        assert holder.shutdown(10) == []
        svc.close()


def test_stats_and_doctor_say_what_indexes_exist_and_how_fresh(
        home: Path, subprocess_env: dict[str, str], memcli_bin: str, tmp_path: Path) -> None:
    src = tmp_path / "turns.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records(120)))

    def run(*args: str) -> str:
        p = subprocess.run([memcli_bin, *args], env=subprocess_env, capture_output=True, text=True, timeout=180)
        assert p.returncode == 0, p.stderr
        return p.stdout

    assert json.loads(run("import", str(src), "--json"))["added"] == 120
    st = json.loads(run("stats", "--json"))
    fts = next(d for d in st["index_status"] if d["kind"] == "FTS")
    assert fts["indexed_rows"] == 120 and fts["unindexed_rows"] == 0 and fts["built_at"]
    assert st["maintenance_due"] == []
    doctor = run("doctor", "--json")
    check = next(c for c in json.loads(doctor)["checks"] if c["name"] == "vector index")
    assert check["status"] == "ok" and "exact search" in check["detail"]


def test_export_streams_oldest_first_with_a_progress_bar(service: MemoryService, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.console import Console
    from typer.testing import CliRunner

    from memcli.cli import output
    from memcli.cli.app import app

    service.import_records([dict(r, created_at=1_700_000_000_000 + (i * 7919) % 1201 * 1000)
                            for i, r in enumerate(records(1200))])
    service.close()
    buf = io.StringIO()
    monkeypatch.setattr(output, "err", Console(file=buf, force_terminal=True, width=100))
    dest = tmp_path / "all.json"
    res = CliRunner().invoke(app, ["export", "--format", "json", "-o", str(dest), "--json"])
    assert res.exit_code == 0, res.output
    assert "Exporting" in buf.getvalue() and "1200/1200" in buf.getvalue()
    doc = json.loads(dest.read_text())
    keys = [(m["created_at"], m["id"]) for m in doc["memories"]]
    assert len(keys) == 1200 and keys == sorted(keys)  # oldest first, read batch by batch by row id


def test_a_long_import_keeps_its_id_lookups_inside_the_index(service: MemoryService,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from memcli.memory import records as recs
    from memcli.models import new_id

    monkeypatch.setattr(recs, "IMPORT_FOLD_ROWS", 1000)
    service.store.background_maintenance = True  # no compaction at the end: what the import itself left
    rows = [dict(r, id=new_id()) for r in records(2500)]
    assert recs.import_records(service, iter(rows), chunk=500)["added"] == 2500
    ids = next(d for d in service.store.index_status() if d["column"] == "id")
    assert ids["indexed_rows"] >= 2000 and ids["unindexed_rows"] <= 500  # folded every 1,000 rows
    again = recs.import_records(service, iter(rows), chunk=500)  # every id found: nothing twice
    assert again == {"read": 2500, "added": 0, "skipped": 2500}
    assert service.store.count() == 2500


@pytest.mark.parametrize("project_rows", [0, 20_000])  # the project's memories in the window, or read whole
def test_the_session_digest_reads_a_recent_window_and_shows_what_a_full_read_would(
        service: MemoryService, monkeypatch: pytest.MonkeyPatch, project_rows: int) -> None:
    from memcli.hooks import digest
    from memcli.models import now_ms

    now = now_ms()
    recs = []
    for i in range(600):  # 120 days of memories: two projects, captured turns, a few important old ones
        recs.append({"content": f"note {i}: the {('cache', 'queue', 'index')[i % 3]} setting {i} is {i * 7}",
                     "created_at": now - (i * 4 * 3_600_000) - 60_000, "project": ("atlas", "zeus", None)[i % 3],
                     "importance": 0.9 if i % 97 == 0 else 0.5, "tags": ["turn"] if i % 5 == 0 else []})
    service.import_records(recs)
    reads: list[str | None] = []
    real = service.store.column_values
    monkeypatch.setattr(service.store, "column_values", lambda where, cols: reads.append(where) or real(where, cols))

    def digest_with(rows: int) -> tuple[str | None, list[str]]:
        monkeypatch.setattr(digest, "WINDOW_ROWS", rows)
        return digest.session_digest(service, project="atlas", budget=6000, now=now)

    monkeypatch.setattr(digest, "PROJECT_ROWS", project_rows)
    full = digest_with(10_000)  # a window holding every memory: all of them read
    reads.clear()
    windowed = digest_with(50)
    assert windowed == full and full[0] is not None
    # never every row: a window of the newest, the important older ones, or (read whole) this project's
    assert reads and all("created_at >=" in w or "importance > 0.5" in w or "project = 'atlas'" in w
                         for w in map(str, reads))
    assert any("project = 'atlas'" in str(w) for w in reads) == bool(project_rows)
    assert any(m.startswith("note 97:") for m in [service.store.get(i).content for i in windowed[1]])  # old, important


def test_list_reads_a_window_of_the_newest_and_pages_as_a_full_sort_would(
        service: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
    from memcli.models import now_ms

    now = now_ms()
    day = 86_400_000
    # years of memories, the newest a month old (no window of a day holds a page), two on one millisecond, one
    # dated ahead of the clock
    ages = [30 * day + i * 7 * day for i in range(200)] + [30 * day, -2 * day]
    service.import_records([{"content": f"memory {i} about topic {i % 7}", "created_at": now - age}
                            for i, age in enumerate(ages)])
    service.store.ensure_scalar_indexes()
    everything = sorted(service.store.find("TRUE", 1000), key=lambda m: (m.created_at, m.id), reverse=True)
    reads: list[str | None] = []
    real = service.store.reader.snapshot

    def snapshot() -> Any:
        snap = real()

        class Spy:
            def __getattr__(self, name: str) -> Any:
                return getattr(snap, name)

            def to_table(self, **kw: Any) -> Any:
                reads.append(kw.get("filter"))
                return snap.to_table(**kw)
        return Spy()
    monkeypatch.setattr(service.store.reader, "snapshot", snapshot)
    assert [m.id for m in service.list(limit=5)] == [m.id for m in everything[:5]]
    assert [m.id for m in service.list(limit=4, offset=3)] == [m.id for m in everything[3:7]]
    assert reads and all("created_at >=" in str(w) for w in reads)  # never the keys of every row
