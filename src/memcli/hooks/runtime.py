"""The server side of the hooks, independent of any web framework: one :class:`HookRuntime` per process.

``handle(event, payload)`` returns the JSON Claude Code expects (or None: inject nothing) and never raises:
every failure is one line in ``<home>/logs/hooks.log``. Used by :mod:`memcli.hooks.routes` (the warm server)
and by ``memcli hook <event>`` (in-process, for debugging).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.hooks.spool import PermanentError, Spool
from memcli.hooks.state import HookState
from memcli.hooks.transport import LOCAL_PATHS, log
from memcli.redact import clean_payload
from memcli.server.workers import Workers

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.memory.service import MemoryService

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")


def output(event: str, context: str | None) -> dict[str, Any] | None:
    if not context:
        return None
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}


class NotQueued(Exception):
    """A Stop turn could not be written to the spool (a full or read-only disk): it must not be acknowledged."""

    def __init__(self, error: OSError) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.error = error


def space_session(caller: dict[str, Any], session_id: Any) -> str:
    """The session key of a space's caller: space, agent and the client's session id, each unambiguous (a
    space may be called ``acme/bob``: its ``/`` is escaped, so no other space's agent and session spell it)."""
    def part(value: Any) -> str:
        return str(value).replace("%", "%25").replace("/", "%2F")
    return f"{part(caller['space'])}/{part(caller['agent'])}/{session_id}"


class HookRuntime:
    def __init__(self, get_service: Callable[[], "MemoryService"], config: "Config",
                 workers: Workers | None = None) -> None:
        self.get_service = get_service
        # the process's background work (the server's: its shutdown stops the drainer between turns and joins)
        self.workers = workers or Workers()
        self.config = config
        self.cfg = config.hooks
        self.home = Path(config.home)
        self.state = HookState(self.home)
        self.spool = Spool(self.home)
        self.last: dict[str, Any] = {}  # what the last call did (tests, `memcli hook`)
        self._recall_warmed = False
        # team mode (set by memcli.server.team): who the current request speaks for, kept with a queued turn
        # so that its capture, whichever thread runs it, writes into that caller's space
        self.whoami: Callable[[], Any] = lambda: None
        self.acting_as: Callable[[Any], AbstractContextManager[Any]] = lambda tag: nullcontext()

    def log(self, message: str) -> None:
        log(self.home, message, "server")

    # ------------------------------------------------------------------ entry point
    def handle(self, event: str, payload: dict[str, Any], *, local: bool = True,
               strict: bool = False) -> dict[str, Any] | None:
        """What to answer ``event`` (None: nothing to inject); never raises, except :class:`NotQueued` with
        ``strict`` (a Stop turn the spool could not take: the route answers an error, not 202).
        ``local``: the request comes from this home's own hook client, whose paths are this machine's; any
        other caller's ``transcript_path`` and ``cwd`` are dropped unread."""
        t0 = time.perf_counter()
        self.last = {"event": event}
        try:
            if not isinstance(payload, dict):
                raise ValueError("the payload is not a JSON object")
            # no secret reaches the state files or the spool, and a lone surrogate (\ud800) costs no turn
            payload = clean_payload(payload)
            caller = self.whoami()
            if caller or not local:
                payload = {k: v for k, v in payload.items() if k not in LOCAL_PATHS}
            if caller and payload.get("session_id"):  # one space's sessions never share state with another's
                payload = dict(payload, session_id=space_session(caller, payload["session_id"]))
            if event == "SessionStart":
                out = self.session_start(payload)
            elif event == "UserPromptSubmit":
                out = self.user_prompt(payload)
            elif event == "Stop":
                self.receive_stop(payload)
                out = None
            elif event == "SessionEnd":
                self.state.prune()
                out = None
            else:
                raise ValueError(f"unknown hook event {event!r}")
            self.last["ms"] = round((time.perf_counter() - t0) * 1000, 1)
            return out
        except NotQueued as exc:
            self.log(f"{event}: the turn could not be queued ({exc}); not acknowledged")
            self.last["error"] = f"not queued: {exc}"
            if strict:
                raise
            return None
        except Exception as exc:  # noqa: BLE001 - fail open: the agent is never disturbed
            self.log(f"{event}: {type(exc).__name__}: {exc}")
            self.last["error"] = f"{type(exc).__name__}: {exc}"
            return None

    # ------------------------------------------------------------------ events
    def session_start(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        from memcli.hooks.capture import project_of
        from memcli.hooks.digest import session_digest

        session = payload.get("session_id")
        self.state.prune()
        project = project_of(payload)
        text, ids = session_digest(self.get_service(), project=project, budget=self.cfg.session_start_budget,
                                   project_only=self.cfg.project_only, index_top_k=self.cfg.index_top_k,
                                   index_budget=self.cfg.index_budget)
        # a new, cleared or compacted context no longer holds what was injected before; a resumed one does
        self.state.add_injected(session, ids, reset=payload.get("source") != "resume")
        self.last.update(project=project, injected=ids)
        self.warm_recall_once()
        return output("SessionStart", text)

    def user_prompt(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        from memcli.hooks.capture import project_of
        from memcli.hooks.inject import prompt_context, tiers

        session = payload.get("session_id")
        prompt = payload.get("prompt")
        if not isinstance(prompt, str):
            return None
        # for Stop, before anything can fail (redacted with the payload: the state file keeps no secret)
        self.state.set_prompt(session, prompt)
        project = project_of(payload)
        c = self.cfg
        text, ids, listed = prompt_context(self.get_service(), prompt, project=project,
                                           exclude=self.state.injected(session), project_only=c.project_only,
                                           lift=c.other_script_lift, **tiers(c))
        if ids:  # shown in full: not again in this session (an index line's memory may still be, in full)
            self.state.add_injected(session, ids)
        self.last.update(project=project, injected=ids, listed=listed)
        return output("UserPromptSubmit", text)

    def receive_stop(self, payload: dict[str, Any]) -> None:
        """Queue the turn (with the prompt remembered for this session) for :meth:`drain`."""
        if payload.get("stop_hook_active"):
            self.last["skipped"] = "stop_hook_active"
            return
        if payload.get("agent_id") and not self.cfg.capture_subagents:
            self.last["skipped"] = "subagent"
            return
        remembered = self.state.take_prompt(payload.get("session_id"))
        # a remote client's transcript prompt comes last: the prompt remembered for the session is the turn's
        prompt = payload.get("_memcli_prompt") or payload.get("prompt") or remembered or \
            payload.get("transcript_prompt")
        if prompt:
            payload = dict(payload, _memcli_prompt=prompt)
        payload = {k: v for k, v in payload.items() if k != "_memcli_caller"}  # never the client's say
        caller = self.whoami()
        if caller:
            payload["_memcli_caller"] = caller
        try:  # on disk (fsync'd) before the answer: a 202 is a turn that survives
            self.spool.put(payload)
        except OSError as exc:
            raise NotQueued(exc) from None

    # ------------------------------------------------------------------ the queue
    def capture(self, payload: dict[str, Any]) -> None:
        from memcli.errors import ValidationError
        from memcli.hooks.capture import capture_turn, journal

        payload = clean_payload(payload)  # queued by a client (or an older memcli) as it came
        if payload.get("_memcli_caller"):  # a space's turn queued by an older memcli: its paths stay unread
            payload = {k: v for k, v in payload.items() if k not in LOCAL_PATHS}
        if not payload.get("_memcli_prompt") and payload.get("session_id"):
            # spooled by the client while the server was down: the prompt may be in the state
            prompt = self.state.take_prompt(payload.get("session_id"))
            if prompt:
                payload = dict(payload, _memcli_prompt=prompt)
        try:
            with self.acting_as(payload.get("_memcli_caller")):
                res = capture_turn(self.get_service(), payload, self.cfg, self.state, self.home)
        except ValidationError as exc:
            raise PermanentError(exc.message) from None
        self.last.setdefault("captures", []).append(res)
        journal(self.home, payload, res)  # every decision, with its reason (hooks.log keeps failures only)

    def drain(self) -> int:
        if not self.spool.pending():
            return 0
        return self.spool.drain(self.capture, self.log, stop=self.workers.stopping.is_set)

    def drain_in_background(self) -> threading.Thread | None:
        if not self.spool.pending() or self.workers.stopping.is_set():
            return None
        return self.workers.start(self._safe_drain, name="memcli-hooks-spool")

    def _safe_drain(self) -> None:
        try:
            self.drain()
        except Exception as exc:  # noqa: BLE001
            self.log(f"spool drain failed: {type(exc).__name__}: {exc}")

    def warm_up(self) -> None:
        """At server start (a background thread): store the turns queued while the server was down."""
        try:
            if self.spool.pending():
                self.drain()
        except Exception as exc:  # noqa: BLE001
            self.log(f"warm-up failed: {type(exc).__name__}: {exc}")

    def warm_recall_once(self) -> None:
        """After the first SessionStart, run one recall in the background so that the session's first prompt
        does not pay for opening the indexes."""
        if self._recall_warmed or self.workers.stopping.is_set():
            return
        self._recall_warmed = True

        def run() -> None:
            try:
                self.get_service().recall("warm up the memcli hooks", top_k=1)
            except Exception:  # noqa: BLE001 - an empty store has nothing to warm
                pass
        self.workers.start(contextvars.copy_context().run, run, name="memcli-hooks-warm-recall")
