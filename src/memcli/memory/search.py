"""Hybrid recall: keyword (BM25) search and vector similarity (own and in-context), fused, then boosts.

Every candidate list is filtered *before* top-k (prefilter), so filters never starve the result.
Fusion is a convex combination of each list's scores, min-max normalised over that list's top-N (a memory
absent from a list gets 0 from it). The keyword list is then scaled by how much of the query its best hit
matches — its BM25 over what a memory matching the whole query would score (``Candidates.text_ideal``,
from the best score each query token alone reaches) — so a lone, incidental match of one common word no longer
takes the whole keyword weight from a strong semantic match, while an identifier that is most of the query
(an error code, a path, a flag name) still wins. Chosen by measurement on LoCoMo, CMRC and agentfacts at
once (bench/fusion.py; every candidate and its figures are in bench/README.md). Boosts for recency and
importance are small, principled (exponential decay with a half-life; importance centred on the default)
and can be turned off.
"""

from __future__ import annotations

import math
import statistics
import unicodedata
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from memcli.errors import ValidationError
from memcli.memory.store import ACTIVE_FILTER, quote
from memcli.models import MAX_TIME_MS, Memory, RecallHit
from memcli.textnorm import CJK_CHAR_RE


@dataclass
class SearchOptions:
    """Knobs of hybrid recall. The defaults are the measured ones (bench/locomo.py, bench/cmrc.py)."""

    text_weight: float = 0.65
    vector_weight: float = 0.175
    context_weight: float = 0.175
    candidates: int = 50
    recency_weight: float = 0.05
    recency_half_life_days: float = 30.0
    importance_weight: float = 0.05
    project_weight: float = 0.03
    mode: str = "hybrid"  # hybrid | vector | text
    # keyword evidence counts fully from a store of this many memories; below it, BM25 over a handful of
    # documents is noise (every word is rare), so the weight of weak evidence shrinks with the log of the
    # store's size, to nothing at ``keyword_min_size``; a keyword hit that is most of the query still counts
    # (bench/agentfacts.py --small; 0 turns this off)
    keyword_full_size: int = 150
    keyword_min_size: int = 10


def build_where(
    *,
    namespace: str | None = None,
    scopes: Sequence[str] | None = None,
    tags: Sequence[str] | None = None,
    since: int | None = None,
    until: int | None = None,
    project: str | None = None,
    source: str | None = None,
    include_expired: bool = False,
    now: int | None = None,
    include_archived: bool = False,
    key: str | None = None,
) -> str | None:
    """An SQL filter from user values; every value is quoted as data. Superseded and archived memories
    (memcli distill) are left out unless ``include_archived``. ``source`` is the face that wrote a memory or
    the agent that did (seed 002's ``source`` is the writing agent: its scope ``agent:<source>``)."""
    parts: list[str] = [] if include_archived else [ACTIVE_FILTER]
    if namespace is not None:
        parts.append(f"namespace = {quote(namespace)}")
    if scopes:
        parts.append("scope IN (" + ", ".join(quote(s) for s in scopes) + ")")
    if tags:
        conds = [f"array_has(tags, {quote(t)})" for t in tags]
        parts.append("(" + " AND ".join(conds) + ")")
    if since is not None:
        parts.append(f"created_at >= {_time_bound(since, 'since')}")
    if until is not None:
        parts.append(f"created_at <= {_time_bound(until, 'until')}")
    if project is not None:
        parts.append(f"project = {quote(project)}")
    if source is not None:
        writer = source.strip() if source.strip().startswith("agent:") else "agent:" + source.strip()
        parts.append(f"(source = {quote(source)} OR scope = {quote(writer)})")
    if key is not None:
        parts.append(f"key = {quote(key)}")
    if not include_expired and now is not None:
        # an archived memory is an expired one: asking for the archived ones shows them
        parts.append(f"(expires_at IS NULL OR expires_at > {int(now)}"
                     + (" OR status = 'archived')" if include_archived else ")"))
    return " AND ".join(parts) if parts else None


def _time_bound(value: Any, name: str) -> int:
    """A time filter in epoch ms that the store can compare: within ±year 9999 (a bigger number would be a
    store error, not "no match")."""
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > MAX_TIME_MS:
        raise ValidationError(f"{name} must be epoch milliseconds within year 9999, got {value!r}")
    return value


Key = Hashable  # a candidate's handle: its row id in one snapshot of the store
BASELINE_K = 50  # the query's nearest memories whose median cosine is its baseline
MIN_BASELINE = 4  # below this many, a store has no neighbourhood to stand out from


@dataclass
class Relevance:
    """A candidate's weight from the lists alone (before boosts), and where it came from."""

    base: float
    parts: dict[str, float]
    raw: dict[str, float]
    coverage: float | None = None  # the keyword list's coverage of the query (when the query had keyword hits)
    match: float | None = None  # this memory's own BM25 over the query's attainable score (keyword hits only)


def _minmax(hits: list[tuple[Key, float]]) -> dict[Key, float]:
    """Scores of one list scaled to 0..1 over the list (a lone or tied list scales to 1)."""
    if not hits:
        return {}
    vals = [v for _, v in hits]
    lo, hi = min(vals), max(vals)
    span = hi - lo
    return {k: ((v - lo) / span if span > 1e-12 else 1.0) for k, v in hits}


def coverage(text_hits: list[tuple[Key, float]], text_ideal: float | None) -> float:
    """How much of the query the best keyword hit matches: its BM25 over the query's attainable score,
    0..1 (1 when the attainable score is unknown)."""
    if not text_hits or text_ideal is None:
        return 1.0
    if text_ideal <= 0:
        return 0.0
    return min(1.0, max(s for _, s in text_hits) / text_ideal)


def keyword_trust(size: int | None, opts: SearchOptions) -> float:
    """0..1: how far keyword evidence can be trusted in a store of ``size`` memories (see SearchOptions)."""
    if size is None or opts.keyword_full_size <= 0 or size >= opts.keyword_full_size:
        return 1.0
    lo, hi = math.log(max(1, opts.keyword_min_size)), math.log(opts.keyword_full_size)
    return max(0.0, min(1.0, (math.log(max(1, size)) - lo) / (hi - lo))) if hi > lo else 1.0


def relevance(vector_hits: list[tuple[Key, float]], context_hits: list[tuple[Key, float]],
              text_hits: list[tuple[Key, float]], opts: SearchOptions,
              text_ideal: float | None = None, size: int | None = None,
              lift: dict[Key, float] | None = None) -> dict[Key, Relevance]:
    """Convex min-max fusion of the three lists ((key, score) pairs, best first), the keyword list scaled by
    its :func:`coverage` of the query, its weight by :func:`keyword_trust` of the store's ``size``. ``lift``
    adds to some candidates' cosines before the vector lists are scaled (their raw cosines stay as found)."""
    cover = coverage(text_hits, text_ideal) if text_hits else None
    text_w = opts.text_weight
    if cover is not None and (vector_hits or context_hits):
        # in a small store, weak keyword evidence (a word or two of the query) is noise; strong evidence (an
        # identifier that is the query, most of its words) still counts fully
        trust = keyword_trust(size, opts)
        text_w *= trust + (1.0 - trust) * cover * cover
    lists = {"text": (text_hits, text_w), "vector": (vector_hits, opts.vector_weight),
             "context": (context_hits, opts.context_weight)}
    active = {name: (h, w) for name, (h, w) in lists.items() if h and w > 0}
    total_w = sum(w for _, w in active.values()) or 1.0
    norms = {name: _minmax([(k, v + lift.get(k, 0.0)) for k, v in h] if lift and name != "text" else h)
             for name, (h, _) in active.items()}
    if "text" in norms and cover is not None:
        norms["text"] = {k: v * cover for k, v in norms["text"].items()}
    raw = {name: dict(h) for name, (h, _) in active.items()}
    out: dict[Key, Relevance] = {}
    for h, _ in active.values():
        for key, _v in h:
            if key not in out:
                parts = {name: w / total_w * norms[name].get(key, 0.0) for name, (_, w) in active.items()}
                bm25 = raw.get("text", {}).get(key)
                match = (min(1.0, bm25 / text_ideal) if text_ideal else None) if bm25 is not None else None
                out[key] = Relevance(sum(parts.values()), parts,
                                     {name: r[key] for name, r in raw.items() if key in r}, cover, match)
    return out


def boost_span(opts: SearchOptions, *, importance_varies: bool = True, project_boost: bool = True) -> float:
    """How much the boosts can reorder two candidates: the widest gap between any two candidates' boosts.
    Without memories of other importance than the default, or of the query's project, those boosts are
    the same for all and drop out."""
    return (opts.recency_weight + (2 * opts.importance_weight if importance_varies else 0.0)
            + (opts.project_weight if project_boost else 0.0))


def shortlist(rel: dict[Key, Relevance], top_k: int, span: float) -> list[Key]:
    """The candidates that can still reach the top-k once boosts (which differ by at most ``span``) are
    added, best first. Only these need their whole row."""
    order = sorted(rel, key=lambda k: -rel[k].base)
    if len(order) <= top_k:
        return order
    cut = rel[order[top_k - 1]].base - span - 1e-9
    return [k for k in order if rel[k].base >= cut]


def query_baseline(vector_hits: list[tuple[Key, float]]) -> float | None:
    """The median cosine of the query's nearest memories (its first ``BASELINE_K`` vector candidates): what a
    memory must stand out from to be relevant. None for a store of fewer than ``MIN_BASELINE`` memories."""
    cos = sorted((c for _, c in vector_hits), reverse=True)[:BASELINE_K]
    return float(statistics.median(cos)) if len(cos) >= MIN_BASELINE else None


def best_first(hits: list[RecallHit]) -> list[RecallHit]:
    """Each hit's ``score`` capped at the score of the hit ranked above it, so that the list reads best-first
    and ``min_score`` keeps a prefix of it; ``relevance`` keeps the hit's own value."""
    cap = 1.0
    for h in hits:
        h.score = cap = min(cap, h.relevance if h.relevance is not None else h.score)
    return hits


def rank(rel: dict[Key, Relevance], memories: dict[Key, Memory], *, calibrate: Any, opts: SearchOptions,
         now: int, project: str | None, top_k: int, explain: bool, query: str | None = None,
         relevance_of: Any = None, baseline: float | None = None) -> list[RecallHit]:
    """Relevance plus boosts for the candidates in ``memories``, best first: ordered by the fused value, each
    scored by its calibrated relevance to the query (``relevance_of``: the embedder's
    :class:`~memcli.embedders.base.Relevance` of the hit's cosine, keyword match and the query's ``baseline``)
    capped by :func:`best_first`; without ``relevance_of``, the fused value. With ``explain`` and the
    ``query``, each keyword hit's explanation also names the query words it holds."""
    top = 1.0 + opts.recency_weight + opts.importance_weight + opts.project_weight  # the best possible total
    out: list[tuple[float, RecallHit]] = []
    for key, mem in memories.items():
        r = rel[key]
        age_days = max(0.0, (now - mem.created_at) / 86_400_000)
        recency = (math.exp(-math.log(2) * age_days / opts.recency_half_life_days)
                   if opts.recency_half_life_days > 0 else 0.0)
        b_rec = opts.recency_weight * recency
        b_imp = opts.importance_weight * (mem.importance - 0.5) * 2
        b_proj = opts.project_weight if project and mem.project == project else 0.0
        fused = max(0.0, min(1.0, (r.base + b_rec + b_imp + b_proj) / top))
        cos = r.raw.get("vector")
        own = float(relevance_of(cos, r.match, baseline)) if relevance_of is not None else fused
        info = None
        if explain:
            info = {
                "relevance": _r(own), "fused": _r(fused), "baseline_cosine": _r(baseline),
                "cosine": _r(cos), "similarity": _r(calibrate(cos)) if cos is not None else None,
                "context_cosine": _r(r.raw.get("context")), "bm25": _r(r.raw.get("text")),
                "keyword_coverage": _r(r.coverage), "keyword_match": _r(r.match),
                **{f"{k}_part": _r(v / top) for k, v in r.parts.items()},
                "recency": _r(b_rec / top), "importance": _r(b_imp / top), "project": _r(b_proj / top),
            }
        out.append((fused, RecallHit(memory=mem, score=own, relevance=own, explain=info, keyword="text" in r.raw,
                                     similarity=calibrate(cos) if cos is not None else 0.0)))
    out.sort(key=lambda fh: (-fh[0], -fh[1].memory.created_at))
    hits = best_first([h for _, h in out[:top_k]])
    if explain and query:
        # only for the hits returned, and only the keyword hits: the words are why BM25 found them
        found = [h for h in hits if h.keyword and h.explain is not None]
        for h, words in zip(found, matched_words(query, [h.memory.content for h in found])):
            h.explain["matched_words"] = words  # type: ignore[index]
    return hits


# ------------------------------------------------------------------------------ which words matched
# The words are found as the keyword index finds them (ICU words, case and accent folded, stemmed, 简/繁 alike,
# stop words ignored), but named as the query wrote them. lance tokenizes with no character offsets, and
# building its tokenizer costs more than tokenizing, so each side is one call: texts are joined with a marker
# word between them and the token stream is split at the marker.
_BREAK = "qzmemclibreakqz"
MAX_QUERY_WORDS = 64


def _surface_params() -> dict[str, Any]:
    from memcli.textnorm import FTS_PARAMS

    return {**FTS_PARAMS, "stem": False, "remove_stop_words": False, "lower_case": False, "ascii_folding": False}


def _token_groups(texts: Sequence[str], params: dict[str, Any]) -> list[list[Any]]:
    """Each text's tokens (lance ``Token``s), in one tokenizer call."""
    import lance

    groups: list[list[Any]] = [[]]
    for tok in lance.tokenize(f" {_BREAK} ".join(texts), **params):
        if tok.text.casefold().startswith(_BREAK[:12]):  # the marker (a stemmer may shorten its end)
            groups.append([])
        else:
            groups[-1].append(tok)
    return groups


def matched_words(query: str, contents: Sequence[str]) -> list[list[str]]:
    """For each content, the words of ``query`` it holds as the keyword index sees them, in query order,
    without repeats; adjacent CJK words join (数据 + 库 → 数据库)."""
    from memcli.textnorm import FTS_PARAMS, normalise, search_text

    if not contents:
        return []
    surface = _token_groups([unicodedata.normalize("NFKC", query)], _surface_params())[0][:MAX_QUERY_WORDS]
    if not surface:
        return [[] for _ in contents]
    # each query word as the index stores it (a stop word has no tokens), then each content's token set
    stems = _token_groups([normalise(t.text) for t in surface], FTS_PARAMS)
    docs = [{t.text for t in g} for g in _token_groups([search_text(c) for c in contents], FTS_PARAMS)]
    out: list[list[str]] = []
    for doc in docs:
        words: list[str] = []
        prev = None  # (position, cjk) of the last matched word
        for tok, own in zip(surface, stems):
            if not own or not all(t.text in doc for t in own):
                prev = None
                continue
            cjk = bool(CJK_CHAR_RE.match(tok.text))
            if prev is not None and cjk and prev[1] and tok.position == prev[0] + 1:
                words[-1] += tok.text
            else:
                words.append(tok.text)
            prev = (tok.position, cjk)
        unique: dict[str, str] = {}
        for w in words:
            unique.setdefault(w.casefold(), w)
        out.append(list(unique.values()))
    return out


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)
