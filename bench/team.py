"""Benchmark a team server: N clients, each with its own space token, remembering at once.

    python bench/team.py                      # 8 clients × 500 remembers, hash embedder
    python bench/team.py --embedder local     # the bundled e5 (the write path is then embedding-bound)
    python bench/team.py --small              # 8 × 100 (a loaded machine)
    python bench/team.py --json bench/results/team.json

One real `memcli serve` on loopback, one space, one token per client (memcli's own stdlib client,
``RemoteService``, one thread each; a 429 is honoured with its Retry-After and counted). Reports the
throughput, the p50/p95 latency of one remember, and the count check: the space must hold exactly
clients × n memories, every content once (0 lost, 0 duplicated).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(home: Path, port: int, env: dict[str, str]) -> subprocess.Popen:
    import httpx

    log = open(home.parent / "serve.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "memcli.cli", "serve", "--port", str(port)], env=env, stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"memcli serve exited: see {home.parent / 'serve.log'}")
        try:
            token = json.loads((home / "auth.json").read_text())["token"]
            r = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1, headers={"Authorization": f"Bearer {token}"})
            if r.status_code == 200 and r.json().get("ready"):
                return proc
        except (httpx.HTTPError, OSError, ValueError, KeyError):
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("memcli serve did not become ready")


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q / 100 * (len(xs) - 1)))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--n", type=int, default=500, help="remembers per client (default 500)")
    ap.add_argument("--small", action="store_true", help="100 per client")
    ap.add_argument("--embedder", default="hash", help="hash (default) or local")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    n = 100 if args.small else args.n

    import httpx

    from memcli.errors import MemcliError
    from memcli.team.remote import Endpoint, RemoteService

    work = Path(tempfile.mkdtemp(prefix="memcli-bench-team-"))
    home = work / "home"
    home.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env.update(MEMCLI_HOME=str(home), MEMCLI_EMBEDDER=args.embedder, PYTHONPATH=str(ROOT / "src"))
    proc = start_server(home, port, env)
    url = f"http://127.0.0.1:{port}"
    try:
        admin = httpx.Client(base_url=url, timeout=60,
                             headers={"Authorization": f"Bearer {json.loads((home / 'auth.json').read_text())['token']}"})
        tokens = [admin.post("/api/spaces", json={"name": "bench", "agent": "client-0"}).json()["api_token"]]
        tokens += [admin.post("/api/spaces/bench/tokens", json={"agent": f"client-{i}"}).json()["api_token"]
                   for i in range(1, args.clients)]
        latencies: list[list[float]] = [[] for _ in range(args.clients)]
        errors: list[str] = []
        retries = [0]

        def client(i: int) -> None:
            svc = RemoteService(Endpoint.from_url(url, tokens[i], timeout=120), namespace="bench", strict=True)
            for j in range(n):
                text = f"client {i} memory {j}: service-{j % 37} owner is team-{i} (run marker {i * 100000 + j})"
                while True:
                    t0 = time.perf_counter()
                    try:
                        svc.remember(text, tags=["bench"])
                        latencies[i].append((time.perf_counter() - t0) * 1000)
                        break
                    except MemcliError as exc:
                        if exc.http_status == 429:
                            retries[0] += 1
                            time.sleep(1.0)
                            continue
                        errors.append(exc.message)
                        break

        threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        stored = admin.get("/api/memories", params={"namespace": "bench", "limit": 100000}).json()
        contents = [m["content"] for m in stored]
        expected = args.clients * n
        all_ms = [x for xs in latencies for x in xs]
        res: dict[str, Any] = {
            "clients": args.clients, "remembers_per_client": n, "embedder": args.embedder, "cpus": os.cpu_count(),
            "wall_s": round(wall, 1), "throughput_per_s": round(len(all_ms) / wall, 1),
            "p50_ms": round(statistics.median(all_ms), 1) if all_ms else None,
            "p95_ms": round(pct(all_ms, 95), 1) if all_ms else None,
            "stored": len(contents), "expected": expected, "lost": expected - len(set(contents)),
            "duplicated": len(contents) - len(set(contents)), "errors": len(errors), "retried_429": retries[0],
        }
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nmemcli team server: {res['clients']} clients × {n} remembers, {args.embedder} embedder, "
          f"{res['cpus']} CPUs")
    for k, v in res.items():
        print(f"  {k}: {v}")
    if errors:
        print("  first error:", errors[0])
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
