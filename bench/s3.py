"""Benchmark the store on object storage (moto's S3 server, started here) against the local disk.

    python bench/s3.py                       # defaults: 40 single adds, 30 searches, 4 writers x 50
    python bench/s3.py --adds 100 --writers 8 --per-writer 50 --no-cas

1. Latency, in process (MemoryService, the hash embedder: the store is what is measured), local dir vs s3://
   on moto: p50/p95 of one remember over N single adds (automatic compaction on, as configured); then, on a
   second store with automatic compaction off, p50 of one hybrid recall after N single adds (every add left a
   fragment), the time of `compact`, and the recall p50 after it; one `get` by id.
2. Concurrent writers on moto: W `memcli serve` replicas (one home each, one shared MEMCLI_STORE_URI), one
   REST client each, all released at once, each doing P single remembers. writes/s, latency p50/p95, then
   every acknowledged id is looked for: "0 lost, 0 duplicated" is the expected line.
3. ``--no-cas``: the same through a proxy that drops If-None-Match (a store without conditional PUT), the
   replicas started with --single-writer against advice: how many acknowledged writes vanish.

moto keeps objects in memory and runs on the same 2 cores: a real S3 adds network latency (10–30 ms per
request in-region) but takes the CPU load off this machine. Figures are noisy here; medians are quoted.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _memcli_server import ServerProc, start_server  # noqa: E402
from _moto import MotoServer, StripIfNoneMatchProxy, moto_missing, s3_env  # noqa: E402

MEMCLI = str(Path(sys.executable).parent / "memcli")
BUCKET = "memcli-bench"


def p(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def text(i: int, tag: str = "") -> str:
    return (f"{tag}memory {i}: the release checklist step {i} requires the cache key k{i * 7919 % 100000} and a "
            f"green canary on host node-{i % 17} before the rollout")


# ------------------------------------------------------------------------------------------------ latency
def latency(env: dict[str, str], adds: int, searches: int) -> dict[str, float]:
    from memcli.config import load_config
    from memcli.service import MemoryService

    home = Path(tempfile.mkdtemp(prefix="memcli-bench-s3-"))
    cfg = load_config(home, env={**env, "MEMCLI_EMBEDDER": "hash"})
    queries = [f"cache key k{i * 7919 % 100000} canary" for i in range(searches)]
    # as configured (automatic compaction every 32 fragments): what a user sees
    svc = MemoryService.open(cfg)
    add_ms = []
    for i in range(adds):
        t = time.perf_counter()
        svc.remember(text(i))
        add_ms.append((time.perf_counter() - t) * 1000)
    svc.close()
    # automatic compaction off on a second prefix: fragments pile up, as between two compactions
    if "MEMCLI_STORE_URI" in env:
        env = {**env, "MEMCLI_STORE_URI": env["MEMCLI_STORE_URI"] + "-raw"}
    cfg = load_config(Path(tempfile.mkdtemp(prefix="memcli-bench-s3-")), env={**env, "MEMCLI_EMBEDDER": "hash"})
    cfg.auto_compact_fragments = 0
    svc = MemoryService.open(cfg)
    for i in range(adds):
        svc.remember(text(i))

    def search_p50() -> float:
        ms = []
        for q in queries:
            t = time.perf_counter()
            svc.recall(q)
            ms.append((time.perf_counter() - t) * 1000)
        return statistics.median(ms)

    before = search_p50()
    t = time.perf_counter()
    svc.compact()
    compact_ms = (time.perf_counter() - t) * 1000
    after = search_p50()
    ids = [m.id for m in svc.list(limit=10)]
    get_ms_all = []
    for mid in ids:
        t = time.perf_counter()
        svc.get(mid)
        get_ms_all.append((time.perf_counter() - t) * 1000)
    get_ms = statistics.median(get_ms_all)
    svc.close()
    return {"add_p50": statistics.median(add_ms[1:]), "add_p95": p(add_ms[1:], 0.95), "search_before": before,
            "compact": compact_ms, "search_after": after, "get": get_ms}


# ------------------------------------------------------------------------------------------------ replicas
def concurrent(env: dict[str, str], writers: int, per_writer: int, tmp: Path, *extra: str) -> dict[str, Any]:
    servers: list[ServerProc] = []
    token = "bench-" + secrets.token_hex(8)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCLI_", "AWS_"))}
    base.update(env, MEMCLI_EMBEDDER="hash", MEMCLI_TOKEN=token)
    try:
        for w in range(writers):
            servers.append(start_server(MEMCLI, base, tmp / f"home-{w}-{uuid.uuid4().hex[:6]}", *extra))
        acked: dict[str, str] = {}
        lat: list[float] = []
        errors: list[str] = []
        lock = threading.Lock()
        go = threading.Event()

        def run(srv: ServerProc, w: int) -> None:
            with srv.client(timeout=600) as c:
                go.wait()
                for i in range(per_writer):
                    body = text(i, f"writer {w} ")
                    t = time.perf_counter()
                    r = c.post("/api/memories", json={"content": body})
                    ms = (time.perf_counter() - t) * 1000
                    with lock:
                        if r.status_code in (200, 201):
                            acked[r.json()["memory_id"]] = body
                            lat.append(ms)
                        else:
                            errors.append(f"{r.status_code} {r.text[:160]}")

        threads = [threading.Thread(target=run, args=(s, w)) for w, s in enumerate(servers)]
        for t in threads:
            t.start()
        start = time.perf_counter()
        go.set()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        with servers[0].client(timeout=120) as c:
            items = c.get("/api/memories", params={"limit": 100_000}).json()
        ids = [it["memory_id"] for it in items]
        return {"acked": len(acked), "errors": len(errors), "first_error": errors[0] if errors else "",
                "wall": wall, "writes_s": len(acked) / wall, "p50": p(lat, 0.5), "p95": p(lat, 0.95),
                "lost": len(set(acked) - set(ids)), "duplicated": len(ids) - len(set(ids)), "rows": len(ids)}
    finally:
        for s in servers:
            s.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--adds", type=int, default=40)
    ap.add_argument("--searches", type=int, default=30)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--per-writer", type=int, default=50)
    ap.add_argument("--no-cas", action="store_true", help="also run the writers through a proxy that drops "
                    "If-None-Match (a store without conditional PUT)")
    args = ap.parse_args()
    why = moto_missing()
    if why:
        sys.exit(f"bench/s3.py: {why}")
    os.environ.setdefault("LANCE_LOG", "error")
    tmp = Path(tempfile.mkdtemp(prefix="memcli-bench-s3-"))
    moto = MotoServer(tmp / "moto.log")
    try:
        moto.create_bucket(BUCKET)
        print(f"moto {moto.endpoint}; {args.adds} single adds, {args.searches} hybrid recalls (hash embedder)\n")
        rows = {"local disk": latency({}, args.adds, args.searches),
                "s3 (moto)": latency(s3_env(moto.endpoint, f"s3://{BUCKET}/lat-{uuid.uuid4().hex[:8]}"),
                                     args.adds, args.searches)}
        print(f"{'store':<12} {'add p50':>9} {'add p95':>9} {f'recall p50 after {args.adds} adds':>28} "
              f"{'compact':>9} {'recall p50 compacted':>21} {'get p50':>8}")
        for name, r in rows.items():
            print(f"{name:<12} {r['add_p50']:>7.1f}ms {r['add_p95']:>7.1f}ms {r['search_before']:>26.1f}ms "
                  f"{r['compact']:>7.0f}ms {r['search_after']:>19.1f}ms {r['get']:>6.1f}ms")
        runs = [("s3 (moto)", s3_env(moto.endpoint, f"s3://{BUCKET}/cc-{uuid.uuid4().hex[:8]}"), moto, ())]
        proxy = StripIfNoneMatchProxy(moto.port) if args.no_cas else None
        if proxy is not None:
            runs.append(("no cond. PUT", s3_env(proxy.endpoint, f"s3://{BUCKET}/nocas-{uuid.uuid4().hex[:8]}"),
                         proxy, ("--single-writer",)))
        print(f"\n{args.writers} `memcli serve` replicas x {args.per_writer} single remembers over REST, at once")
        print(f"{'store':<14} {'acked':>6} {'errors':>6} {'writes/s':>9} {'p50':>8} {'p95':>8} {'lost':>5} "
              f"{'dup':>4} {'wall':>7}")
        for name, env, _, extra in runs:
            r = concurrent(env, args.writers, args.per_writer, tmp, *extra)
            print(f"{name:<14} {r['acked']:>6} {r['errors']:>6} {r['writes_s']:>9.1f} {r['p50']:>6.0f}ms "
                  f"{r['p95']:>6.0f}ms {r['lost']:>5} {r['duplicated']:>4} {r['wall']:>6.1f}s")
            if r["first_error"]:
                print(f"  first error: {r['first_error']}")
        if proxy is not None:
            proxy.stop()
    finally:
        moto.stop()


if __name__ == "__main__":
    main()
