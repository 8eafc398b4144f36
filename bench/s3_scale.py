"""``bench/s3.py --scale N`` (issue 30): bench/scale.py's synthetic store of N memories on S3 (moto), hash embedder.

    nice -n 10 python bench/s3.py --scale 100000                       # all parts, 2 replicas x 100 writes
    nice -n 10 python bench/s3.py --scale 10000 --scale-parts import,index,recall

One s3:// prefix, parts in order (each needs the ones before it):

1. ``import``: bench/scale.py's generated export (``bench/.cache/scale-N.jsonl``) streamed through
   ``import_records`` into the s3 store, rows first (``background_maintenance``, as scale.py builds): memories/s
   per tenth of the file, the S3 requests per commit (moto's log: read / list / write / 412), table versions,
   and moto's resident memory (it keeps every object in memory);
2. ``index``: the maintainer's rounds (``maintain``, what a server does in the background) until nothing is
   due: their time and S3 requests, then what ``stats`` says (``index_status``, ``maintenance_due``);
3. ``recall``: bench/scale.py's text queries in process (p50/p95, top-5 agreement with exact search) and its
   identifier queries (rank of the memory named);
4. ``profile``: each step of a recall (snapshot, ANN search, keyword search, its per-token ideal, fetch) on its
   own: median ms and S3 requests per query;
5. ``replicas``: W ``memcli serve`` replicas on the same prefix, each sent P single REST remembers, ``--parallel``
   at once: writes/s, p50/p95, then every acknowledged id looked up in the store (``0 lost, 0 duplicated``),
   the N imported rows counted again, and recall through a replica's REST API (``/api/search``) p50/p95.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale  # noqa: E402  (bench/scale.py: the export, its queries, the recall and identifier parts)
from s3 import BUCKET, MotoLog, concurrent, kinds  # noqa: E402

PARTS = ("import", "index", "recall", "profile", "replicas")


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def proc_cpu_rss(pid: int) -> tuple[float, float]:
    """A process's CPU seconds (user + system) and resident memory (MiB), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu_s = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = next((int(line.split()[1]) / 1024 for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                if line.startswith("VmRSS:")), 0.0)
    return cpu_s, rss


def open_service(env: dict[str, str]) -> Any:
    from memcli.config import load_config
    from memcli.memory.service import MemoryService

    home = Path(tempfile.mkdtemp(prefix="memcli-bench-s3scale-"))
    return MemoryService.open(load_config(home, env={**env, "MEMCLI_EMBEDDER": "hash"}))


def per(q: dict[str, int], n: float) -> str:
    n = max(n, 1)
    return f"{q['read'] / n:.1f}/{q['list'] / n:.1f}/{q['write'] / n:.1f}, 412: {q['412']}"


def import_part(svc: Any, n: int, moto_log: MotoLog, moto_pid: int) -> None:
    """The export streamed into the s3 store, rows first; figures per tenth of the file."""
    from memcli.memory.records import IMPORT_CHUNK

    src = scale.export_file(n)
    step = max(n // 10, IMPORT_CHUNK)
    moto_log.take()
    marks: list[tuple[int, float, float, float]] = [(0, time.perf_counter(), scale.cpu(), proc_cpu_rss(moto_pid)[0])]
    total = {"read": 0, "list": 0, "write": 0, "412": 0}

    def progress(done: int, _total: int) -> None:
        if done < marks[-1][0] + step and done != n:
            return
        marks.append((done, time.perf_counter(), scale.cpu(), proc_cpu_rss(moto_pid)[0]))
        a, b = marks[-2], marks[-1]
        q = kinds(moto_log.take())
        for k in total:
            total[k] += q[k]
        commits = (b[0] - a[0]) / IMPORT_CHUNK
        print(f"    {done:>9,}: {(b[0] - a[0]) / (b[1] - a[1]):6.0f} memories/s wall, this process "
              f"{b[2] - a[2]:5.1f} CPU s, moto {b[3] - a[3]:5.1f} CPU s; S3 requests per {IMPORT_CHUNK}-row "
              f"commit (read/list/write) {per(q, commits)}", flush=True)

    svc.store.background_maintenance = True  # rows first; the maintainer's part indexes them (a server's way)
    res = svc.import_records(scale.read_records(src), progress=progress)
    took = marks[-1][1] - marks[0][1]
    versions = len(svc.store.table.to_lance().versions())
    _, moto_rss = proc_cpu_rss(moto_pid)
    print(f"  import {n:,} into s3 (moto): {res['added']:,} added in {took:.1f} s = {n / took:.0f} memories/s; "
          f"this process {marks[-1][2] - marks[0][2]:.0f} CPU s, moto {marks[-1][3] - marks[0][3]:.0f} CPU s; "
          f"{versions} table versions; {svc.store.fragment_count()} fragments; S3 requests in all "
          f"(read/list/write) {total['read']}/{total['list']}/{total['write']}, 412: {total['412']}; "
          f"peak RSS {scale.rss_mb():.0f} MB, moto RSS {moto_rss:.0f} MiB; {load()}", flush=True)


def index_part(svc: Any, moto_log: MotoLog) -> None:
    """The maintainer's rounds until nothing is due, then what stats says of the indexes."""
    store = svc.store
    moto_log.take()
    t = time.perf_counter()
    done: list[list[str]] = []
    for _ in range(6):
        did = store.maintain()
        if not did:
            break
        done.append(did)
    took = time.perf_counter() - t
    q = kinds(moto_log.take())
    st = svc.stats()
    ix = "; ".join(f"{d['name']} {d['kind']} {d['indexed_rows']:,} in + {d['unindexed_rows']:,} out"
                   for d in st["index_status"])
    print(f"  maintenance rounds: {done or 'nothing due'} in {took:.1f} s, S3 requests (read/list/write) "
          f"{q['read']}/{q['list']}/{q['write']}, 412: {q['412']}; {load()}")
    print(f"  stats: {st.get('total', st.get('count'))} memories; index_status: {ix}; maintenance_due: "
          f"{st['maintenance_due']}; {store.fragment_count()} fragments; "
          f"{len(store.table.to_lance().versions())} table versions", flush=True)


def recall_part(svc: Any, n: int) -> None:
    svc.store.facts.forget()
    scale.bench_recall(svc, n)
    scale.bench_ident(svc, n)
    print(f"  ({load()})", flush=True)


def profile_part(svc: Any, n: int, moto_log: MotoLog, count: int = 20) -> None:
    """Where a recall's time goes on s3: each of its store calls run on its own, one after another (recall runs
    the keyword search beside the vector search), median ms and S3 requests per query."""
    from memcli.memory.store import ACTIVE_FILTER

    store = svc.store
    qs = scale.text_queries(n, count)
    svc.recall(qs[0])
    steps: dict[str, tuple[list[float], dict[str, int]]] = {}

    def step(name: str, fn: Any) -> Any:
        moto_log.take()
        t = time.perf_counter()
        out = fn()
        ms, q = steps.setdefault(name, ([], {"read": 0, "list": 0, "write": 0, "412": 0}))
        ms.append((time.perf_counter() - t) * 1000)
        for k, v in kinds(moto_log.take()).items():
            q[k] += v
        return out

    for text in qs:
        vec = svc.embedder.embed_query(text)
        snap = step("snapshot (latest version)", store.reader.snapshot)
        vids = step("vector search (ANN)", lambda: store._vector_ids(snap, vec, "vector", ACTIVE_FILTER, 20))
        tids = step("keyword search", lambda: store._text_ids(snap, text, ACTIVE_FILTER, 20))
        step("keyword ideal (per token)", lambda: store.keyword_ideal(snap, text, ACTIVE_FILTER))
        cands = store.search(text=None, vector=None, where=None, k=1)
        cands.snapshot = snap
        step("fetch 10 rows", lambda: store.fetch(cands, [r for r, _ in (vids + tids)[:10]]))
        step("whole recall", lambda: svc.recall(text))
    print(f"  where a recall's time goes on s3 ({count} queries, each step alone): median ms, S3 requests per query "
          "(read/list/write)")
    for name, (ms, q) in steps.items():
        print(f"    {name:<28} {statistics.median(ms):7.1f} ms  {per(q, len(ms))}")
    print(f"  ({load()})", flush=True)


def replicas_part(env: dict[str, str], n: int, writers: int, per_writer: int, parallel: int, tmp: Path,
                  moto_log: MotoLog) -> None:
    """W replicas on the prefix of the N imported memories: concurrent single REST writes, then each acknowledged
    id looked for in the store, the store counted, and recall through a replica's REST API."""
    queries = scale.text_queries(n)

    def after(servers: list[Any], acked: dict[str, str]) -> dict[str, Any]:
        # recall through the first replica's REST API, the store as the writes left it (both replicas still up)
        ms = []
        with servers[0].client(timeout=120) as c:
            c.get("/api/search", params={"q": queries[0], "limit": 5})
            for q in queries:
                t = time.perf_counter()
                r = c.get("/api/search", params={"q": q, "limit": 5})
                ms.append((time.perf_counter() - t) * 1000)
                r.raise_for_status()
        return {"rest_recall": ms}

    r = concurrent(env, writers, per_writer, tmp, parallel=parallel, moto_log=moto_log, after=after)
    # every acknowledged id, looked up in the store after the replicas stopped (listing 100k rows is not the way)
    svc = open_service(env)
    try:
        ids = list(r["acked_ids"])
        found: list[str] = []
        for start in range(0, len(ids), 500):
            found += [row["id"] for row in svc.store.read_rows(
                "id IN (" + ", ".join(f"'{i}'" for i in ids[start:start + 500]) + ")", ["id"])]
        every = [row["id"] for row in svc.store.read_rows(None, ["id"])]
        lost, dup = len(set(ids) - set(found)), len(found) - len(set(found))
        q = r["s3"]
        print(f"  {writers} replicas x {per_writer} single REST remembers, {min(parallel, per_writer)} at once per "
              f"replica: {r['acked']} acked, {r['errors']} errors, {r['writes_s']:.1f} writes/s, p50 {r['p50']:.0f} ms, "
              f"p95 {r['p95']:.0f} ms, wall {r['wall']:.1f} s; commits per replica {r['commits']}; S3 requests per "
              f"write (read/list/write) {per(q, r['acked'])}")
        if r["first_error"]:
            print(f"  first error: {r['first_error']}")
        print(f"  acknowledged ids in the store: {lost} lost, {dup} duplicated; the store holds {len(every):,} rows "
              f"({len(set(every)):,} distinct ids; expected {n + r['acked']:,})")
        rest = r["rest_recall"]
        print(f"  recall through replica 0's REST API (/api/search, limit 5, {len(rest)} queries): p50 "
              f"{scale.pct(rest, 50):.1f} ms, p95 {scale.pct(rest, 95):.1f} ms; {load()}", flush=True)
    finally:
        svc.close()


def run(n: int, parts: set[str], moto: Any, moto_log: MotoLog, tmp: Path, *, writers: int, per_writer: int,
        parallel: int) -> None:
    from _moto import s3_env

    uri = f"s3://{BUCKET}/scale-{n}-{uuid.uuid4().hex[:8]}"
    env = s3_env(moto.endpoint, uri)
    print(f"== {n:,} memories on {uri} (moto {moto.endpoint}), hash embedder; {load()}", flush=True)
    t0 = time.perf_counter()
    svc = open_service(env)
    try:
        if "import" in parts:
            import_part(svc, n, moto_log, moto.proc.pid)
        if "index" in parts:
            index_part(svc, moto_log)
        if "recall" in parts:
            recall_part(svc, n)
        if "profile" in parts:
            profile_part(svc, n, moto_log)
    finally:
        svc.close()
    if "replicas" in parts:
        replicas_part(env, n, writers, per_writer, parallel, tmp, moto_log)
    cpu_s, rss = proc_cpu_rss(moto.proc.pid)
    print(f"  all parts {time.perf_counter() - t0:.0f} s; moto {cpu_s:.0f} CPU s, RSS {rss:.0f} MiB; {load()}")
