"""One concurrent writer, run as its own OS process by the reliability suite and bench/concurrency.py:

    python _writers.py KIND WRITER N BARRIER_DIR [URL]

KIND is ``cli`` (`memcli remember` processes, and `memcli import` for the rest), ``lib`` (MemoryService in
this process) or ``rest`` (POST /api/memories, with the token of MEMCLI_TOKEN). The writer announces
``ready-<pid>`` in BARRIER_DIR, waits for ``go``, writes N memories whose content is ``content(KIND, WRITER, i)``
and prints one JSON line: ``{"acked": [[memory_id, content], ...], "latencies": [seconds per write ...]}``.
Only writes that were acknowledged (exit 0 / HTTP 201 / a returned id) are listed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

CLI_REMEMBERS = 3  # a `cli` writer runs this many `memcli remember` processes (each ~3 s of CPU: LanceDB's import),
CLI_IMPORTS = 1  # and puts its other items through this many `memcli import` processes


def content(kind: str, writer: int, i: int) -> str:
    return f"writer {writer} ({kind}) memory {i}: the build step {writer}-{i} needs cache key k{writer * 1000 + i}"


def wait_go(barrier: Path) -> None:
    (barrier / f"ready-{os.getpid()}").touch()
    deadline = time.time() + 300
    while not (barrier / "go").exists():
        if time.time() > deadline:
            raise SystemExit("no go signal")
        time.sleep(0.005)


def memcli() -> str:
    return str(Path(sys.executable).parent / "memcli")


def run_cli(writer: int, n: int, barrier: Path, remembers: int | None = None) -> tuple[list, list]:
    acked: list[list[str]] = []
    lat: list[float] = []
    n_rem = min(n, CLI_REMEMBERS if remembers is None else remembers)
    rest = list(range(n_rem, n))
    chunks = [rest[k::CLI_IMPORTS] for k in range(CLI_IMPORTS)] if rest else []
    files = []
    for chunk in chunks:  # prepared before `go`: export records with their ids
        recs = [{"id": str(uuid.uuid4()), "content": content("cli", writer, i), "tags": [f"w{writer}"]} for i in chunk]
        fd, path = tempfile.mkstemp(suffix=".jsonl", dir=barrier)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in recs))
        files.append((path, recs))
    wait_go(barrier)
    for i in range(n_rem):
        text = content("cli", writer, i)
        t0 = time.perf_counter()
        p = subprocess.run([memcli(), "remember", text, "--tag", f"w{writer}", "--json"], capture_output=True,
                           text=True)
        lat.append(time.perf_counter() - t0)
        if p.returncode == 0:
            acked.append([json.loads(p.stdout)["memory_id"], text])
        else:
            print(f"memcli remember failed ({p.returncode}): {p.stdout}{p.stderr}", file=sys.stderr)
    for path, recs in files:
        t0 = time.perf_counter()
        p = subprocess.run([memcli(), "import", path, "--json"], capture_output=True, text=True)
        lat.append(time.perf_counter() - t0)
        if p.returncode == 0 and json.loads(p.stdout)["added"] == len(recs):
            acked += [[r["id"], r["content"]] for r in recs]
        else:
            print(f"memcli import failed ({p.returncode}): {p.stdout}{p.stderr}", file=sys.stderr)
    return acked, lat


def run_lib(writer: int, n: int, barrier: Path) -> tuple[list, list]:
    from memcli.config import load_config
    from memcli.memory.service import MemoryService

    svc = MemoryService.open(load_config())
    acked: list[list[str]] = []
    lat: list[float] = []
    wait_go(barrier)
    try:
        for i in range(n):
            text = content("lib", writer, i)
            t0 = time.perf_counter()
            res = svc.remember(text, tags=[f"w{writer}"], source="api")
            lat.append(time.perf_counter() - t0)
            acked.append([res.memory_id, text])
    finally:
        svc.close()
    return acked, lat


def run_rest(writer: int, n: int, barrier: Path, url: str) -> tuple[list, list]:
    import httpx

    headers = {"Authorization": f"Bearer {os.environ['MEMCLI_TOKEN']}"} if os.environ.get("MEMCLI_TOKEN") else {}
    acked: list[list[str]] = []
    lat: list[float] = []
    with httpx.Client(base_url=url, headers=headers, timeout=120) as c:
        c.get("/health")
        wait_go(barrier)
        for i in range(n):
            text = content("rest", writer, i)
            t0 = time.perf_counter()
            r = c.post("/api/memories", json={"content": text, "tags": [f"w{writer}"]})
            lat.append(time.perf_counter() - t0)
            if r.status_code == 201:
                acked.append([r.json()["memory_id"], text])
            else:
                print(f"POST failed: {r.status_code} {r.text}", file=sys.stderr)
    return acked, lat


def main() -> None:
    kind, writer, n, barrier = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    if kind == "cli":
        acked, lat = run_cli(writer, n, barrier, int(sys.argv[5]) if len(sys.argv) > 5 else None)
    elif kind == "lib":
        acked, lat = run_lib(writer, n, barrier)
    elif kind == "rest":
        acked, lat = run_rest(writer, n, barrier, sys.argv[5])
    else:
        raise SystemExit(f"unknown writer kind {kind!r}")
    sys.stdout.write(json.dumps({"acked": acked, "latencies": lat}) + "\n")


if __name__ == "__main__":
    main()
