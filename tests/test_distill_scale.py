"""Distill at scale (issue 30): the partitioned neighbour search a large namespace uses finds what the exact one
finds, each memory's candidates are capped, and a plan builds whole memories only for the rows it names.
A real store with the hash embedder; the partitioned path is forced on a small store (``exact_max``)."""

from __future__ import annotations

import numpy as np

from memcli.distill.distiller import Distiller
from memcli.distill.neighbours import neighbours
from memcli.memory.service import MemoryService

SERVICES = ["billing", "search", "ledger", "gateway", "notifier", "scheduler", "archiver", "indexer", "mailer",
            "exporter", "importer", "tracker"]
FILLER = ["the team lunch is on fridays", "the office wifi password rotates monthly",
          "retro notes live in the shared drive", "new hires pair with a buddy for two weeks",
          "the design review happens before each sprint", "coffee machine on floor three is broken"]


def seed(svc: MemoryService) -> None:
    """Per service: a fact stated three ways by three agents, and one port two agents disagree on."""
    for k, name in enumerate(SERVICES):
        fact = f"the {name} service stores its state in postgresql {10 + k} for jsonb support"
        svc.remember(fact, agent="codex")
        svc.remember(fact.capitalize() + ".", agent="claude-code")
        svc.remember(fact.replace("postgresql", "PostgreSQL") + "!", agent="gemini", importance=0.6)
        svc.remember(f"the {name} worker listens on port {8000 + k} in production", agent="codex")
        svc.remember(f"the {name} worker listens on port {9000 + k} in production", agent="gemini")
    for text in FILLER:
        svc.remember(text, agent="codex", importance=0.9)


def summary(d: Distiller) -> tuple[object, ...]:
    plan = d.plan()
    return (sorted((m.keep, tuple(sorted(m.merge)), m.scope) for m in plan.merge),
            sorted(tuple(c["ids"]) for c in plan.conflicts), sorted(plan.promote), sorted(plan.archive),
            sorted(plan.outdated.items()), plan.scanned, plan)


def test_the_partitioned_path_finds_the_merges_and_conflicts_of_the_exact_path(service: MemoryService) -> None:
    seed(service)
    exact = summary(Distiller(service.store, service.embedder))
    d = Distiller(service.store, service.embedder)
    d.exact_max = 8  # 66 memories: partitioned into ~8 buckets
    part = summary(d)
    assert len(exact[0]) == len(SERVICES) and all(len(m[1]) == 2 for m in exact[0])  # the test can fail
    assert len(exact[1]) == len(SERVICES)
    assert part[:-1] == exact[:-1]
    plan = exact[-1]
    # whole memories (metadata, context) only for the rows the plan names, all of them readable
    named = {i for m in plan.merge for i in [m.keep, *m.merge]} | set(plan.promote) | {
        i for c in plan.conflicts for i in c["ids"]}
    assert set(plan.memories) == named and plan.scanned == len(SERVICES) * 5 + len(FILLER)
    assert set(plan.to_dict()["plan"]["memories"]) == named


def test_partitioned_neighbours_match_exact_ones_on_planted_pairs() -> None:
    rng = np.random.default_rng(7)
    base = rng.standard_normal((3000, 32)).astype(np.float32)
    near = base[:300] + 0.05 * rng.standard_normal((300, 32)).astype(np.float32)  # 300 planted near pairs
    vecs = np.concatenate([base, near])
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    rows = np.arange(len(vecs))
    exact = neighbours(vecs, rows, 0.5, 0.9, exact_max=len(vecs))
    part = neighbours(vecs, rows, 0.5, 0.9, exact_max=100)
    want = {(i, i + 3000) for i in range(300)} | {(i + 3000, i) for i in range(300)}
    pairs_exact = {(i, c) for i, c, v in zip(*(a.tolist() for a in exact)) if v >= 0.9}
    pairs_part = {(i, c) for i, c, v in zip(*(a.tolist() for a in part)) if v >= 0.9}
    assert want <= pairs_exact
    assert len(want & pairs_part) >= 0.95 * len(want)  # approximate: a pair may fall in no common bucket
    assert pairs_part <= pairs_exact
    # never a row with itself, each pair once; exact: sorted by row then partner
    for i, c, _ in (exact, part):
        assert not np.any(i == c) and len(set(zip(i.tolist(), c.tolist()))) == len(i)
    i, c, _ = exact
    assert np.all(np.diff(i) >= 0) and np.all((np.diff(i) > 0) | (np.diff(c) > 0))


def test_each_memory_keeps_only_its_best_candidates() -> None:
    rng = np.random.default_rng(3)
    centre = rng.standard_normal(16).astype(np.float32)
    crowd = centre + 0.01 * rng.standard_normal((200, 16)).astype(np.float32)  # 200 copies of one fact
    vecs = crowd / np.linalg.norm(crowd, axis=1, keepdims=True)
    for exact_max in (1000, 50):
        i, c, v = neighbours(vecs, np.arange(200), 0.5, 0.9, k_hi=10, k_lo=3, exact_max=exact_max)
        assert np.bincount(i, minlength=200).max() <= 10
        sims = vecs @ vecs.T
        np.fill_diagonal(sims, -1)
        best = np.sort(sims[0])[::-1][:10]
        if exact_max == 1000:
            assert np.allclose(np.sort(v[i == 0])[::-1], best, atol=1e-6)  # the 10 most similar, exactly
