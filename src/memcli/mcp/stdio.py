"""``memcli mcp``: the MCP server over stdin/stdout, with every line checked before the SDK sees it.

The SDK's stdio transport decodes stdin with ``errors="replace"`` (invalid UTF-8 becomes U+FFFD and would be
stored as such) and answers nothing to a line it cannot parse (garbage, a lone surrogate ``\\ud800``): the
client then waits forever. Here each line is checked first (:func:`check_line`); a bad one is answered at
once with the JSON-RPC error the spec names — -32700 (parse error) or -32600 (invalid request), with the
request's id whenever it can be read, so the client's call fails instead of hanging — and the SDK gets only
well-formed lines. The same refusal the CLI and REST give invalid UTF-8, nothing stored.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from memcli.server.holder import ServiceHolder

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def _error(req_id: Any, code: int, message: str) -> str:
    rid = req_id if isinstance(req_id, (str, int)) and not isinstance(req_id, bool) else None
    return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def _id_of(text: str) -> Any:
    """The ``id`` of a message that is JSON but not a valid one (None when there is none)."""
    try:
        obj = json.loads(text, parse_int=_short_int)
    except (ValueError, RecursionError):
        return None
    return obj.get("id") if isinstance(obj, dict) else None


def _short_int(text: str) -> int | None:
    """An integer, or None for one of more than 4,300 digits (which ``int()`` refuses)."""
    try:
        return int(text)
    except ValueError:
        return None


def _has_surrogate(value: Any) -> bool:
    """Whether any string (key or value) holds a lone surrogate; iterative: a message nested 500 levels deep
    (which json reads) must get its answer, not end the process with a RecursionError."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if any(0xD800 <= ord(c) <= 0xDFFF for c in node):
                return True
        elif isinstance(node, dict):
            stack.extend(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def check_line(raw: bytes) -> tuple[str | None, str | None]:
    """(the line for the SDK, or None) and (the JSON-RPC error to answer instead, or None); both None for a
    blank line."""
    if not raw.strip():
        return None, None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, _error(_id_of(raw.decode("utf-8", "replace")), PARSE_ERROR,
                            f"Parse error: the message is not valid UTF-8 (byte {exc.start}); nothing was done")
    try:
        obj = json.loads(text)
    except RecursionError:
        return None, _error(None, PARSE_ERROR, "Parse error: the message is nested too deeply")
    except json.JSONDecodeError as exc:
        return None, _error(None, PARSE_ERROR, f"Parse error: not JSON: {exc}")
    except ValueError:  # JSON, but an integer of more than 4,300 digits, which Python does not read
        return None, _error(_id_of(text), PARSE_ERROR, "Parse error: a number too long to read (more than "
                                                       "4,300 digits); nothing was done")
    req_id = obj.get("id") if isinstance(obj, dict) else None
    if _has_surrogate(obj):  # `\ud800` alone is no character: the SDK's parser refuses it without a word
        return None, _error(req_id, PARSE_ERROR, "Parse error: invalid Unicode: a lone surrogate escape "
                                                 "(like \\ud800) is not a character; nothing was done")
    from mcp.types import jsonrpc_message_adapter

    try:
        jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        first = str(exc).splitlines()[1:2] or [str(exc)]
        return None, _error(req_id, INVALID_REQUEST, f"Invalid Request: not a JSON-RPC 2.0 message: "
                                                     f"{first[0].strip()[:200]}")
    return text.rstrip("\r\n"), None


class _Wire:
    """The protocol side of stdout, shared by the SDK's writer and the refusals here: one line at a time."""

    def __init__(self, fd: int) -> None:
        self._file = os.fdopen(fd, "wb", buffering=0)
        self._lock = threading.Lock()

    def _write(self, text: str) -> None:
        data = text.encode("utf-8")
        with self._lock:
            while data:  # a pipe may take a long line in parts
                data = data[self._file.write(data) or 0:]

    async def write(self, text: str) -> None:
        await anyio.to_thread.run_sync(self._write, text)

    async def flush(self) -> None:
        """Writes are unbuffered: nothing to flush."""


class _CheckedLines:
    """The lines of stdin that are JSON-RPC messages; every other one is answered on the wire at once."""

    def __init__(self, fd: int, wire: _Wire) -> None:
        self._stdin = anyio.wrap_file(os.fdopen(fd, "rb"))
        self._wire = wire

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for raw in self._stdin:
            line, refusal = check_line(raw)
            if refusal is not None:
                await self._wire.write(refusal + "\n")
            elif line is not None:
                yield line


def run_stdio(holder: "ServiceHolder") -> None:
    """Serve MCP over stdin/stdout until the client closes stdin.

    The wire is a private duplicate of fd 1 (and of fd 0 for reading); fd 1 itself points at stderr and fd 0
    at /dev/null for the whole run, so nothing (a print, a C library, a child process) can ever write a
    non-protocol byte to the client or read the client's messages.
    """
    from mcp.server.stdio import stdio_server

    from memcli.mcp.server import build_server

    wire_fd, read_fd = os.dup(1), os.dup(0)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    wire = _Wire(wire_fd)
    server = build_server(holder)
    holder.warm()

    async def main() -> None:
        async with stdio_server(stdin=_CheckedLines(read_fd, wire), stdout=wire) as (  # type: ignore[arg-type]
                read_stream, write_stream):
            low = server._lowlevel_server  # the SDK's own run_stdio_async does exactly this  # noqa: SLF001
            await low.run(read_stream, write_stream, low.create_initialization_options())

    _exit_on_sigterm(holder)

    try:
        anyio.run(main)
    finally:
        _end_threads(holder)


def _end_threads(holder: "ServiceHolder") -> None:
    """Stop and join the holder's threads (the store's opening, the warm-up) once the client has gone; one
    still running (a store that does not answer) ends the process here rather than the interpreter being
    finalized under it (that aborts the process: memcli.server.workers)."""
    import sys

    from memcli.server.workers import end_process

    if holder.shutdown():
        end_process(0 if sys.exc_info()[0] is None else 1)


def _exit_on_sigterm(holder: "ServiceHolder") -> None:
    """SIGTERM: let the tool calls in flight finish (their writes land), join the threads, close the store,
    exit 0.

    (The session cannot be cancelled in place: stdin is read in a worker thread that only a new line or EOF
    wakes up.)"""
    import signal

    def finish() -> None:
        from memcli.server.workers import end_process

        holder.shutdown()
        end_process(0)  # logs flushed; the main thread is still reading stdin: no finalization under it

    def handler(signum: int, frame: Any) -> None:
        threading.Thread(target=finish, name="memcli-sigterm", daemon=True).start()

    signal.signal(signal.SIGTERM, handler)
