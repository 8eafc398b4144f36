"""Secrets never reach the store: redact keys, tokens, passwords, private keys and ``<private>`` blocks.

The core applies it on every write path (:class:`memcli.memory.service.MemoryService`: remember, batches, the key's
upsert, update, import — so the CLI, REST, MCP, sync and the hooks all get it) to every stored string field
(:func:`redact_fields`: content and context as text; tags, key, project and thread as labels; metadata keys
as labels and values as text), so the audit log's diffs hold no secret either, unless a call opts out
explicitly (``keep_secrets``, recorded in the audit log); the hooks also apply it to a turn before it is
summarised or sent to an optional LLM, and to every payload before it is queued on disk
(:func:`clean_payload_bytes`).

Patterns are deliberately broad where a secret has a recognisable shape (a vendor prefix, a header, an
assignment, a PEM block, a pgpass line, a docker config's ``auth``, ``curl -u``/``mysql -p`` on those
commands' lines, 密码是 … in Chinese; a zero-width character inside a token does not hide it), and careful
where it has none: a bare 40-character key (AWS's secret access key) is redacted only when it looks random
(mixed case, high entropy, not a CamelCase word or a path), and a value in prose ("the password is hunter2")
only when it looks like a password (letters and digits or symbols), so git SHAs, UUIDs, hashes, paths and
identifiers in memories stay as they are (``python bench/redact.py`` measures both). A label's ``name:word``
path (a tag ``api-key:stripe``) is a name, not an assignment (:func:`redact_label`).

Standard library only: the hook client (a plain ``python -I -S`` script) imports it before it spools a turn.

``openclaw/lib/redact.js`` mirrors :func:`redact` for the OpenClaw plugin (which redacts a turn before it
spools it; labels and metadata are redacted by the core only: the plugin spools turns, never a memory's
fields): a change here must be ported there. ``tests/js/redact.test.mjs`` (run by tests/test_openclaw_plugin.py)
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
# the names of a secret (an assignment's key; a metadata key, :func:`redact_metadata`)
_SECRET_NAMES = (r"(?:password|passwd|passphrase|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|"
                 r"private[_\-]?key|secret[_\-]?key|client[_\-]?secret|auth[_\-]?token|credentials?|account[_\-]?key|"
                 r"shared[_\-]?access[_\-]?key|signing[_\-]?key|encryption[_\-]?key)")
_ASSIGN = re.compile(
    r"(?i)((?<![\w.\-])[\"']?[\w.\-]*?" + _SECRET_NAMES + r"\b[\"']?)(\s*(?:=|:|=>)\s*)"
    r"([\"']?)([^\s\"',;}{)]{4,})(\3)")
_SECRET_NAME = re.compile(r"(?i)[\w.\-]*?" + _SECRET_NAMES)  # always fullmatch: a key that names a secret
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
# A password after a flag that holds one only on some commands' lines: `curl -u user:PASS` (`--user`, and the
# proxy's `-U`), `mysql -pPASS` (the MySQL/MariaDB clients; `-p` alone makes them ask). A line is cut into
# commands at `|`, `;` and `&`, and only the flags after the command's name count (`docker run -u 1000:1000`,
# `mkdir -p dir` stay). The user part is bounded: "x.-ux.-ux.-u…" has one start per "-u" in one long word.
_SEGMENT = re.compile(r"[^\n|;&]+")
_CURL = re.compile(r"\bcurl\b")
_CURL_USER = re.compile(r"(?<![\w-])(-u\s*|-U\s*|--user(?:\s+|=)|--proxy-user(?:\s+|=))([\"']?)([^\s:\"'@]{1,128}:)"
                        r"([^\s\"']+)")
_MYSQL = re.compile(r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|mysqlsh|mariadb|"
                    r"mariadb-dump|mariadb-admin)\b")
_MYSQL_PASSWORD = re.compile(r"(?<![\w-])(-p)([\"']?)([^\s\"'\-][^\s\"']*)")
# A docker config's `"auth": "<base64 of user:password>"` (only when it decodes to one: "auth": "required" stays)
_DOCKER_AUTH = re.compile(r"(?i)((?<![\w.\-])[\"']?auth[\"']?\s*[:=]\s*)([\"']?)([A-Za-z0-9+/]{4,}={0,2})"
                          r"(?![A-Za-z0-9+/=])")
_USER_PASSWORD = re.compile(r"[^\x00-\x1f\x7f:]+:[^\x00-\x1f\x7f]*")  # always fullmatch
# A pgpass line, `host:port:database:user:password` (`\:` escapes a colon); checked by _pgpass so that
# times, IPv6 addresses and compiler positions stay (a database and a user have a letter, a port is a port).
_PGPASS = re.compile(r"(?<![\w.\-*:\\/])((?:[\w.\-]+|\*):([0-9]{1,5}|\*):((?:\\.|[^\s:\\])+):((?:\\.|[^\s:\\])+):)"
                     r"((?:\\.|[^\s:\\])+)(?=\s|\Z)")
# A password stated in Chinese prose: 数据库密码是 Xk9…, 密码：…, 令牌为 … (a value that looks like one, as _PROSE)
_CJK_PROSE = re.compile(r"((?:密码|密碼|口令|密钥|密鑰|秘钥|私钥|私鑰|令牌)\s*(?:(?:是|为|為|设为|设置为|設為|改为|改成|改為)"
                        r"(?:\s*[：:])?|[：:=])\s*)([`'\"“「]?)([A-Za-z0-9!#$%&()*+\-./:<=>?@\[\]^_{|}~]{6,})")
# Invisible characters (zero-width space/joiners, word joiner, BOM, soft hyphen) between two characters of a
# token hide it from every pattern: redact() drops them there when that reveals a secret. Elsewhere (CJK text,
# emoji sequences, Persian) they stay.
_ZERO_WIDTH = re.compile("(?<=[A-Za-z0-9_+/=.\\-])[\u00ad\u180e\u200b-\u200d\u2060-\u2064\ufeff]+"
                         "(?=[A-Za-z0-9_+/=.\\-])")
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
    return _redact(text, label=False)


def redact_label(text: str) -> str:
    """A tag, key, project, thread or metadata key redacted: as :func:`redact`, except that a ``name:word``
    path stays (``api-key:stripe``, ``token:rotation``: in a label a colon separates names). A value with
    digits or symbols after the colon (``password:hunter2x``), one after ``=``, and every token are redacted."""
    return _redact(text, label=True)


def _redact(text: str, label: bool) -> str:
    if not text:
        return text
    out = _patterns(text, label)
    joined = _ZERO_WIDTH.sub("", out)
    if joined != out:  # a token with invisible characters inside: redacted without them if they hid it
        again = _patterns(joined, label)
        if again != joined:
            return again
    return out


def _patterns(text: str, label: bool) -> str:
    text = _PRIVATE.sub("[private]", text)
    text = _PEM.sub("[REDACTED:private-key]", text)
    for kind, pat in _TOKENS:
        text = pat.sub(f"[REDACTED:{kind}]", text)
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}[REDACTED:password]{m.group(3)}", text)
    text = _AUTH_HEADER.sub(lambda m: _keep(m, 3, "credential", label), text)
    text = _BEARER.sub(lambda m: m.group(0) if m.group(3).startswith("[REDACTED") else
                       f"{m.group(1)}{m.group(2)}[REDACTED:token]", text)
    text = _CLI_PASSWORD.sub(lambda m: m.group(0) if m.group(2).startswith("[REDACTED") else
                             f"{m.group(1)}[REDACTED:password]", text)
    if _CURL.search(text) or _MYSQL.search(text):
        text = _SEGMENT.sub(_command, text)
    text = _DOCKER_AUTH.sub(_docker_auth, text)
    text = _PGPASS.sub(_pgpass, text)
    text = _ASSIGN.sub(lambda m: _assign(m, label), text)
    text = _PROSE.sub(_prose, text)
    text = _CJK_PROSE.sub(_prose, text)
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


# a label's `name:word` path (api-key:stripe, secret:rotation/vault): names, no digits or symbols
_NAME_PATH = re.compile(r"[^\W\d_]+(?:[\-_./][^\W\d_]+)*")  # always fullmatch


def _name_path(m: re.Match[str], sep: int, value: str) -> bool:
    return m.group(sep) == ":" and bool(_NAME_PATH.fullmatch(value))


def _keep(m: re.Match[str], quote_group: int, kind: str, label: bool = False) -> str:
    value = m.group(quote_group + 1)
    if value.startswith("[REDACTED") or value.lower() in ("none", "null", "true", "false"):
        return m.group(0)
    if label and _name_path(m, 2, value):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{m.group(quote_group)}[REDACTED:{kind}]"


def _placeholder(value: str) -> bool:
    """A value named a secret that is not one: a marker, a placeholder word, or code that reads the secret
    (`password = os.environ…`, `token: str`)."""
    if value.startswith(("[REDACTED", "[private")) or value.lower().strip(".:") in _WORDS:
        return True
    return value.startswith(("os.", "env.", "process.env", "${", "$", "getenv", "<", "input(")) or value.endswith("(")


def _assign(m: re.Match[str], label: bool = False) -> str:
    value = m.group(4)
    if _placeholder(value) or (label and _name_path(m, 2, value)):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{m.group(3)}[REDACTED:secret]{m.group(5)}"


def _flag_value(value: str) -> bool:
    """A command-line flag's value that is a password, not a reference to one ($PASS, %PASS%, <password>)."""
    return not value.startswith(("[REDACTED", "[private", "$", "%", "<"))


def _command(m: re.Match[str]) -> str:
    """One command of a line: the password flags of curl and the MySQL clients after their name redacted."""
    seg = m.group(0)
    for name, flag, repl in ((_CURL, _CURL_USER, _curl_user), (_MYSQL, _MYSQL_PASSWORD, _mysql_password)):
        found = name.search(seg)
        if found:
            seg = seg[:found.end()] + flag.sub(repl, seg[found.end():])
    return seg


def _curl_user(m: re.Match[str]) -> str:
    if not _flag_value(m.group(4)):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{m.group(3)}[REDACTED:password]"


def _mysql_password(m: re.Match[str]) -> str:
    if not _flag_value(m.group(3)):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}[REDACTED:password]"


def _docker_auth(m: re.Match[str]) -> str:
    import base64  # only when a text has an `auth` field

    value = m.group(3)
    if len(value) % 4:
        return m.group(0)
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return m.group(0)
    if not _USER_PASSWORD.fullmatch(decoded):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}[REDACTED:credential]"


def _pgpass(m: re.Match[str]) -> str:
    port, db, user, password = m.group(2), m.group(3), m.group(4), m.group(5)
    if port != "*" and int(port) > 65535:
        return m.group(0)
    if not all(f == "*" or any(c.isalpha() for c in f) for f in (db, user)):
        return m.group(0)  # 10:15:30:45:00, fe80:1:2:3:4
    if password.isdecimal() or password == "*" or not _flag_value(password):
        return m.group(0)
    return f"{m.group(1)}[REDACTED:password]"


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


# A memory's stored string fields and how each is redacted (redact_fields): text, labels, lists of them, metadata.
STORED_FIELDS = ("content", "context", "tags", "key", "project", "thread", "metadata")


def redact_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """A memory's fields (named as :class:`memcli.models.Memory` and the store's update values name them)
    with every stored string redacted as its field needs: content and context as text; tags, key, project
    and thread as labels (:func:`redact_label`); metadata by :func:`redact_metadata`. Other fields, and
    None, as they are. Every write of a memory goes through it, so its audit diff holds no secret either."""
    out = dict(fields)
    for name, value in fields.items():
        if value is None or name not in STORED_FIELDS:
            continue
        if name == "content":
            out[name] = redact(value)
        elif name == "context":
            out[name] = [redact(v) for v in value]
        elif name == "tags":  # two tags with different secrets are one tag now
            out[name] = list(dict.fromkeys(redact_label(v) for v in value))
        elif name == "metadata":
            out[name] = redact_metadata(value)
        else:
            out[name] = redact_label(value)
    return out


def redact_metadata(value: Any) -> Any:
    """A JSON value (metadata) with its secrets redacted: every string as text, every key as a label, and a
    string under a key that names a secret (``db_password``, ``apiKey``, ``client_secret``) as a whole, unless
    it is a placeholder. Two keys that redact alike are kept apart (``… (2)``); other types as they are."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_metadata(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for k, v in value.items():
        key = redact_label(k) if isinstance(k, str) else k
        n = 1
        while key in out:  # {"ghp_…a": 1, "ghp_…b": 2}: both values kept
            n += 1
            key = f"{redact_label(k)} ({n})"
        named = isinstance(k, str) and isinstance(v, str) and _SECRET_NAME.fullmatch(k)
        out[key] = "[REDACTED:secret]" if named and len(v.strip()) >= 4 and not _placeholder(v.strip()) \
            else redact_metadata(v)
    return out


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
