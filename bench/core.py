"""Core benchmark: write throughput and recall latency of memcli with the bundled embedder.

Prints:
- remember throughput (memories/s) for batch import and one-by-one remember, and the ratio of import
  throughput to the embedder's own throughput on the same texts in the same run (target ≥ 0.8);
- warm recall p50/p95 at 10k and 100k memories (the 100k part uses precomputed vectors: real e5 vectors
  of real texts, jittered), before and after 1,000 single writes (target p50 ≤ 20 ms at 100k);
- `memcli recall` and `memcli remember` as whole processes: in-process (`--no-server`: the process opens the
  store and loads the model), and through a warm `memcli serve` of the same home — recall, remember, update,
  forget, import and board writes, side by side with `memcli --version` in the same rounds (targets: recall
  p50 ≤ 100 ms and ≤ 2× `--version`; each write ≤ 150 ms).

Usage: python bench/core.py [--sizes 10000,100000] [--writes 1000] [--queries 100] [--cli-runs 30]
       python bench/core.py --sizes 10000 --throughput 0 --writes 0 --cli-runs 30   # the CLI rows only
Texts come from ../shared/data/locomo10-dev.json (benchmark data, never shipped).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo10-dev.json"
CACHE = ROOT / "bench" / ".cache"


def turns() -> list[str]:
    out = []
    for conv in json.loads(DATA.read_text()):
        c = conv["conversation"]
        for k, v in c.items():
            if k.startswith("session_") and isinstance(v, list):
                for t in v:
                    text = f"{t['speaker']}: {t['text']}"
                    if t.get("blip_caption"):
                        text += f" [shares {t['blip_caption']}]"
                    out.append(text)
    return out


def questions() -> list[str]:
    return [q["question"] for conv in json.loads(DATA.read_text()) for q in conv["qa"]]


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def open_service(home: Path):
    from memcli.config import load_config
    from memcli.memory.service import MemoryService

    return MemoryService.open(load_config(home, env={}))


def real_vectors(texts: list[str]) -> np.ndarray:
    """e5 vectors of the LoCoMo turns, cached on disk (embedding ~50 passages/s on 2 cores)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"turn-vectors-{len(texts)}.npy"
    if path.exists():
        return np.load(path)
    from memcli.embedders.local import LocalEmbedder

    emb = LocalEmbedder()
    vecs = np.concatenate([emb.embed_passages(texts[i:i + 64]) for i in range(0, len(texts), 64)])
    np.save(path, vecs)
    return vecs


def bench_throughput(texts: list[str], n_batch: int, n_single: int) -> None:
    from memcli.embedders.local import LocalEmbedder

    sample = texts[:n_batch]
    emb = LocalEmbedder()
    t = time.perf_counter()
    for i in range(0, len(sample), 64):
        emb.embed_passages(sample[i:i + 64])
    emb_rate = len(sample) / (time.perf_counter() - t)

    with tempfile.TemporaryDirectory() as tmp:
        svc = open_service(Path(tmp))
        recs = [{"content": s, "namespace": "bench"} for s in sample]
        t = time.perf_counter()
        svc.import_records(recs)
        imp_rate = len(sample) / (time.perf_counter() - t)
        assert svc.store.count() == len(sample)
        singles = texts[n_batch:n_batch + n_single]
        t = time.perf_counter()
        for s in singles:
            svc.remember(s, namespace="bench")
        one_rate = len(singles) / (time.perf_counter() - t)
        svc.close()
    print(f"embedder alone (batches of 64):   {emb_rate:7.1f} passages/s  ({len(sample)} texts)")
    print(f"import (batch, through memcli):   {imp_rate:7.1f} memories/s  ratio to embedder {imp_rate / emb_rate:.2f}"
          " (target >= 0.8)")
    print(f"remember one by one:              {one_rate:7.1f} memories/s  ({len(singles)} texts; each checks"
          " duplicates, embeds alone, writes one row)")


def build_store(home: Path, n: int, texts: list[str], vecs: np.ndarray) -> None:
    """n memories with real vectors (jittered copies beyond the real turns), written through the store."""
    from memcli.memory.rows import memory_to_row
    from memcli.models import Memory, content_hash, new_id, now_ms

    svc = open_service(home)
    rng = np.random.default_rng(7)
    base = now_ms() - 90 * 86_400_000
    rows = []
    for i in range(n):
        j = i % len(texts)
        text = texts[j] if i < len(texts) else f"{texts[j]} (note {i})"
        v = vecs[j] if i < len(texts) else vecs[j] + rng.normal(0, 0.02, vecs.shape[1]).astype(np.float32)
        v = v / np.linalg.norm(v)
        m = Memory(id=new_id(), content=text, namespace="bench", scope="global", created_at=base + i * 60_000,
                   updated_at=base + i * 60_000, content_hash=content_hash(text), source="import")
        rows.append(memory_to_row(m, v))
        if len(rows) == 5000:
            svc.store.insert(rows)
            rows = []
    if rows:
        svc.store.insert(rows)
    t = time.perf_counter()
    svc.store.compact()
    print(f"  built {n:,} memories; compaction + indexes took {time.perf_counter() - t:.1f}s;"
          f" indexes: {sorted(svc.store.index_names())}")
    svc.close()


def bench_recall(home: Path, qs: list[str], label: str, rounds: int = 1) -> tuple[float, float]:
    """Warm recall over ``len(qs) // rounds`` fresh questions per round (a round apart in time, so that a
    noisy machine's drift shows), then the same questions again with their vectors cached."""
    svc = open_service(home)
    for q in questions()[-5:]:
        svc.recall(q, namespace="bench")  # warm up on questions that are not measured
    size = len(qs) // rounds
    lat: list[float] = []
    p50s = []
    for r in range(rounds):
        part = []
        for q in qs[r * size:(r + 1) * size]:
            t = time.perf_counter()
            svc.recall(q, namespace="bench", top_k=5)
            part.append((time.perf_counter() - t) * 1000)
        p50s.append(statistics.median(part))
        lat += part
    # the same queries again: their vectors are now in the embedder's cache, so this is the search part
    cached = []
    for q in qs[:size * rounds]:
        t = time.perf_counter()
        svc.recall(q, namespace="bench", top_k=5)
        cached.append((time.perf_counter() - t) * 1000)
    svc.close()
    p50, p95 = statistics.median(lat), pct(lat, 95)
    print(f"  recall {label:<34} p50 {p50:6.1f} ms   p95 {p95:6.1f} ms   ({len(lat)} queries)")
    if rounds > 1:
        print(f"    p50 of each round of {size}: " + ", ".join(f"{x:.1f}" for x in p50s) + " ms")
    print(f"    of which search (query vector cached)  p50 {statistics.median(cached):6.1f} ms   "
          f"p95 {pct(cached, 95):6.1f} ms")
    return p50, p95


def single_writes(home: Path, texts: list[str], n: int) -> None:
    svc = open_service(home)
    t = time.perf_counter()
    for i in range(n):
        svc.remember(f"{texts[i % len(texts)]} (single write {i})", namespace="bench")
    dt = time.perf_counter() - t
    print(f"  {n} single writes: {n / dt:.1f}/s; fragments now {svc.store.fragment_count()}")
    svc.close()


def _cli() -> tuple[list[str], dict[str, str]]:
    exe = Path(sys.executable).parent / "memcli"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "memcli.cli"]
    env = dict(os.environ, MEMCLI_NAMESPACE="bench", MEMCLI_AUTOSTART="0")  # no server left behind
    env.pop("MEMCLI_EMBEDDER", None)
    env.pop("MEMCLI_PORT", None)
    env.pop("MEMCLI_NO_SERVER", None)
    return cmd, env


def _child_cpu() -> float:
    """CPU seconds of the child processes waited for so far."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cold_cli(home: Path, query: str, runs: int = 5) -> None:
    """Whole processes with no server (``--no-server``): each opens the store and loads the model."""
    cmd, env = _cli()
    env["MEMCLI_HOME"] = str(home)
    for label, args in (("recall", ["recall", query]), ("remember", ["remember", "cold write {i}"])):
        lat = []
        for i in range(runs):
            t = time.perf_counter()
            subprocess.run(cmd + ["--no-server", *[a.format(i=i) for a in args], "--json"], env=env, check=True,
                           capture_output=True)
            lat.append((time.perf_counter() - t) * 1000)
        print(f"  `memcli {label}` in-process (no server; opens the store, loads the model): median "
              f"{statistics.median(lat):.0f} ms over {runs} runs")


def warm_server_cli(home: Path, qs: list[str], texts: list[str]) -> None:
    """The CLI as a whole process while a `memcli serve` of the home runs: the command finds it (server.json),
    has it prove it is the home's (once per server process), sends the home's token, prints the answer. Each
    round runs every command once, `memcli --version` among them, so the ratios compare the same moments."""
    cmd, env = _cli()
    env["MEMCLI_HOME"] = str(home)
    log = open(home / "bench-serve.log", "wb")
    server = subprocess.Popen(cmd + ["serve", "--port", "0"], env=env, stdout=log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)

    cpu: dict[str, list[float]] = {}

    def timed(name: str, argv: list[str]) -> tuple[float, bytes]:
        """Wall ms of one whole process; its CPU ms go to ``cpu[name]``."""
        c0 = _child_cpu()
        t = time.perf_counter()
        out = subprocess.run(argv, env=env, check=True, capture_output=True).stdout
        ms = (time.perf_counter() - t) * 1000
        cpu.setdefault(name, []).append((_child_cpu() - c0) * 1000)
        return ms, out

    def run(*args: str) -> tuple[float, Any]:
        name = " ".join(args[:2]) if args[0] == "board" else args[0]
        ms, out = timed(name, cmd + [*args, "--json"])
        return ms, json.loads(out) if out.strip() else None

    try:
        deadline = time.time() + 120
        while not (home / "server.json").exists():
            if time.time() > deadline or server.poll() is not None:
                raise SystemExit(f"memcli serve did not start: see {home / 'bench-serve.log'}")
            time.sleep(0.1)
        for q in questions()[-5:]:  # warm-up (the first ones load the indexes); also proves the answers
            assert run("recall", q)[1], "no answer"
        run("remember", "warm-up write through the server")
        export = home / "bench-one.jsonl"
        rows: dict[str, list[float]] = {k: [] for k in (
            "--version", "recall", "remember", "update", "forget", "import (1 record)", "board add", "board move")}
        for i, q in enumerate(qs):
            rows["--version"].append(timed("--version", cmd + ["--version"])[0])
            ms, _ = run("recall", q)
            rows["recall"].append(ms)
            ms, d = run("remember", f"{texts[i % len(texts)]} (through the warm server, run {i})")
            rows["remember"].append(ms)
            mid = d["memory_id"]
            rows["update"].append(run("update", mid, "--importance", "0.7")[0])
            rows["forget"].append(run("forget", mid)[0])
            export.write_text(json.dumps({"id": f"0190cccc-0000-7000-8000-{i:012d}", "content": texts[-1 - i],
                                          "namespace": "bench"}) + "\n")
            ms, _ = run("import", str(export))
            rows["import (1 record)"].append(ms)
            cpu.setdefault("import (1 record)", []).extend(cpu.pop("import"))
            ms, d = run("board", "add", f"card {i}")
            rows["board add"].append(ms)
            rows["board move"].append(run("board", "move", d["task_id"], "todo")[0])
        base = statistics.median(rows["--version"])
        print(f"  whole `memcli` processes, warm server, {len(qs)} rounds (each round: every command once; CPU: the "
              "process's own, median):")
        for name, lat in rows.items():
            med = statistics.median(lat)
            ratio = "" if name == "--version" else f"   {med / base:4.2f}x --version"
            print(f"    memcli {name:<18} p50 {med:6.0f} ms   p95 {pct(lat, 95):6.0f} ms   CPU "
                  f"{statistics.median(cpu[name]):4.0f} ms{ratio}")
        print("    targets: recall <= 100 ms and <= 2x --version; remember (and the other writes) <= 150 ms")
    finally:
        server.terminate()
        server.wait(30)
        log.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--writes", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=100, help="questions per recall measurement (default 100)")
    ap.add_argument("--rounds", type=int, default=1, help="split each recall measurement into rounds (default 1)")
    ap.add_argument("--throughput", type=int, default=500, help="texts for the throughput part (0 = skip)")
    ap.add_argument("--cli-runs", type=int, default=30, help="whole `memcli recall` processes against the warm "
                    "server (default 30)")
    args = ap.parse_args()
    texts = turns()
    qs = questions()[: args.queries]
    print(f"memcli core benchmark — {os.cpu_count()} cores, {len(texts)} real texts")
    if args.throughput:
        bench_throughput(texts, args.throughput, min(100, args.throughput))
    vecs = real_vectors(texts)
    for n in (int(s) for s in args.sizes.split(",") if s):
        print(f"\n{n:,} memories:")
        home = Path(tempfile.mkdtemp(prefix=f"memcli-bench-{n}-"))
        try:
            build_store(home, n, texts, vecs)
            bench_recall(home, qs, "warm, compacted", args.rounds)
            if args.writes:
                single_writes(home, texts, args.writes)
                bench_recall(home, qs, f"warm, after {args.writes} single writes", args.rounds)
            cold_cli(home, qs[0])
            if args.cli_runs:
                warm_server_cli(home, qs[:args.cli_runs], texts)
        finally:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
