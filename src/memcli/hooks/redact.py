"""Secrets never reach the store: redact keys, tokens, passwords, private keys and ``<private>`` blocks.

Applied to every captured turn before it is summarised (and before anything is sent to an optional LLM).
Patterns are deliberately broad: a redacted non-secret costs little, a stored secret is shared with every
agent and every teammate on the store.
"""

from __future__ import annotations

import re

_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
_PEM = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY"
                  r"(?: BLOCK)?-----|\Z)", re.DOTALL)

# (label, pattern) — the whole match is replaced
_TOKENS: list[tuple[str, re.Pattern[str]]] = [
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}")),
    ("api-key", re.compile(r"\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_\-]{16,}")),
    ("stripe-key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("aws-key-id", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b")),
    ("github-token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}")),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+")),
    ("google-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("hf-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
]
_BEARER = re.compile(r"(?i)\b(bearer|token|basic)(\s+)([A-Za-z0-9._~+/=\-]{16,})")
_AUTH_HEADER = re.compile(r"(?i)\b(authorization|x-api-key|api-key|x-auth-token)(\s*[:=]\s*)([\"']?)([^\s\"',;]+(?:\s+[^\s\"',;]+)?)")
_ASSIGN = re.compile(
    r"(?i)([\"']?\b[\w.\-]*?(?:password|passwd|passphrase|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|"
    r"private[_\-]?key|secret[_\-]?key|client[_\-]?secret|auth[_\-]?token|credentials?)\b[\"']?)(\s*(?:=|:|=>)\s*)"
    r"([\"']?)([^\s\"',;}{)]{4,})(\3)")
_WORDS = frozenset("""none null true false required optional str string int bool bytes the this that these those
from with your our their which what will would should must can could is are was were be been being empty
missing stored set unset env environment variable variables field value values here there below above
config configured see same new old default example placeholder redacted hidden""".split())
_URL_PASSWORD = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.\-]*://[^:/@\s]+:)([^@\s/]+)(@)")
_CLI_PASSWORD = re.compile(r"(?<![\w-])(--?(?:password|passwd|token|secret|api-key|apikey)(?:=|\s+))([^\s\"']+)",
                           re.IGNORECASE)


def redact(text: str) -> str:
    """Return ``text`` with every secret it recognises replaced by ``[REDACTED:<kind>]``."""
    if not text:
        return text
    text = _PRIVATE.sub("[private]", text)
    text = _PEM.sub("[REDACTED:private-key]", text)
    for label, pat in _TOKENS:
        text = pat.sub(f"[REDACTED:{label}]", text)
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}[REDACTED:password]{m.group(3)}", text)
    text = _AUTH_HEADER.sub(lambda m: _keep(m, 3, "credential"), text)
    text = _BEARER.sub(lambda m: m.group(0) if m.group(3).startswith("[REDACTED") else
                       f"{m.group(1)}{m.group(2)}[REDACTED:token]", text)
    text = _CLI_PASSWORD.sub(lambda m: m.group(0) if m.group(2).startswith("[REDACTED") else
                             f"{m.group(1)}[REDACTED:password]", text)
    text = _ASSIGN.sub(_assign, text)
    return text


def _keep(m: re.Match[str], quote_group: int, label: str) -> str:
    value = m.group(quote_group + 1)
    if value.startswith("[REDACTED") or value.lower() in ("none", "null", "true", "false"):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{m.group(quote_group)}[REDACTED:{label}]"


def _assign(m: re.Match[str]) -> str:
    value = m.group(4)
    if value.startswith(("[REDACTED", "[private")) or value.lower().strip(".:") in _WORDS:
        return m.group(0)
    # `password = os.environ["X"]` or `token: str` are code, not secrets
    if value.startswith(("os.", "env.", "process.env", "${", "$", "getenv", "<", "input(")) or value.endswith("("):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{m.group(3)}[REDACTED:secret]{m.group(5)}"


def contains_secret(text: str) -> bool:
    """Whether :func:`redact` would change ``text``."""
    return redact(text) != text
