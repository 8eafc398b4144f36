"""Turn a (prompt, reply) pair into the text of one memory.

Default: extractive — no model, no network, deterministic (so a retried capture writes the same text and the
content hash de-duplicates it). The reply's code blocks, tables and tool chatter are dropped; its sentences
are scored (position, decision/fix/cause words, identifiers, overlap with the prompt) and the best are kept
in their original order within a budget.
"""

from __future__ import annotations

import re

from memcli.hooks.text import clip, one_line, prose

PROMPT_CHARS = 400
SUMMARY_CHARS = 1100

_FENCE_RE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_TABLE_RE = re.compile(r"^\s*\|.*\|\s*$", re.MULTILINE)
_SENT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[*_])|(?<=[。！？；])|\n+")
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-/]{2,}|[\u3400-\u9fff]{2,}")
_IDENT_RE = re.compile(r"`[^`]+`|\b[\w\-]+\.(?:py|js|ts|go|rs|md|toml|json|yaml|yml|sh|sql)\b|\b[A-Z]{2,}[0-9]+\b"
                       r"|\b\w+_\w+\b|\b[a-z]+[A-Z]\w*\b|--[a-z][\w\-]+")
_KEY_WORDS = re.compile(
    r"(?i)\b(decid\w*|chose|choose|use[sd]?|because|root cause|caus\w*|fix\w*|solv\w*|resolv\w*|workaround|"
    r"instead|must|never|always|should|don't|do not|prefer\w*|convention|note|important|remember|learn\w*|"
    r"turn(?:s|ed)? out|the (?:problem|issue|bug) (?:is|was)|error|fail\w*|broke\w*|require\w*|"
    r"configur\w*|migrat\w*|deprecat\w*|added|changed|removed|renamed|moved|created|updated|implement\w*)\b"
    r"|决定|原因|修复|解决|采用|必须|不要|注意|改为|问题")
_FILLER = re.compile(r"(?i)^(sure|certainly|of course|great|okay|ok|alright|absolutely|got it|found it|done|sorry|"
                     r"understood|noted|good (?:question|instinct|catch)|you're right|好的|当然|當然|找到了|好)[,!.:：，\s]")
# a sentence that only hands the turn back to the user (an offer, a question about what to do next)
_HANDBACK = re.compile(r"(?i)^(want me to|shall i|should i|do you want|let me know|next step|要不要|要我|需要我|"
                       r"你想|接下来|接下來)|\?$|？$")
# a list item's or heading's marker: "- ", "* ", "1. ", "2) ", "## ", "> " (not the "3.1" that starts a sentence)
_MARKER_RE = re.compile(r"^(?:[#>*\-•·]+\s*|\d{1,2}[.)]\s+)+")
_EMPHASIS_RE = re.compile(r"\*\*|__(?=\w)|(?<=\w)__")
_STOP = frozenset("the and for that this with from have has was were are you your our not but can will would "
                  "should what when where which how why into about there their then than them they its it's "
                  "let me i'll i've please could also just like some any all more most".split())


def _sentences(text: str) -> list[str]:
    text = _FENCE_RE.sub("\n", text)
    text = _TABLE_RE.sub("\n", text)
    text = _EMPHASIS_RE.sub("", text)  # markdown bold: its stars would be taken for list markers
    out = []
    for raw in _SENT_RE.split(text):
        s = _MARKER_RE.sub("", raw.strip()).strip()
        if len(s) < 12 and not re.search(r"[\u3400-\u9fff]{4,}", s):
            continue
        out.append(one_line(s))
    return out


def _terms(text: str) -> set[str]:
    return {w.lower() for w in _WORD_RE.findall(text) if w.lower() not in _STOP}


def extractive(prompt: str, reply: str, *, prompt_chars: int = PROMPT_CHARS,
               summary_chars: int = SUMMARY_CHARS) -> str:
    """``User: <prompt>\\nAssistant: <key sentences of the reply>`` — one memory's text.

    The prompt keeps what the user wrote (a preference is often stated there), not what they pasted (logs,
    stack traces, code); the reply keeps its sentences of substance, not its pleasantries or its offers."""
    prompt = one_line(prose(prompt) or prompt)
    sents = _sentences(reply)
    q = _terms(prompt)
    scored = []
    n = len(sents)
    for i, s in enumerate(sents):
        score = 0.0
        score += 1.2 if i == 0 else (0.6 if i == 1 else 0.0)
        score += 0.5 if i == n - 1 and n > 2 else 0.0
        score += 0.8 * min(2, len(_KEY_WORDS.findall(s)))
        score += 0.5 * min(3, len(_IDENT_RE.findall(s)))
        if q:
            score += 1.5 * len(q & _terms(s)) / max(3, len(q))
        if _HANDBACK.search(s):
            continue  # "Want me to…?", "接下来…": hands the turn back, nothing to remember
        if _FILLER.match(s):  # "Found it: …", "好的，…": the pleasantry goes, the rest stays
            s = _FILLER.sub("", s, count=1).lstrip(" :：,，.!！。")
            if len(s) < 8:
                continue
        if len(s) > 400:
            score -= 0.5
        scored.append((score, i, s))
    chosen: list[tuple[int, str]] = []
    used = 0
    for score, i, s in sorted(scored, key=lambda t: (-t[0], t[1])):
        piece = clip(s, 400)
        if used + len(piece) + 1 > summary_chars:
            continue
        chosen.append((i, piece))
        used += len(piece) + 1
    body = " ".join(s for _, s in sorted(chosen))
    if not body:
        body = clip(one_line(_FENCE_RE.sub(" ", reply)), summary_chars)
    parts = []
    if prompt:
        parts.append(f"User: {clip(prompt, prompt_chars)}")
    if body:
        parts.append(f"Assistant: {body}")
    return "\n".join(parts)
