"""Whole `memcli` processes through a warm `memcli serve`, on a copy of the 10,000-memory store that
`python bench/agentfacts.py --gate --sizes 10000` leaves in bench/.cache (namespace agentfacts): p50/p95 of
`--version`, `recall`, `remember` and `get`, interleaved round by round, and each one's ratio to `--version`.

    python bench/cli.py [ROUNDS]          # default 30

A quicker check than `bench/core.py --cli-runs` (which builds its own store first)."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent / ".cache" / "agentfacts-gate-10000" / "data"
if not SRC.exists():
    sys.exit(f"no store at {SRC}: run `python bench/agentfacts.py --gate --sizes 10000` once first")
MEMCLI = str(Path(sys.executable).parent / "memcli")
tmp = Path(tempfile.mkdtemp())
home = tmp / "home"; home.mkdir()
shutil.copytree(SRC, home / "data")
env = {**os.environ, "MEMCLI_HOME": str(home), "MEMCLI_NAMESPACE": "agentfacts"}
env.pop("MEMCLI_NO_SERVER", None)
# as installed: pip compiles the package's bytecode; an editable checkout under PYTHONDONTWRITEBYTECODE would
# compile every module from source in every process (~15 ms more here)
env.pop("PYTHONDONTWRITEBYTECODE", None)
srv = subprocess.Popen([MEMCLI, "serve", "--port", "0", "--idle-timeout", "600"], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(600):
        if (home / "server.json").exists():
            break
        time.sleep(0.1)
    subprocess.run([MEMCLI, "recall", "warm up", "--json"], env=env, capture_output=True, timeout=120)
    cmds = {"--version": ["--version"],
            "recall": ["recall", "which port does the billing service listen on", "--json"],
            "remember": None, "get": None}
    times = {k: [] for k in cmds}
    first = json.loads(subprocess.run([MEMCLI, "remember", "the timing anchor note", "--json"], env=env,
                                      capture_output=True, text=True).stdout)["memory_id"]
    print("recall hits:", len(json.loads(subprocess.run([MEMCLI, "recall", "which port does the billing service listen on", "--json"], env=env, capture_output=True, text=True).stdout)))
    N = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    for i in range(N):
        for k in cmds:
            args = cmds[k] or (["remember", f"cli timing note {i}: the cache {i} expires after {i+1} hours", "--json"]
                               if k == "remember" else ["get", first, "--json"])
            t0 = time.perf_counter()
            p = subprocess.run([MEMCLI, *args], env=env, capture_output=True, text=True, timeout=120)
            times[k].append((time.perf_counter() - t0) * 1000)
            assert p.returncode == 0, (k, p.stdout, p.stderr)
    v = statistics.median(times["--version"])
    for k, xs in times.items():
        xs.sort()
        print(f"{k:10s} p50 {statistics.median(xs):6.1f} ms  p95 {xs[int(0.95 * (len(xs) - 1))]:6.1f} ms  x--version {statistics.median(xs) / v:.2f}")
    print("load average", os.getloadavg())
finally:
    srv.terminate(); srv.wait(30)
    shutil.rmtree(tmp, ignore_errors=True)
