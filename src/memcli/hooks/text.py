"""Text helpers shared by the hooks: the injected block's markers, trivial prompts, transcript fallback."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from memcli.hooks.transport import read_regular

BLOCK_TAG = "memcli-memories"
BLOCK_OPEN = f"<{BLOCK_TAG}"
BLOCK_CLOSE = f"</{BLOCK_TAG}>"

_BLOCK_RE = re.compile(rf"<{BLOCK_TAG}\b[^>]*>.*?(?:</{BLOCK_TAG}>|\Z)", re.DOTALL | re.IGNORECASE)
_REMINDER_RE = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL | re.IGNORECASE)
_HOOK_CTX_RE = re.compile(r"<user-prompt-submit-hook>.*?(?:</user-prompt-submit-hook>|\Z)", re.DOTALL | re.IGNORECASE)

# Prompts that carry no information to recall for, and turns not worth keeping.
TRIVIAL = frozenset("""
ok okay k kk okey yes y yep yeah yup sure no n nope nah continue cont go go on goon proceed next more
thanks thank you thanks! thx ty cool nice great good perfect awesome done lgtm sgtm right correct fine
do it go ahead keep going carry on please continue again retry try again yes please sounds good ok thanks
okay thanks thank you very much got it understood agreed approve approved ship it stop wait hmm hm
继续 好 好的 好吧 是 是的 对 对的 嗯 谢谢 多谢 可以 行 没问题 下一步 继续吧 好的谢谢 收到 明白 确定 同意 是的继续
はい 続けて ありがとう
""".split("\n"))
_TRIVIAL_WORDS = frozenset(w for line in TRIVIAL for w in line.split())
_PUNCT_RE = re.compile(r"[\s\W_]+", re.UNICODE)


def strip_injected(text: str) -> str:
    """Remove every block memcli (or Claude Code) injected: no feedback loop of memories into memories."""
    if not text:
        return ""
    text = _BLOCK_RE.sub(" ", text)
    text = _REMINDER_RE.sub(" ", text)
    text = _HOOK_CTX_RE.sub(" ", text)
    return text.strip()


def _fold(text: str) -> str:
    return _PUNCT_RE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def is_trivial(prompt: str | None) -> bool:
    """"ok", "continue", "yes please", "thanks!", "继续", "好的"… and anything without a word in it."""
    if not prompt:
        return True
    folded = _fold(prompt)
    if not folded:
        return True
    if folded in _TRIVIAL_WORDS or prompt.strip().casefold().rstrip("!.。！~ ") in TRIVIAL:
        return True
    words = folded.split()
    if len(words) <= 4 and all(w in _TRIVIAL_WORDS for w in words):
        return True
    # a lone short token ("1", "a", "b)") is a menu choice, not a question
    return len(folded) <= 2 and not any(unicodedata.category(c) == "Lo" for c in folded)


_FENCE_RE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_CJK_RE = re.compile(r"[\u3400-\u9fff]")
# the start of a line that was pasted, not written to a person: a timestamp, a stack frame, a table or box
# border, a log level, a shell prompt, a JSON object, a linter's location
_PASTED_RE = re.compile(r"^(\[?\d{4}-\d{2}-\d{2}|\d{2}:\d{2}:\d{2}|at |File \"|Traceback|[│├└┌┐╷╵|>+]|"
                        r"[EWIDFV]\s+[\w.]+:\s|(?:ERROR|WARN|WARNING|INFO|DEBUG|FATAL|TRACE|CRITICAL|PANIC)\b|\$ |#\d|"
                        r"\w+(?:\.\w+)*(?:Error|Exception)\b|-{3,}|={3,}|\{\"|L:\s|[\w@:~/.\-]+=?[$#>] )")


def prose(text: str) -> str:
    """The lines a person wrote: without code blocks and pasted logs, stack traces, tables or terminals."""
    out = []
    for line in _FENCE_RE.sub("\n", text or "").splitlines():
        s = line.strip()
        if not s or _PASTED_RE.match(s):
            continue
        if line[:2] in ("  ", "\t ", "\t\t") and not s[:2] in ("- ", "* ", "• "):
            continue  # indented: program output or code, not a sentence
        letters = sum(c.isalpha() for c in s)
        if letters < len(s) * 0.4 and not _CJK_RE.search(s):  # mostly digits and punctuation
            continue
        out.append(s)
    return "\n".join(out)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at a word boundary, with an ellipsis."""
    text = " ".join(text.split()) if "\n" not in text else text.strip()
    if len(text) <= limit:
        return text
    cut = text[: max(1, limit - 1)]
    sp = cut.rfind(" ")
    if sp > limit * 0.6:
        cut = cut[:sp]
    return cut.rstrip() + "…"


def one_line(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------- transcript fallback
def _text_of(content: Any) -> str:
    """The plain text of a message's content: a string, or the ``text`` blocks of a block list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return ""


def last_turn(transcript_path: str | None, *, max_bytes: int = 4_000_000) -> tuple[str, str]:
    """The last real user prompt and the assistant text after it, from a Claude Code transcript (JSONL).

    Tool results arrive as ``user`` lines of ``tool_result`` blocks and are not prompts; meta and sidechain
    lines are skipped; one reply can span several ``assistant`` lines. Reads at most the file's last
    ``max_bytes``, and only a regular file: a FIFO or a device (``/dev/zero``) gives nothing, at once.
    """
    if not transcript_path or not isinstance(transcript_path, str):
        return "", ""
    try:
        data = read_regular(transcript_path, max_bytes, tail=True)
    except (OSError, ValueError):
        return "", ""
    if len(data) == max_bytes:  # (perhaps) a tail: its first line is cut
        data = data[data.find(b"\n") + 1:]
    raw = data.decode("utf-8", "replace")
    prompt, replies = "", []
    for line in raw.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict) or rec.get("isSidechain") or rec.get("isMeta"):
            continue
        msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
        kind = rec.get("type") or msg.get("role")
        content = msg.get("content")
        if kind == "user":
            if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                                 for b in content):
                continue
            text = _text_of(content).strip()
            if text and not text.startswith("<command-") and not text.startswith("<local-command"):
                prompt, replies = text, []
        elif kind == "assistant":
            text = _text_of(content).strip()
            if text:
                replies.append(text)
    return prompt, "\n\n".join(replies[-3:])
