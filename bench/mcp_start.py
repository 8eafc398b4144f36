"""How fast a cold `memcli mcp` answers an MCP client's first two requests (initialize, then tools/list, the
way Codex asks before its startup cutoff), against `memcli --version` (a process that does nothing).

    python bench/mcp_start.py [ROUNDS]     # default 9; prints the medians and their ratio
    BENCH_MEMCLI="python -m memcli.cli" PYTHONPATH=/tmp/old/src python bench/mcp_start.py   # another checkout

Each round starts a fresh `memcli mcp` on a fresh home (nothing opened or warmed before), writes
initialize, waits for its answer, sends notifications/initialized and tools/list and waits for the tool
list; the time is from the process start to the tool list. `first call` is the time on to the answer of a
first `list_facts` call (the store opened and the MCP SDK loaded meanwhile)."""
import json
import os
import select
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MEMCLI = shlex.split(os.environ.get("BENCH_MEMCLI") or str(Path(sys.executable).parent / "memcli"))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 9


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env.update(MEMCLI_HOME=str(home), MEMCLI_EMBEDDER="hash", MEMCLI_AUTOSTART="0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: compiled bytecode
    return env


def read_answer(proc: subprocess.Popen, want_id: int, deadline: float) -> dict:
    buf = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            msg = json.loads(line)
            if msg.get("id") == want_id:
                return msg
    raise SystemExit(f"no answer to request {want_id}")


def send(proc: subprocess.Popen, msg: dict) -> None:
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()


def one_mcp(tmp: Path, n: int) -> tuple[float, float, int]:
    home = tmp / f"home{n}"
    start = time.perf_counter()
    proc = subprocess.Popen([*MEMCLI, "mcp"], env=env_for(home), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}})
        read_answer(proc, 1, deadline)
        send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = read_answer(proc, 2, deadline)["result"]["tools"]
        listed = time.perf_counter() - start
        send(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "list_facts", "arguments": {}}})
        answer = read_answer(proc, 3, deadline)
        assert not answer["result"].get("isError"), answer
        first_call = time.perf_counter() - start
    finally:
        proc.stdin.close()
        proc.wait(60)
    return listed, first_call, len(tools)


def one_version() -> float:
    start = time.perf_counter()
    subprocess.run([*MEMCLI, "--version"], check=True, capture_output=True, env=env_for(Path("/nonexistent")))
    return time.perf_counter() - start


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    one_version()  # the first run of a fresh checkout compiles bytecode
    one_mcp(tmp, 0)
    versions, listed, calls, count = [], [], [], 0
    for n in range(1, ROUNDS + 1):  # interleaved, so a busy moment of the machine hits both alike
        versions.append(one_version())
        lst, call, count = one_mcp(tmp, n)
        listed.append(lst)
        calls.append(call)
    v, lst, call = (statistics.median(x) * 1000 for x in (versions, listed, calls))
    print(f"memcli --version                      median {v:7.1f} ms  (n={ROUNDS})")
    print(f"memcli mcp: initialize + tools/list   median {lst:7.1f} ms  = {lst / v:.1f}x --version  ({count} tools)")
    print(f"memcli mcp: + first tool call         median {call:7.1f} ms")


if __name__ == "__main__":
    main()
