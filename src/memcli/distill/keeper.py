"""Which member of a merged group keeps its words, and the words the others still bring to keyword search.

A merge keeps the **best-written** member, not simply the newest: agents restate a fact tersely, in lower
case, with a product name misspelt ("Grafna", "Terrafrom"), behind a hedge ("FYI: ..."). Members are ranked,
in order, by: spelling (a word one slip away from another member's word loses when the store writes the other
form more often), the casing of names (``postgresql`` loses to ``PostgreSQL``, ``Github`` to ``GitHub``), a
full sentence (a capital or Chinese first character, a final stop), no hedge in front, length, then the old
rank (importance, a deliberate memory before a captured turn, the most recent).

Whatever text is kept, the merged members' words that it lacks (a misspelling, another language's wording,
an identifier written otherwise) go into the keeper's keyword index (``search_text``) as aliases, so a
keyword search that found a member still finds its keeper.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from memcli.textnorm import search_text

if TYPE_CHECKING:
    from memcli.models import Memory

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[._\-/][A-Za-z0-9]+)*")
_TOKEN = re.compile(r"[A-Za-z0-9#@][\w.\-/:#@+]*[\w#+]|[A-Za-z0-9]|[\u3400-\u9fff\uf900-\ufaff]+")
_HEDGE = re.compile(r"^\s*(?:fyi|note|nb|heads up|reminder|btw|psa|tip|update|注意|提醒|备注|顺便说一下)\s*[:：,，\-—]",
                    re.IGNORECASE)
_STOP_END = ".!?。！？"


class Spelling:
    """How a store writes its words: how often each form (casefolded) occurs, and how common each three
    letters are across its distinct words. Of two forms one slip apart, the one written less often is the
    slip; at a tie, the one with the rarer letter triples ("Playwrigth": "gth" is written nowhere else)."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.words: Counter[str] = Counter()
        for t in texts:
            self.words.update(w.casefold() for w in _WORD.findall(t))
        self.triples: Counter[str] = Counter(g for w in self.words for g in _triples(w))

    def rarity(self, word: str) -> float:
        return sum(1.0 / self.triples[g] for g in _triples(word) if self.triples[g])

    def slip(self, word: str, other: str) -> bool:
        """Is ``word`` the misspelt one of the two forms (casefolded, one slip apart)?"""
        a, b = self.words[word], self.words[other]
        return a < b or (a == b and self.rarity(word) > self.rarity(other) + 1e-9)


def _triples(word: str) -> set[str]:
    w = f"^{word}$"
    return {w[i:i + 3] for i in range(len(w) - 2)}


def _slip(a: str, b: str) -> bool:
    """One edit (or two neighbours swapped) between two words of 5+ letters that start alike."""
    if a == b or min(len(a), len(b)) < 5 or abs(len(a) - len(b)) > 1 or a[0] != b[0]:
        return False
    if len(a) == len(b):
        d = [i for i in range(len(a)) if a[i] != b[i]]
        return len(d) == 1 or (len(d) == 2 and d[1] == d[0] + 1 and a[d[0]] == b[d[1]] and a[d[1]] == b[d[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def _capitals(w: str) -> int:
    return sum(1 for c in w if c.isupper())


def writing_rank(m: "Memory", group: Sequence["Memory"], spelling: Spelling) -> tuple[float, ...]:
    """How well ``m`` is written among ``group`` (higher is better; see the module's docstring)."""
    mine = _WORD.findall(m.content)
    # every other member's words, and whether each opens its text (a capital there says nothing of a name)
    others = {(w, pos == 0) for o in group if o.id != m.id for pos, w in enumerate(_WORD.findall(o.content))}
    slips = case = 0
    for pos, w in enumerate(mine):
        low = w.casefold()
        for o, first in others:
            lo = o.casefold()
            if lo == low:
                # another member writes this word with more capitals: a name lower-cased (not the first word)
                if pos and _capitals(o) > _capitals(w) and not (first and _capitals(o) == 1 and o[:1].isupper()):
                    case += 1
                    break
            elif _slip(low, lo) and spelling.slip(low, lo):
                slips += 1
                break
    text = m.content.strip()
    first = text[:1]
    sentence = int(first.isupper() or first.isdigit() or "\u3400" <= first <= "\u9fff" or first in "`\"'(") + \
        int(text[-1:] in _STOP_END)
    hedge = 1 if _HEDGE.match(text) else 0
    captured = m.source == "hook:stop" or "turn" in m.tags
    # a member a later memory changed never keeps the group's words over a current one (A, B, then A again:
    # the second A is current, the first outdated)
    return (0 if m.outdated_by else 1, -slips, -case, sentence, -hedge, len(_TOKEN.findall(text)), m.importance,
            0 if captured else 1, m.created_at)


def pick_keeper(centre: "Memory", members: Sequence["Memory"], same: Callable[["Memory", "Memory"], bool],
                spelling: Spelling) -> "Memory":
    """The member whose words a merged group keeps: the best-written one that states the same fact as every
    other member (each was checked against ``centre`` only); ``centre`` when it has a caller key or none does."""
    if centre.key is not None:
        return centre
    group = [centre, *members]
    for cand in sorted(group, key=lambda m: writing_rank(m, group, spelling), reverse=True):
        if cand is centre or all(same(cand, o) for o in group if o is not cand):
            return cand
    return centre


def aliases(keeper: str, others: Iterable[str]) -> str:
    """The words of ``others`` that ``keeper`` does not contain (casefolded), in the order first written."""
    have = {t.casefold() for t in _TOKEN.findall(search_text(keeper))}
    out: dict[str, None] = {}
    for text in others:
        for t in _TOKEN.findall(text):
            low = t.casefold()
            if low not in have and search_text(t).split(" \n")[0] not in have:
                out.setdefault(t, None)
    return " ".join(out)


def keeper_search_text(base: str, alias_text: str) -> str:
    """The keeper's keyword index: its own (``row_search_text``), then the aliases (normalised)."""
    return base + ("\n" + search_text(alias_text) if alias_text else "")
