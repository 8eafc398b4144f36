"""The hook client in team mode (``MEMCLI_API_URL``): forward each payload to the team server with the space
token; never start a local server; a Stop turn the server did not take waits in ``<home>/spool-team``.

The team server is another machine: it never opens a path or resolves a directory named by a remote caller.
So the payload leaves this machine without ``transcript_path`` and ``cwd``: the project is named here (the
git root's name of ``cwd``) and, for Stop, the turn's text missing from the payload is read here from the
transcript (a bounded read of a regular file, :func:`memcli.hooks.text.last_turn`).

Standard library only, like :mod:`memcli.hooks.client` (a hook is a fresh process each time); loaded only
in team mode.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from memcli.hooks.transport import (
    LOCAL_PATHS,
    SPOOL_MAX,
    Settings,
    http,
    log,
    read_regular,
    split_url,
    spool,
)

TEAM_SPOOL = "spool-team"


def project_of(cwd: str) -> str | None:
    """:func:`memcli.project.detect_project` with os.path (pathlib costs a hook ~10 ms of imports): the name
    of the git root above ``cwd``, else of ``cwd`` itself."""
    p = os.path.realpath(cwd)
    d = p
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return os.path.basename(d) or None
        parent = os.path.dirname(d)
        if parent == d:
            return os.path.basename(p) or None
        d = parent


def for_server(event: str, data: bytes, *, read_transcript: bool = True) -> bytes:
    """The payload as the team server gets it: ``project`` instead of ``cwd``, no ``transcript_path``, and for
    Stop the prompt and reply read from the local transcript when the payload lacks them (the prompt as
    ``transcript_prompt``: the server prefers the one it remembered from UserPromptSubmit). Bytes that are not
    a JSON object are sent as they are (the server answers 400)."""
    try:
        payload = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return data
    if not isinstance(payload, dict) or not any(k in payload for k in LOCAL_PATHS):
        return data
    cwd, transcript = payload.get("cwd"), payload.get("transcript_path")
    out: dict[str, Any] = {k: v for k, v in payload.items() if k not in LOCAL_PATHS}
    if isinstance(cwd, str) and cwd and not out.get("project"):
        try:
            out["project"] = project_of(cwd)
        except (OSError, ValueError):  # a NUL in the path, a directory gone
            pass
    if event == "Stop" and read_transcript and isinstance(transcript, str) and transcript:
        reply = out.get("last_assistant_message")
        prompt = out.get("prompt")
        has_reply = isinstance(reply, str) and reply.strip()
        if not has_reply or not (isinstance(prompt, str) and prompt.strip()):
            from memcli.hooks.text import (
                last_turn,  # re + its patterns: only when the transcript is read
            )

            t_prompt, t_reply = last_turn(transcript)
            if not has_reply and t_reply:
                out["last_assistant_message"] = t_reply
            if t_prompt:
                out["transcript_prompt"] = t_prompt
    return json.dumps(out, ensure_ascii=False).encode("utf-8")


def run_team(event: str, data: bytes, s: Settings, deadline: float) -> bytes:
    """Team mode: forward the payload to the team server; nothing is started or printed on failure. A turn
    (Stop) the server did not take is queued in ``<home>/spool-team`` and sent with a later Stop or
    SessionStart that reaches it."""
    data = for_server(event, data)
    try:
        tls, host, port, prefix = split_url(s.api_url or "")
        status, body = http(port, "POST", f"{prefix}/hooks/{event}", data, s.api_token, deadline, None, host, tls)
    except Exception as exc:  # noqa: BLE001 - down, refused, a bad URL, TLS: fail open
        log(s.home, f"{event}: team server {s.api_url} did not answer: {type(exc).__name__}: {exc}")
        if event == "Stop":
            spool(s.home, data, TEAM_SPOOL)
        return b""
    if status not in (200, 202, 204):
        log(s.home, f"{event}: team server {s.api_url} answered HTTP {status}: {body[:200]!r}")
        if event == "Stop" and status not in (400, 401, 403, 413):
            spool(s.home, data, TEAM_SPOOL)
        return b""
    if event in ("Stop", "SessionStart"):
        _resend_team_spool(s, (tls, host, port, prefix), deadline)
    if status == 200 and body.lstrip()[:1] == b"{" and b'"hookSpecificOutput"' in body:
        return body
    return b""


def _resend_team_spool(s: Settings, where: tuple[bool, str, int, str], deadline: float) -> None:
    """Send queued turns (oldest first) while the deadline allows; each is removed once the server took it."""
    d = os.path.join(s.home, TEAM_SPOOL)
    try:
        names = sorted(n for n in os.listdir(d) if n.endswith(".json") and not n.startswith("."))
    except OSError:
        return
    tls, host, port, prefix = where
    for name in names:
        if deadline - time.monotonic() < 0.3:
            return
        path = os.path.join(d, name)
        try:  # only a bounded regular file: a FIFO or a device named like a turn must not hang the hook
            body = for_server("Stop", read_regular(path, SPOOL_MAX, follow=False), read_transcript=False)
        except (OSError, ValueError) as exc:
            log(s.home, f"Stop: a queued turn ({name}) cannot be read: {type(exc).__name__}: {exc}")
            continue
        try:
            status, _ = http(port, "POST", f"{prefix}/hooks/Stop", body, s.api_token, deadline, None, host, tls)
        except Exception as exc:  # noqa: BLE001
            log(s.home, f"Stop: resending a queued turn failed: {type(exc).__name__}: {exc}")
            return
        if status in (200, 202, 204, 400, 413):  # taken, or never acceptable: either way not kept
            try:
                os.unlink(path)
            except OSError:
                pass
