"""How a memcli client knows it talks to its own home's server before it sends the token or a prompt.

The client sends a fresh nonce (``X-Memcli-Challenge``) to ``GET /health`` without its token; a server of the
home answers with an HMAC of the nonce and the port the request arrived on, keyed by the home's token. Only a
holder of the token can answer, and binding the port defeats a squatter that relays the challenge to the real
server on another port.

A proof is remembered for the server *process* that gave it (``<home>/hooks-state/verified``, written and read
by the hooks, the CLI and the OpenClaw plugin alike: :func:`verified_mark`), so the hot path stays one
request. The pid alone would not do: a server killed with ``kill -9`` leaves ``server.json`` behind, any later
process may get its pid, and whoever then listens on the old port — another OS user — would get the token and
the prompt. So the mark also holds what no later process can have: the start time the kernel keeps for the
process and the boot's id. Where the kernel does not say (no ``/proc``: not Linux) nothing is remembered and
every client proves the server before each request.

Standard library only (the hook client imports it), and cheap to import: hmac and hashlib (~3 ms) only when a
proof is computed.
"""

from __future__ import annotations

CHALLENGE_HEADER = "X-Memcli-Challenge"
VERIFIED = ("hooks-state", "verified")  # under the home: verified_mark() of the server process that last proved it
BOOT_ID = "/proc/sys/kernel/random/boot_id"


def valid_nonce(nonce: str) -> bool:
    """A challenge worth answering: 32..128 hex digits."""
    return 32 <= len(nonce) <= 128 and all(c in "0123456789abcdef" for c in nonce)


def server_proof(token: str, nonce: str, port: int) -> str:
    """What a server holding ``token`` answers to ``nonce`` on ``port`` (hex HMAC-SHA256)."""
    import hashlib
    import hmac

    msg = f"memcli-server-proof\n{nonce}\n{int(port)}".encode()
    return hmac.new(token.encode("utf-8"), msg, hashlib.sha256).hexdigest()


def proof_ok(token: str, nonce: str, port: int, proof: str) -> bool:
    """Does ``proof`` show that the server on ``port`` holds ``token``? (Constant-time comparison.)"""
    import hmac

    return hmac.compare_digest(server_proof(token, nonce, port).encode(), proof.encode("ascii", "replace"))


def process_identity(pid: int) -> str | None:
    """What tells the running process ``pid`` from every later process that gets the same pid: its start time
    (clock ticks after boot, field 22 of ``/proc/<pid>/stat``) and the boot's id. None when the kernel does not
    say (no /proc), or the process is gone or a zombie (killed but not yet reaped: its port is free for anyone)."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as fh:
            stat = fh.read()
        with open(BOOT_ID, "rb") as fh:
            boot = fh.read().strip()
    except (OSError, ValueError):
        return None
    # "pid (comm) state ppid …": comm may hold spaces and parentheses, so the fields start after the last ")";
    # there fields[0] is field 3 (the state) and fields[19] field 22 (the start time)
    fields = stat.rpartition(b")")[2].split()
    if len(fields) < 20 or fields[0] in (b"Z", b"X", b"x") or not fields[19].isdigit() or not boot:
        return None
    return f"{fields[19].decode()} {boot.decode('ascii', 'replace')}"


def verified_mark(port: int, pid: int | None) -> str | None:
    """What ``hooks-state/verified`` holds once the server process ``pid`` has proven on ``port`` that it is
    this home's: ``"<port> <pid> <start time> <boot id>"``; None when that process cannot be told from a later
    one (no pid, no /proc, gone): then nothing is remembered, or trusted."""
    if not pid or pid <= 0:
        return None
    ident = process_identity(pid)
    return None if ident is None else f"{int(port)} {int(pid)} {ident}"
