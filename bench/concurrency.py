"""Benchmark concurrent writers on one store: writes/s, per-write latency p50/p95, and the count check.

    python bench/concurrency.py                          # 8 writers x 100; the bundled embedder; cli, rest
    python bench/concurrency.py --embedder hash          # quick: the test embedder (no model to load)
    python bench/concurrency.py --writers 8 --cli-per-writer 100 --rest-per-writer 100 --modes cli,rest,cli-local

Modes (each on a fresh store in a temp dir, all writers released at once):

- ``cli``: each writer is a loop of ``memcli remember TEXT --json``, every write a whole process, as a shell
  script or an agent without MCP would do it, with the home's ``memcli serve`` running (the CLI sends the
  write to it: one small process and one request per write; concurrent writes share commits);
- ``cli-local``: the same with ``--no-server`` (every process imports LanceDB, loads the model, opens the
  store and writes: what every CLI write cost before the CLI went through the server);
- ``rest``: each writer is a process with one HTTP client, ``POST /api/memories`` one memory at a time,
  against one warm ``memcli serve`` (with a bearer token, as the local server requires);
- ``mcp``: each writer is a process with one MCP session (the official ``mcp`` SDK client over Streamable HTTP)
  to the server's ``/mcp``, calling the ``remember`` tool one memory at a time;
- ``lib`` (optional): each writer is a process holding a ``MemoryService`` (the embedded library).

writes/s = acknowledged writes / wall time from the start signal to the last writer's end. Latency is per
acknowledged write as its writer saw it. CPU per write: the server's CPU time (/proc) and the writers' (their
own and their `memcli` children's) over the acknowledged writes: on a machine shared with other work the wall
figures fall with the load, the CPU figures much less, and 2 / (CPU per write) bounds what 2 idle cores do. Then the store is read back: rows, distinct ids, acknowledged ids
missing, duplicated contents — "0 lost, 0 duplicated" is the expected line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MEMCLI = str(Path(sys.executable).parent / "memcli")


def content(mode: str, writer: int, i: int) -> str:
    return (f"{mode} writer {writer}, memory {i}: the release checklist step {writer}-{i} requires the "
            f"cache key k{writer * 10000 + i} and a green canary before the rollout")


# ------------------------------------------------------------------------------------------ one writer process
def worker(mode: str, writer: int, n: int, barrier: Path, url: str) -> None:
    acked: list[list[Any]] = []
    if mode == "lib":
        from memcli.config import load_config
        from memcli.memory.service import MemoryService

        svc = MemoryService.open(load_config())
        svc.embedder.embed_query("warm up")  # loading the model is not a write
    elif mode == "rest":
        import httpx

        client = httpx.Client(base_url=url, timeout=300,
                              headers={"Authorization": f"Bearer {os.environ['MEMCLI_TOKEN']}"})
        client.get("/health")
    if mode == "mcp":
        import anyio

        acked = anyio.run(mcp_writer, writer, n, barrier, url)
        print(json.dumps({"acked": acked[0], "cpu_s": acked[1]}))
        return
    (barrier / f"ready-{os.getpid()}").touch()
    while not (barrier / "go").exists():
        time.sleep(0.002)
    cpu0 = cpu_seconds()
    for i in range(n):
        text = content(mode, writer, i)
        t0 = time.perf_counter()
        if mode in ("cli", "cli-local"):
            extra = ["--no-server"] if mode == "cli-local" else []
            p = subprocess.run([MEMCLI, *extra, "remember", text, "--json"], capture_output=True, text=True)
            mid = json.loads(p.stdout)["memory_id"] if p.returncode == 0 else None
            if mid is None:
                print(f"memcli remember failed: {p.stdout} {p.stderr[-500:]}", file=sys.stderr)
        elif mode == "rest":
            r = client.post("/api/memories", json={"content": text})
            mid = r.json()["memory_id"] if r.status_code == 201 else None
            if mid is None:
                print(f"POST failed: {r.status_code} {r.text[:300]}", file=sys.stderr)
        else:
            mid = svc.remember(text, source="api").memory_id
        if mid:
            acked.append([mid, text, time.perf_counter() - t0])
    print(json.dumps({"acked": acked, "cpu_s": cpu_seconds() - cpu0}))


async def mcp_writer(writer: int, n: int, barrier: Path, url: str) -> tuple[list[list[Any]], float]:
    """One MCP session (initialized before the start) calling ``remember`` ``n`` times."""
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    acked: list[list[Any]] = []
    headers = {"Authorization": f"Bearer {os.environ['MEMCLI_TOKEN']}"}
    async with create_mcp_http_client(headers=headers) as client, \
            streamable_http_client(url + "/mcp", http_client=client) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        (barrier / f"ready-{os.getpid()}").touch()
        while not (barrier / "go").exists():
            await anyio.sleep(0.002)
        cpu0 = cpu_seconds()
        for i in range(n):
            text = content("mcp", writer, i)
            t0 = time.perf_counter()
            res = await session.call_tool("remember", {"content": text})
            if res.is_error:
                print(f"remember failed: {res.content}", file=sys.stderr)
                continue
            acked.append([json.loads(res.content[0].text)["memory_id"], text, time.perf_counter() - t0])
        return acked, cpu_seconds() - cpu0


# ------------------------------------------------------------------------------------------ one mode
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def run_mode(mode: str, writers: int, per_writer: int, env0: dict[str, str], keep: bool) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix=f"memcli-bench-conc-{mode}-"))
    home = tmp / "home"
    env = {**env0, "MEMCLI_HOME": str(home), "MEMCLI_TOKEN": secrets.token_hex(16)}
    server = None
    url = ""
    try:
        if mode in ("rest", "cli", "mcp"):
            port = free_port()
            log = open(tmp / "serve.log", "wb")
            server = subprocess.Popen([MEMCLI, "serve", "--port", str(port)], env=env, stdout=log,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            url = f"http://127.0.0.1:{port}"
            wait_ready(url, server, env["MEMCLI_TOKEN"])
        barrier = tmp / "barrier"
        barrier.mkdir()
        procs = [subprocess.Popen([sys.executable, __file__, "--worker", mode, str(w), str(per_writer), str(barrier),
                                   url], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp)
                 for w in range(writers)]
        while len(list(barrier.glob("ready-*"))) < writers:
            if any(p.poll() is not None for p in procs):
                raise SystemExit("a writer died before the start:\n" + b"".join(
                    p.stderr.read() for p in procs if p.poll() is not None).decode(errors="replace")[-3000:])
            time.sleep(0.01)
        server_cpu0 = proc_cpu_seconds(server.pid) if server is not None else 0.0
        writers_cpu = 0.0
        t0 = time.perf_counter()
        (barrier / "go").touch()
        acked: list[list[Any]] = []
        errors = 0
        for p in procs:
            out, err = p.communicate()
            if p.returncode != 0 or err.strip():
                errors += 1
                sys.stderr.write(err.decode(errors="replace")[-2000:])
            if out.strip():
                d = json.loads(out.decode().strip().splitlines()[-1])
                acked += d["acked"]
                writers_cpu += d["cpu_s"]
        wall = time.perf_counter() - t0
        commits = None
        server_cpu = proc_cpu_seconds(server.pid) - server_cpu0 if server is not None else 0.0
        if server is not None:
            server.send_signal(signal.SIGTERM)
            server.wait(60)
            log_text = (tmp / "serve.log").read_text(errors="replace")
            commits = [int(n) for n in re.findall(r"remember: (\d+) memor(?:y|ies) \([\w+]+\) in one commit", log_text)]
        check = count_check(home, env, acked, {content(mode, w, i) for w in range(writers) for i in range(per_writer)})
        lat = [a[2] for a in acked]
        return {"mode": mode, "writers": writers, "writes": len(acked), "attempted": writers * per_writer,
                "wall_s": wall, "writes_per_s": len(acked) / wall, "p50_ms": 1000 * statistics.median(lat),
                "p95_ms": 1000 * pct(lat, 0.95), "writer_errors": errors, "commits": len(commits or []) or None,
                "biggest_group": max(commits) if commits else None,
                "cpu_ms_per_write": {"server": 1000 * server_cpu / max(1, len(acked)),
                                     "writers": 1000 * writers_cpu / max(1, len(acked))}, **check}
    finally:
        if server is not None and server.poll() is None:
            server.kill()
            server.wait(10)
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


def wait_ready(url: str, proc: subprocess.Popen, token: str) -> None:
    import httpx

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"memcli serve exited with {proc.returncode}")
        try:
            r = httpx.get(url + "/health", timeout=1, headers={"Authorization": f"Bearer {token}"})
            if r.status_code == 200 and r.json().get("ready"):
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit("memcli serve was not ready in 120 s")


def count_check(home: Path, env: dict[str, str], acked: list[list[Any]], expected: set[str]) -> dict[str, int]:
    """Read every row back in a separate process (the writers' embedder, no server)."""
    code = ("import json; from memcli.config import load_config; from memcli.memory.service import MemoryService; "
            "s = MemoryService.open(load_config()); "
            "print(json.dumps(s.store.column_values(None, ['id', 'content']))); s.close()")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    rows = json.loads(p.stdout.strip().splitlines()[-1])
    ids = Counter(r["id"] for r in rows)
    contents = Counter(r["content"] for r in rows)
    acked_ids = {a[0] for a in acked}
    return {"rows": len(rows), "distinct_ids": len(ids),
            "lost": len(acked_ids - set(ids)),  # acknowledged but not stored
            "duplicated": sum(n - 1 for n in contents.values() if n > 1) + sum(n - 1 for n in ids.values() if n > 1),
            "unexpected": len(set(contents) - expected)}


def cpu_seconds() -> float:
    """CPU time of this process and of the children it waited for (the `memcli` processes of a CLI writer)."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def proc_cpu_seconds(pid: int) -> float:
    """CPU time of a running process (its threads included), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def version_ms(env: dict[str, str], runs: int = 10) -> float:
    """p50 of `memcli --version` as a whole process: the floor of any `memcli` command on this machine now."""
    lat = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([MEMCLI, "--version"], env=env, capture_output=True, check=True)
        lat.append((time.perf_counter() - t) * 1000)
    return statistics.median(lat)


# ------------------------------------------------------------------------------------------ main
def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _, _, mode, writer, n, barrier, url = sys.argv
        worker(mode, int(writer), int(n), Path(barrier), url)
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--modes", default="cli,rest", help="comma-separated: cli, rest, mcp, lib")
    ap.add_argument("--cli-per-writer", type=int, default=100, help="`memcli remember` processes per CLI writer")
    ap.add_argument("--cli-local-per-writer", type=int, default=5, help="the same with --no-server")
    ap.add_argument("--rest-per-writer", type=int, default=100)
    ap.add_argument("--lib-per-writer", type=int, default=50)
    ap.add_argument("--mcp-per-writer", type=int, default=100)
    ap.add_argument("--embedder", default="local", help="local (the bundled model, default) or hash (quick)")
    ap.add_argument("--keep", action="store_true", help="keep the temp homes")
    ap.add_argument("--json", type=Path, help="also write the results here")
    a = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env["MEMCLI_EMBEDDER"] = a.embedder
    env["MEMCLI_AUTOSTART"] = "0"  # cli-local: no server started behind the bench's back
    per = {"cli": a.cli_per_writer, "cli-local": a.cli_local_per_writer, "rest": a.rest_per_writer,
           "lib": a.lib_per_writer, "mcp": a.mcp_per_writer}
    version = version_ms(env)
    results = []
    for mode in [m.strip() for m in a.modes.split(",") if m.strip()]:
        print(f"... {mode}: {a.writers} writers x {per[mode]} ({a.embedder} embedder)", file=sys.stderr, flush=True)
        results.append(run_mode(mode, a.writers, per[mode], env, a.keep))
    version_after = version_ms(env)
    print(f"\n{a.writers} concurrent writers, embedder {a.embedder}, {os.cpu_count()} cores; `memcli --version` "
          f"p50 {version:.0f} ms before, {version_after:.0f} ms after (the machine's pace in this run)\n")
    head = ("mode", "writes", "wall s", "writes/s", "p50 ms", "p95 ms", "commits (biggest)",
            "CPU ms/write: server + writers", "bound on idle cores", "rows", "lost", "duplicated")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in results:
        rate = f"{r['writes_per_s']:.2f}" if r["writes_per_s"] < 10 else f"{r['writes_per_s']:.1f}"
        groups = f"{r['commits']} ({r['biggest_group']})" if r.get("commits") else "—"
        cpu = r["cpu_ms_per_write"]
        bound = (os.cpu_count() or 1) * 1000 / max(1e-9, cpu["server"] + cpu["writers"])
        print(f"| {r['mode']} | {r['writes']}/{r['attempted']} | {r['wall_s']:.1f} | {rate} | "
              f"{r['p50_ms']:.0f} | {r['p95_ms']:.0f} | {groups} | {cpu['server']:.0f} + {cpu['writers']:.0f} | "
              f"{bound:.0f}/s | {r['rows']} | {r['lost']} | {r['duplicated']} |")
    print("\nbound on idle cores: the cores' CPU-seconds a second over the CPU one write took (server and writers);"
          " a busy machine gets less")
    print("targets: cli (8 x 100 through the server) >= 25 writes/s; rest (8 x 100) >= 60 writes/s, p50 <= 150 ms")
    ok = all(r["lost"] == 0 and r["duplicated"] == 0 and r["rows"] == r["writes"] == r["attempted"]
             and not r["unexpected"] for r in results)
    print("\ncount check: " + ("0 lost, 0 duplicated" if ok else "FAILED: " + json.dumps(results)))
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(results, indent=2))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
