"""SIGKILL in the middle of writes: of `memcli import` (5,000 memories) and of `memcli serve` during REST batches.
Afterwards the store opens, every acknowledged write is there (once, whole), `memcli doctor` reports it
healthy, and repeating the interrupted work completes it without duplicates."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from _util import (
    MEMCLI,
    Reaper,
    all_rows,
    cli,
    doctor,
    failed_checks,
    make_env,
    open_service,
    start_server,
)

N_IMPORT = 5000


def _records(n: int) -> list[dict[str, Any]]:
    base = 1_760_000_000_000
    return [{"id": str(uuid.uuid4()), "content": f"imported note {i}: service s{i % 97} restarts after deploy {i}",
             "tags": [f"t{i % 7}"], "created_at": base + i, "importance": round((i % 10) / 10, 1)}
            for i in range(n)]


def _ids(home: Path) -> set[str]:
    return {r["id"] for r in all_rows(home, ("id",))}


def _assert_intact(home: Path, by_id: dict[str, dict[str, Any]]) -> set[str]:
    """Every row is one of the file's records, whole (its fields as in the file), and no id is there twice."""
    rows = all_rows(home, ("id", "content", "tags", "created_at", "importance", "source"))
    dup = [i for i, n in Counter(r["id"] for r in rows).items() if n > 1]
    assert not dup, f"{len(dup)} ids stored twice"
    for r in rows:
        rec = by_id[r["id"]]
        assert (r["content"], r["tags"], r["created_at"], r["importance"]) == (
            rec["content"], rec["tags"], rec["created_at"], rec["importance"]), r
    return {r["id"] for r in rows}


def _assert_doctor_healthy(env: dict[str, str], n: int) -> None:
    report = doctor(env)
    assert report["ok"] is True and not failed_checks(report), report
    store = next(c for c in report["checks"] if c["name"] == "store")
    assert f"{n:,} memories" in store["detail"], store


def test_kill_9_during_import_of_5000_loses_no_committed_row(home: Path, tmp_path: Path, reaper: Reaper) -> None:
    env = make_env(home)
    recs = _records(N_IMPORT)
    by_id = {r["id"]: r for r in recs}
    src = tmp_path / "memories.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs))

    svc = open_service(home)  # an observer in this process: what it sees committed must survive the kill
    try:
        for kill_at in (800, 2500):
            proc = reaper.track(subprocess.Popen([MEMCLI, "import", str(src), "--json"], env=env,
                                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE))
            seen: set[str] = set()
            deadline = time.monotonic() + 300
            while True:
                assert proc.poll() is None, f"the import ended before the kill: {proc.communicate()}"
                assert time.monotonic() < deadline, "the import made no progress"
                if svc.store.count() >= kill_at:
                    seen = {r["id"] for r in svc.store.column_values(None, ["id"])}
                    break
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)

            present = _assert_intact(home, by_id)
            assert seen <= present, f"{len(seen - present)} rows seen committed before the kill are gone"
            assert len(present) < N_IMPORT, "the import was not interrupted"
            _assert_doctor_healthy(env, len(present))
    finally:
        svc.close()

    # importing the file again completes it: what is there is skipped, the rest added once
    p = cli(["import", str(src), "--json"], env, timeout=600)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    res = json.loads(p.stdout)
    assert res["read"] == N_IMPORT and res["added"] == N_IMPORT - len(present) and res["skipped"] == len(present)
    assert _assert_intact(home, by_id) == set(by_id)
    _assert_doctor_healthy(env, N_IMPORT)
    hits = json.loads(cli(["recall", "imported note 4321 deploy 4321", "--json"], env).stdout)
    assert hits[0]["content"] == recs[4321]["content"]


def test_kill_9_of_the_server_during_rest_batches_keeps_every_acknowledged_batch(home: Path, reaper: Reaper) -> None:
    env = make_env(home)
    srv = start_server(reaper, home, env=env)
    size = 50
    batches: dict[int, list[dict[str, Any]]] = {}
    acked: dict[int, list[str]] = {}  # batch → memory ids, for every batch answered 201
    lock = threading.Lock()
    next_batch = iter(range(10_000))
    dead = threading.Event()

    def client(c: int) -> None:
        with srv.client() as http:
            while not dead.is_set():
                with lock:
                    b = next(next_batch)
                    batches[b] = [{"content": f"batch {b} item {i}: queue q{b} drains worker {c}-{i}",
                                   "tags": [f"b{b}"]} for i in range(size)]
                try:
                    r = http.post("/api/memories/batch", json=batches[b])
                except httpx.HTTPError:
                    return  # the server died: this batch was never acknowledged
                assert r.status_code == 201, r.text
                results = r.json()["results"]
                assert all(x["created"] for x in results) and len(results) == size
                with lock:
                    acked[b] = [x["memory_id"] for x in results]

    threads = [threading.Thread(target=client, args=(c,)) for c in range(3)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 120
        while len(acked) < 8:
            assert time.monotonic() < deadline and srv.proc.poll() is None, srv.log_text()
            time.sleep(0.01)
        srv.kill()  # SIGKILL with batches in flight
        dead.set()
    finally:
        dead.set()
        for t in threads:
            t.join(60)
    assert all(not t.is_alive() for t in threads)

    rows = all_rows(home, ("id", "content", "tags"))
    ids = Counter(r["id"] for r in rows)
    assert not [i for i, n in ids.items() if n > 1], "duplicated ids"
    by_id = {r["id"]: r for r in rows}
    for b, mids in acked.items():  # every acknowledged memory, with what was sent
        assert [by_id[m]["content"] if m in by_id else None for m in mids] == [x["content"] for x in batches[b]]
    per_batch = Counter(r["tags"][0] for r in rows)
    for b in batches:  # a batch is one commit: all of it or none of it
        assert per_batch.get(f"b{b}", 0) in (0, size), (b, per_batch.get(f"b{b}"))
    _assert_doctor_healthy(env, len(rows))

    # the clients retry what was not acknowledged against a new server: nothing twice, nothing missing
    srv2 = start_server(reaper, home, env=env)
    with srv2.client() as http:
        for b in sorted(set(batches) - set(acked)):
            r = http.post("/api/memories/batch", json=batches[b])
            assert r.status_code in (200, 201), r.text
    srv2.stop()
    rows = all_rows(home, ("id", "content"))
    assert Counter(r["content"] for r in rows) == Counter(x["content"] for b in batches.values() for x in b)
    assert len({r["id"] for r in rows}) == len(rows) == size * len(batches)
    _assert_doctor_healthy(env, size * len(batches))


def test_doctor_reports_a_damaged_data_file(home: Path) -> None:
    """What doctor says after a kill must mean something: a truncated data file is a failure, not 'ok'."""
    env = make_env(home)
    svc = open_service(home)
    try:
        svc.import_records(_records(300))
    finally:
        svc.close()
    _assert_doctor_healthy(env, 300)
    data = max((home / "data" / "memories.lance" / "data").glob("*.lance"), key=lambda f: f.stat().st_size)
    with open(data, "r+b") as fh:
        fh.truncate(data.stat().st_size // 2)
    report = doctor(env)
    assert report["ok"] is False
    assert [c["name"] for c in failed_checks(report)] == ["store data"], report
    p = cli(["list", "--json"], env)  # and the commands say so instead of printing a traceback
    assert p.returncode == 1 and json.loads(p.stdout)["code"] == "store_error", p.stderr
    assert b"Traceback" not in p.stderr
