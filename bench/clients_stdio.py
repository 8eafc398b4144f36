"""Does a real Codex CLI see memcli's tools over stdio? How long does a cold `memcli mcp` take to answer?

    python bench/clients_stdio.py              # 8 Codex turns, 8 cold starts
    python bench/clients_stdio.py --runs 20

Codex (from npm, tests/_clients.py's cache) runs `codex exec` with the stdio entry `memcli setup` writes
(`memcli mcp`), HOME in a temporary directory, against the stand-in model of tests/_standin_model.py. Codex sends
its first model request without waiting for a stdio MCP server that is still starting, so the figure is how
many first requests offered memcli's tools. Beside it: seconds from spawning `memcli mcp` to its answer to
`initialize` and to `tools/list` (what Codex, and `gemini mcp list` within its 5 s, wait for). Printed only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _clients import install  # noqa: E402
from _memcli_server import MEMCLI  # noqa: E402
from _standin_model import MODEL, StandIn, memcli_tool  # noqa: E402


def cold_start(env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawning `memcli mcp` to its `initialize` answer and to its `tools/list` answer."""
    t0 = time.perf_counter()
    p = subprocess.Popen([MEMCLI, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdin and p.stdout
    def ask(i: int, method: str, params: dict) -> None:
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        p.stdin.flush()
    ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "bench", "version": "1"}})
    p.stdout.readline()
    t_init = time.perf_counter() - t0
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    ask(2, "tools/list", {})
    p.stdout.readline()
    t_tools = time.perf_counter() - t0
    p.kill()
    p.wait()
    return t_init, t_tools


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8)
    args = ap.parse_args()
    clients = install()
    standin = StandIn().start()
    with tempfile.TemporaryDirectory(prefix="memcli-bench-clients-") as tmp:
        home = Path(tmp) / "home"
        memcli_home = home / ".local" / "share" / "memcli"
        memcli_home.mkdir(parents=True)
        (memcli_home / "config.toml").write_text('[embedder]\nprovider = "hash"\n')
        (home / ".codex").mkdir()
        (home / ".codex" / "config.toml").write_text(
            f'model = "{MODEL}"\nmodel_provider = "standin"\n\n[model_providers.standin]\nname = "standin"\n'
            f'base_url = "{standin.url}/v1"\nwire_api = "responses"\nenv_key = "STANDIN_KEY"\n')
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCLI_", "XDG_", "CODEX_"))}
        env.update(HOME=str(home), STANDIN_KEY="x", MEMCLI_AUTOSTART="0",
                   PATH=os.pathsep.join([str(clients.bin), str(Path(MEMCLI).parent), env.get("PATH", "")]))
        subprocess.run([MEMCLI, "setup", "--yes", "--agents", "codex"], env=env, check=True, capture_output=True)
        starts = [cold_start(env) for _ in range(args.runs)]
        seen = 0
        for i in range(args.runs):
            marker = f"[bench turn {i}]"
            subprocess.run([clients.exe("codex"), "exec", "--skip-git-repo-check", f"Hello {marker}"], env=env,
                           capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, cwd=tmp)
            first = standin.requests("openai", marker)
            seen += bool(first and memcli_tool(first[0].tools, "remember"))
    standin.stop()
    inits, tools = [s[0] for s in starts], [s[1] for s in starts]
    print(f"cold `memcli mcp`: initialize answered after median {statistics.median(inits):.2f} s "
          f"(max {max(inits):.2f}), tools/list after median {statistics.median(tools):.2f} s (max {max(tools):.2f}); "
          f"n={len(starts)}")
    print(f"Codex over stdio: memcli's tools in the first model request in {seen} of {args.runs} turns")
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
