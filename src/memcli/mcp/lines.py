"""The lines of ``memcli mcp``'s stdio, checked before anything reads them, and the wire they are answered on.

Invalid UTF-8, garbage or a lone surrogate (``\\ud800``) is answered at once with the JSON-RPC error the spec
names — -32700 (parse error) or -32600 (invalid request), with the request's id whenever it can be read — so the
client's call fails instead of hanging, and nothing is stored. Standard library only (the SDK's message model
is imported only by :func:`check_line`, once the SDK is loaded anyway).
"""

from __future__ import annotations

import json
import os
import threading

TYPE_CHECKING = False  # typing costs ~10 ms of a start that must take ~50
if TYPE_CHECKING:
    from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603
REPLAY_ID = "memcli-front-initialize"  # the id of the initialize the SDK is given again (its answer dropped)


def error_line(req_id: "Any", code: int, message: str) -> str:
    rid = req_id if isinstance(req_id, (str, int)) and not isinstance(req_id, bool) else None
    return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def _id_of(text: str) -> "Any":
    """The ``id`` of a message that is JSON but not a valid one (None when there is none)."""
    try:
        obj = json.loads(text, parse_int=_short_int)
    except (ValueError, RecursionError):
        return None
    return obj.get("id") if isinstance(obj, dict) else None


def _short_int(text: str) -> "int | None":
    """An integer, or None for one of more than 4,300 digits (which ``int()`` refuses)."""
    try:
        return int(text)
    except ValueError:
        return None


def _has_surrogate(value: "Any") -> bool:
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


def read_line(raw: bytes) -> "tuple[Any, str | None, str | None]":
    """(the message, its text) or the JSON-RPC error to answer instead; all None for a blank line. The
    checks that need no SDK: UTF-8, JSON, numbers Python reads, no lone surrogates."""
    if not raw.strip():
        return None, None, None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, None, error_line(_id_of(raw.decode("utf-8", "replace")), PARSE_ERROR,
                                      f"Parse error: the message is not valid UTF-8 (byte {exc.start}); nothing "
                                      "was done")
    try:
        obj = json.loads(text)
    except RecursionError:
        return None, None, error_line(None, PARSE_ERROR, "Parse error: the message is nested too deeply")
    except json.JSONDecodeError as exc:
        return None, None, error_line(None, PARSE_ERROR, f"Parse error: not JSON: {exc}")
    except ValueError:  # JSON, but an integer of more than 4,300 digits, which Python does not read
        return None, None, error_line(_id_of(text), PARSE_ERROR, "Parse error: a number too long to read (more "
                                                                 "than 4,300 digits); nothing was done")
    if _has_surrogate(obj):  # `\ud800` alone is no character: the SDK's parser refuses it without a word
        return None, None, error_line(obj.get("id") if isinstance(obj, dict) else None, PARSE_ERROR,
                                      "Parse error: invalid Unicode: a lone surrogate escape (like \\ud800) is "
                                      "not a character; nothing was done")
    return obj, text.rstrip("\r\n"), None


def shape_error(obj: "Any") -> str | None:
    """Why ``obj`` cannot be a JSON-RPC 2.0 message (None when it may be one: the SDK's model decides), so
    that the front refuses it at once, before the SDK is loaded."""
    if not isinstance(obj, dict):
        return f"Invalid Request: not a JSON-RPC 2.0 message: a JSON {type(obj).__name__}, not an object"
    if obj.get("jsonrpc") != "2.0":
        return 'Invalid Request: not a JSON-RPC 2.0 message: "jsonrpc" must be "2.0"'
    if not isinstance(obj.get("method"), str) and not ("id" in obj and ("result" in obj or "error" in obj)):
        return 'Invalid Request: not a JSON-RPC 2.0 message: no "method" (nor a "result" or "error")'
    return None


def check_line(raw: bytes) -> "tuple[str | None, str | None]":
    """(the line for the SDK, or None) and (the JSON-RPC error to answer instead, or None); both None for a
    blank line. :func:`read_line`'s checks, then the SDK's own message model."""
    obj, text, refusal = read_line(raw)
    if text is None:
        return None, refusal
    from mcp.types import jsonrpc_message_adapter

    try:
        jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        first = str(exc).splitlines()[1:2] or [str(exc)]
        req_id = obj.get("id") if isinstance(obj, dict) else None
        return None, error_line(req_id, INVALID_REQUEST, f"Invalid Request: not a JSON-RPC 2.0 message: "
                                                         f"{first[0].strip()[:200]}")
    return text, None


class Wire:
    """The protocol side of stdout, shared by the front, the refusals and the SDK: one line at a time."""

    def __init__(self, fd: int) -> None:
        self._file = os.fdopen(fd, "wb", buffering=0)
        self._lock = threading.Lock()

    def send(self, text: str) -> None:
        data = text.encode("utf-8")
        with self._lock:
            while data:  # a pipe may take a long line in parts
                data = data[self._file.write(data) or 0:]

    def answer(self, req_id: "Any", result: "Any") -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "id": req_id, "result": result}, ensure_ascii=False) + "\n")
