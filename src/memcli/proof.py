"""How a memcli client knows it talks to its own home's server before it sends the token or a prompt.

The client sends a fresh nonce (``X-Memcli-Challenge``) to ``GET /health`` without its token; a server of the
home answers with an HMAC of the nonce and the port the request arrived on, keyed by the home's token. Only a
holder of the token can answer, and binding the port defeats a squatter that relays the challenge to the real
server on another port. Standard library only (the hook client imports it).
"""

from __future__ import annotations

import hashlib
import hmac

CHALLENGE_HEADER = "X-Memcli-Challenge"


def valid_nonce(nonce: str) -> bool:
    """A challenge worth answering: 32..128 hex digits."""
    return 32 <= len(nonce) <= 128 and all(c in "0123456789abcdef" for c in nonce)


def server_proof(token: str, nonce: str, port: int) -> str:
    """What a server holding ``token`` answers to ``nonce`` on ``port`` (hex HMAC-SHA256)."""
    msg = f"memcli-server-proof\n{nonce}\n{int(port)}".encode()
    return hmac.new(token.encode("utf-8"), msg, hashlib.sha256).hexdigest()


def proof_ok(token: str, nonce: str, port: int, proof: str) -> bool:
    """Does ``proof`` show that the server on ``port`` holds ``token``? (Constant-time comparison.)"""
    return hmac.compare_digest(server_proof(token, nonce, port).encode(), proof.encode("ascii", "replace"))
