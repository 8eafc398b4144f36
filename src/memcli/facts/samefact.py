"""Do two memories state the same fact? The test ``distill`` merges by and ``check-duplicate`` reports by.

Similarity only proposes candidates: with a small multilingual model, "always run migrations in business
hours" and "never run migrations in business hours" are as close as two wordings of one fact. This module
decides, by rules, conservatively: a pair is the **same** fact only when nothing tells them apart.

What tells two memories apart (a *veto*; the pair is a ``conflict`` when the rest of the two texts agrees,
else ``related``):

- the values they state: numbers with their units (30 s ≠ 30 min), versions, dates, times, identifiers in
  every form (kebab-case, snake_case, dotted, camelCase, paths, URLs, error codes, names in `code`);
- polarity: a negation on one side only (always … / never …, 可以 / 不可以);
- opposite words of one kind (enable / disable, allow / forbid, read / write, sync / async, 启用 / 禁用, …), and
  words of a kind where each names one value (staging / production, iOS / Android, Monday / Friday, hourly /
  daily, must / may, all / only): when both texts use the kind, they must use the same words of it;
- and, not a veto but not a match either, any other word: the member's words must all be the keeper's
  (after case, stemming, a few synonyms and one-letter typos of long words), and the keeper may add only
  generic words (``instance``, ``use``, ``we``…), so nothing the member says is lost and nothing the keeper
  says beyond it is new. Chinese is compared by character pairs after 繁→简 conversion (both the plain and
  the Taiwan-phrase mapping, so 資料庫 and 数据库 are one word).

A pair no rule vetoes but whose words differ beyond that is *unsure*: an LLM, when configured, may confirm
it (:func:`compare` says ``sure=False``); it can never overrule a veto. Standard library only.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

from memcli.facts.words import (  # noqa: I001
    CJK_HEDGES,
    CJK_NEG_NOT,
    CJK_NEGATORS,
    CJK_NUM_COMPOUNDS,
    CJK_POLES,
    CJK_STOP_CHARS,
    CJK_SYNONYMS,
    EN_GENERIC,
    EN_HEDGES,
    EN_NEGATORS,
    EN_NUMBERS,
    EN_STOP,
    EN_SYNONYMS,
    POLES,
    UNITS,
)

SAME, CONFLICT, RELATED = "same", "conflict", "related"
UNRELATED = 0.15  # below this share of words in common two texts are about different things (random pairs: <0.15)

_CJK = r"\u3400-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_CJK_NUM = re.compile(r"[零〇一二两三四五六七八九十百千万]+")
# a token: an identifier (letters/digits joined by _ . / : - @ # = \ ~ +), a URL, a number with a unit
_URL = re.compile(r"\b[a-z][a-z0-9+.\-]*://[^\s`'\"<>()\[\]{}，。；]+", re.IGNORECASE)
_TOKEN = re.compile(r"(?:(?<![\w\-])--?(?=[A-Za-z]))?[A-Za-z0-9~$#@*%]+(?:[_./:\\\-=+@#*~][A-Za-z0-9~$#@*%]+)*(?:\.\d+)*'?[A-Za-z]*")
_ACRONYM_PLURAL = re.compile(r"[A-Z][A-Z0-9]+s|[1-5]\d\ds")  # JWTs, AZs, 503s (not 30s: seconds)
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_NUM_UNIT = re.compile(r"^[~≈]?(\d+(?:[.,]\d+)*)([a-z%]*)$")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
_DIGIT = re.compile(r"\d")
_FULLWIDTH_PUNCT = str.maketrans({"：": ": ", "，": ", ", "。": ". ", "；": "; ", "！": "! ", "？": "? ", "、": ", ",
                                  "（": " (", "）": ") ", "「": " ", "」": " ", "『": " ", "』": " ", "“": " ",
                                  "”": " ", "‘": " ", "’": "'", "《": " ", "》": " ", "【": " ", "】": " "})
# what agents put in front of a fact: "FYI:", "Heads up:", "As discussed,", "For the record," …
# "e.g." / "i.e." / "etc." introduce or close an example list: not values (a dotted token otherwise)
_ABBREV = re.compile(r"(?<![\w.])(?:e\.\s?g|i\.\s?e|etc|viz)\.?(?![\w])", re.IGNORECASE)
# "<count> <up to 3 words>: x, y and z" (or 、/和/及 in Chinese): a count the list itself says again
# "<is> <done> by <someone>": the passive voice, which names the doer after the verb
_PASSIVE = re.compile(r"\b(?:is|are|was|were|be|been|being|gets|get|got)\s+(?:\w+ly\s+)?\w+(?:ed|en|wn|ne|lt|ht|ld|ung|ot)"
                      r"\s+by\s+(?!default|hand|design|mistake|now|far|then|itself|themselves)", re.IGNORECASE)
_COUNTED_LIST = re.compile(r"(?<![\w.])(\d+|" + "|".join(EN_NUMBERS) + r")(?:\s*个)?\s+(?:[^\W\d]+\s+){0,2}[^\W\d]+\s*[:：]\s*([^.;。；\n]+)")
_LIST_SPLIT = re.compile(r"\s*(?:,|、|，|\band\b|\bor\b|和|及|与|或)\s*")
_CJK_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
               "九": 9}
# the speaker labels of a captured turn ("User: ...\nAssistant: ..."): they say who spoke, not a fact
_SENTENCES = re.compile(r"[.?!。？！\n]\s*\S")  # a text of more than one sentence (or a question and its answer)
_TURN_LABEL = re.compile(r"(?im)^\s*(?:user|assistant|human|ai|system)\s*:\s*")
_LEAD_HEDGE = re.compile(r"^\s*(?:(?:fyi|til|heads up|note|nb|reminder|for the record|as discussed|just so you know|"
                         r"i think|i believe|as far as i know|afaik|important|update|decision|convention|gotcha|"
                         r"tip|psa)\b[\s:,\-—]*)+", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    """How ``b`` relates to ``a``: ``same`` (a says everything b says; nothing contradicts), ``conflict`` (the
    same subject with a different value) or ``related`` (a different fact). ``sure``: for ``related``, whether
    a rule vetoed it (an LLM may not turn a sure verdict into ``same``). ``differences``: (a's words, b's)."""

    relation: str
    reason: str
    differences: tuple[tuple[str, str], ...] = ()
    sure: bool = True

    @property
    def same(self) -> bool:
        return self.relation == SAME

    def item(self) -> dict[str, object]:
        """The JSON shape faces show: ``{"relation", "reason", "differences": [[a, b], ...]}``."""
        return {"relation": self.relation, "reason": self.reason,
                "differences": [list(d) for d in self.differences]}


@dataclass(frozen=True)
class Facts:
    """What the rules read from one text."""

    specifics: frozenset[str]  # values: numbers with units, versions, identifiers, paths, URLs (exact)
    words: frozenset[str]  # other content words: stemmed, synonyms folded
    grams: tuple[frozenset[str], ...]  # Chinese character pairs, per 繁→简 mapping (plain, Taiwan phrases)
    bridges: frozenset[str] = frozenset()  # pairs across punctuation or a space (never required of the other)
    plain: frozenset[str] = frozenset()  # every Latin word as written (casefolded, not stemmed)
    order: tuple[str, ...] = ()  # values and words in the order written (Chinese: character by character)
    poles: dict[str, frozenset[str]] = field(default_factory=dict)  # kind → the words of that kind used
    negations: int = 0
    negators: tuple[str, ...] = ()  # the negations as written
    shown: dict[str, str] = field(default_factory=dict)  # canonical form → a form as written (for messages)
    pole_words: frozenset[str] = frozenset()  # words of a kind (enable, disable...): the values, not the subject
    pole_chars: frozenset[str] = frozenset()  # characters of Chinese words of a kind and negations (启用, 不)
    counts: frozenset[str] = frozenset()  # numbers that count the list right after them ("3 regions: a, b and c")
    passive: bool = False  # "X is owned by Y" (the doer named after the verb)


# ------------------------------------------------------------------------------------------ reading a text
@lru_cache(maxsize=4096)
def _simplified(text: str) -> tuple[str, str]:
    """(t2s, tw2sp) conversions of a text with Chinese in it; the text twice otherwise."""
    if not _CJK_RUN.search(text):
        return text, text
    try:
        return _converter("t2s").convert(text), _converter("tw2sp").convert(text)
    except ImportError:  # pragma: no cover - a dependency; without it 繁/简 pairs are simply not merged
        return text, text


@lru_cache(maxsize=2)
def _converter(config: str):  # type: ignore[no-untyped-def]
    from opencc_purepy import OpenCC

    return OpenCC(config)


# compiled once: read() and _order() run them for every word of every text
_THOUSANDS = re.compile(r"\d{1,3}(,\d{3})+")
_VERSION = re.compile(r"v\d[\d.]*")
_VERSION_NAME = re.compile(r"v\d[\w.\-]*")
_ORDER_TOKEN = re.compile(f"[{_CJK}]|[A-Za-z0-9][\\w.\\-/:]*")


@lru_cache(maxsize=1 << 16)  # pure, and called for every word of every text read
def _stem(word: str) -> str:
    """A light English stemmer: plural and verb endings (deploys/deployed/deploying → deploy)."""
    if len(word) <= 3 or not word.isalpha() or word.endswith(("ss", "us", "is", "os", "as", "ous")):
        return word  # "prometheus", "redis", "macos", "class" are not plurals
    for suffix, keep in (("ies", "y"), ("ied", "y"), ("able", ""), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""),
                         ("ly", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: len(word) - len(suffix)] + keep
            if suffix == "es" and not base.endswith(("s", "x", "z", "ch", "sh")):
                base = word[:-1]  # "uses" → "use", "caches" → "cache"
            if suffix in ("ing", "ed") and len(base) >= 3 and base[-1] == base[-2] and base[-1] not in "ls":
                base = base[:-1]  # "shipped" → "ship"
            if suffix in ("ing", "ed") and base.endswith(("at", "iz", "bl", "ur", "ov", "iv", "bas", "us")):
                base += "e"  # "configured" → "configure", "used" → "use"
            if suffix == "s" and word.endswith("ss"):
                return word
            return base
    return word


@lru_cache(maxsize=1 << 16)
def _specific(token: str) -> bool:
    """A token that names one value: it has a digit, joins parts with a separator, or mixes cases."""
    if _DIGIT.search(token) or _CAMEL.search(token):
        return True
    if token[:1] == "-" and token[1:2].isalnum() or token[:2] == "--":
        return True  # a command-line flag
    core = token.strip("-")
    return any(sep in core for sep in "_./:\\=@#~+") or ("-" in core and not core.replace("-", "").isalpha())


def _number(value: str, unit: str) -> str:
    unit = UNITS.get(unit, unit)
    num = value.replace(",", "") if _THOUSANDS.fullmatch(value) else value
    return f"{num}{unit}"


@lru_cache(maxsize=8192)
def read(text: str) -> Facts:
    """The facts the rules compare, read from one memory's text."""
    norm = unicodedata.normalize("NFKC", text.translate(_FULLWIDTH_PUNCT))
    norm = _LEAD_HEDGE.sub("", _TURN_LABEL.sub(" ", norm))
    t2s, tw = _simplified(norm)
    specifics: set[str] = set()
    words: set[str] = set()
    shown: dict[str, str] = {}
    poles: dict[str, set[str]] = {}
    negations = 0
    negators: list[str] = []
    pole_chars: set[str] = set()
    pole_words: set[str] = set()
    latin = _ABBREV.sub(" ", t2s)
    for m in _URL.finditer(latin):
        url = m.group(0).rstrip(".,;:!?").casefold()
        specifics.add(url)
        shown[url] = m.group(0)
    latin = _URL.sub(" ", latin)
    for m in _CODE_SPAN.finditer(latin):  # every word of `code` is a value, exactly as written
        for word in _TOKEN.findall(m.group(1)):
            specifics.add(word.casefold())
            shown.setdefault(word.casefold(), word)
    # Chinese: numerals, negation, kinds of words, character pairs
    grams: list[frozenset[str]] = []
    bridges: set[str] = set()
    cjk_neg = 0
    # an ASCII text holds no Chinese: the pass below finds nothing in it (~0.5 ms a text saved)
    if not t2s.isascii() or not tw.isascii():
        for variant in dict.fromkeys((t2s, tw)):
            found: set[str] = set()
            scrubbed = variant
            for hedge in CJK_HEDGES:
                scrubbed = scrubbed.replace(hedge, " ")
            for compound in CJK_NUM_COMPOUNDS:
                scrubbed = scrubbed.replace(compound, "〡" * len(compound))
            for m in _CJK_NUM.finditer(scrubbed):
                key = _cjk_number(m.group(0))
                specifics.add(key)
                shown[key] = m.group(0)
            scrubbed = _CJK_NUM.sub(" ", scrubbed)
            for word, canon in CJK_SYNONYMS.items():
                scrubbed = scrubbed.replace(word, canon)
            runs = _CJK_RUN.findall(re.sub(f"[{CJK_STOP_CHARS}〡]", " ", scrubbed))
            for run in runs:
                found |= {run[i:i + 2] for i in range(len(run) - 1)} if len(run) > 1 else {run}
            grams.append(frozenset(found))
            bridges |= {x[-1] + y[0] for x, y in zip(runs, runs[1:])}
        for variant in (t2s,):
            plain = variant
            for compound in CJK_NEG_NOT:
                plain = plain.replace(compound, " ")
            cjk_neg = sum(plain.count(n) for n in CJK_NEGATORS)
            negators.extend(n for n in CJK_NEGATORS if n in plain)
            pole_chars.update(n for n in CJK_NEGATORS if n in plain)
            for kind, members in CJK_POLES.items():
                for word, canon in members.items():
                    if word in plain or word in tw:
                        poles.setdefault(kind, set()).add(canon)
                        pole_chars.update(word)
    else:
        grams.append(frozenset())  # what the pass finds in a text without Chinese
    negations += cjk_neg
    # Latin script: tokens, numbers with their units, negations, kinds, content words
    order = _order(t2s)
    tokens = [t[:-2] if t.endswith(("'s", "’s")) else t[:-1] if _ACRONYM_PLURAL.fullmatch(t) else t
              for t in _TOKEN.findall(latin)]
    low = [t.casefold() for t in tokens]
    i = 0
    while i < len(low):
        tok, raw = low[i], tokens[i]
        nxt = low[i + 1] if i + 1 < len(low) else ""
        if tok in EN_NUMBERS and nxt and (nxt in UNITS or _stem(nxt) in EN_GENERIC or nxt.isalpha()):
            tok = EN_NUMBERS[tok]
        m = _NUM_UNIT.match(tok.lstrip("v") if _VERSION.fullmatch(tok) else tok)
        if m:
            value, unit = m.group(1), m.group(2)
            if not unit and nxt in UNITS:
                unit, i = nxt, i + 1
            key = _number(value, unit)
            specifics.add(key)
            shown.setdefault(key, raw + (f" {tokens[i]}" if unit and tokens[i] != raw else ""))
            i += 1
            continue
        if tok in EN_NEGATORS or tok.endswith("n't"):
            negations += 1
            negators.append(raw)
            if tok in POLES:  # "never" is also a frequency
                poles.setdefault(POLES[tok][0], set()).add(POLES[tok][1])
            i += 1
            continue
        if _specific(raw) and not (raw.isalpha() and (tok in EN_SYNONYMS or tok in POLES)):
            key = tok.strip("`'\".,;:!?()[]{}<>").lstrip("v") if _VERSION_NAME.fullmatch(tok) else tok
            specifics.add(key)
            shown.setdefault(key, raw)
            i += 1
            continue
        stem = _stem(tok)
        kind = POLES.get(tok) or POLES.get(stem)
        if kind:
            poles.setdefault(kind[0], set()).add(kind[1])
        if tok not in EN_STOP and tok not in EN_HEDGES and len(tok) > 1:
            canon = EN_SYNONYMS.get(tok) or EN_SYNONYMS.get(stem) or stem
            words.add(canon)
            shown.setdefault(canon, raw)
            if kind:
                pole_words.add(canon)
        i += 1
    counts = {key for key in (_list_count(m) for m in _COUNTED_LIST.finditer(latin)) if key in specifics}
    return Facts(specifics=frozenset(specifics), words=frozenset(words), grams=tuple(grams), bridges=frozenset(bridges), plain=frozenset(low), order=order,
                 poles={k: frozenset(v) for k, v in poles.items()}, negations=negations,
                 negators=tuple(negators), shown=shown, pole_words=frozenset(pole_words),
                 pole_chars=frozenset(pole_chars), counts=frozenset(counts), passive=bool(_PASSIVE.search(latin)))


def _kind_of(value: str) -> str:
    """What kind of value a specific is: a number (with its unit), a URL, a path, or another identifier."""
    if re.fullmatch(r"[~≈#]?[\d零〇一二两三四五六七八九十百千万][\d.,:]*[a-z%]*", value):
        return "number"
    if "://" in value:
        return "url"
    return "path" if "/" in value or "\\" in value else "name"


def _cjk_number(text: str) -> str:
    """A Chinese numeral as its digits when it is a plain one (两 → 2, 十五 → 15, 二十 → 20); else marked as
    written (百, 千, 万 and longer forms are compared as they are)."""
    t = text.replace("两", "二")
    if len(t) == 1 and t in _CJK_DIGITS:
        return str(_CJK_DIGITS[t])
    m = re.fullmatch(r"([一二三四五六七八九])?十([一二三四五六七八九])?", t)
    if m:
        return str(_CJK_DIGITS.get(m.group(1) or "一", 1) * 10 + (_CJK_DIGITS[m.group(2)] if m.group(2) else 0))
    return "#" + t


def _list_count(m: "re.Match[str]") -> str:
    """The count of "<count> <noun>: x, y and z" when it is the number of items listed, else ''."""
    word = m.group(1).casefold()
    n = EN_NUMBERS.get(word, word)
    items = [x for x in _LIST_SPLIT.split(m.group(2).strip()) if x.strip()]
    return n if n.isdigit() and int(n) == len(items) >= 2 else ""


def _order(text: str) -> tuple[str, ...]:
    """The text's words (Latin, casefolded, stemmed, stop words out) and Chinese characters (particles out),
    in the order written: two texts that only exchange two of them say different things."""
    out: list[str] = []
    for m in _ORDER_TOKEN.finditer(text):
        tok = m.group(0)
        if _CJK_RUN.fullmatch(tok):
            if tok not in "的了地得着呢吧啊嘛呀哦":  # particles only: 先…再… marks an order
                out.append(tok)
        else:
            low = tok.casefold().rstrip(".:-/")
            if low not in EN_STOP:
                out.append(low if _specific(tok.rstrip(".:-/")) else _stem(low))
    return tuple(out)


def _swapped(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, str] | None:
    """(x, y) when ``b`` is ``a`` with two of its parts exchanged around something that stays between them
    ("Loki … Prometheus" / "Prometheus … Loki"; "先 rollback，再排查" / "先排查，再 rollback"). Two clauses that
    only trade places ("because X, Y" / "Y because X") are a reordering, not a swap."""
    if len(a) != len(b) or a == b or sorted(a) != sorted(b):
        return None
    p = 0
    while a[p] == b[p]:
        p += 1
    q = 0
    while a[-1 - q] == b[-1 - q]:
        q += 1
    ma, mb = a[p:len(a) - q], b[p:len(b) - q]
    n = len(ma)
    if n > 30:
        return None
    for i in range(1, n - 1):  # x = ma[:i]
        for j in range(1, n - i):  # y = ma[n-j:], the middle ma[i:n-j] is not empty
            x, mid, y = ma[:i], ma[i:n - j], ma[n - j:]
            if mid and mb == y + mid + x and x != y:
                return " ".join(x), " ".join(y)
    return None


# ------------------------------------------------------------------------------------------ comparing two
def _typo(a: str, b: str) -> bool:
    """One edit (or one swap of neighbours) apart, in a word of 6+ letters: a typo, not another word."""
    if min(len(a), len(b)) < 5 or abs(len(a) - len(b)) > 1 or a[0] != b[0] or not (a.isalpha() and b.isalpha()):
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        swap = len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        return swap or (len(diff) == 1 and len(a) >= 6)
    if min(len(a), len(b)) < 6:
        return False
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def _typos(f: Facts, mine: list[str], g: Facts, theirs: list[str]) -> list[str]:
    """``mine`` without the names that are a typo of one of ``theirs``: a product name of 7+ letters with a
    letter doubled or undoubled, or two neighbours swapped (RabbitMQ / RabitMQ), compared as written."""
    out = []
    for x in mine:
        w = f.shown.get(x, x)
        if not (len(w) >= 7 and w.isalpha() and w[:1].isupper() and any(_slip(w, g.shown.get(y, y)) for y in theirs)):
            out.append(x)
    return out


def _slip(a: str, b: str) -> bool:
    """One slip of the fingers between two names: a doubled letter lost or added, or neighbours swapped."""
    if len(a) == len(b):
        d = [i for i in range(len(a)) if a[i] != b[i]]
        return len(d) == 2 and d[1] == d[0] + 1 and a[d[0]] == b[d[1]] and a[d[1]] == b[d[0]]
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    if len(long_) - len(short) != 1:
        return False
    for i in range(1, len(long_)):
        if long_[i] == long_[i - 1] and long_[:i] + long_[i + 1:] == short:
            return True
    return False


def _missing(member: Facts, keeper: Facts, mw: frozenset[str], kw: frozenset[str]) -> list[str]:
    """The member's words the keeper does not have (typos of the keeper's long words count as had)."""
    out = sorted(mw - kw)
    if not out:
        return out
    # typo candidates: the keeper's other words by first letter (a typo keeps the first letter)
    by_first: dict[str, list[str]] = {}
    for k in kw - mw:
        raw = _raw(keeper, k)
        if len(raw) >= 5:
            by_first.setdefault(raw[:1], []).append(raw)
    if not by_first:
        return out
    kept = []
    for w in out:
        raw = _raw(member, w)
        if not any(_typo(raw, k) for k in by_first.get(raw[:1], ())):
            kept.append(w)
    return kept


def _raw(f: Facts, word: str) -> str:
    """A word as written (casefolded), for typo checks: stems and synonyms would hide the letters."""
    return f.shown.get(word, word).casefold()


def compare(keeper: str, member: str) -> Verdict:
    """Does ``keeper`` state everything ``member`` states, with nothing that tells them apart? (Asymmetric:
    merging ``member`` into ``keeper`` must lose nothing.) A pair in English and Chinese that the word rules
    cannot compare (and do not veto) is read by :mod:`memcli.facts.crosslang`."""
    verdict = _compare(keeper, member)
    if verdict.relation != RELATED or not (_CJK_RUN.search(keeper) or _CJK_RUN.search(member)):
        return verdict
    from memcli.facts.crosslang import same_across_languages, scripts_differ

    if scripts_differ(keeper, member):
        en, zh = (keeper, member) if not _is_cjk(keeper) else (member, keeper)
        same, why = same_across_languages(en, zh, read(en), read(zh), _simplified(zh)[0])
        if same:
            return Verdict(SAME, why)
    return verdict


def _is_cjk(text: str) -> bool:
    from memcli.textnorm import script_of

    return script_of(text) == "cjk"


def _compare(keeper: str, member: str) -> Verdict:
    a, b = read(keeper), read(member)
    value_diffs: list[tuple[str, str]] = []
    reasons: list[str] = []
    # a word in one text may be a value in the other only by its case ("PostgreSQL" / "postgresql")
    # a count the text's own list says again ("three regions: x, y and z") is not a value of its own
    only_a = sorted(x for x in a.specifics - b.specifics if x not in b.plain and x not in a.counts)
    only_b = sorted(x for x in b.specifics - a.specifics if x not in a.plain and x not in b.counts)
    only_a, only_b = _typos(a, only_a, b, only_b), _typos(b, only_b, a, only_a)
    if only_a or only_b:
        value_diffs.append((", ".join(a.shown.get(x, x) for x in only_a), ", ".join(b.shown.get(x, x) for x in only_b)))
        reasons.append("they state different values" if only_a and only_b else
                       "one states a value the other does not")
    # a contradiction: each side a value the other lacks (not one saying more), a negation, roles swapped
    contradiction = bool(only_a and only_b)
    if a.negations % 2 != b.negations % 2:
        contradiction = True
        value_diffs.append((" ".join(a.negators) or "(no negation)", " ".join(b.negators) or "(no negation)"))
        reasons.append("one says the opposite of the other (a negation on one side only)")
    swap = None if value_diffs else _swapped(a.order, b.order)
    if swap and a.passive != b.passive:
        swap = None  # "Priya owns the notifier" / "the notifier is owned by Priya": one fact in two voices
    elif not swap and not value_diffs and a.passive != b.passive and sorted(a.order) == sorted(b.order) \
            and not _SENTENCES.search(keeper.strip()) and not _SENTENCES.search(member.strip()):
        # "Alice reviews Bob's PRs" / "Alice's PRs are reviewed by Bob": the same words in one voice and the
        # other, but the doer not moved around the verb: the roles the other way round
        contradiction = True
        value_diffs.append(("(active)", "(passive)") if b.passive else ("(passive)", "(active)"))
        reasons.append("one says it the other way round (who does it to whom)")
    if swap:
        contradiction = True
        value_diffs.append((f"{swap[0]} … {swap[1]}", f"{swap[1]} … {swap[0]}"))
        reasons.append("the same words in exchanged places")
    for kind in sorted(set(a.poles) & set(b.poles)):
        if a.poles[kind] != b.poles[kind]:
            contradiction = contradiction or bool(a.poles[kind] - b.poles[kind] and b.poles[kind] - a.poles[kind])
            value_diffs.append((", ".join(sorted(a.poles[kind] - b.poles[kind])) or "—",
                                ", ".join(sorted(b.poles[kind] - a.poles[kind])) or "—"))
            reasons.append(f"they differ in {kind.replace('_', ' ')}")
    values = a.specifics | b.specifics  # compared above, as values
    a_words, b_words = a.words - values, b.words - values
    ga, gb = min(((x, y) for x in a.grams for y in b.grams), key=lambda p: len(p[0] ^ p[1]), default=(frozenset(), frozenset()))
    missing = [w for w in _missing(b, a, b_words, a_words) if w not in EN_GENERIC] + sorted(gb - ga - a.bridges)
    extra = [w for w in _missing(a, b, a_words, b_words) if w not in EN_GENERIC] + sorted(ga - gb - b.bridges)
    if value_diffs:
        # the subject is what is left without the words that carry the values (enabled / disabled, 允许 /
        # 不允许): the same subject with another value is a contradiction; else another fact
        skip_w, skip_c = a.pole_words | b.pole_words, a.pole_chars | b.pole_chars
        sa, sb = a.words - skip_w, b.words - skip_w
        sga, sgb = (frozenset(x for x in g if not set(x) & skip_c) for g in (ga, gb))
        shared = len(sa & sb) + len(sga & sgb)
        total = len(sa | sb) + len(sga | sgb)
        s_missing = [w for w in missing if w not in skip_w and not set(w) & skip_c]
        s_extra = [w for w in extra if w not in skip_w and not set(w) & skip_c]
        subject_same = total == 0 or (shared / total >= 0.5 and not (s_missing and s_extra))
        if len(a.specifics) >= 2 and len(b.specifics) >= 2 and not a.specifics & b.specifics:
            subject_same = False  # every value different (file, line, name): another event, not a change
        if only_a and only_b and not {_kind_of(x) for x in only_a} & {_kind_of(x) for x in only_b}:
            subject_same = False  # a port against a path: another attribute, not another value of one
        word_diffs = [(" ".join(a.shown.get(w, w) for w in extra[:4]), " ".join(b.shown.get(w, w) for w in missing[:4]))]
        diffs = tuple(value_diffs + ([] if subject_same or not (missing or extra) else word_diffs))
        # one saying more (a value, a word of a kind) than the other is another fact, not a contradiction
        return Verdict(CONFLICT if subject_same and contradiction else RELATED, "; ".join(reasons), diffs, sure=True)
    if extra and not missing and _elaboration(a, b, extra, len(b_words) + len(gb)):
        return Verdict(SAME, "the same fact: the first says it at more length (nothing of the second is missing, "
                             "and the first adds no name or value of its own)")
    slot = _slot(a.order, b.order)
    if missing and extra and (slot or len(missing) == len(extra) == 1):
        # the same sentence with one part said otherwise: about another thing (billing / payments, alice / bob,
        # the cache / the queue, 华东 / 华南) — a near miss, never the same fact
        pair = slot or (a.shown.get(extra[0], extra[0]), b.shown.get(missing[0], missing[0]))
        if all(re.fullmatch(r"[a-z0-9]+(?:[-_][a-z0-9]+)+", x.casefold()) for x in pair):
            # a kebab/snake name in place of another (bucket lumen-tf-state / lumen-tfstate-prod): a value
            return Verdict(CONFLICT, "they state different values", (pair,), sure=True)
        return Verdict(RELATED, "the same words about a different thing", (pair,), sure=True)
    names_a, names_b = _names(a, extra), _names(b, missing)
    if names_a and names_b:
        # each names something (a capitalised name) the other does not: Postgres / Redis, Flink / Spark
        return Verdict(RELATED, "they name different things", ((" ".join(names_a), " ".join(names_b)),), sure=True)
    shared = len(a_words & b_words) + len(ga & gb) + len(a.specifics & b.specifics)
    union = len(a_words | b_words) + len(ga | gb) + len(a.specifics | b.specifics)
    if union and shared / union < UNRELATED:
        # hardly a word in common: two facts about different things, not two wordings an LLM might confirm
        return Verdict(RELATED, "they are about different things", sure=True)
    if missing or extra:
        diffs = ((" ".join(a.shown.get(w, w) for w in extra[:6]), " ".join(b.shown.get(w, w) for w in missing[:6])),)
        why = ("they name different things" if missing and extra else
               "the second says something the first does not" if missing else
               "the first says more than the second")
        return Verdict(RELATED, why, diffs, sure=False)
    return Verdict(SAME, "the same fact: the same values and words (up to wording, case, punctuation, "
                         "typos and 简/繁 script)")


def _slot(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, str] | None:
    """(a's part, b's part) when the two texts are one sentence with one short part replaced (≤ 4 words or
    Chinese characters each way, the rest — at least half of it — the same, in the same order)."""
    from difflib import SequenceMatcher

    ops = [op for op in SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    same = len(a) - (i2 - i1)
    if i2 - i1 > 4 or j2 - j1 > 4 or same * 2 < max(len(a), len(b)):
        return None
    join = "" if all(_CJK_RUN.fullmatch(t) for t in a[i1:i2] + b[j1:j2]) else " "
    return join.join(a[i1:i2]), join.join(b[j1:j2])


def _names(f: Facts, words: list[str]) -> list[str]:
    """The words among ``words`` written as names (capitalised, not all capitals)."""
    out = []
    for w in words:
        written = f.shown.get(w, "")
        if written[:1].isupper() and not written.isupper():
            out.append(written)
    return out


def _elaboration(keeper: Facts, member: Facts, extra: list[str], size: int) -> bool:
    """May the keeper's extra words be wording around the member's fact rather than a fact of their own? Only
    a few of them (at most half as many as the member's words), none a name (a capitalised word), none of a
    kind of words the member does not use (the keeper must not narrow it to one environment or day)."""
    if len(extra) > max(1, size // 2):
        return False
    for w in extra:
        written = keeper.shown.get(w, w)
        if written[:1].isupper() and not written.isupper():
            return False
        kind = POLES.get(w) or POLES.get(written.casefold())
        if kind and kind[0] not in member.poles and kind[1] not in ("all", "every"):  # "every X" generalises
            return False
    return True


def may_conflict(a: str, b: str) -> bool:
    """A quick bound for a store's many close pairs: False when :func:`compare` certainly finds no conflict
    (no value, negation, kind of word or name tells them apart, or they are not about the same subject)."""
    fa, fb = read(a), read(b)
    if not (fa.specifics != fb.specifics or fa.negations % 2 != fb.negations % 2
            or any(fa.poles[k] != fb.poles[k] for k in fa.poles.keys() & fb.poles.keys())
            or (sorted(fa.order) == sorted(fb.order) and (fa.order != fb.order or fa.passive != fb.passive))
            or any(("-" in w or "_" in w) for w in fa.plain ^ fb.plain)):
        return False  # (two parts exchanged, the roles reversed in the other voice, a kebab name replaced)
    skip_w, skip_c = fa.pole_words | fb.pole_words, fa.pole_chars | fb.pole_chars
    sa, sb = fa.words - skip_w, fb.words - skip_w
    ga, gb = min(((x, y) for x in fa.grams for y in fb.grams), key=lambda p: len(p[0] ^ p[1]),
                 default=(frozenset(), frozenset()))
    ga, gb = (frozenset(x for x in g if not set(x) & skip_c) for g in (ga, gb))
    total = len(sa | sb) + len(ga | gb)
    return total == 0 or (len(sa & sb) + len(ga & gb)) / total >= 0.5


def merge_verdict(keeper: str, member: str) -> Verdict:
    """May ``member`` merge into ``keeper``? :func:`compare`, except that a difference a rule finds the other
    way round is a veto too (an LLM may then not confirm the pair)."""
    forward = compare(keeper, member)
    if forward.same or forward.sure:
        return forward
    backward = compare(member, keeper)
    if not backward.same and backward.sure:
        return Verdict(backward.relation, backward.reason, tuple((y, x) for x, y in backward.differences), True)
    return forward


def same_fact(a: str, b: str) -> Verdict:
    """Symmetric form for two memories of equal standing: ``same`` when either states everything the other
    does (a near-restatement); otherwise the first verdict's view."""
    forward = compare(a, b)
    if forward.same:
        return forward
    backward = compare(b, a)
    if backward.same:
        return backward
    return forward if forward.sure or not backward.sure else backward


def explain(a: str, b: str) -> str:
    """In plain words: whether ``a`` and ``b`` would merge, and why (``memcli distill --explain``)."""
    v = same_fact(a, b)
    if v.same:
        return f"would merge: {v.reason}"
    diffs = "; ".join(f"{x or '—'} ≠ {y or '—'}" for x, y in v.differences)
    kind = "a conflict" if v.relation == CONFLICT else "different facts"
    tail = "" if v.sure else " (an LLM, when configured, may still confirm them as one fact)"
    return f"would not merge: {kind}: {v.reason}" + (f" ({diffs})" if diffs else "") + tail
