"""memcli at 10k / 100k / 1M memories (issue 30): import, indexes, recall, identifiers, writes, maintenance.

    nice -n 10 python bench/scale.py --sizes 10000,100000,1000000            # hash embedder
    nice -n 10 python bench/scale.py --sizes 10000,100000 --embedder local   # the bundled e5
    python bench/scale.py --sizes 10000 --parts import,recall                # a part or two

Each size's store is built once by streaming a generated export (`bench/.cache/scale-*.jsonl`: agents' turns of
12–20 words from LoCoMo's vocabulary, each with a unique identifier ``svc-<n>``) through ``import_records``,
and kept in ``bench/.cache/scale-<embedder>-<n>/`` (git-ignored); ``--rebuild`` builds it again. Parts:

- ``import``: memories/s per segment of the file (first row to last), versions and the process's peak RSS;
- ``index``: what ``stats`` says of the indexes, time to compact, disk bytes per row;
- ``recall``: warm recall p50/p95 in-process; ANN recall@5 against exact search (same run, same queries);
- ``ident``: a query naming one memory's identifier plus two common words it does not hold: rank of that memory;
- ``cli``: a whole ``memcli recall`` process through a warm ``memcli serve`` beside ``memcli --version``, the
  server's RSS and time to first answer, ``list`` and the SessionStart digest through ``hooks/run.sh``;
- ``distill``: ``distill`` plan time;
- ``export``: ``memcli export`` time and its peak RSS.
Figures print; they gate nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo10-dev.json"
CACHE = ROOT / "bench" / ".cache"
AGENTS = [f"agent-{i:02d}" for i in range(20)]
DAY_MS = 86_400_000


def vocabulary(n: int = 3000) -> list[str]:
    """LoCoMo's most common words (the synthetic turns' vocabulary), most common first."""
    words: Counter[str] = Counter()
    for conv in json.loads(DATA.read_text()):
        for k, v in conv["conversation"].items():
            if k.startswith("session_") and isinstance(v, list):
                for t in v:
                    words.update(w for w in re.findall(r"[a-z]+", t["text"].lower()) if len(w) > 2)
    return [w for w, _ in words.most_common(n)]


def record(i: int, vocab: list[str], rng: random.Random, start_ms: int) -> dict[str, Any]:
    """Memory ``i`` of the synthetic file: a turn of common words holding the identifier ``svc-<i>``, with an
    id (as an export has: the import looks each one up)."""
    k = rng.randint(12, 20)
    words = [vocab[min(len(vocab) - 1, int(rng.paretovariate(1.1)) - 1)] if rng.random() < 0.5
             else rng.choice(vocab) for _ in range(k)]
    words.insert(rng.randint(0, k), f"svc-{i}")
    ms = start_ms + i * 30_000
    h = f"{rng.getrandbits(64):016x}"
    mid = f"{ms:012x}"
    mid = f"{mid[:8]}-{mid[8:12]}-7{h[:3]}-{8 | int(h[3], 16) & 3:x}{h[4:7]}-{h[7:16]}{i % 4096:03x}"
    return {"id": mid, "content": " ".join(words), "namespace": "default", "scope": rng.choice(AGENTS),
            "created_at": start_ms + i * 30_000, "tags": [rng.choice(("ops", "deploy", "review", "chat"))]}


def export_file(n: int) -> Path:
    """The generated export of ``n`` memories (cached)."""
    path = CACHE / f"scale-{n}.jsonl"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    vocab = vocabulary()
    rng = random.Random(30)
    start = int(time.time() * 1000) - 365 * DAY_MS
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps(record(i, vocab, rng, start)) + "\n")
    tmp.rename(path)
    return path


def cpu() -> float:
    """This process's CPU seconds (all its threads): on a shared machine rates per CPU second move less."""
    t = os.times()
    return t.user + t.system


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def env_for(home: Path, embedder: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env.update({"MEMCLI_HOME": str(home), "MEMCLI_EMBEDDER": embedder, "PYTHONPATH": str(ROOT / "src")})
    return env


def open_service(home: Path, embedder: str) -> Any:
    from memcli.config import load_config
    from memcli.memory.service import MemoryService

    return MemoryService.open(load_config(home, env=env_for(home, embedder)))


def read_records(path: Path) -> Any:
    with path.open() as fh:
        for line in fh:
            yield json.loads(line)


def build(n: int, embedder: str, rebuild: bool = False) -> tuple[Path, dict[str, Any] | None]:
    """The cached store of ``n`` memories (built by streaming the generated export through import_records):
    its home, and the import's figures when it was built now."""
    home = CACHE / f"scale-{embedder}-{n}"
    if (home / ".built").exists() and not rebuild:
        return home, None
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    src = export_file(n)
    svc = open_service(home, embedder)
    marks: list[tuple[int, float, float]] = [(0, time.perf_counter(), cpu())]
    step = max(n // 10, 1000)

    def progress(done: int, total: int) -> None:
        if done >= marks[-1][0] + step or done == n:
            marks.append((done, time.perf_counter(), cpu()))
            a, b = marks[-2], marks[-1]
            print(f"    {done:,}: {(b[0] - a[0]) / (b[1] - a[1]):.0f}/s wall, {(b[0] - a[0]) / (b[2] - a[2]):.0f}/s"
                  " per CPU second", file=sys.stderr, flush=True)

    rss0 = rss_mb()
    svc.store.background_maintenance = True  # rows first; maintenance timed on its own below
    res = svc.import_records(read_records(src), progress=progress)
    t_rows = marks[-1][1] - marks[0][1]
    t = time.perf_counter()
    svc.store.background_maintenance = False
    svc.store.compact(blocking=True)
    t_maint = time.perf_counter() - t
    ds = svc.store.table.to_lance()
    fig = {"n": n, "added": res["added"], "rows_s": n / t_rows, "maint_s": t_maint,
           "rows_cpu_s": n / (marks[-1][2] - marks[0][2]),
           "segments": [((b[0] - a[0]) / (b[1] - a[1]), (b[0] - a[0]) / (b[2] - a[2]), a[0], b[0])
                        for a, b in zip(marks, marks[1:])],
           "versions": len(ds.versions()), "rss_mb": rss_mb(), "rss0_mb": rss0}
    svc.close()
    (home / ".built").write_text(json.dumps(fig))
    return home, fig


def print_import(fig: dict[str, Any]) -> None:
    segs = ", ".join(f"{r:.0f}" for r, *_ in fig["segments"])
    cpus = ", ".join(f"{c:.0f}" for _, c, *_ in fig["segments"])
    print(f"  import {fig['n']:,}: {fig['rows_s']:.0f} memories/s over the file (per tenth: {segs}); per CPU second "
          f"{fig['rows_cpu_s']:.0f} (per tenth: {cpus}); load average {os.getloadavg()[0]:.1f}; "
          f"{fig['versions']} table versions; peak RSS {fig['rss_mb']:.0f} MB (before: {fig['rss0_mb']:.0f} MB); "
          f"then compaction + indexes {fig['maint_s']:.1f} s")


def ident_queries(n: int, count: int = 30) -> list[tuple[str, str]]:
    """(query, memory content) pairs: one memory's identifier plus two common words that memory does not hold."""
    vocab = vocabulary()[:200]
    rng = random.Random(5)
    picks = sorted(rng.sample(range(n), count))
    out = []
    with export_file(n).open() as fh:
        want = set(picks)
        for i, line in enumerate(fh):
            if i in want:
                content = json.loads(line)["content"]
                words = [w for w in vocab if w not in content.split()]
                w1, w2 = rng.sample(words[:60], 2)
                out.append((f"svc-{i} {w1} {w2}", content))
    return out


def bench_ident(svc: Any, n: int) -> None:
    """A keyword-only hit on a unique identifier: its rank among recall's top 10."""
    qs = ident_queries(n)
    ranks = []
    for q, content in qs:
        hits = svc.recall(q, top_k=10)
        ranks.append(next((i + 1 for i, h in enumerate(hits) if h.memory.content == content), None))
    first = sum(r == 1 for r in ranks)
    top5 = sum(r is not None and r <= 5 for r in ranks)
    print(f"  identifier + two common words it lacks: ranked first {first}/{len(qs)}, in the top 5 {top5}/{len(qs)}"
          f" (ranks: {' '.join(str(r or '-') for r in ranks)})")


def text_queries(n: int, count: int = 60) -> list[str]:
    """Four words of a random memory, shuffled (what an agent asks about a past turn)."""
    rng = random.Random(11)
    want = set(rng.sample(range(n), count))
    out = []
    with export_file(n).open() as fh:
        for i, line in enumerate(fh):
            if i in want:
                words = [w for w in json.loads(line)["content"].split() if not w.startswith("svc-")]
                out.append(" ".join(rng.sample(words, 4)))
    return out


def bench_recall(svc: Any, n: int) -> None:
    """Warm recall in-process, with the ANN index and with exact search, and how much of exact's top 5 the
    index finds (recall's top 5, and the vector search's own top 5)."""
    qs = text_queries(n)
    reader = svc.store.reader
    svc.recall(qs[0])
    out: dict[bool, tuple[list[float], list[list[str]], list[list[float]]]] = {}
    for exact in (False, True):
        reader.exact = exact
        times, tops, dists = [], [], []
        for q in qs:
            t = time.perf_counter()
            hits = svc.recall(q, top_k=5)
            times.append((time.perf_counter() - t) * 1000)
            tops.append([h.memory.id for h in hits])
            vec = svc.embedder.embed_query(q)
            dists.append([1 - c for c in svc.store.cosines(vec, None, 5)])
        out[exact] = (times, tops, dists)
    reader.exact = False
    ann, ex = out[False], out[True]
    same = statistics.mean(len(set(a) & set(b)) / max(1, len(b)) for a, b in zip(ann[1], ex[1]))
    # a vector hit counts when it is as near as exact's 5th (ties are as good as each other)
    vec = statistics.mean(sum(d <= e[-1] + 1e-5 for d in a) / 5 for a, e in zip(ann[2], ex[2]))
    kinds = [d["kind"] for d in svc.store.index_status() if d["kind"].upper().startswith("IVF")]
    print(f"  recall p50/p95: {pct(ann[0], 50):.1f}/{pct(ann[0], 95):.1f} ms with {kinds or 'no ANN index'}; exact "
          f"search {pct(ex[0], 50):.1f}/{pct(ex[0], 95):.1f} ms; recall's top 5 holds {same:.3f} of exact's, the "
          f"vector search's {vec:.3f} ({len(qs)} queries)")


def bench_index(svc: Any) -> None:
    """The maintainer's rounds until nothing is due (what a server does in the background), then what stats
    says of the indexes and the disk use per row."""
    store = svc.store
    t = time.perf_counter()
    done = []
    for _ in range(5):
        did = store.maintain()
        if not did:
            break
        done += did
    took = time.perf_counter() - t
    ix = ", ".join(f"{d['name']} {d['kind']} {d['indexed_rows']:,}+{d['unindexed_rows']:,}" for d in store.index_status())
    n = store.count()
    print(f"  maintenance: {', '.join(done) or 'nothing due'} in {took:.1f} s; indexes (rows inside+outside): {ix}; "
          f"{store.fragment_count()} fragments; disk {store.size_bytes() / max(n, 1):.0f} bytes per memory")


def bench_distill(svc: Any) -> None:
    """``distill`` plan (reads only) over the whole store, and this process's peak RSS after it."""
    from memcli.distill.service import DistillService

    t, c = time.perf_counter(), cpu()
    plan = DistillService(svc).plan()
    print(f"  distill plan: {time.perf_counter() - t:.1f} s ({cpu() - c:.1f} CPU s), {len(plan.merge)} merges proposed, "
          f"peak RSS {rss_mb():.0f} MB")


def proc_rss_mb(pid: int) -> tuple[float, float]:
    """A process's resident and peak resident memory (MiB)."""
    vals = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            vals[line.split(":")[0]] = int(line.split()[1]) / 1024
    return vals.get("VmRSS", 0.0), vals.get("VmHWM", 0.0)


def bench_cli(home: Path, n: int, embedder: str, rounds: int = 15) -> None:
    """Whole processes through a warm ``memcli serve`` of the store: ``--version``, ``recall``, ``list``, and
    the UserPromptSubmit and SessionStart hooks through ``hooks/run.sh``, round by round; the server's RSS and
    its time from start to the first answer."""
    import socket

    memcli = str(Path(sys.executable).parent / "memcli")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**env_for(home, embedder), "MEMCLI_PORT": str(port), "MEMCLI_AUTOSTART": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proj = home.parent / f"{home.name}-project"
    (proj / ".git").mkdir(parents=True, exist_ok=True)
    (home / "server.json").unlink(missing_ok=True)
    t0 = time.perf_counter()
    log = open(home / "serve.log", "ab")
    srv = subprocess.Popen([memcli, "serve", "--port", str(port), "--idle-timeout", "900"], env=env,
                           stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        ready = None
        while time.perf_counter() - t0 < 300:
            if (home / "server.json").exists():
                p = subprocess.run([memcli, "recall", "warm up", "--json"], env=env, capture_output=True, timeout=300)
                if p.returncode == 0:
                    ready = time.perf_counter() - t0
                    break
            time.sleep(0.2)
        qs = text_queries(n, rounds)
        launcher = ["sh", str(ROOT / "hooks" / "run.sh")]
        lenv = {**env, "MEMCLI_PYTHON": sys.executable, "CLAUDE_PLUGIN_DATA": str(home.parent / "plugin-data")}
        times: dict[str, list[float]] = {k: [] for k in ("--version", "recall", "list", "UserPromptSubmit (run.sh)",
                                                          "SessionStart (run.sh)")}
        for i in range(rounds):
            for k in times:
                if k == "--version":
                    cmd, data, e = [memcli, "--version"], None, env
                elif k == "recall":
                    cmd, data, e = [memcli, "recall", qs[i], "--json"], None, env
                elif k == "list":
                    cmd, data, e = [memcli, "list", "--limit", "10", "--json"], None, env
                else:
                    event = k.split()[0]
                    payload = {"session_id": f"scale-{i}", "transcript_path": "", "cwd": str(proj),
                               "hook_event_name": event}
                    payload.update({"prompt": qs[i]} if event == "UserPromptSubmit" else {"source": "startup"})
                    cmd, data, e = launcher + [event], json.dumps(payload).encode(), lenv
                t = time.perf_counter()
                p = subprocess.run(cmd, input=data, env=e, capture_output=True, timeout=120)
                times[k].append((time.perf_counter() - t) * 1000)
                if p.returncode != 0:
                    print(f"    {k} failed: {p.stderr.decode()[:300]}")
        rss, peak = proc_rss_mb(srv.pid)
        v = statistics.median(times["--version"])
        print(f"  server: first answer {ready if ready is None else round(ready, 1)} s after start; RSS {rss:.0f} MiB"
              f" (peak {peak:.0f} MiB)")
        for k, xs in times.items():
            print(f"  {k:28s} p50 {statistics.median(xs):6.1f} ms  p95 {pct(xs, 95):6.1f} ms  "
                  f"x --version {statistics.median(xs) / v:.2f}")
    finally:
        srv.terminate()
        try:
            srv.wait(60)
        except subprocess.TimeoutExpired:
            srv.kill()


def bench_writes(embedder: str, writers: int = 8, per_writer: int = 25, modes: str = "rest,cli") -> None:
    """Concurrent single writes (bench/concurrency.py's writers: REST clients of one ``memcli serve``, ``memcli
    remember`` processes through it) beside the embedder alone on the same texts, batched as the server's group
    commit can batch them (``writers`` at a time) and in batches of 64, in the same run."""
    sys.path.insert(0, str(ROOT / "bench"))
    import concurrency
    from memcli.config import EmbedderConfig
    from memcli.embedders import make_embedder

    emb = make_embedder(EmbedderConfig(provider=embedder), cache=False)
    texts = [concurrency.content("raw", w, i) for w in range(writers) for i in range(per_writer)]
    emb.embed_passages(texts[:4])
    rates = {}
    for size in (writers, 64):
        t = time.perf_counter()
        for i in range(0, len(texts), size):
            emb.embed_passages(texts[i:i + size])
        rates[size] = len(texts) / (time.perf_counter() - t)
    print(f"  embedder alone: {rates[writers]:.1f} passages/s in batches of {writers}, {rates[64]:.1f} in batches of 64")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env.update({"MEMCLI_EMBEDDER": embedder, "PYTHONPATH": str(ROOT / "src"), "MEMCLI_AUTOSTART": "0"})
    for mode in modes.split(","):
        r = concurrency.run_mode(mode, writers, per_writer, env, False)
        print(f"  {writers} {mode} writers x {per_writer}: {r['writes_per_s']:.1f} writes/s = {r['writes_per_s'] / rates[64]:.2f}"
              f" of the embedder's batched rate ({r['writes_per_s'] / rates[writers]:.2f} of batches of {writers}); "
              f"p50 {r['p50_ms']:.0f} ms, {r['commits']} commits (largest {r['biggest_group']}), "
              f"lost {r.get('lost')}, duplicated {r.get('duplicated')}")


def bench_export(home: Path, n: int, embedder: str) -> None:
    """``memcli export`` of the whole store to a file, as a process: its time and peak RSS (flat in the size)."""
    memcli = str(Path(sys.executable).parent / "memcli")
    dest = home.parent / f"{home.name}-export.jsonl"
    t = time.perf_counter()
    p = subprocess.Popen([memcli, "--no-server", "export", "-o", str(dest), "--json"],
                         env={**env_for(home, embedder), "MEMCLI_AUTOSTART": "0"}, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    took = time.perf_counter() - t
    out = p.stdout.read().decode() if p.stdout else ""
    dest.unlink(missing_ok=True)
    print(f"  export: {took:.1f} s ({n / took:.0f} memories/s), peak RSS {usage.ru_maxrss / 1024:.0f} MB, "
          f"exit {os.waitstatus_to_exitcode(status)} {out.strip()[:120]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--embedder", default="hash", choices=("hash", "local"))
    ap.add_argument("--parts", default="import,index,ident,recall,cli,writes")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--writes", default="rest,cli", help="the writers of the writes part: rest, cli, mcp, lib")
    ap.add_argument("--per-writer", type=int, default=25)
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    if "writes" in parts:
        print(f"== concurrent single writes, embedder {args.embedder} (load average {os.getloadavg()[0]:.1f})")
        bench_writes(args.embedder, per_writer=args.per_writer, modes=args.writes)
    for n in [int(x) for x in args.sizes.split(",") if x]:
        print(f"== {n:,} memories, embedder {args.embedder}")
        home, fig = build(n, args.embedder, rebuild=args.rebuild or "import" in parts and False)
        if fig:
            print_import(fig)
        elif "import" in parts:
            print_import(json.loads((home / ".built").read_text()))
        if parts & {"ident", "recall", "index", "distill"}:
            svc = open_service(home, args.embedder)
            if "index" in parts:
                bench_index(svc)
            if "ident" in parts:
                bench_ident(svc, n)
            if "recall" in parts:
                bench_recall(svc, n)
            if "distill" in parts:
                bench_distill(svc)
            svc.close()
        if "cli" in parts:
            bench_cli(home, n, args.embedder)
        if "export" in parts:
            bench_export(home, n, args.embedder)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    main()
