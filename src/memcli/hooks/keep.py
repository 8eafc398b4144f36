"""Is a turn worth keeping? (placeholder: the old rules)"""

from __future__ import annotations

from dataclasses import dataclass

from memcli.hooks.text import is_trivial, one_line

MIN_REPLY_CHARS = 40


@dataclass
class Verdict:
    keep: bool
    reason: str
    score: float = 0.0
    ask_llm: bool = False


def judge_turn(prompt: str, reply: str) -> Verdict:
    if len(one_line(reply)) < MIN_REPLY_CHARS and (is_trivial(prompt) or len(one_line(reply)) < 12):
        return Verdict(False, "trivial turn")
    if is_trivial(prompt) and len(one_line(reply)) < 200:
        return Verdict(False, "trivial turn")
    return Verdict(True, "")
