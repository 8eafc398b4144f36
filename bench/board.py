"""Task board benchmark: latency of the board's REST calls on a warm `memcli serve`, id allocation under
concurrent creators, racing moves, and the time from trigger_job to the result on the card.

Prints medians (and p95) of:
- POST /api/board/tasks (create), GET /api/board/tasks/{id}, GET /api/board (N cards), POST …/move (the move
  plus its audit memory: one remember through the configured embedder);
- C concurrent creators (threads, each its own HTTP connection) making K cards each: wall time, cards/s, and
  whether every id is unique and none is missing;
- R rounds of two clients moving one card from the same version at once: how many rounds had exactly one
  winner;
- `memcli board show` as a whole process: through the warm server, and with the store opened by the process;
- trigger_job of a job that exits at once → the card shows `succeeded` (the supervisor's start + store write).

Usage: python bench/board.py [--cards 200] [--creators 4] [--per-creator 25] [--races 20] [--jobs 5]
       [--embedder hash|local]
The machine is shared: run it on an idle machine for figures worth quoting.
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

import httpx

MEMCLI = str(Path(sys.executable).parent / "memcli")


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def line(name: str, xs: list[float]) -> None:
    print(f"  {name:<34} median {statistics.median(xs) * 1000:7.1f} ms   p95 {pct(xs, 95) * 1000:7.1f} ms"
          f"   (n={len(xs)})")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cards", type=int, default=200)
    ap.add_argument("--creators", type=int, default=4)
    ap.add_argument("--per-creator", type=int, default=25)
    ap.add_argument("--races", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=5)
    ap.add_argument("--embedder", default="hash")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="memcli-board-bench-"))
    home = tmp / "home"
    home.mkdir()
    (home / "config.toml").write_text('[jobs.noop]\ncommand = ["true"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env.update(MEMCLI_HOME=str(home), MEMCLI_EMBEDDER=args.embedder)
    port = free_port()
    log = open(tmp / "serve.log", "wb")
    proc = subprocess.Popen([MEMCLI, "serve", "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                auth = json.loads((home / "auth.json").read_text())
                headers = {"Authorization": f"Bearer {auth['token']}"}
                if httpx.get(url + "/health", headers=headers, timeout=2).json().get("ready"):
                    break
            except (OSError, ValueError, KeyError, httpx.HTTPError):
                pass
            if time.monotonic() > deadline:
                raise SystemExit("the server did not start: " + (tmp / "serve.log").read_text())
            time.sleep(0.1)
        api = httpx.Client(base_url=url, headers=headers, timeout=60)
        print(f"memcli board bench · embedder {args.embedder} · {os.cpu_count()} cpu(s) · load "
              f"{os.getloadavg()[0]:.1f}")

        create, get, move = [], [], []
        ids = []
        for i in range(args.cards):
            t0 = time.perf_counter()
            r = api.post("/api/board/tasks", json={"title": f"card {i}", "labels": ["bench"]})
            create.append(time.perf_counter() - t0)
            ids.append(r.json()["task_id"])
        for tid in ids[: min(50, len(ids))]:
            t0 = time.perf_counter()
            api.get(f"/api/board/tasks/{tid}")
            get.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            r = api.post(f"/api/board/tasks/{tid}/move", json={"to_status": "todo", "reason": f"bench {tid}"})
            move.append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text
        board = []
        for _ in range(20):
            t0 = time.perf_counter()
            api.get("/api/board")
            board.append(time.perf_counter() - t0)
        print(f"REST on a warm server, {args.cards} cards:")
        line("create a card", create)
        line("get a card (with its memories)", get)
        line("move (+ its audit memory)", move)
        line(f"get the board ({args.cards} cards)", board)

        made: list[str] = []
        barrier = threading.Barrier(args.creators)

        def creator(w: int) -> None:
            with httpx.Client(base_url=url, headers=headers, timeout=120) as c:
                barrier.wait()
                for i in range(args.per_creator):
                    made.append(c.post("/api/board/tasks", json={"title": f"c{w}.{i}"},
                                       params={"namespace": "race"}).json()["task_id"])

        t0 = time.perf_counter()
        threads = [threading.Thread(target=creator, args=(w,)) for w in range(args.creators)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        nums = sorted(int(x.split("-")[1]) for x in made)
        print(f"{args.creators} concurrent creators × {args.per_creator}: {len(made)} cards in {wall:.2f} s "
              f"({len(made) / wall:.1f}/s); unique {len(set(made)) == len(made)}, "
              f"T-1..T-{len(made)} all present {nums == list(range(1, len(made) + 1))}")

        exactly_one = 0
        for i in range(args.races):
            tid = api.post("/api/board/tasks", json={"title": f"race {i}", "status": "doing"},
                           params={"namespace": "race2"}).json()["task_id"]
            codes: list[int] = []

            def mover(to: str) -> None:
                with httpx.Client(base_url=url, headers=headers, timeout=60) as c:
                    codes.append(c.post(f"/api/board/tasks/{tid}/move", params={"namespace": "race2"},
                                        json={"to_status": to, "expected_version": 1}).status_code)

            ts = [threading.Thread(target=mover, args=(to,)) for to in ("review", "todo")]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            exactly_one += sorted(codes) == [200, 412]
        print(f"racing moves from one version: exactly one winner in {exactly_one}/{args.races} rounds")

        for label, extra, n in (("`memcli board show` via the server", {}, 5),
                                ("`memcli board show`, store opened", {"MEMCLI_TOKEN": "wrong"}, 3)):
            xs = []
            for _ in range(n):
                t0 = time.perf_counter()
                subprocess.run([MEMCLI, "board", "show", ids[0], "--json"], env={**env, **extra},
                               capture_output=True, check=True)
                xs.append(time.perf_counter() - t0)
            line(label, xs)

        lat = []
        for _ in range(args.jobs):
            tid = ids[0]
            t0 = time.perf_counter()
            run = api.post(f"/api/board/tasks/{tid}/jobs/noop").json()["run"]
            while True:
                runs = api.get(f"/api/board/tasks/{tid}").json()["jobs"]
                if next(r for r in runs if r["run_id"] == run["run_id"])["status"] != "running":
                    break
                time.sleep(0.02)
            lat.append(time.perf_counter() - t0)
        line("job `true`: trigger → result on card", lat)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
