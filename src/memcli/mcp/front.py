"""``memcli mcp``'s front: the handshake answered before anything heavy is imported.

An MCP client starts ``memcli mcp`` and gives it about a second to answer ``initialize`` and ``tools/list``
(Codex drops a server that is later: it then runs without memcli's tools). Importing the MCP SDK alone takes
~0.8 s, LanceDB and the embedder more. So this module, standard library only, answers the handshake from the
catalog memcli ships (``catalog.json``: what the SDK's own server answers, per protocol version, generated
by :mod:`memcli.mcp.catalog` and checked against it by a test): ``initialize``, ``ping``, ``tools/list``,
``resources/list``, ``resources/templates/list``, ``prompts/list``. Meanwhile a thread loads the
configuration, opens the store and builds the SDK's server (:mod:`memcli.mcp.stdio`). The first message
that needs it (a tool call, a read) hands the session over: the SDK gets the client's ``initialize``
again (its answer is dropped) and from then on every line.

Every line is checked before anything reads it (:mod:`memcli.mcp.lines`).
"""

from __future__ import annotations

import json
import os
import sys
import threading

from memcli.mcp.lines import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    REPLAY_ID,
    Wire,
    error_line,
    read_line,
    shape_error,
)

TYPE_CHECKING = False  # typing costs ~10 ms of a start that must take ~50
if TYPE_CHECKING:
    from typing import Any

LISTS = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")


# ---------------------------------------------------------------------------------------------- the front
def load_catalog() -> "dict[str, Any]":
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalog.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _request_id(obj: "dict[str, Any]") -> bool:
    rid = obj.get("id")
    return isinstance(rid, (str, int)) and not isinstance(rid, bool)


def _plain(params: "Any") -> bool:
    """No parameters a list would have to honour (a cursor): at most ``_meta``."""
    return params is None or (isinstance(params, dict) and set(params) <= {"_meta"})


def _init_params(params: "Any") -> bool:
    """What the SDK requires of initialize's params (else the SDK answers it, with its error)."""
    if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
        return False
    info = params.get("clientInfo")
    return isinstance(params.get("capabilities"), dict) and isinstance(info, dict) and \
        isinstance(info.get("name"), str) and isinstance(info.get("version"), str)


class Front:
    """Answers the handshake from the catalog; says which messages the SDK must answer instead."""

    def __init__(self, wire: Wire, catalog: "dict[str, Any]", version: str) -> None:
        self.wire, self.catalog, self.server_version = wire, catalog, version
        self.init_params: "dict[str, Any] | None" = None
        self.protocol: str | None = None  # negotiated in initialize
        self.initialized = False  # notifications/initialized seen

    def answer(self, obj: "Any") -> bool:
        """Answer ``obj`` here (True), or leave it to the SDK (False)."""
        if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0" or not isinstance(obj.get("method"), str):
            return False
        method = obj["method"]
        if "id" not in obj:  # a notification: nothing to answer, and nothing here for the SDK to act on
            if method == "notifications/initialized":
                self.initialized = self.init_params is not None
            return set(obj) <= {"jsonrpc", "method", "params"}
        if not _request_id(obj) or set(obj) - {"jsonrpc", "id", "method", "params"}:
            return False
        if method == "ping" and _plain(obj.get("params")):
            self.wire.answer(obj["id"], {})
            return True
        if method == "initialize" and self.init_params is None and _init_params(obj.get("params")):
            params = obj["params"]
            versions = self.catalog["versions"]
            self.protocol = params["protocolVersion"] if params["protocolVersion"] in versions \
                else self.catalog["latest"]
            result = json.loads(json.dumps(versions[self.protocol]["initialize"]))
            result["serverInfo"]["version"] = self.server_version
            self.wire.answer(obj["id"], result)
            self.init_params = params
            return True
        if method in LISTS and self.protocol is not None and _plain(obj.get("params")):
            self.wire.answer(obj["id"], self.catalog["versions"][self.protocol][method])
            return True
        return False

    def replay(self) -> list[str]:
        """The lines that bring the SDK's session to where the client believes it is."""
        if self.init_params is None:
            return []
        lines = [json.dumps({"jsonrpc": "2.0", "id": REPLAY_ID, "method": "initialize",
                             "params": self.init_params}, ensure_ascii=False)]
        if self.initialized:
            lines.append(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        return lines

    def refuse(self, obj: "Any", message: str) -> None:
        """The SDK could not be started (a bad config file...): every request that needs it gets the reason."""
        if not isinstance(obj, dict) or not _request_id(obj):
            return
        if obj.get("method") == "tools/call":  # what a model reads: a tool error, not a protocol one
            self.wire.answer(obj["id"], {"content": [{"type": "text", "text": message}], "isError": True})
        else:
            self.wire.send(error_line(obj["id"], INTERNAL_ERROR, message) + "\n")


class Backend:
    """The heavy part, loaded in a thread from the start: the configuration, the store, the SDK's server."""

    def __init__(self, wire: Wire, home: str | None, overrides: "dict[str, Any]", agent: str | None) -> None:
        self.wire, self.home, self.overrides, self.agent = wire, home, overrides, agent
        self.ready = threading.Event()
        self.session: "Any" = None  # a memcli.mcp.stdio.SdkSession
        self.error: str | None = None

    def start(self) -> None:
        threading.Thread(target=self._load, name="memcli-mcp-load", daemon=True).start()

    def _load(self) -> None:
        try:
            from memcli.mcp.stdio import SdkSession

            self.session = SdkSession.open(self.wire, self.home, self.overrides, self.agent)
        except BaseException as exc:  # noqa: BLE001 - told to every request that needs it
            message = getattr(exc, "message", None)
            self.error = message if isinstance(message, str) else f"memcli mcp could not start: " \
                                                                  f"{type(exc).__name__}: {exc}"
            sys.stderr.write(f"memcli mcp: {self.error}\n")
            sys.stderr.flush()
        finally:
            self.ready.set()

    def wait(self) -> bool:
        self.ready.wait()
        return self.session is not None


def serve(home: str | None = None, overrides: "dict[str, Any] | None" = None, agent: str | None = None) -> None:
    """Serve MCP over stdin/stdout until the client closes stdin.

    The wire is a private duplicate of fd 1 (and of fd 0 for reading); fd 1 itself points at stderr and fd 0
    at /dev/null for the whole run, so nothing (a print, a C library, a child process) can ever write a
    non-protocol byte to the client or read the client's messages.
    """
    from memcli import __version__

    wire_fd, read_fd = os.dup(1), os.dup(0)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    wire = Wire(wire_fd)
    backend = Backend(wire, home, dict(overrides or {}), agent)
    backend.start()
    front = Front(wire, load_catalog(), __version__)
    _exit_on_sigterm(backend)
    handed = False
    try:
        with os.fdopen(read_fd, "rb") as stdin:
            for raw in stdin:
                if not handed:
                    obj, _, refusal = read_line(raw)
                    if refusal is not None:
                        wire.send(refusal + "\n")
                        continue
                    if obj is None or front.answer(obj):
                        continue
                    problem = shape_error(obj)
                    if problem is not None:
                        wire.send(error_line(obj.get("id") if isinstance(obj, dict) else None, INVALID_REQUEST,
                                             problem) + "\n")
                        continue
                    if not backend.wait():
                        front.refuse(obj, backend.error or "memcli mcp could not start")
                        continue
                    backend.session.start(front.replay())
                    handed = True
                backend.session.feed(raw)
    finally:
        if handed:
            backend.session.feed(None)
        _finish(backend, handed)


def _finish(backend: Backend, handed: bool) -> None:
    """Let the SDK answer what it has, stop the holder's threads (the store's opening, the warm-up), close
    the store; one still running (a store that does not answer) ends the process here rather than the
    interpreter being finalized under it (that aborts the process: memcli.server.workers)."""
    if not backend.ready.wait(30):
        os._exit(0)  # still importing: nothing was opened for writing
    if backend.session is not None:
        backend.session.close(handed)


def _exit_on_sigterm(backend: Backend) -> None:
    """SIGTERM: let the tool calls in flight finish (their writes land), join the threads, close the store,
    exit 0. (The session cannot be cancelled in place: stdin is read by a call that only a new line or EOF
    ends.)"""
    import signal

    def finish() -> None:
        if backend.ready.wait(30) and backend.session is not None:
            backend.session.terminate()
        os._exit(0)

    def handler(signum: int, frame: "Any") -> None:
        threading.Thread(target=finish, name="memcli-sigterm", daemon=True).start()

    signal.signal(signal.SIGTERM, handler)
