"""``catalog.json``: what memcli's MCP server answers to the handshake, for :mod:`memcli.mcp.front` to answer
without the SDK.

For each protocol version the SDK negotiates, the SDK's own server (the one :func:`build_server` makes, over
its own stdio transport) is asked ``initialize``, ``tools/list``, ``resources/list``,
``resources/templates/list`` and ``prompts/list``, and its answers are kept as they were on the wire (the
server's version is filled in at run time). ``tests/test_mcp_start.py`` checks the file against a fresh
capture, so a tool changed without regenerating it fails the tests::

    python -m memcli.mcp.catalog        # rewrite src/memcli/mcp/catalog.json
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from memcli.mcp.front import LISTS

PATH = Path(__file__).with_name("catalog.json")


class _Lines:
    def __init__(self, lines: list[str]) -> None:
        self._lines = lines

    def __aiter__(self) -> AsyncIterator[str]:
        return self._gen()

    async def _gen(self) -> AsyncIterator[str]:
        for line in self._lines:
            yield line
            await anyio.sleep(0.01)  # in order: each answered before the next arrives


class _Out:
    def __init__(self) -> None:
        self.lines: list[str] = []

    async def write(self, text: str) -> None:
        self.lines.append(text)

    async def flush(self) -> None:
        pass


def _ask(version: str) -> dict[str, Any]:
    from mcp.server.stdio import stdio_server

    from memcli.mcp.server import build_server

    server = build_server(None)  # type: ignore[arg-type]  # listing calls no tool
    requests = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "catalog", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    requests += [{"jsonrpc": "2.0", "id": n, "method": m} for n, m in enumerate(LISTS, 1)]
    out = _Out()

    async def main() -> None:
        async with stdio_server(stdin=_Lines([json.dumps(r) for r in requests]),  # type: ignore[arg-type]
                                stdout=out) as (read, write):  # type: ignore[arg-type]
            low = server._lowlevel_server  # noqa: SLF001
            with anyio.move_on_after(5):
                await low.run(read, write, low.create_initialization_options())

    anyio.run(main)
    answers = {m["id"]: m for m in map(json.loads, out.lines)}
    result = {"initialize": answers[0]["result"]}
    for n, method in enumerate(LISTS, 1):
        result[method] = answers[n]["result"]
    result["initialize"]["serverInfo"]["version"] = ""
    return result


def capture() -> dict[str, Any]:
    """The catalog as the SDK answers it now."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    return {"latest": LATEST_HANDSHAKE_VERSION, "versions": {v: _ask(v) for v in HANDSHAKE_PROTOCOL_VERSIONS}}


def render(catalog: dict[str, Any]) -> str:
    return json.dumps(catalog, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    PATH.write_text(render(capture()), encoding="utf-8")
    print(f"wrote {PATH}")
