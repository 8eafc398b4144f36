"""Recall's explanation names the query words a keyword hit holds (the web view's "why this result" says them in
plain words), found as the keyword index finds them (case, stems, 简/繁, identifiers) and written as the query
wrote them, without changing any score. On a real LanceDB store (hash embedder: the words are what matter)."""

from __future__ import annotations

from memcli.memory.search import matched_words
from memcli.memory.service import MemoryService

FACTS = [
    "Error E4021 from the ingress means the TLS certificate of the tenant expired; cert-manager renews it.",
    "Deploys of the search_v2 service run through Argo CD, never kubectl by hand.",
    "数据库选型项目采用 PostgreSQL 16，读写分离。",
    "Lunch is at noon on Fridays.",
]


def test_keyword_hits_name_the_query_words_they_hold(service: MemoryService) -> None:
    ids = [service.remember(f).memory_id for f in FACTS]
    hit = service.recall("what does e4021 from the INGRESS mean", top_k=4, explain=True)[0]
    assert hit.memory.id == ids[0]
    # as the query wrote them; stop words ("what", "does", "from", "the") are no match
    assert hit.explain["matched_words"] == ["e4021", "INGRESS", "mean"]
    # stems and identifiers: "deploying" holds "Deploys", "search" is a part of search_v2
    by_id = {h.memory.id: h for h in service.recall("deploying search", top_k=4, explain=True)}
    assert by_id[ids[1]].explain["matched_words"] == ["deploying", "search"]
    # Chinese inside a sentence, asked in 繁體: adjacent words join into one
    zh = service.recall("數據庫選型", top_k=4, explain=True)[0]
    assert zh.memory.id == ids[2] and zh.explain["matched_words"] == ["數據庫選型"]


def test_the_words_change_no_score_and_only_keyword_hits_carry_them(service: MemoryService) -> None:
    for f in FACTS:
        service.remember(f)
    for q in ("E4021 ingress", "search_v2 deploys", "数据库", "when is lunch"):
        # (the recency boost moves with the clock between the two calls: a few 1e-10)
        plain = [(h.memory.id, round(h.score, 6)) for h in service.recall(q, top_k=4)]
        explained = service.recall(q, top_k=4, explain=True)
        assert [(h.memory.id, round(h.score, 6)) for h in explained] == plain
        for h in explained:
            assert ("matched_words" in h.explain) == ("bm25" in h.explain and h.explain["bm25"] is not None)
    # a hit found by meaning alone says no words
    vec = service.recall("E4021 ingress", top_k=4, explain=True, mode="vector")
    assert all("matched_words" not in h.explain for h in vec)


def test_matched_words_per_content() -> None:
    got = matched_words("Why is checkout_v2 disabled? 啟用", ["checkout_v2 is disabled in production",
                                                            "checkout is enabled", "启用新功能", ""])
    assert got == [["checkout_v2", "disabled"], [], ["啟用"], []]
    assert matched_words("anything", []) == []
    assert matched_words("the of and", ["the of and"]) == [[]]  # stop words only: nothing to name
