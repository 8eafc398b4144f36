"""``memcli mcp`` once the handshake is done: the SDK's server over the lines :mod:`memcli.mcp.front` hands on.

Built in the front's loader thread (:meth:`SdkSession.open`: the configuration, the store's holder warming up,
the SDK's server) and run in a thread of its own from the first message the front cannot answer. Every line it
gets is checked first (:func:`memcli.mcp.lines.check_line`); the SDK's answer to the replayed ``initialize``
is dropped (the client had the front's).
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from memcli.mcp.lines import REPLAY_ID, Wire, check_line

if TYPE_CHECKING:
    from memcli.mcp.callers import Identity
    from memcli.server.holder import ServiceHolder


class _AsyncWire:
    """The SDK's stdout: the front's wire, minus the answer to the replayed initialize."""

    def __init__(self, wire: Wire) -> None:
        self._wire = wire

    async def write(self, text: str) -> None:
        if REPLAY_ID in text and _is_replay_answer(text):
            return
        await anyio.to_thread.run_sync(self._wire.send, text)

    async def flush(self) -> None:
        """Writes are unbuffered: nothing to flush."""


def _is_replay_answer(text: str) -> bool:
    try:
        msg = json.loads(text)
    except ValueError:
        return False
    return isinstance(msg, dict) and msg.get("id") == REPLAY_ID and "method" not in msg


class _QueuedLines:
    """The SDK's stdin: the replayed lines, then each line the front reads, checked; None ends it."""

    def __init__(self, lines: "queue.Queue[bytes | str | None]", wire: Wire) -> None:
        self._lines = lines
        self._wire = wire

    def __aiter__(self) -> AsyncIterator[str]:
        return self._read()

    async def _read(self) -> AsyncIterator[str]:
        while True:
            raw = await anyio.to_thread.run_sync(self._lines.get)
            if raw is None:
                return
            if isinstance(raw, str):  # a replayed line, made here
                yield raw
                continue
            line, refusal = check_line(raw)
            if refusal is not None:
                await anyio.to_thread.run_sync(self._wire.send, refusal + "\n")
            elif line is not None:
                yield line


class SdkSession:
    """The SDK's server of one ``memcli mcp`` process, over the service of ``holder``."""

    def __init__(self, wire: Wire, holder: "ServiceHolder", identity: "Identity") -> None:
        from memcli.mcp.server import build_server

        self.wire = wire
        self.holder = holder
        self.server = build_server(holder, identity=identity)
        self._lines: "queue.Queue[bytes | str | None]" = queue.Queue()
        self._thread: threading.Thread | None = None

    @classmethod
    def open(cls, wire: Wire, home: str | None, overrides: dict[str, Any], agent: str | None) -> "SdkSession":
        """Read the configuration (a bad one is raised: MemcliError), start opening the store (team mode: the
        team server's client), build the server."""
        from memcli.config import load_config
        from memcli.mcp.callers import Identity
        from memcli.project import detect_project
        from memcli.server.holder import ServiceHolder, setup_file_logging

        config = load_config(home, **overrides)
        setup_file_logging(config, "mcp")
        project = detect_project(Path.cwd())
        if config.api_url:  # team mode: the tools call the team server, no local store
            from memcli.team.remote import RemoteService

            holder = ServiceHolder(config, RemoteService.for_team(config, project=project),  # type: ignore[arg-type]
                                   project=project)
        else:
            holder = ServiceHolder(config, project=project)
        holder.warm()
        return cls(wire, holder, Identity(agent=agent))

    def start(self, replay: list[str]) -> None:
        for line in replay:
            self._lines.put(line)
        self._thread = threading.Thread(target=anyio.run, args=(self._main,), name="memcli-mcp-sdk")
        self._thread.start()

    def feed(self, raw: bytes | None) -> None:
        self._lines.put(raw)

    async def _main(self) -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server(stdin=_QueuedLines(self._lines, self.wire),  # type: ignore[arg-type]
                                stdout=_AsyncWire(self.wire)) as (read_stream, write_stream):  # type: ignore[arg-type]
            low = self.server._lowlevel_server  # the SDK's own run_stdio_async does exactly this  # noqa: SLF001
            await low.run(read_stream, write_stream, low.create_initialization_options())

    def close(self, started: bool) -> None:
        """The client has gone: let the SDK answer what it has, join the threads, close the store; one still
        running (a store that does not answer) ends the process here rather than the interpreter being
        finalized under it (that aborts the process: memcli.server.workers)."""
        import sys

        from memcli.server.workers import end_process

        if started and self._thread is not None:
            self._thread.join()
        if self.holder.shutdown():
            end_process(0 if sys.exc_info()[0] is None else 1)

    def terminate(self) -> None:
        """SIGTERM: the tool calls in flight finish (their writes land), the threads are joined, the store
        closed; the caller ends the process."""
        from memcli.server.workers import end_process

        self.holder.shutdown()
        end_process(0)  # logs flushed; the main thread is still reading stdin: no finalization under it
