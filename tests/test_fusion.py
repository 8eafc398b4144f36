"""Recall's fusion: keyword evidence is weighed by how much of the query it matches (issue: a lone,
incidental keyword match beat the memory that answers), and an exact identifier still wins.

Unit tests drive ``search.relevance`` with the lists a store returns; the end-to-end ones use the real
bundled embedder and a real store, the way an agent asks.
"""

from __future__ import annotations

import pytest

from memcli.memory.search import SearchOptions, coverage, relevance
from memcli.memory.service import MemoryService
from memcli.textnorm import (
    FTS_PARAMS,
    FTS_STOP_WORDS,
    STOP_WORDS,
    query_text,
    script_of,
)

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


# ------------------------------------------------------------------------------------------- other scripts
@pytest.mark.parametrize("text,script", [
    ("which port does billing use?", "latin"),
    ("karpenter 会不会在工作时间把节点回收掉？", "cjk"),
    ("ClickHouse 里 courier_pings 有重复数据，同一个 courier_id + ts 出现两三次", "cjk"),
    ("we keep the 数据库 dumps for 30 days in s3://backups/billing", "latin"),
    ("送達照片壓縮之後大概多大？", "cjk"),
    ("", "latin"),
])
def test_the_script_of_a_text_is_what_most_of_its_words_are_written_in(text: str, script: str) -> None:
    assert script_of(text) == script


def test_a_lift_reorders_the_vector_lists_but_keeps_the_raw_cosines() -> None:
    vector = [("zh-unrelated", 0.857), ("zh-other", 0.843), ("en-answer", 0.838)]
    plain = relevance(vector, vector, [], OPTS)
    lifted = relevance(vector, vector, [], OPTS, lift={"en-answer": 0.02})
    assert best(plain) == "zh-unrelated" and lifted["en-answer"].base > lifted["zh-other"].base
    assert lifted["en-answer"].raw == {"vector": 0.838, "context": 0.838}  # what explain and the hook gate see
    assert relevance(vector, vector, [], OPTS, lift={}) == plain


def test_a_chinese_questions_english_answer_ranks_higher_with_the_lift(real_service: MemoryService) -> None:
    """The bundled e5 scores two Chinese texts higher than a Chinese question and its English answer: here an
    unrelated Chinese note about a database pool (0.857) outranks the English note that answers (0.838).
    The prompt hook lifts memories in the other script by 0.02 ([hooks] other_script_lift); recall does not."""
    from memcli.memory.service import NewMemory

    answer = ("Karpenter disruption settings: both NodePools consolidate WhenEmptyOrUnderutilized, with a "
              "disruption budget of 0 nodes Mon-Fri 08:00-19:00 Berlin, so nodes are only reclaimed at night and "
              "on weekends.")
    zh = ["工作时间内不要手动重启 ClickHouse 节点，先在 #ops 频道说一声。", "集群的节点每周日凌晨三点自动打补丁，补丁期间 ingest 会降级。",
          "ingest-svc 的 HPA 在 CPU 70% 时扩容，最多 20 个副本。", "节点池的实例类型限制为 m6i 和 c6i，工作日高峰时 ingest 会扩到 12 个节点。",
          "值班的人在工作时间十五分钟内要响应 page，晚上三十分钟。", "回收站里的文件三十天后自动删除。",
          "测试环境的节点晚上八点自动缩到零，第二天早上八点恢复。", "数据库连接池大小是 20，超时 5 秒。"]
    ids = [r.memory_id for r in real_service.remember_many([NewMemory(content=c) for c in [answer, *zh]])]
    q = "karpenter 会不会在工作时间把节点回收掉？"

    def ranked(lift: float) -> list:
        return real_service.recall(q, top_k=9, explain=True, other_script_lift=lift)

    plain, lifted = ranked(0.0), ranked(0.02)
    assert [h.memory.id for h in real_service.recall(q, top_k=9)] == [h.memory.id for h in plain]  # the default
    pool = ids[-1]
    pos = {lift: [h.memory.id for h in hits] for lift, hits in ((0.0, plain), (0.02, lifted))}
    assert pos[0.0].index(ids[0]) > pos[0.0].index(pool) and pos[0.02].index(ids[0]) < pos[0.02].index(pool)
    cos = {lift: next(h.explain["cosine"] for h in hits if h.memory.id == ids[0]) for lift, hits in
           ((0.0, plain), (0.02, lifted))}
    assert cos[0.0] == cos[0.02]  # the hook's relevance gate reads the cosine as found
