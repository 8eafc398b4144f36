"""Secrets never reach the store: redact keys, tokens, passwords, private keys and ``<private>`` blocks.

The core applies it on every write path (:class:`memcli.service.MemoryService`: remember, batches, update,
import — so the CLI, REST, MCP, sync and the hooks all get it) unless a call opts out explicitly
(``keep_secrets``, recorded in the audit log); the hooks also apply it to a turn before it is summarised or
sent to an optional LLM, and to every payload before it is queued on disk (:func:`clean_payload_bytes`).

Patterns are deliberately broad where a secret has a recognisable shape (a vendor prefix, a header, an
assignment, a PEM block), and careful where it has none: a bare 40-character key (AWS's secret access key)
is redacted only when it looks random (mixed case, high entropy, not a CamelCase word or a path), and a
value in prose ("the password is hunter2") only when it looks like a password (letters and digits or
symbols), so git SHAs, UUIDs, hashes, paths and identifiers in memories stay as they are
(``python bench/redact.py`` measures both).

Standard library only: the hook client (a plain ``python -I -S`` script) imports it before it spools a turn.

``openclaw/lib/redact.js`` mirrors this module for the OpenClaw plugin (which redacts a turn before it spools
it): a change here must be ported there. ``tests/js/redact.test.mjs`` (run by tests/test_openclaw_plugin.py)
keeps them equal: the patterns' text, and the output on every case of bench/data/redact_cases.json and on
ordinary and generated texts.
"""

from __future__ import annotations

import math
import re
from typing import Any

_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
_PEM = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY"
                  r"(?: BLOCK)?-----|\Z)", re.DOTALL)

# (label, pattern) — the whole match is replaced. Vendor formats: each has a fixed prefix or shape.
_TOKENS: list[tuple[str, re.Pattern[str]]] = [
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}")),
    ("api-key", re.compile(r"\bsk-(?:proj-|live-|test-|admin-|svcacct-)?[A-Za-z0-9_\-]{16,}")),
    ("stripe-key", re.compile(r"\b(?:sk|rk|pk|whsec)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("stripe-key", re.compile(r"\bwhsec_[A-Za-z0-9]{24,}")),
    ("aws-key-id", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b")),
    ("github-token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}")),
    ("gitlab-token", re.compile(r"\bgl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt|agent)-[A-Za-z0-9_\-]{20,}")),
    ("slack-token", re.compile(r"\bxox[abposre]-[A-Za-z0-9\-]{10,}")),
    ("slack-token", re.compile(r"\bxapp-\d-[A-Za-z0-9\-]{10,}")),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+")),
    ("discord-webhook", re.compile(r"https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+")),
    ("google-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("google-oauth", re.compile(r"\bGOCSPX-[A-Za-z0-9_\-]{20,}")),
    ("google-oauth", re.compile(r"\bya29\.[0-9A-Za-z_\-]{20,}")),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("pypi-token", re.compile(r"\bpypi-AgE[A-Za-z0-9_\-]{40,}")),
    ("hf-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("sendgrid-key", re.compile(r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}")),
    ("mailgun-key", re.compile(r"\bkey-[0-9a-f]{32}\b")),
    ("twilio-key", re.compile(r"\bSK[0-9a-f]{32}\b")),
    ("shopify-token", re.compile(r"\bshp(?:at|ca|pa|ss)_[A-Fa-f0-9]{32}\b")),
    ("digitalocean-token", re.compile(r"\bdo[por]_v1_[a-f0-9]{64}\b")),
    ("databricks-token", re.compile(r"\bdapi[0-9a-f]{32}(?:-\d)?\b")),
    ("telegram-token", re.compile(r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b")),
    ("discord-token", re.compile(r"\b[MNO][A-Za-z\d_\-]{23,25}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,38}\b")),
    ("linear-key", re.compile(r"\blin_(?:api|oauth)_[A-Za-z0-9]{32,}\b")),
    ("notion-token", re.compile(r"\b(?:secret|ntn)_[A-Za-z0-9]{43,}\b")),
    ("vault-token", re.compile(r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}")),
    ("doppler-token", re.compile(r"\bdp\.(?:st|sa|ct|pt|scim|audit)\.[A-Za-z0-9_\-.]{30,}")),
    ("age-key", re.compile(r"\bAGE-SECRET-KEY-1[0-9A-Z]{50,}\b")),
    ("llm-key", re.compile(r"\b(?:gsk_[A-Za-z0-9]{40,}|r8_[A-Za-z0-9]{30,}|pplx-[A-Za-z0-9]{40,}"
                           r"|xai-[A-Za-z0-9]{40,}|AIzaSy[0-9A-Za-z_\-]{33})\b")),
    ("square-token", re.compile(r"\bsq0(?:atp|csp|idp)-[A-Za-z0-9_\-]{22,}|\bEAAA[A-Za-z0-9_\-]{56,}")),
    ("atlassian-token", re.compile(r"\bATATT3[A-Za-z0-9_\-=]{60,}")),
    ("memcli-token", re.compile(r"\bmnemo_[A-Za-z0-9_\-]{24,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
]
_BEARER = re.compile(r"(?i)\b(bearer|token|basic)(\s+)([A-Za-z0-9._~+/=\-]{16,})")
_AUTH_HEADER = re.compile(r"(?i)\b(authorization|x-api-key|api-key|x-auth-token)(\s*[:=]\s*)([\"']?)([^\s\"',;]+(?:\s+[^\s\"',;]+)?)")
# Keys are matched from where they start (no earlier word character, dot or dash): a start inside a key
# finds nothing a start at its beginning would not, and every start scans the rest of its key, so one long
# dotted word ("a.a.a.…", 32,000 characters) cost minutes without the lookbehind.
_ASSIGN = re.compile(
    r"(?i)((?<![\w.\-])[\"']?[\w.\-]*?(?:password|passwd|passphrase|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|"
    r"private[_\-]?key|secret[_\-]?key|client[_\-]?secret|auth[_\-]?token|credentials?|account[_\-]?key|"
    r"shared[_\-]?access[_\-]?key|signing[_\-]?key|encryption[_\-]?key)\b[\"']?)(\s*(?:=|:|=>)\s*)"
    r"([\"']?)([^\s\"',;}{)]{4,})(\3)")
_WORDS = frozenset("""none null true false required optional str string int bool bytes the this that these those
from with your our their which what will would should must can could is are was were be been being empty
missing stored set unset env environment variable variables field value values here there below above
config configured see same new old default example placeholder redacted hidden""".split())
_URL_PASSWORD = re.compile(r"(?<![a-zA-Z0-9+.\-])([a-zA-Z][a-zA-Z0-9+.\-]*://[^:/@\s]+:)([^@\s/]+)(@)")
_CLI_PASSWORD = re.compile(r"(?<![\w-])(--?(?:password|passwd|token|secret|api-key|apikey)(?:=|\s+))([^\s\"']+)",
                           re.IGNORECASE)
# "the password is hunter2", "set the API token to 9f…": a secret named in prose, without `=` or `:`
_PROSE = re.compile(
    r"(?i)\b((?:password|passphrase|passwd|secret(?:[ _\-](?:access[ _\-])?key)?|api[ _\-]?key|access[ _\-]key|"
    r"private[ _\-]key|(?:auth|access|api|bearer|bot|refresh)[ _\-]token|token|credentials?)"
    r"\s+(?:is|was|are|were|is\s+now|became|to|of)\s+)([`'\"]?)([^\s`'\",;]{6,})")
_VERSION = re.compile(r"v?\d+(?:\.\d+)+[\w.\-]*")
# the same strings with one way to match them (_VERSION's fullmatch is quadratic on "1.1.1.…#")
_VERSION_LINEAR = re.compile(r"v?\d+\.\d[\w.\-]*")
_HYPHENED_WORDS = re.compile(r"[a-z]+\d*(?:-[a-z]+\d*)+")
# A bare 40-character key in the base64 alphabet (AWS's secret access key has no prefix at all).
_BARE40 = re.compile(r"(?<![A-Za-z0-9/+=_\-.])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=_\-])")
# words, acronyms and numbers, the last one perhaps cut short: CamelCase names, paths
# (the language of a word-like part; matched by _wordlike, which never backtracks: this pattern's fullmatch takes
# hours on a 40-character part such as "1111…1aB")
_WORDLIKE = re.compile(r"(?:[A-Z]?[a-z]{2,}|[A-Z]{2,6}(?![a-z])|\d+)*[A-Z]?[a-z]?")
_SURROGATE = re.compile("[\ud800-\udfff]")

# Fields of a hook payload that are identifiers, never prose: kept as they are (a path, a session id).
PAYLOAD_IDS = frozenset({"session_id", "transcript_path", "cwd", "hook_event_name", "agent_id", "agent_type",
                         "source", "reason", "trigger", "permission_mode", "stop_hook_active", "_memcli_caller"})


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
    text = _PROSE.sub(_prose, text)
    text = _BARE40.sub(lambda m: "[REDACTED:secret-key]" if looks_random(m.group(1)) else m.group(0), text)
    return text


def contains_secret(text: str) -> bool:
    """Whether :func:`redact` would change ``text``."""
    return redact(text) != text


def _wordlike(part: str) -> bool:
    """``_WORDLIKE.fullmatch(part)`` without backtracking: the positions its starred group can reach, then
    whether ``[A-Z]?[a-z]?`` ends the part from one of them (openclaw/lib/redact.js does the same)."""
    n = len(part)

    def up(k: int) -> bool:
        return k < n and "A" <= part[k] <= "Z"

    def low(k: int) -> bool:
        return k < n and "a" <= part[k] <= "z"

    def digit(k: int) -> bool:
        return k < n and part[k].isdigit() and part[k].isascii()

    reach = [False] * (n + 1)
    reach[0] = True
    for i in range(n + 1):
        if not reach[i]:
            continue
        for start in ((i, i + 1) if up(i) else (i,)):  # [A-Z]?[a-z]{2,}
            j = start
            while low(j):
                j += 1
                if j - start >= 2:
                    reach[j] = True
        j = i + 1  # [A-Z]{2,6}(?![a-z])
        while j <= i + 6 and up(j - 1):
            if j - i >= 2 and not low(j):
                reach[j] = True
            j += 1
        j = i  # \d+
        while digit(j):
            reach[j + 1] = True
            j += 1
    for i in range(n + 1):
        if reach[i]:
            j = i + (1 if up(i) else 0)  # [A-Z]?[a-z]? to the end (the longest way is enough)
            j += 1 if low(j) else 0
            if j == n:
                return True
    return False


def looks_random(token: str) -> bool:
    """A key rather than a word, a path or a hash: mixed case, close to random (≥ 4.3 bits a character;
    40 random base64 characters have ~4.6, a CamelCase path ~4.2), and not made of words."""
    if not (any(c.islower() for c in token) and any(c.isupper() for c in token)):
        return False  # hex digests, SHAs, all-caps constants
    if all(_wordlike(part) for part in re.split(r"[/+]", token) if part):
        return False  # src/Components/Header, ComponentsHeaderButton2
    counts: dict[str, int] = {}
    for c in token:
        counts[c] = counts.get(c, 0) + 1
    entropy = -sum(n / len(token) * math.log2(n / len(token)) for n in counts.values())
    return entropy >= 4.3


def _keep(m: re.Match[str], quote_group: int, label: str) -> str:
    value = m.group(quote_group + 1)
    if value.startswith("[REDACTED") or value.lower() in ("none", "null", "true", "false"):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{m.group(quote_group)}[REDACTED:{label}]"


def _assign(m: re.Match[str]) -> str:
    value = m.group(4)
    if value.startswith(("[REDACTED", "[private")) or value.lower().strip(".:") in _WORDS:
        return m.group(0)
    # `password = os.environ…` (read from the environment) or `token: str` are code, not secrets
    if value.startswith(("os.", "env.", "process.env", "${", "$", "getenv", "<", "input(")) or value.endswith("("):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{m.group(3)}[REDACTED:secret]{m.group(5)}"


def _prose(m: re.Match[str]) -> str:
    value = m.group(3).rstrip(".!?)]:") if not m.group(2) else m.group(3)
    if not _password_like(value):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}[REDACTED:secret]{m.group(3)[len(value):]}"


def _password_like(value: str) -> bool:
    """A value named a password or a key in prose that looks like one: letters with digits or symbols, not a
    word, a version, a path, a URL, a placeholder or a few hyphened words."""
    if len(value) < 6 or value.startswith(("[REDACTED", "[private", "/", "~", "./", "$", "<", "{", "%")):
        return False
    if "://" in value or value.lower() in _WORDS or _VERSION_LINEAR.fullmatch(value) or _HYPHENED_WORDS.fullmatch(value):
        return False
    letters = sum(c.isalpha() for c in value)
    others = len(value) - letters
    return letters > 0 and others > 0


def fix_surrogates(text: str) -> str:
    """Lone surrogates (``\\ud800``: broken UTF-16 or JSON escapes) replaced by U+FFFD, the rest kept."""
    return _SURROGATE.sub("\ufffd", text)


def redact_value(value: Any) -> Any:
    """A JSON value (metadata) with every string in it redacted; keys and other types as they are."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    return value


def clean_payload(value: Any, redact_text: bool = True) -> Any:
    """A hook payload fit to keep: lone surrogates replaced (the turn is kept, not refused) and every text
    field redacted (ids and paths, :data:`PAYLOAD_IDS`, are only repaired)."""
    if isinstance(value, str):
        fixed = fix_surrogates(value)
        return redact(fixed) if redact_text else fixed
    if isinstance(value, dict):
        return {fix_surrogates(str(k)): clean_payload(v, redact_text and str(k) not in PAYLOAD_IDS)
                for k, v in value.items()}
    if isinstance(value, list):
        return [clean_payload(v, redact_text) for v in value]
    return value


def clean_payload_bytes(data: bytes) -> bytes:
    """:func:`clean_payload` of a JSON payload as it came from Claude Code (what the hook client queues on
    disk); bytes that are not JSON are redacted as text."""
    import json

    try:
        payload = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return redact(data.decode("utf-8", "replace")).encode("utf-8")
    return json.dumps(clean_payload(payload), ensure_ascii=False).encode("utf-8")
