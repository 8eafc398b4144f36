"""What the prompt hook searches for: the prompt as the answer would be phrased.

A prompt is often long and noisy — pasted code, a stack trace, a log, instructions — while the memory that
answers it is a sentence or two. Searching with the whole of a very long prompt lets the noise decide; a prompt
of up to SHORT characters is searched as it is. A longer one is searched by what carries the question: its
question sentences (ending in "?"/"？", or asking with what/why/how/which… or 吗/什么/怎么/为什么/哪…), its
first and last lines of prose, and the identifiers it names (error codes, paths, flags, dotted names) — code and
log lines left out. Measured
with ``python bench/agentfacts.py --gate`` and the long prompts of ``bench/data/sessions`` (bench/README.md).
"""

from __future__ import annotations

import re

from memcli.hooks.text import clip
from memcli.textnorm import query_identifiers

# characters: a prompt this short is the query as it is. The pasted lines of a prompt of a few hundred characters
# are often what the answering memory shares (the error, the setting): on the 37 long later questions of
# bench/data/sessions (225–549 characters) the whole prompt found the answer for 29, the question sentences and
# identifiers for 22 (bench/README.md); it costs ~75 ms more to embed (128 tokens instead of 66, p50)
SHORT = 600
MAX_QUERY = 600
_SPLIT = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_QUESTION_EN = re.compile(r"^\s*(?:what|why|how|which|where|when|who|whose|is|are|was|were|do|does|did|can|could|"
                          r"should|would|will|have|has|any)\b", re.IGNORECASE)
_QUESTION_ZH = re.compile(r"吗|呢|什么|怎么|为什么|為什麼|哪|几|幾|多少|是否|如何|怎样|怎樣|有没有|有沒有|能不能|要不要")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
# a line of code, a stack frame or a log record, not prose
_NOISE = re.compile(r"^\s*(?:at |File \"|Traceback|\$ |>>> |[#/]{2}|[{}\[\]();]|\d{4}-\d\d-\d\d[ T]\d|\w+Error\b|"
                    r"[A-Z]+ \d{3}\b|(?:def|class|import|from|return|const|let|var|func|fn|public|private|if|for|"
                    r"while)\b)")


def _prose_lines(text: str) -> list[str]:
    lines = []
    for line in _FENCE.sub("\n", text).splitlines():
        s = line.strip()
        # an indented line is code or the rest of a trace/log record; prose starts at the margin
        if not s or _NOISE.match(line) or line[:1] in (" ", "\t"):
            continue
        symbols = sum(1 for c in s if not (c.isalnum() or c.isspace() or ord(c) > 0x2E7F))
        if symbols > max(6, len(s) // 5):  # mostly punctuation: code or a table
            continue
        lines.append(s)
    return lines


def _is_question(sentence: str) -> bool:
    s = sentence.strip()
    return s.endswith(("?", "？")) or bool(_QUESTION_EN.match(s)) or bool(_QUESTION_ZH.search(s))


def hook_query(prompt: str) -> str:
    """The text the prompt hook recalls with (see the module's docstring)."""
    text = prompt.strip()
    if len(text) <= SHORT:
        return text
    prose = _prose_lines(text)
    sentences = [s.strip() for line in prose for s in _SPLIT.split(line) if s.strip()]
    questions = [s for s in sentences if _is_question(s)]
    parts: list[str] = []
    for s in questions[-3:] + sentences[:1] + sentences[-1:]:
        if not any(s in p for p in parts):
            parts.append(s)
    idents = [i for i in dict.fromkeys(query_identifiers(text)) if not any(i in p for p in parts)][:8]
    query = " ".join(clip(p, 300) for p in parts)
    if idents:
        query += " " + " ".join(idents)
    return clip(query, MAX_QUERY) if query.strip() else clip(text, 2000)
