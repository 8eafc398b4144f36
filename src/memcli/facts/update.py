"""Does a later memory change an earlier one? Another value for the same subject and attribute ("The docs site
is built with MkDocs" → "We moved the docs site to Docusaurus"; 30 s → 45 s; 张伟 → 李娜; allowed → forbidden).

Similarity only proposes the pair; this module decides, by rules, as conservatively as the same-fact test
(:mod:`memcli.facts.samefact`): a look-alike fact about another subject (another service, environment, team,
platform or region) is never an update. The rules, over the two texts' words (Latin words stemmed, Chinese
character by character after 繁→简, words of change — "now", "moved to", "改成", "迁到" — left out):

- the subject must be the same: the same environment, platform, side and replica words on both, most words
  shared, and the words only one text has in **one place** of the later text (a second place of difference —
  "billing … 30 s" / "search … 5 s", "Singapore … vpn-sg" / "London … vpn-ldn" — is another subject);
- a plain word (not a value) that differs at the very start of both texts is the subject changing, never the
  value ("The billing service …" / "The search service …"; "订单模块…" / "库存模块…");
- and a value must change: a number with its unit, a version, an identifier, a URL, a name, a word of a kind
  (enabled / disabled, allow / forbid, always / never, Monday / Friday …), a negation on one side only, or the
  word in the one place that differs; a later text that only adds a value ("… to bucket x") adds a detail.

Long texts (a captured turn, a paragraph) state several facts and are never linked. Standard library only.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from memcli.facts.samefact import read
from memcli.facts.words import (
    CJK_NEGATORS,
    CJK_NUM_COMPOUNDS,
    CJK_POLES,
    CJK_STOP_CHARS,
    EN_GENERIC,
    EN_HEDGES,
    EN_NEGATORS,
    EN_NUMBERS,
    EN_STOP,
    EN_SYNONYMS,
    POLES,
    UNITS,
)
from memcli.textnorm import to_simplified

# kinds of words that name the subject, not its value: another environment or platform is another fact
SUBJECT_KINDS = ("environment", "platform", "role_side", "replica", "bounds")
MAX_TOKENS = 40  # a longer text states several facts: never linked
MAX_ONLY = 6  # words (Chinese: characters) one text has and the other not: more is more than one value

# words that say a value changed, not what it is (left out of both texts before comparing)
_CHANGE_EN = re.compile(
    r"\b(?:(?:from\s+)?now\s+on|going\s+forward|as\s+of\s+(?:today|now)|these\s+days|nowadays|now|currently|"
    r"again|back(?=\s+(?:to|on|in|at|with)\b)|any\s*more|instead|recently|already|since\s+the\s+(?:migration|"
    r"upgrade|move|switch|change)|was\s+(?:moved|changed|switched|migrated|upgraded|renamed|raised|lowered|"
    r"replaced|reduced|increased|bumped)|(?:has|have)\s+been|is\s+being|got|took\s+over(?:\s+ownership\s+of)?|"
    r"taken\s+over|moved|moving|switched|switching|changed|changing|migrated|migrating|upgraded|downgraded|"
    r"raised|lowered|increased|decreased|reduced|bumped|renamed|replaced|updated|swapped|swapping|from)\b",
    re.IGNORECASE)
_NO_LONGER = re.compile(r"\bno\s+longer\b", re.IGNORECASE)
_LIVES = re.compile(r"\blives?(?=\s+(?:in|on|at|under)\b)", re.IGNORECASE)
_THIS = re.compile(r"\b(?:this|that|next|last)\s+(?:week|month|quarter|year|sprint)\b|\btoday\b", re.IGNORECASE)
_UP_TO = re.compile(r"\b(?:can\s+)?(?:now\s+)?(?:be\s+)?up\s+to\b", re.IGNORECASE)
# in Simplified Chinese (texts are converted first); longest first
_CHANGE_ZH = sorted("""现在 目前 已经 如今 从现在起 今后 改成 改为 改到 改在 改由 改用 改回 改 换成 换到 换为 换 迁到 迁移到 迁移至 迁至
迁 搬到 搬 调成 调整为 调整成 调整到 调到 调为 升级到 升级为 提高到 提升到 降到 降低到 缩短为 缩短到 缩短 延长到 延长为 加到 增加到
减到 减少到 变成 变为 重新 又 再 回 了 已""".split(), key=len, reverse=True)
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_CJK_NUMERALS = set("零〇一二两三四五六七八九十百千万半")
_TOKEN = re.compile(r"[a-z][a-z0-9+.\-]*://\S+|[\u3400-\u9fff\uf900-\ufaff]|"
                    r"[#@~$]?[A-Za-z0-9]+(?:[_./:\\\-@#+][A-Za-z0-9]+)*(?:'s)?", re.IGNORECASE)
_CLAUSE = re.compile(r"[;；,，。—]|\s-\s")
# (not 一点, 十分, 一个: 凌晨一点 is one o'clock, 十分钟 ten minutes, 一个 one)
_NUM_COMPOUNDS = [c for c in CJK_NUM_COMPOUNDS if c not in ("一点", "十分", "一个")]
_NO_NUMERALS = str.maketrans({c: "〡" for c in "零〇一二两三四五六七八九十百千万"})
_EXTRA_STOP_CJK = set("只仅就都才便已定做")  # adverbs and light verbs that state no value


@dataclass(frozen=True)
class Change:
    """Whether the later text states another value of the earlier one's fact, why, and the values (earlier's,
    later's) that differ."""

    update: bool
    reason: str
    before: str = ""
    after: str = ""

    def item(self) -> dict[str, object]:
        return {"update": self.update, "reason": self.reason, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class _Tok:
    text: str  # canonical: casefolded, stemmed, synonyms folded; a Chinese character as it is (简)
    value: bool  # a value: a number, version, identifier, URL, name, or a word of a value kind
    cjk: bool
    shown: str
    kind: str = ""  # of a value: num:<unit>, id, url, name, or the kind of word (weekday, polarity …)
    generic: bool = False  # a generic word ("run", "use", "team"): counts as shared, never as a difference


@lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    """A light English stemmer (plurals, -ing, -ed): enough to match one word written two ways."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if len(word) > 3 and word.endswith(suffix) and not word.endswith(("ss", "us", "is", "os")):
            base = word[: len(word) - len(suffix)] + keep
            if suffix == "es" and not base.endswith(("ss", "x", "z", "sh")):
                base = word[:-1]  # "uses" → "use", "caches" → "cache"
            if suffix in ("ing", "ed") and len(base) >= 3 and base[-1] == base[-2] and base[-1] not in "ls":
                base = base[:-1]
            return base
    return word


@lru_cache(maxsize=1 << 15)
def _prepare(text: str) -> tuple[str, bool]:
    """The text with the words of change left out (Simplified Chinese; NFKC), and whether it had any."""
    norm = to_simplified(unicodedata.normalize("NFKC", text))
    norm = _NO_LONGER.sub(" not ", norm)
    norm = _UP_TO.sub(" max ", norm)
    norm = _LIVES.sub(" is ", norm)
    norm = _THIS.sub(" ", norm)  # "lives in" is not the environment "live"
    marked = bool(_CHANGE_EN.search(norm))
    norm = _CHANGE_EN.sub(" ", norm)
    if _CJK.search(norm):
        norm = norm.replace("不再", "不").replace("不用再", "不用")
        for compound in _NUM_COMPOUNDS:  # 一律, 一起, 统一: no number
            norm = norm.replace(compound, " " + compound.translate(_NO_NUMERALS) + " ")
        for word in _CHANGE_ZH:
            if word in norm:
                marked = marked or len(word) > 1 or word in "改换迁搬"
                norm = norm.replace(word, " ")
    return norm, marked


# compiled once: _read_tokens runs them for every word of every text the rules read
_NUMBER = re.compile(r"v?\d+(?:[.,:]\d+)*")
_NUMBER_UNIT = re.compile(r"(\d+(?:\.\d+)?)([a-z%]+)")
_DIGIT = re.compile(r"\d")
_JOINER = re.compile(r"[_./:@#~\\]")
_MIXED_CASE = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
_LATIN = re.compile("[A-Za-z]")


@lru_cache(maxsize=1 << 15)
def _content(text: str) -> tuple[tuple[_Tok, ...], frozenset[str], Counter[str], bool]:
    """A prepared text's fact words without the generic ones, the generic ones, the count of each fact word, and
    whether the language filters of :func:`_changes` can apply to it (a Chinese word, or no Latin letter):
    read once per text, not once per pair."""
    toks = _cached_tokens(text)
    plain = tuple(t for t in toks if not t.generic)
    return (plain, frozenset(t.text for t in toks if t.generic), Counter(t.text for t in plain),
            any(t.cjk for t in plain) or not _LATIN.search(text))


def _tokens(text: str) -> list[_Tok]:
    """The words that carry the fact, in order: values and content words, no stop, generic or change words."""
    return list(_cached_tokens(text))


@lru_cache(maxsize=1 << 15)
def _cached_tokens(text: str) -> tuple[_Tok, ...]:
    return tuple(_read_tokens(text))


def _read_tokens(text: str) -> list[_Tok]:
    cjk_values = _cjk_value_positions(text)
    out: list[_Tok] = []
    raw = list(_TOKEN.finditer(text))
    first = True
    i = 0
    while i < len(raw):
        m = raw[i]
        tok = m.group(0)
        low = tok.casefold()
        if _CJK.fullmatch(tok):
            first = False
            if tok in CJK_STOP_CHARS or tok in _EXTRA_STOP_CJK or tok in CJK_NEGATORS or tok in "的了地得着呢吧啊嘛呀哦":
                i += 1
                continue
            if tok in _CJK_NUMERALS:
                j = i
                while j + 1 < len(raw) and raw[j + 1].group(0) in _CJK_NUMERALS and raw[j + 1].start() == raw[j].end():
                    j += 1
                num = text[m.start():raw[j].end()].replace("两", "二")
                out.append(_Tok(num, True, True, num, "num:" + _cjk_unit(text, raw[j].end())))
                i = j + 1
                continue
            elif out and out[-1].kind.startswith("num") and tok in _CJK_UNIT_CHARS:
                out.append(_Tok(tok, True, True, tok, out[-1].kind))  # 天 of 七天, 秒 of 5 秒
            else:
                out.append(_Tok(tok, m.start() in cjk_values, True, tok, "pole" if m.start() in cjk_values else ""))
            i += 1
            continue
        low = low[:-2] if low.endswith("'s") else low
        nxt = raw[i + 1].group(0).casefold() if i + 1 < len(raw) else ""
        if low in EN_NUMBERS and nxt and (nxt in UNITS or nxt.isalpha()) and low not in ("one", "once"):
            low = EN_NUMBERS[low]
        if _NUMBER.fullmatch(low):  # a number, a version, a time; with its unit
            unit = ""
            if nxt in UNITS:
                unit, i = UNITS[nxt], i + 1
            elif _CJK.match(nxt):
                unit = _cjk_unit(text, m.end())
            out.append(_Tok(low.lstrip("v") + unit, True, False, tok, "num:" + unit))
            first = False
            i += 1
            continue
        num = _NUMBER_UNIT.fullmatch(low)
        if num and num.group(2) in UNITS:
            out.append(_Tok(num.group(1) + UNITS[num.group(2)], True, False, tok, "num:" + UNITS[num.group(2)]))
            first = False
            i += 1
            continue
        caps = len(tok) >= 2 and tok.isupper() and tok.isalpha()  # "US" is not "us"
        if not caps and (low in EN_NEGATORS or low.endswith("n't") or low in EN_STOP or low in EN_HEDGES
                         or low in ("can", "be")):
            first = first and low not in ("the", "a", "an", "our", "we")
            i += 1
            continue
        stem = _stem(low)
        canon = EN_SYNONYMS.get(low) or EN_SYNONYMS.get(stem) or stem
        if canon in ("ownership",):
            canon = "owner"
        pole = POLES.get(low) or POLES.get(stem)
        if pole:
            canon = pole[1]
        name = caps or tok[:1].isupper() and not (first and (low in POLES or low in EN_SYNONYMS or low in EN_GENERIC
                                                        or low.endswith(("ing", "ed"))))
        if (canon in EN_GENERIC or stem in EN_GENERIC) and not pole and not (name and not first):
            out.append(_Tok(canon, False, False, tok, generic=True))
            first = False
            i += 1
            continue
        digits = bool(_DIGIT.search(tok))
        specific = bool(digits or _JOINER.search(tok.strip(".")) or
                        _MIXED_CASE.search(tok) or tok.startswith(("#", "@", "$")))
        kind = "url" if "://" in tok else "id" if digits else "name" if specific or name else \
            pole[0] if pole and pole[0] not in SUBJECT_KINDS else ""
        out.append(_Tok(canon, bool(kind), False, tok, kind))
        first = False
        i += 1
    return out


_CJK_UNITS = {"分钟": "min", "小时": "h", "秒": "s", "天": "d", "日": "d", "周": "w", "月": "mo", "年": "y", "个": "",
              "倍": "x", "人": "people", "次": "x"}
_CJK_UNIT_CHARS = set("".join(_CJK_UNITS))


def _cjk_unit(text: str, at: int) -> str:
    """The unit written right after a number at ``at`` (秒, 分钟, 天 …), canonical ("" for none)."""
    rest = text[at:at + 3].lstrip()
    for word, unit in _CJK_UNITS.items():
        if rest.startswith(word):
            return unit
    return ""


_CJK_MORE_VALUES = ("早上", "早晨", "傍晚", "晚间", "夜间", "周一", "周二", "周三", "周四", "周五", "周六", "周日", "星期")


def _cjk_value_positions(text: str) -> set[int]:
    """Where words of a value kind (启用, 禁止, 可以, 早上 …) are in a Chinese text: their characters are values."""
    out: set[int] = set()
    if text.isascii():  # no Chinese word in it (~1 ms a text saved)
        return out
    for word in _CJK_MORE_VALUES:
        for m in re.finditer(word, text):
            out.update(range(m.start(), m.end()))
    for kind, members in CJK_POLES.items():
        if kind in SUBJECT_KINDS:
            continue
        for word in members:
            for m in re.finditer(re.escape(word), text):
                out.update(range(m.start(), m.end()))
    return out


_ROLE = re.compile(r"\b(?:owns?|owned|owner|ownership|maintains?|maintainer|leads?|on[- ]call|reviews?|"
                   r"approves?|runs)\b|负责|维护|值班|审核|审批", re.IGNORECASE)


def _person_first(older: str, newer: str) -> bool:
    """Both texts say who has a role ("X owns …", "X is on call …"): the person may come first."""
    return bool(_ROLE.search(to_simplified(older)) and _ROLE.search(to_simplified(newer)))


def _only(a: list[_Tok], b: list[_Tok]) -> tuple[list[bool], list[bool]]:
    """Which tokens of ``a`` and of ``b`` the other text does not have: aligned in order first, then a token
    that only moved (the same word elsewhere in the other text) counts as had."""
    from difflib import SequenceMatcher

    ka, kb = [t.text for t in a], [t.text for t in b]
    mine_a, mine_b = [True] * len(a), [True] * len(b)
    for blk in SequenceMatcher(None, ka, kb, autojunk=False).get_matching_blocks():
        for k in range(blk.size):
            mine_a[blk.a + k] = mine_b[blk.b + k] = False
    left: dict[str, list[int]] = {}
    for j, t in enumerate(kb):
        if mine_b[j]:
            left.setdefault(t, []).append(j)
    for i, t in enumerate(ka):
        if mine_a[i] and left.get(t):
            mine_a[i] = mine_b[left[t].pop(0)] = False
    return mine_a, mine_b


def _bare(t: _Tok) -> bool:
    """A bare whole number (no unit) or an identifier with digits (n7, ticket-42): what names one of many."""
    return t.kind == "id" or t.kind == "num:" and (t.text.isdigit() or all(c in _CJK_NUMERALS for c in t.text))


def _one_edit(a: str, b: str) -> bool:
    """Two words one letter (or one swap of neighbours) apart: a typo of one word."""
    if a == b or abs(len(a) - len(b)) > 1 or min(len(a), len(b)) < 5:  # npm / pnpm are two tools
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]])
    short, long_ = sorted((a, b), key=len)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def _places(toks: list[_Tok], mine: list[bool]) -> list[list[_Tok]]:
    """Runs of the tokens only this text has, in order."""
    runs: list[list[_Tok]] = []
    prev = False
    for t, m in zip(toks, mine):
        if m:
            if prev:
                runs[-1].append(t)
            else:
                runs.append([t])
        prev = m
    return runs


def _at_start(toks: list[_Tok], run: list[_Tok]) -> bool:
    return bool(toks) and bool(run) and toks[0] is run[0]


def _shown(runs: list[list[_Tok]]) -> str:
    return " / ".join((" " if not r[0].cjk else "").join(t.shown for t in r).strip() for r in runs)


def changes(older: str, newer: str) -> Change:
    """Does ``newer`` (written later) state another value for the fact ``older`` states?"""
    verdict = _changes(older, newer)
    if verdict.update:
        return verdict
    parts = [p for p in _CLAUSE.split(newer) if p.strip()]
    if len(parts) > 1 and len(_tokens(_prepare(parts[0])[0])) >= 3:  # "Never squash …; keep the history."
        first = _changes(older, parts[0])
        if first.update and " / " not in first.before:  # against a part of the later text: one value for one
            return first
    return verdict


# What a log of work done opens with ("Fixed the flaky test …", "Renamed x to y in …", "Bumped orjson …"): an
# event, true once it happened; a later event is another event, never a new value of it.
_EVENT = re.compile(r"\s*(?:fixed|deleted|renamed|moved|bumped|added|removed|merged|reverted|refactored|"
                    r"upgraded|downgraded|created|wrote|implemented|replaced|dropped|cleaned|investigated|"
                    r"debugged|migrated|released|shipped|deployed|tested|reviewed)\b", re.IGNORECASE)


def _changes(older: str, newer: str) -> Change:
    if _EVENT.match(older) or _EVENT.match(newer):
        return Change(False, "a log of work done: another event, not another value")
    o_text, _ = _prepare(older)
    n_text, marked = _prepare(newer)
    (po, go, co, o_mixed), (pn, gn, cn, n_mixed) = _content(o_text), _content(n_text)
    generic = len(go & gn)
    ot, nt = list(po), list(pn)
    if not ot or not nt or len(ot) > MAX_TOKENS or len(nt) > MAX_TOKENS:
        return Change(False, "not one short fact each")
    if o_mixed or n_mixed:
        # a text in one language and one in another: the other language's plain words cannot be compared
        if not any(t.cjk for t in ot):
            nt = [t for t in nt if not t.cjk or t.value]
        if not any(t.cjk for t in nt):
            ot = [t for t in ot if not t.cjk or t.value]
        if not _LATIN.search(o_text):
            nt = [t for t in nt if t.cjk or t.value]
        if not _LATIN.search(n_text):
            ot = [t for t in ot if t.cjk or t.value]
        co, cn = Counter(t.text for t in ot), Counter(t.text for t in nt)
    shared = sum((co & cn).values())
    if shared + min(generic, 1) < 2 or shared * 2 < min(len(ot), len(nt)) or shared * 10 < 3 * max(len(ot), len(nt)):
        return Change(False, "hardly the same words: another subject")
    # after the words: most pairs a vector search proposes share few, and reading a text costs more
    fo, fn = read(o_text), read(n_text)
    for kind in SUBJECT_KINDS:
        if fo.poles.get(kind, frozenset()) != fn.poles.get(kind, frozenset()):
            return Change(False, f"about another {kind.replace('_', ' ')}")
    mine_o, mine_n = _only(ot, nt)
    old_runs, new_runs = _places(ot, mine_o), _places(nt, mine_n)
    before, after = _shown(old_runs), _shown(new_runs)
    parity = fo.negations % 2 != fn.negations % 2
    if len(new_runs) > 1:
        return Change(False, f"the later text differs in {len(new_runs)} places: another subject", before, after)
    if sum(len(r) for r in old_runs) > MAX_ONLY or sum(len(r) for r in new_runs) > MAX_ONLY:
        return Change(False, "more than a value differs", before, after)
    old_plain = [t for r in old_runs for t in r if not t.value]
    if len(old_runs) > 1 and not (marked or parity) and any(_at_start(ot, r) for r in old_runs):
        # the earlier text differs in its subject and elsewhere: "Payment events … payments.v1" / "order
        # events … orders.v2" are two topics, not one topic renamed
        return Change(False, f"the earlier text differs in {len(old_runs)} places: another subject", before, after)
    if sum(1 for t in old_plain if not t.cjk) > 3 or sum(1 for t in old_plain if t.cjk) > 5 or len(old_runs) > 2:
        return Change(False, "the earlier text says more than a value", before, after)
    if old_runs and mine_o[0] and any(t.cjk and not t.value for t in old_runs[0]):
        return Change(False, f"the earlier text is about a narrower subject ({before})", before, after)
    run = new_runs[0] if new_runs else []
    plain_en = [t for t in run if not t.value and not t.cjk]
    plain_zh = [t for t in run if not t.value and t.cjk]
    values = [t for t in run if t.value]
    if len(run) == 1 and len(old_runs) == 1 and len(old_runs[0]) == 1:
        # one word for one word, both plain letters, one letter apart ("Grafana" / "Grafna" / "grafana"): a
        # slip of the pen, not another value (versions and numbers hold digits: "v1.2.3" / "v1.2.4" is a change)
        a, b = old_runs[0][0].shown.casefold(), run[0].shown.casefold()
        if a.isalpha() and b.isalpha() and (a == b or _one_edit(a, b)):
            return Change(False, f"a typo, not another value ({before} / {after})", before, after)
    if plain_en or plain_zh:
        if mine_n[0]:  # the later text starts with a word the earlier lacks: what it is about changed
            return Change(False, f"another subject ({before or '—'} / {after})", before, after)
        if values and (plain_en or len(plain_zh) > 1):
            return Change(False, f"another attribute ({before or '—'} / {after})", before, after)
        if len(plain_en) > 1 or len(plain_zh) > 3:
            return Change(False, "the later text says something more", before, after)
        if plain_en and not values and sum(len(r) for r in old_runs) != 1:
            return Change(False, f"another thing ({before or '—'} / {after})", before, after)
        if plain_en and old_runs and _one_edit(old_runs[0][0].shown.casefold(), plain_en[0].shown.casefold()):
            return Change(False, f"a typo, not another value ({before} / {after})", before, after)
        if plain_en and not values and not marked and not parity:
            # one plain word for another, and no word of change: "the ledger / billing database", "a failed
            # webhook / refund", "owns the search / reports service" name another thing far more often than
            # they change one (a tool or a name is a value; "now", "moved to", "switched" mark a change)
            return Change(False, f"one word for another: another subject ({before or '—'} / {after})", before, after)
        if not old_runs and not marked:
            return Change(False, "the later text adds a word, not another value", "", after)
    if run and mine_n[0] and {t.kind for t in run} & {"name", "id", "url"} and not _person_first(older, newer):
        # a value at the very start is what the text is about ("ap-southeast-1 的 CDN …", "Enterprise customers
        # …"), except a person in front of a role ("Alice owns …", "Marco is on call …")
        return Change(False, f"another subject ({before or '—'} / {after})", before, after)
    old_values = [t for r in old_runs for t in r if t.value]
    if values and old_values and not {t.kind for t in values} & {t.kind for t in old_values}:
        return Change(False, f"values of different kinds: another attribute ({before} / {after})", before, after)
    if not marked and not parity and values and all(_bare(t) for t in values + old_values):
        # "ticket 42 is closed" / "ticket 48 is closed", "job n3" / "job n7": a bare whole number or an
        # identifier, with no word of change, is more often another thing's name than another value
        return Change(False, f"another number, not a change ({before} / {after})", before, after)
    replaced = bool(run) and (bool(old_runs) or marked)
    if not (parity or replaced):
        if run and not old_runs:
            return Change(False, "the later text adds a detail", "", after)
        return Change(False, "the same value" if not run and not old_runs else "no value changed", before, after)
    if parity and not (before or after):
        before, after = " ".join(fo.negators) or "(affirmed)", " ".join(fn.negators) or "(affirmed)"
    return Change(True, "another value for the same subject" + (" (a negation on one side)" if parity else ""),
                  before, after)
