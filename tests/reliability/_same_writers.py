"""One writer of the same texts as every other writer, run as its own OS process by test_rel_same_text.py:

    python _same_writers.py KIND WRITER ROUNDS BARRIER_DIR [URL]

KIND is ``rest`` (POST /api/memories), ``mcp-http`` (the ``remember`` tool over Streamable HTTP at URL/mcp),
``cli`` (`memcli remember` processes: through the home's running server) or ``mcp-stdio`` (a `memcli mcp`
process of its own, writing to the store directly). For each round r the writer announces ``ready-r-WRITER``
in BARRIER_DIR, waits for ``go-r`` and then sends every text of the round (:func:`text`) at once, as a busy
agent's tool calls would; it prints one JSON line: ``{"acked": [[round, i, memory_id], ...]}`` (only the
writes that were acknowledged: HTTP 201 or 200, a tool result, exit 0). Errors go to stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TEXTS = 15  # per round


def text(rnd: int, i: int) -> str:
    return f"round {rnd} fact {i}: the deploy of service s{i} needs the flag --canary-{rnd}-{i} before noon"


def wait_for(path: Path) -> None:
    deadline = time.time() + 120
    while not path.exists():
        if time.time() > deadline:
            raise SystemExit(f"no {path.name} signal")
        time.sleep(0.003)


def fresh() -> Any:
    """HTTP limits that keep no connection open between rounds: the server closes an idle one after 5 s
    (uvicorn's default) and a request sent on it at that moment fails with a ReadError (seen here when a
    round waited for slower writers)."""
    import httpx

    return httpx.Limits(max_keepalive_connections=0)


def memcli() -> str:
    return str(Path(sys.executable).parent / "memcli")


def headers() -> dict[str, str]:
    token = os.environ.get("MEMCLI_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else {}


async def rounds(writer: int, n_rounds: int, barrier: Path, send: Any) -> list[list[Any]]:
    """Each round: announce, wait for go, send the round's texts at once; the acknowledged (round, i, id)."""
    acked: list[list[Any]] = []
    for r in range(n_rounds):
        (barrier / f"ready-{r}-{writer}").touch()
        await asyncio.to_thread(wait_for, barrier / f"go-{r}")
        got = await asyncio.gather(*(send(text(r, i)) for i in range(TEXTS)), return_exceptions=True)
        for i, mid in enumerate(got):
            if isinstance(mid, BaseException):
                print(f"round {r} text {i}: {type(mid).__name__}: {mid}", file=sys.stderr)
            elif mid:
                acked.append([r, i, mid])
    return acked


async def run_rest(writer: int, n: int, barrier: Path, url: str) -> list[list[Any]]:
    import httpx

    async with httpx.AsyncClient(base_url=url, headers=headers(), timeout=120, limits=fresh()) as c:
        await c.get("/health")

        async def send(content: str) -> str | None:
            r = await c.post("/api/memories", json={"content": content})
            if r.status_code not in (200, 201):  # 200: already remembered
                print(f"POST: {r.status_code} {r.text}", file=sys.stderr)
                return None
            return str(r.json()["memory_id"])

        return await rounds(writer, n, barrier, send)


async def _tool_rounds(session: Any, writer: int, n: int, barrier: Path) -> list[list[Any]]:
    async def send(content: str) -> str | None:
        res = await session.call_tool("remember", {"content": content})
        if res.is_error:
            print(f"remember tool: {res.content}", file=sys.stderr)
            return None
        return str(json.loads(res.content[0].text)["memory_id"])

    return await rounds(writer, n, barrier, send)


async def run_mcp_http(writer: int, n: int, barrier: Path, url: str) -> list[list[Any]]:
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx.AsyncClient(headers=headers(), follow_redirects=True, limits=fresh(),
                                 timeout=httpx.Timeout(120, read=300)) as client, \
            streamable_http_client(url + "/mcp", http_client=client) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        return await _tool_rounds(session, writer, n, barrier)


async def run_mcp_stdio(writer: int, n: int, barrier: Path) -> list[list[Any]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=memcli(), args=["mcp"], env=dict(os.environ))
    async with stdio_client(params, errlog=sys.stderr) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("list_facts", {"limit": 1})  # the store is open before the first round
        return await _tool_rounds(session, writer, n, barrier)


async def run_cli(writer: int, n: int, barrier: Path) -> list[list[Any]]:
    async def send(content: str) -> str | None:
        p = await asyncio.create_subprocess_exec(memcli(), "remember", content, "--json",
                                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = await p.communicate()
        if p.returncode != 0:
            print(f"memcli remember exited {p.returncode}: {out!r} {err!r}", file=sys.stderr)
            return None
        return str(json.loads(out)["memory_id"])

    return await rounds(writer, n, barrier, send)


def main() -> None:
    kind, writer, n, barrier = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    url = sys.argv[5] if len(sys.argv) > 5 else ""
    runs = {"rest": lambda: run_rest(writer, n, barrier, url),
            "mcp-http": lambda: run_mcp_http(writer, n, barrier, url),
            "cli": lambda: run_cli(writer, n, barrier), "mcp-stdio": lambda: run_mcp_stdio(writer, n, barrier)}
    if kind not in runs:
        raise SystemExit(f"unknown writer kind {kind!r}")
    acked = asyncio.run(runs[kind]())
    sys.stdout.write(json.dumps({"acked": acked}) + "\n")


if __name__ == "__main__":
    main()
