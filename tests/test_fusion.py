"""Recall's fusion: keyword evidence is weighed by how much of the query it matches (issue: a lone,
incidental keyword match beat the memory that answers), and an exact identifier still wins.

Unit tests drive ``search.relevance`` with the lists a store returns; the end-to-end ones use the real
bundled embedder and a real store, the way an agent asks.
"""

from __future__ import annotations

import pytest

from memcli.search import SearchOptions, coverage, relevance
from memcli.service import MemoryService
from memcli.textnorm import FTS_PARAMS, FTS_STOP_WORDS, STOP_WORDS, query_text

OPTS = SearchOptions()


def best(rel: dict) -> str:
    return max(rel, key=lambda k: rel[k].base)


def test_a_lone_weak_keyword_match_does_not_beat_a_strong_semantic_match() -> None:
    # "which message queue did we pick": only the dashboard note shares a word ("queue"), which is one of the
    # query's three searchable tokens; the answer (RabbitMQ) has the clearly higher cosine.
    vector = [("answer", 0.84), ("dashboard", 0.79), ("other1", 0.78), ("other2", 0.77), ("other3", 0.76)]
    text = [("dashboard", 4.2)]
    ideal = 4.3 + 4.2 + 4.9  # messag + queue + pick: what a memory matching the whole query would score
    rel = relevance(vector, vector, text, OPTS, ideal)
    assert best(rel) == "answer"
    assert coverage(text, ideal) == pytest.approx(4.2 / ideal)
    # the old min-max fusion (the keyword list stretched to 1 whatever it matched) let the dashboard win
    assert best(relevance(vector, vector, text, OPTS, None)) == "dashboard"


def test_an_exact_identifier_match_still_wins() -> None:
    # "what does E4022 mean": the identifier is in one memory only (its BM25 is most of the query's attainable
    # score); by meaning alone the sibling code E4021 is closer.
    vector = [("e4021", 0.871), ("e4022", 0.849), ("other1", 0.847), ("other2", 0.833), ("other3", 0.83)]
    text = [("e4022", 9.4)]
    ideal = 2 * 4.7 + 1.2  # e4022 (said twice: an identifier) + mean (matched by nothing near as well)
    assert coverage(text, ideal) > 0.85
    assert best(relevance(vector, vector, text, OPTS, ideal)) == "e4022"


def test_keyword_lists_that_match_the_whole_query_keep_their_full_weight() -> None:
    vector = [("a", 0.80), ("b", 0.79), ("c", 0.70)]
    text = [("c", 12.0), ("b", 3.0)]
    rel = relevance(vector, vector, text, OPTS, 12.0)
    assert rel["c"].coverage == 1.0 and best(rel) == "c"
    assert rel["c"].parts["text"] == pytest.approx(OPTS.text_weight / (OPTS.text_weight + 2 * OPTS.vector_weight))


def test_stop_words_and_their_stems_are_not_searched() -> None:
    lance = pytest.importorskip("lance")
    # the index stems before it drops stop words: every stop word's stem must be listed as well
    assert [t.text for t in lance.tokenize(" ".join(STOP_WORDS), **FTS_PARAMS)] == []
    assert set(STOP_WORDS) <= set(FTS_STOP_WORDS)
    toks = [t.text for t in lance.tokenize(query_text("why does the billing queue stall?"), **FTS_PARAMS)]
    assert toks == ["bill", "queue", "stall"]


@pytest.mark.parametrize("query, ident", [
    ("what listens on 6380?", "6380"), ("what does E4021 mean", "e4021"), ("is search_v2 on", "search_v2"),
    ("what does services/auth/jwks.py do", "services/auth/jwks.py"), ("MAX_INFLIGHT_REQS in prod", "max_inflight_reqs"),
])
def test_identifiers_in_a_query_weigh_twice(query: str, ident: str) -> None:
    assert [w.strip("?") for w in query_text(query).split()].count(ident) == 2


@pytest.mark.parametrize("query", ["why did we pick Kafka", "账单 oncall", "which message queue did we choose"])
def test_plain_words_weigh_once(query: str) -> None:
    words = query_text(query).split()
    assert len(words) == len(set(words))


FACTS = [
    "We chose RabbitMQ over Kafka for order events because ops already runs a RabbitMQ cluster.",
    "the queue dashboard is red on Mondays",
    "Error E4021 from billing means the card issuer declined the charge; never auto-retry it.",
    "Error E4022 means the invoice currency differs from the payment method's currency.",
    "Auth's session store is its own Redis on port 6380, not the shared cache on 6379.",
    "billing-api listens on port 8081 inside its container.",
    "Deploys go out on Tuesdays and Thursdays after the standup.",
    "Alice owns the on-call rota for the platform team this month.",
]


@pytest.mark.slow
def test_recall_end_to_end_weak_keyword_and_identifiers(real_service: MemoryService) -> None:
    for fact in FACTS:
        real_service.remember(fact)

    def first(q: str) -> str:
        return real_service.recall(q, top_k=3)[0].memory.content

    assert first("which message queue did we pick?") == FACTS[0]
    assert first("what does E4022 mean?") == FACTS[3]
    assert first("what listens on 6380?") == FACTS[4]
    hit = real_service.recall("which message queue did we pick?", top_k=3, explain=True)[0]
    assert hit.explain is not None and 0 < hit.explain["keyword_coverage"] < 0.7  # "queue" alone


def test_a_fresh_store_scores_every_memory_on_one_scale(service: MemoryService) -> None:
    # lance scores rows outside the keyword index with statistics of their own; a small store folds each
    # write into the index, so the first memory (indexed alone) and the later ones compare fairly
    ids = [service.remember(f"the deploy checklist item {i} mentions kafka").memory_id for i in range(4)]
    ids.append(service.remember("unrelated note about lunch").memory_id)
    hits = service.recall("kafka", mode="text", top_k=5, explain=True)
    scores = {h.memory.id: h.explain["bm25"] for h in hits}
    assert set(scores) == set(ids[:4])
    assert max(scores.values()) - min(scores.values()) < 1e-3, scores
