"""Hybrid recall: vector similarity and BM25 keyword search, fused, then light boosts.

Both candidate lists are filtered *before* top-k (prefilter), so filters never starve the result.
Fusion is reciprocal-rank fusion (robust to the two signals' different scales) so that a keyword-only hit
(an error code, a path, a flag name) can reach the top. Boosts for recency and importance are small,
principled (exponential decay with a half-life; importance centred on the default) and can be turned off.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memcli.models import Memory, RecallHit
from memcli.store import quote


@dataclass
class SearchOptions:
    """Knobs of hybrid recall. The defaults are the measured ones (bench/locomo.py, bench/cmrc.py)."""

    rrf_k: float = 60.0
    vector_weight: float = 1.0
    text_weight: float = 1.0
    candidates: int = 50
    recency_weight: float = 0.05
    recency_half_life_days: float = 30.0
    importance_weight: float = 0.05
    project_weight: float = 0.03
    mode: str = "hybrid"  # hybrid | vector | text


def build_where(
    *,
    namespace: str | None = None,
    namespaces: Sequence[str] | None = None,
    scopes: Sequence[str] | None = None,
    tags: Sequence[str] | None = None,
    any_tags: bool = False,
    since: int | None = None,
    until: int | None = None,
    project: str | None = None,
    source: str | None = None,
    include_expired: bool = False,
    now: int | None = None,
) -> str | None:
    """An SQL filter from user values; every value is quoted as data."""
    parts: list[str] = []
    if namespace is not None:
        parts.append(f"namespace = {quote(namespace)}")
    if namespaces:
        parts.append("namespace IN (" + ", ".join(quote(n) for n in namespaces) + ")")
    if scopes:
        parts.append("scope IN (" + ", ".join(quote(s) for s in scopes) + ")")
    if tags:
        conds = [f"array_has(tags, {quote(t)})" for t in tags]
        parts.append("(" + (" OR " if any_tags else " AND ").join(conds) + ")")
    if since is not None:
        parts.append(f"created_at >= {int(since)}")
    if until is not None:
        parts.append(f"created_at <= {int(until)}")
    if project is not None:
        parts.append(f"project = {quote(project)}")
    if source is not None:
        parts.append(f"source = {quote(source)}")
    if not include_expired and now is not None:
        parts.append(f"(expires_at IS NULL OR expires_at > {int(now)})")
    return " AND ".join(parts) if parts else None


def fuse(
    vector_hits: list[tuple[Memory, float]],
    text_hits: list[tuple[Memory, float]],
    *,
    calibrate: Any,
    opts: SearchOptions,
    now: int,
    project: str | None,
    top_k: int,
    explain: bool,
) -> list[RecallHit]:
    """Reciprocal-rank fusion of the two lists, plus boosts; ``score`` normalised to 0..1."""
    table: dict[str, dict[str, Any]] = {}
    for rank, (mem, cos) in enumerate(vector_hits, 1):
        e = table.setdefault(mem.id, {"memory": mem})
        e["vector_rank"], e["cosine"] = rank, cos
    for rank, (mem, bm25) in enumerate(text_hits, 1):
        e = table.setdefault(mem.id, {"memory": mem})
        e["text_rank"], e["bm25"] = rank, bm25
    k = opts.rrf_k
    # the best a memory can get: rank 1 in both lists and every boost at its maximum
    best = (opts.vector_weight + opts.text_weight) / (k + 1)
    max_fused = best * (1.0 + opts.recency_weight + opts.importance_weight + opts.project_weight)
    out: list[RecallHit] = []
    for e in table.values():
        mem: Memory = e["memory"]
        rrf_v = opts.vector_weight / (k + e["vector_rank"]) if "vector_rank" in e else 0.0
        rrf_t = opts.text_weight / (k + e["text_rank"]) if "text_rank" in e else 0.0
        base = rrf_v + rrf_t
        age_days = max(0.0, (now - mem.created_at) / 86_400_000)
        recency = math.exp(-math.log(2) * age_days / opts.recency_half_life_days) if opts.recency_half_life_days > 0 else 0.0
        b_rec = best * opts.recency_weight * recency
        b_imp = best * opts.importance_weight * (mem.importance - 0.5) * 2
        b_proj = best * opts.project_weight if project and mem.project == project else 0.0
        fused = base + b_rec + b_imp + b_proj
        score = max(0.0, min(1.0, fused / max_fused))
        info = None
        if explain:
            info = {
                "vector_rank": e.get("vector_rank"), "cosine": _r(e.get("cosine")),
                "similarity": _r(calibrate(e["cosine"])) if "cosine" in e else None,
                "text_rank": e.get("text_rank"), "bm25": _r(e.get("bm25")),
                "rrf_vector": _r(rrf_v / max_fused), "rrf_text": _r(rrf_t / max_fused),
                "recency": _r(b_rec / max_fused), "importance": _r(b_imp / max_fused),
                "project": _r(b_proj / max_fused),
            }
        out.append(RecallHit(memory=mem, score=score, explain=info, keyword="text_rank" in e,
                             similarity=calibrate(e["cosine"]) if "cosine" in e else 0.0))
    out.sort(key=lambda h: (-h.score, -h.memory.created_at))
    return out[:top_k]


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)
