"""The hook client: JSON on stdin → this home's warm server → ``hookSpecificOutput`` on stdout → exit 0.

This module runs in a fresh interpreter for every hook event (``hooks/run.sh`` runs it as a plain script:
``python -I -S <path>/client.py``), so it imports **only the standard library** and memcli's own stdlib-only
modules (:mod:`memcli.hooks.transport`, :mod:`memcli.proof`), as little as possible (no ``json``, no ``http.client`` on the hot path: a raw HTTP/1.1 request on a
socket costs nothing to import). It never exits non-zero and never prints anything but the server's answer:
every failure is one line in ``<home>/logs/hooks.log``.

It only talks to a server of its own home, and makes sure of it **before** it sends the token or a prompt: a
server must first answer a fresh challenge with an HMAC keyed by the home's token and bound to its port
(:mod:`memcli.proof`); the answer is remembered for that server process (``<home>/hooks-state/verified``: its
port, its pid and what no later process with that pid can have, :func:`memcli.proof.verified_mark`), so the
hot path stays one request. Whatever listens on a port without that proof (a squatter on ``MEMCLI_PORT``, or
on the port of a server that was killed, whatever process got its pid since) gets nothing and is never
printed. Every request also carries the home id of ``<home>/auth.json`` (see :mod:`memcli.home`): a server of
another home refuses (401 or 421 ``wrong_home``) without reading or writing anything. Such a refusal, like no
server at all, means "no server of mine": the client starts this home's own (on another free port if the usual
one is taken), which records its port in ``<home>/server.json``, and waits for it within the hook's budget.

Settings, each first found wins (the same as :func:`memcli.config.load_config`):

- home: ``MEMCLI_HOME``, else the platform's user data dir (``$XDG_DATA_HOME/memcli`` or
  ``~/.local/share/memcli`` on Linux, ``~/Library/Application Support/memcli`` on macOS);
- the server: the port in ``<home>/server.json`` while its process runs, then ``MEMCLI_PORT``; a server it
  starts listens on ``MEMCLI_PORT``, else ``port`` under ``[server]`` in ``<home>/config.toml``, else 8765
  (any free port when that one is taken);
- token: ``MEMCLI_TOKEN``, else ``[server] token``, else ``<home>/auth.json``; home id: ``auth.json``;
- deadline: ``MEMCLI_HOOK_DEADLINE_MS``, else ``deadline_ms`` under ``[hooks]``, else 1500 ms.

Team mode: with ``MEMCLI_API_URL`` (else seed 002's ``MNEMO_API_URL``, else ``api_url`` in ``config.toml``) the
hook talks to that server only — http:// or https:// (``ssl`` is imported then, ~10 ms), with ``MEMCLI_API_TOKEN``
(else ``MNEMO_API_TOKEN``, else ``api_token``) — and
never starts a local one; when the server does not answer in time the hook prints nothing and exits 0.
"""

from __future__ import annotations

import _socket  # the C module: `socket` would import enum, selectors… (~10 ms)
import os
import sys
import time

if __name__ == "__main__" and not __package__:
    # run as a plain script under -I -S (hooks/run.sh): the folder that holds the memcli package is not on
    # sys.path, so memcli's own modules (transport, team_client) would not import
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from memcli.hooks.transport import (  # noqa: E402 - after the path fix above
    ServerDown,
    Settings,
    Timeout,
    http,
    int_after,
    log,
    read_file,
    resolve_home,
    resolve_settings,
    spool,
    spool_pending,
    str_after,
)
from memcli.proof import VERIFIED, proof_ok, verified_mark  # noqa: E402 - hmac and hashlib only for a proof

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
IDLE_TIMEOUT_S = 1800
START_GRACE_S = 20.0  # another hook started the server less than this ago: do not start a second one
SESSION_START_WAIT_MS = 8000  # hooks.json gives SessionStart 10 s: most of it may go to a cold server
MAX_STDIN = 16 * 1024 * 1024


def port_taken(port: int) -> bool:
    """Does something listen on 127.0.0.1:port? (A bare connect: nothing is sent to it.)"""
    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        sock.settimeout(0.2)
        sock.connect(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        sock.close()


def start_server(s: Settings, port: int | None = None) -> bool:
    """Start this home's ``memcli serve`` detached (unless another hook just did), on ``port``, else the
    usual port when it is free, else any free one. Returns True when it started one."""
    state = os.path.join(s.home, "hooks-state")
    stamp = os.path.join(state, "server-start.stamp")
    try:
        if time.time() - os.stat(stamp).st_mtime < START_GRACE_S:
            return False
    except OSError:
        pass
    logs = os.path.join(s.home, "logs")
    os.makedirs(state, exist_ok=True)  # fails (fail open) when the home is not a usable directory
    os.makedirs(logs, exist_ok=True)
    if port is None:
        port = 0 if port_taken(s.start_port) else s.start_port
    import subprocess

    with open(stamp, "w", encoding="utf-8") as fh:
        fh.write(str(time.time()))
    cmd = [sys.executable, "-m", "memcli.cli", "serve", "--port", str(port),
           "--idle-timeout", os.environ.get("MEMCLI_HOOK_IDLE_TIMEOUT", str(IDLE_TIMEOUT_S))]
    with open(os.path.join(logs, "server.log"), "ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True, cwd=s.home)
    with open(os.path.join(state, "server.pid"), "w", encoding="utf-8") as fh:
        fh.write(str(proc.pid))
    log(s.home, f"started the server: pid {proc.pid}, port {port or 'any free one'}")
    return True


def wait_own_server(s: Settings, deadline: float) -> int | None:
    """The port of this home's server once it proves it is this home's, or None at the deadline."""
    while time.monotonic() < deadline - 0.05:
        s.refresh()
        if s.port is not None and s.token and proves_ours(s, s.port, min(deadline, time.monotonic() + 0.3)):
            return s.port
        time.sleep(0.05)
    return None


# --------------------------------------------------------------------------- is it this home's server?
def trusted(s: Settings, port: int) -> bool:
    """Has the server on ``port`` proven itself already? Only the process ``server.json`` names now (same
    port, same pid, and the very process that proved it: not a later one that got its pid) is trusted
    without a new challenge."""
    if port != s.port or not s.pid:
        return False
    mark = verified_mark(port, s.pid)
    return mark is not None and read_file(os.path.join(s.home, *VERIFIED)) == mark.encode()


def proves_ours(s: Settings, port: int, deadline: float) -> bool:
    """Does whatever listens on ``port`` prove it holds this home's token? Only a fresh nonce is sent (no
    token, no prompt); the proof is an HMAC bound to the port (:mod:`memcli.proof`)."""
    if not s.token:
        return False
    nonce = os.urandom(16).hex()
    try:
        status, body = http(port, "GET", "/health", b"", None, deadline, None,
                            headers=f"X-Memcli-Challenge: {nonce}\r\n")
    except (ServerDown, Timeout, OSError):
        return False
    raw = body.decode("latin-1")
    proof = str_after(raw, '"proof"')
    if status != 200 or not proof:
        return False
    if not proof_ok(s.token, nonce, port, proof):
        return False
    mark = verified_mark(port, s.pid) if port == s.port and int_after(raw, '"pid"') == s.pid else None
    if mark is not None:
        try:  # remembered for this server process: the next hooks send at once
            os.makedirs(os.path.join(s.home, VERIFIED[0]), exist_ok=True)
            with open(os.path.join(s.home, *VERIFIED), "w", encoding="utf-8") as fh:
                fh.write(mark)
        except OSError:
            pass
    return True


# --------------------------------------------------------------------------- the hook
def event_deadline_ms(event: str, base_ms: int) -> int:
    """How long the hook may take, from its start. UserPromptSubmit: the configured deadline (1.5 s).
    SessionStart: most of the 10 s hooks.json gives it — a server that is cold (started by this hook or by
    another a moment ago) opens the store and loads the model first, seconds on a busy machine, and the
    session's first digest is worth the wait. Stop (an async hook): at least 4 s before the payload is spooled
    instead. SessionEnd (1.5 s for every plugin): 0.5 s at most."""
    if event == "SessionStart":
        return max(2 * base_ms, SESSION_START_WAIT_MS)
    if event == "Stop":
        return max(base_ms, 4000)
    if event == "SessionEnd":
        return min(base_ms, 500)
    return base_ms


def _ask_own_server(event: str, data: bytes, s: Settings, deadline: float) -> tuple[int, bytes] | None:
    """The answer of a running server of this home, or None when none answers as ours. Only ports this home
    recorded (server.json) or was told (MEMCLI_PORT) are tried, each only once its server proved it holds
    the home's token, and only with the home's id: without one (no server of this home ever ran) nothing is
    sent anywhere."""
    if not s.home_id:
        return None
    for port in s.candidates():
        if not trusted(s, port) and not proves_ours(s, port, deadline):
            log(s.home, f"{event}: whatever listens on port {port} did not prove it is this home's server; "
                        "nothing sent to it")
            continue
        try:
            status, body = http(port, "POST", f"/hooks/{event}", data, s.token, deadline, s.home_id)
        except ServerDown:
            continue
        if status in (401, 421):
            log(s.home, f"{event}: the server on port {port} is not this home's (HTTP {status}); using our own")
            continue
        s.port = port
        return status, body
    return None


def run(event: str, data: bytes, s: Settings, t0: float) -> bytes:
    """Forward one payload; returns what to print (possibly nothing)."""
    budget_ms = event_deadline_ms(event, s.deadline_ms)
    deadline = t0 + budget_ms / 1000.0
    if s.api_url:
        from memcli.hooks.team_client import (
            run_team,  # team mode only: not parsed by a local hook
        )

        return run_team(event, data, s, deadline)
    try:
        answer = _ask_own_server(event, data, s, deadline)
        if answer is None:
            # No server of this home answers: start it. A free MEMCLI_PORT is where it is expected.
            port = None if s.env_port is None else 0 if port_taken(s.env_port) else s.env_port
            if event == "Stop":
                spool(s.home, data)
                start_server(s, port)
                log(s.home, "Stop: no server of this home; turn spooled, server started")
                return b""
            if event == "SessionEnd":
                if spool_pending(s.home):
                    start_server(s, port)
                return b""
            start_server(s, port)
            own = wait_own_server(s, deadline)
            if own is None:
                log(s.home, f"{event}: no server of this home yet; started it, nothing injected this time")
                return b""
            answer = http(own, "POST", f"/hooks/{event}", data, s.token, deadline, s.home_id)
        status, body = answer
    except (Timeout, ServerDown, OSError) as exc:
        if event == "Stop":
            spool(s.home, data)  # the server may still finish it: captures are idempotent
            log(s.home, f"Stop: no answer ({type(exc).__name__}: {exc}); turn spooled")
        else:
            log(s.home, f"{event}: no answer within {budget_ms} ms ({type(exc).__name__}: {exc})")
        return b""
    if status == 200 and body.lstrip()[:1] == b"{" and (b'"hookSpecificOutput"' in body or b'"systemMessage"' in body):
        return body
    if status not in (200, 202, 204):
        log(s.home, f"{event}: server answered HTTP {status}: {body[:200]!r}")
        if event == "Stop" and status != 400:
            spool(s.home, data)
    return b""


def main(argv: list[str] | None = None) -> None:
    """Entry point: always exits 0."""
    t0 = time.monotonic()
    argv = sys.argv if argv is None else argv
    home = None
    out = b""
    try:
        os.umask(0o077)  # the spool, logs and a server started from here are this user's alone
        s = resolve_settings()
        home = s.home
        event = argv[1] if len(argv) > 1 else ""
        if event in ("Stop", "SessionEnd"):
            # Claude Code signals async hooks when it exits (the last turn of `claude -p`, a session's end):
            # finish queueing the turn anyway. `_signal` is built in: no import cost.
            import _signal

            for sig in (_signal.SIGTERM, _signal.SIGHUP, _signal.SIGINT):
                _signal.signal(sig, _signal.SIG_IGN)
        if event not in EVENTS:
            log(home, f"unknown hook event {event!r}; expected one of {', '.join(EVENTS)}")
        else:
            data = b"" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read(MAX_STDIN + 1)
            if not data.strip()[:1] == b"{" or len(data) > MAX_STDIN:
                log(home, f"{event}: stdin is not a JSON object ({len(data)} bytes); nothing done")
            else:
                out = run(event, data, s, t0)
    except BaseException as exc:  # noqa: BLE001 - fail open, always
        try:
            log(home or resolve_home(), f"hook failed: {type(exc).__name__}: {exc}")
        except BaseException:  # noqa: BLE001
            pass
        out = b""
    try:
        if out:
            sys.stdout.buffer.write(out.rstrip(b"\n") + b"\n")
        sys.stdout.flush()
    except BaseException:  # noqa: BLE001
        pass
    os._exit(0)


if __name__ == "__main__":  # `python -S <path>/client.py <Event>`: the launcher's fast path
    main()
