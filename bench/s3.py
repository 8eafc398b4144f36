"""Benchmark the store on object storage (moto's S3 server, started here) against the local disk.

    python bench/s3.py                       # defaults: 40 single adds, 30 searches, profile, 2 replicas x 100
    python bench/s3.py --adds 100 --writers 2 --per-writer 100 --parallel 100 --no-cas
    python bench/s3.py --baseline /tmp/main  # also the replicas on another memcli source tree (its src/), same run
    nice -n 10 python bench/s3.py --scale 100000  # instead: bench/scale.py's 100k export on s3 (bench/s3_scale.py)

1. Latency, in process (MemoryService, the hash embedder: the store is what is measured), local dir vs s3://
   on moto: p50/p95 of one remember over N single adds (automatic compaction on, as configured); then, on a
   second store with automatic compaction off, p50 of one hybrid recall after N single adds (every add left a
   fragment), the time of `compact`, and the recall p50 after it; one `get` by id.
2. Where a write's time goes on s3 (in process, the bundled embedder unless --embedder hash): each phase of
   ``remember_many`` timed (its own time, nested phases apart) and the S3 requests it made (moto's request log:
   reads, lists, writes, 412 = a conditional PUT refused because another commit got there first), for single
   writes and for groups of 8 (what a replica's group commit writes).
3. Concurrent writers on moto: W `memcli serve` replicas (one home each, one shared MEMCLI_STORE_URI), each
   sent P single remembers by ``--parallel`` REST clients at once (the issue's setup: 2 x 100, all in
   parallel). writes/s, latency p50/p95, the commits each replica made (its group commits), S3 requests per
   write, 412s (conditional-PUT retries between the replicas), then every acknowledged id is looked for:
   "0 lost, 0 duplicated" is the expected line.
4. ``--no-cas``: the same through a proxy that drops If-None-Match (a store without conditional PUT), the
   replicas started with --single-writer against advice: how many acknowledged writes vanish.

moto keeps objects in memory and runs on the same 2 cores: a real S3 adds network latency (10–30 ms per
request in-region) but takes the CPU load off this machine. Figures are noisy here; medians are quoted.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from collections.abc import Callable
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
    from memcli.memory.service import MemoryService

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


# ------------------------------------------------------------------------------------------------ profile
class MotoLog:
    """The requests moto served since the last look (its access log: method, path, status)."""

    LINE = re.compile(r'"(?:\x1b\[[0-9;]*m)*([A-Z]+) (\S+) HTTP/[0-9.]+(?:\x1b\[0m)?" (\d{3})')

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size

    def take(self) -> list[tuple[str, str, int]]:
        time.sleep(0.002)  # moto writes its log line as it answers
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        return [(m.group(1), m.group(2), int(m.group(3)))
                for m in self.LINE.finditer(data[:end].decode("utf-8", "replace"))]


def kinds(reqs: list[tuple[str, str, int]]) -> dict[str, int]:
    out = {"read": 0, "list": 0, "write": 0, "412": 0}
    for method, path, status in reqs:
        if status == 412:
            out["412"] += 1
        elif method == "GET" and "list-type=" in path:
            out["list"] += 1
        elif method in ("GET", "HEAD"):
            out["read"] += 1
        else:
            out["write"] += 1
    return out


PHASES = ("embedding", "duplicate checks", "lance commit (memories)", "index upkeep", "audit log")


class Profiler:
    """Own time and S3 requests of each phase of a write (a phase's nested phases are counted apart)."""

    def __init__(self, moto_log: MotoLog) -> None:
        self.log = moto_log
        self.ms: dict[str, float] = {p: 0.0 for p in (*PHASES, "other")}
        self.reqs: dict[str, list[tuple[str, str, int]]] = {p: [] for p in (*PHASES, "other")}
        self.stack = ["other"]
        self.mark = time.perf_counter()

    def _switch(self, to: str | None) -> None:
        now = time.perf_counter()
        self.ms[self.stack[-1]] += (now - self.mark) * 1000
        self.reqs[self.stack[-1]] += self.log.take()
        self.mark = now
        if to is None:
            self.stack.pop()
        else:
            self.stack.append(to)

    def wrap(self, obj: Any, name: str, phase: str) -> None:
        fn = getattr(obj, name)

        def timed(*a: Any, **kw: Any) -> Any:
            self._switch(phase)
            try:
                return fn(*a, **kw)
            finally:
                self._switch(None)

        setattr(obj, name, timed)

    def flush(self) -> None:
        self._switch("other")
        self._switch(None)


def profile(env: dict[str, str], moto_log: MotoLog, writes: int, group: int, embedder: str) -> dict[str, Any]:
    """``writes`` memories on a fresh s3 prefix, ``group`` at a time through ``remember_many``."""
    from memcli.config import load_config
    from memcli.memory.service import MemoryService, NewMemory

    cfg = load_config(Path(tempfile.mkdtemp(prefix="memcli-bench-s3-")), env={**env, "MEMCLI_EMBEDDER": embedder})
    svc = MemoryService.open(cfg)
    svc.remember("warm up: the first write creates the tables and the keyword index")
    svc.embedder.embed_query("warm up")
    prof = Profiler(moto_log)
    prof.wrap(svc.embedder, "embed_passages", "embedding")
    for name in ("column_values", "vector_search", "find"):
        prof.wrap(svc.store, name, "duplicate checks")
    from memcli.memory import service as service_mod

    unwrapped = service_mod.neighbours
    prof.wrap(service_mod, "neighbours", "duplicate checks")  # a batch's neighbour searches together
    prof.wrap(svc.store, "commit", "lance commit (memories)")
    prof.wrap(svc.store, "after_write", "index upkeep")
    prof.wrap(svc.store.audit, "record", "audit log")
    moto_log.take()
    t0 = time.perf_counter()
    prof.mark = t0
    for start in range(0, writes, group):
        svc.remember_many([NewMemory(content=text(i, "profile ")) for i in range(start, min(writes, start + group))],
                          source="api")
    prof.flush()
    service_mod.neighbours = unwrapped  # the module's: the next profile wraps it again
    wall = (time.perf_counter() - t0) * 1000
    svc.close()
    return {"wall_ms": wall, "ms": prof.ms, "reqs": {k: kinds(v) for k, v in prof.reqs.items()}}


def print_profile(runs: dict[int, dict[str, Any]], writes: int) -> None:
    groups = list(runs)
    print(f"\nwhere a write's time goes on s3 (moto), in process, {writes} writes: ms per write (own time) and S3 "
          "requests per write (read / list / write / 412)")
    print(f"{'phase':<26}" + "".join(f"{f'groups of {g}':>36}" for g in groups))
    for phase in (*PHASES, "other", "total"):
        cells = []
        for g in groups:
            r = runs[g]
            if phase == "total":
                ms = r["wall_ms"] / writes
                q = {k: sum(v[k] for v in r["reqs"].values()) for k in ("read", "list", "write", "412")}
            else:
                ms, q = r["ms"][phase] / writes, r["reqs"][phase]
            cells.append(f"{ms:8.1f} ms  {q['read'] / writes:5.1f} {q['list'] / writes:5.1f} "
                         f"{q['write'] / writes:5.1f} {q['412'] / writes:4.1f}")
        print(f"{phase:<26}" + "".join(f"{c:>36}" for c in cells))


# ------------------------------------------------------------------------------------------------ replicas
def concurrent(env: dict[str, str], writers: int, per_writer: int, tmp: Path, *extra: str, parallel: int = 1,
               memcli: str = MEMCLI, moto_log: MotoLog | None = None,
               after: Callable[[list[ServerProc], dict[str, str]], dict[str, Any]] | None = None) -> dict[str, Any]:
    """``after(servers, acked)``, if given, runs while the replicas are still up and its figures join the result,
    in place of listing every row to look for the acknowledged ids (a big store: the caller looks them up)."""
    servers: list[ServerProc] = []
    token = "bench-" + secrets.token_hex(8)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCLI_", "AWS_"))}
    base.update(env, MEMCLI_EMBEDDER="hash", MEMCLI_TOKEN=token, MEMCLI_AUTOSTART="0")
    try:
        for w in range(writers):
            servers.append(start_server(memcli, base, tmp / f"home-{w}-{uuid.uuid4().hex[:6]}", *extra))
        acked: dict[str, str] = {}
        lat: list[float] = []
        errors: list[str] = []
        lock = threading.Lock()
        go = threading.Event()

        def run(srv: ServerProc, w: int, lane: int) -> None:
            with srv.client(timeout=600) as c:
                go.wait()
                for i in range(lane, per_writer, parallel):
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

        threads = [threading.Thread(target=run, args=(s, w, lane)) for w, s in enumerate(servers)
                   for lane in range(min(parallel, per_writer))]
        for t in threads:
            t.start()
        if moto_log is not None:
            moto_log.take()
        start = time.perf_counter()
        go.set()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        s3 = kinds(moto_log.take()) if moto_log is not None else {}
        commits = [len(re.findall(r"remember: \d+ memor(?:y|ies) \([\w+]+\) in one commit", s.log.read_text()))
                   for s in servers]
        out = {"acked": len(acked), "errors": len(errors), "first_error": errors[0] if errors else "",
               "wall": wall, "writes_s": len(acked) / wall, "p50": p(lat, 0.5), "p95": p(lat, 0.95),
               "commits": commits, "s3": s3, "acked_ids": dict(acked)}
        if after is not None:
            return {**out, **after(servers, acked)}
        with servers[0].client(timeout=120) as c:
            items = c.get("/api/memories", params={"limit": 100_000}).json()
        ids = [it["memory_id"] for it in items]
        return {**out, "lost": len(set(acked) - set(ids)), "duplicated": len(ids) - len(set(ids)), "rows": len(ids)}
    finally:
        for s in servers:
            s.stop()


def baseline_cli(src: Path, tmp: Path) -> str:
    """A `memcli` that runs another source tree (``src/memcli``) with this interpreter."""
    exe = tmp / "memcli-baseline"
    exe.write_text(f'#!/bin/sh\nPYTHONPATH="{src / "src"}" exec "{sys.executable}" -m memcli.cli "$@"\n')
    exe.chmod(0o755)
    return str(exe)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--adds", type=int, default=40)
    ap.add_argument("--searches", type=int, default=30)
    ap.add_argument("--profile-writes", type=int, default=48, help="writes of the profile (0: no profile)")
    ap.add_argument("--embedder", default="local", help="the profile's embedder: local (default) or hash")
    ap.add_argument("--writers", type=int, default=2, help="memcli serve replicas")
    ap.add_argument("--per-writer", type=int, default=100, help="remembers sent to each replica")
    ap.add_argument("--parallel", type=int, default=100, help="REST clients per replica at once (default: all)")
    ap.add_argument("--baseline", type=Path, help="also run the replicas on this memcli source tree (its src/)")
    ap.add_argument("--no-cas", action="store_true", help="also run the writers through a proxy that drops "
                    "If-None-Match (a store without conditional PUT)")
    ap.add_argument("--scale", type=int, default=0, help="instead: bench/scale.py's export of this many memories on "
                    "s3 (bench/s3_scale.py: import, maintenance, recall, the replicas on it)")
    ap.add_argument("--scale-parts", default="import,index,recall,replicas", help="the parts of --scale")
    args = ap.parse_args()
    why = moto_missing()
    if why:
        sys.exit(f"bench/s3.py: {why}")
    os.environ.setdefault("LANCE_LOG", "error")
    tmp = Path(tempfile.mkdtemp(prefix="memcli-bench-s3-"))
    moto = MotoServer(tmp / "moto.log")
    moto_log = MotoLog(tmp / "moto.log")
    try:
        moto.create_bucket(BUCKET)
        if args.scale:
            import s3_scale

            s3_scale.run(args.scale, set(args.scale_parts.split(",")), moto, moto_log, tmp, writers=args.writers,
                         per_writer=args.per_writer, parallel=args.parallel)
            return
        print(f"moto {moto.endpoint}; {args.adds} single adds, {args.searches} hybrid recalls (hash embedder)\n")
        rows = {"local disk": latency({}, args.adds, args.searches),
                "s3 (moto)": latency(s3_env(moto.endpoint, f"s3://{BUCKET}/lat-{uuid.uuid4().hex[:8]}"),
                                     args.adds, args.searches)}
        print(f"{'store':<12} {'add p50':>9} {'add p95':>9} {f'recall p50 after {args.adds} adds':>28} "
              f"{'compact':>9} {'recall p50 compacted':>21} {'get p50':>8}")
        for name, r in rows.items():
            print(f"{name:<12} {r['add_p50']:>7.1f}ms {r['add_p95']:>7.1f}ms {r['search_before']:>26.1f}ms "
                  f"{r['compact']:>7.0f}ms {r['search_after']:>19.1f}ms {r['get']:>6.1f}ms")
        if args.profile_writes:
            runs = {g: profile(s3_env(moto.endpoint, f"s3://{BUCKET}/prof-{uuid.uuid4().hex[:8]}"), moto_log,
                               args.profile_writes, g, args.embedder) for g in (1, 8)}
            print_profile(runs, args.profile_writes)
        runs = [("s3 (moto)", s3_env(moto.endpoint, f"s3://{BUCKET}/cc-{uuid.uuid4().hex[:8]}"), (), MEMCLI)]
        if args.baseline:
            runs.append((f"baseline: {args.baseline.name}",
                         s3_env(moto.endpoint, f"s3://{BUCKET}/base-{uuid.uuid4().hex[:8]}"), (),
                         baseline_cli(args.baseline.resolve(), tmp)))
        proxy = StripIfNoneMatchProxy(moto.port) if args.no_cas else None
        if proxy is not None:
            runs.append(("no cond. PUT", s3_env(proxy.endpoint, f"s3://{BUCKET}/nocas-{uuid.uuid4().hex[:8]}"),
                         ("--single-writer",), MEMCLI))
        print(f"\n{args.writers} `memcli serve` replicas x {args.per_writer} single remembers over REST, "
              f"{min(args.parallel, args.per_writer)} at once per replica (hash embedder)")
        print(f"{'store':<22} {'acked':>6} {'errors':>6} {'writes/s':>9} {'p50':>8} {'p95':>8} {'lost':>5} "
              f"{'dup':>4} {'wall':>7}  commits per replica   S3 requests per write (read/list/write), 412s")
        for name, env, extra, memcli in runs:
            r = concurrent(env, args.writers, args.per_writer, tmp, *extra, parallel=args.parallel, memcli=memcli,
                           moto_log=moto_log)
            q = r["s3"]
            n = max(1, r["acked"])
            per = f"{q.get('read', 0) / n:.1f}/{q.get('list', 0) / n:.1f}/{q.get('write', 0) / n:.1f}, {q.get('412', 0)}"
            print(f"{name:<22} {r['acked']:>6} {r['errors']:>6} {r['writes_s']:>9.1f} {r['p50']:>6.0f}ms "
                  f"{r['p95']:>6.0f}ms {r['lost']:>5} {r['duplicated']:>4} {r['wall']:>6.1f}s  "
                  f"{str(r['commits']):<21} {per}")
            if r["first_error"]:
                print(f"  first error: {r['first_error']}")
        print("  (issue 18, the same setup before group commit: 1.19 writes/s, p50 5.7 s; the aim: >= 5x)")
        if proxy is not None:
            proxy.stop()
    finally:
        moto.stop()


if __name__ == "__main__":
    main()
