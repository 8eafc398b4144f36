"""The hook client in team mode (``MEMCLI_API_URL``): forward each payload to the team server with the space
token; never start a local server; a Stop turn the server did not take waits in ``<home>/spool-team``.

Standard library only, like :mod:`memcli.hooks.client` (a hook is a fresh process each time); loaded only
in team mode.
"""

from __future__ import annotations

import os
import time

from memcli.hooks.transport import Settings, http, log, read_file, split_url, spool

TEAM_SPOOL = "spool-team"


def run_team(event: str, data: bytes, s: Settings, deadline: float) -> bytes:
    """Team mode: forward the payload to the team server; nothing is started or printed on failure. A turn
    (Stop) the server did not take is queued in ``<home>/spool-team`` and sent with a later Stop or
    SessionStart that reaches it."""
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
        body = read_file(path)
        if body is None:
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
