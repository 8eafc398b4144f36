"""Text normalisation for keyword search: the stored content keeps its original form.

- NFKC folds full-width forms to half-width (ＡＢＣ１２３ → ABC123) and compatibility characters;
- Traditional Chinese is mapped to Simplified (頻道 → 频道) so either form finds the other;
- identifiers are also indexed by their parts (search_v2 → search v2, camelCase → camel case).
The ICU tokenizer of the full-text index then splits Chinese/Japanese words inside sentences.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

_CJK_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# Matches start where a word starts (a later start inside the same word could only find the same identifier):
# without the lookbehinds one 32,000-letter word cost ~10^9 steps (100 s of a server's write) to scan.
_IDENT_RE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]+(?:[_./:\-][A-Za-z0-9]+)+|(?<![a-z])[a-z]+[A-Z][A-Za-z0-9]*")
_CAMEL_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


@lru_cache(maxsize=1)
def _t2s() -> Any:
    try:
        from opencc_purepy import OpenCC

        return OpenCC("t2s")
    except Exception:  # noqa: BLE001 - the converter is an optional nicety; search still works without it
        return None


def to_simplified(text: str) -> str:
    """Traditional → Simplified Chinese (a no-op for text with no CJK characters)."""
    if not _CJK_RE.search(text):
        return text
    conv = _t2s()
    return conv.convert(text) if conv is not None else text


# a character of Chinese, Japanese (kana) or Korean (hangul) writing
CJK_CHAR_RE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_LATIN_RE = re.compile(r"[A-Za-z]")


def script_of(text: str) -> str:
    """``"cjk"`` for a text written mostly in Chinese (or Japanese, Korean) characters, else ``"latin"``: a CJK
    character says about a word's worth, as do four Latin letters, and a quarter of the words decide (a Chinese
    sentence full of identifiers is Chinese; one Chinese word in an English note is not)."""
    cjk = len(CJK_CHAR_RE.findall(text))
    return "cjk" if cjk and cjk >= 0.25 * (cjk + len(_LATIN_RE.findall(text)) / 4) else "latin"


def _identifier_parts(text: str) -> list[str]:
    parts: list[str] = []
    for m in _IDENT_RE.finditer(text):
        pieces = [p for chunk in re.split(r"[_./:\-]+", m.group(0)) for p in _CAMEL_RE.findall(chunk)]
        if len(pieces) > 1:
            parts.extend(pieces)
    return parts


def normalise(text: str) -> str:
    """The form both documents and queries are searched in."""
    return to_simplified(unicodedata.normalize("NFKC", text)).casefold()


def search_text(text: str) -> str:
    """Normalised text plus the parts of identifiers, for the full-text index."""
    norm = normalise(text)
    parts = _identifier_parts(unicodedata.normalize("NFKC", text))
    return norm + (" \n" + " ".join(parts).casefold() if parts else "")


# A query word that is an identifier — it has a digit and a letter (E4021, v2, 5K), joins parts with
# _ . / : - (search_v2, jwks.py; words joined by hyphens only are English: dairy-free), mixes cases (getUser) or is in capitals (API), or is a number of 3+ digits
# that is not a year (a port: 6380) — names one thing, where an English word of the same rarity is incidental
# ("listens"). BM25 cannot tell them apart, so the query says such a word twice. (Years and small numbers are
# left alone: in conversations they are dates and counts; measured on LoCoMo, bench/README.md.)
_QUERY_IDENT_RE = re.compile(r"(?<![\w./:\-])(?:[A-Za-z0-9]+(?:[_./:\-][A-Za-z0-9]+)+|[A-Za-z]+\d\w*|\d+[A-Za-z]\w*"
                             r"|[a-z]+[A-Z]\w*|[A-Z]{2,}[A-Za-z]*|\d{3,})(?![\w])")
_NOT_IDENT_RE = re.compile(r"(19|20)\d\d|\d+(st|nd|rd|th)|[A-Za-z]+(-[A-Za-z]+)+")  # years, 8th, dairy-free


def query_identifiers(text: str) -> list[str]:
    """The words of a query that name one thing (see above)."""
    return [w for w in _QUERY_IDENT_RE.findall(unicodedata.normalize("NFKC", text).replace(",000", "000"))
            if not _NOT_IDENT_RE.fullmatch(w)]


def query_text(text: str) -> str:
    """What a keyword search searches for: the normalised query, its identifiers once more."""
    idents = query_identifiers(text)
    base = search_text(text)
    return base + (" \n" + " ".join(idents).casefold() if idents else "")


# English stop words (the usual list, question words included) for the keyword index: they are removed from
# documents and queries alike, so "what did Caroline paint" searches for caroline + paint. Measured on
# LoCoMo: BM25 recall@5 0.486 → 0.537 (bench/locomo.py).
STOP_WORDS = sorted(set("""a an the and or but if of at by for with about against between into through during
before after above below to from up down in out on off over under again further then once here there when where
why how all any both each few more most other some such no nor not only own same so than too very s t can will
just don should now i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
she her hers herself it its itself they them their theirs themselves what which who whom this that these those
am is are was were be been being have has had having do does did doing would could ought i'm you're he's she's
it's we're they're i've you've we've they've i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll
they'll isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't won't wouldn't shan't shouldn't
can't cannot couldn't mustn't let's that's who's what's here's there's when's where's why's how's""".split()))
# The index stems a word before it filters stop words, so the stop words' stems must be listed too (without
# them "why" → "whi" and "does" → "doe" were searched for: tests/test_textnorm.py checks the list).
STOP_STEMS = ["abov", "ani", "befor", "doe", "dure", "i'v", "let", "onc", "onli", "ourselv", "themselv", "they'r",
              "they'v", "veri", "we'r", "we'v", "whi", "you'r", "you'v", "yourselv"]
FTS_STOP_WORDS = sorted(set(STOP_WORDS) | set(STOP_STEMS))

# How the full-text index tokenizes (and so every query): ICU words (Chinese inside sentences), lower case,
# ASCII folding, English stemming, stop words.
FTS_PARAMS: dict[str, Any] = {"base_tokenizer": "icu", "language": "English", "stem": True,
                              "remove_stop_words": True, "custom_stop_words": FTS_STOP_WORDS, "lower_case": True,
                              "ascii_folding": True}
