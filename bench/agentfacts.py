"""agentfacts: everyday agent facts, recalled by paraphrased questions — and what the prompt hook injects.

    python bench/agentfacts.py                 # recall: memcli vs plain dense vs plain BM25, by language and kind
    python bench/agentfacts.py --gate          # the hook's relevance gate at 10, 100, 1,000 and 10,000 memories
    python bench/agentfacts.py --small         # 20 small stores of 25 memories: hit@1 against plain dense
    python bench/agentfacts.py --gate --sizes 10,100 --dump bench/results/gate.json

The set (bench/data/agentfacts.json, written by hand for memcli, a fictional company) has 186 short memories
from 7 agents in English, 简体, 繁體 and mixed, with near-miss distractors; 385 questions that paraphrase
(some with identifiers only keyword search finds, some across languages); 64 off-topic prompts. Memories
are written through ``remember_many`` with the bundled e5 embedder; every question is asked through
``recall``. Scores: hit@k = a relevant memory in the top k; MRR over the top 10.

``--gate``: stores of 10 and 100 agentfacts memories (a seeded sample), and of 1,000 and 10,000 (all 186
plus filler: LoCoMo turns, CMRC paragraphs and generated developer notes, as bench/hooks.py). For each size,
the share of answerable prompts (questions whose memory is in the store) for which the UserPromptSubmit
hook's ``prompt_context`` injects a relevant memory, and the share of off-topic prompts that inject anything,
with the configured ``hooks.min_score``. Stores are cached under bench/.cache/.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo import PlainBM25  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "agentfacts.json"
CACHE = ROOT / "bench" / ".cache"
NS = "agentfacts"


def load() -> dict[str, Any]:
    return json.loads(DATA.read_text(encoding="utf-8"))


def open_service(home: Path) -> Any:
    from memcli.config import load_config
    from memcli.memory.service import MemoryService

    return MemoryService.open(load_config(home, env={"MEMCLI_EMBEDDER": "local"}))


def remember_facts(svc: Any, mems: list[dict[str, Any]]) -> dict[str, str]:
    """The memories, written as agents write them; returns memcli id -> agentfacts id."""
    from memcli.memory.service import NewMemory

    items = [NewMemory(content=m["content"], agent=m["agent"], tags=m.get("tags"), project=m.get("project"),
                       namespace=NS) for m in mems]
    return {r.memory_id: m["id"] for m, r in zip(mems, svc.remember_many(items, source="cli"))}


# ------------------------------------------------------------------------------------------------ recall
def scores(ranked: list[list[str]], gold: list[set[str]]) -> dict[str, float]:
    h1 = np.mean([bool(r[:1] and r[0] in g) for r, g in zip(ranked, gold)])
    h5 = np.mean([bool(set(r[:5]) & g) for r, g in zip(ranked, gold)])
    mrr = np.mean([next((1 / (i + 1) for i, m in enumerate(r[:10]) if m in g), 0.0) for r, g in zip(ranked, gold)])
    return {"hit@1": float(h1), "hit@5": float(h5), "MRR": float(mrr)}


def recall_bench() -> dict[str, Any]:
    import tempfile

    data = load()
    home = Path(tempfile.mkdtemp(prefix="memcli-agentfacts-"))
    svc = open_service(home)
    t0 = time.perf_counter()
    af_of = remember_facts(svc, data["memories"])
    print(f"agentfacts: {len(af_of)} memories stored in {time.perf_counter() - t0:.0f}s; "
          f"{len(data['questions'])} questions", flush=True)
    mems = svc.store.scan(f"namespace = '{NS}'", with_vector=True)
    ids = [af_of[m.id] for m in mems]
    mat = np.asarray([m.vector for m in mems], dtype=np.float32)
    bm = PlainBM25([m.content for m in mems])
    runs: dict[str, list[list[str]]] = defaultdict(list)
    lat = []
    for q in data["questions"]:
        t = time.perf_counter()
        hits = svc.recall(q["question"], top_k=10, namespace=NS)
        lat.append((time.perf_counter() - t) * 1000)
        runs["memcli recall"].append([af_of[h.memory.id] for h in hits])
        qv = svc.embedder.embed_query(q["question"])
        runs["plain dense (e5)"].append([ids[i] for i in np.argsort(-(mat @ qv), kind="stable")[:10]])
        runs["plain BM25"].append([ids[i] for i in np.argsort(-bm.scores(q["question"]), kind="stable")[:10]])
    svc.close()
    gold = [set(q["relevant"]) for q in data["questions"]]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(data["questions"]):
        groups[q["lang"]].append(i)
        groups[q["kind"]].append(i)
    print(f"\n{'retriever':<18}{'hit@1':>7}{'hit@5':>7}{'MRR':>7}   hit@1 by group")
    gnames = sorted(groups)
    print(" " * 39 + "  ".join(f"{g}({len(groups[g])})" for g in gnames))
    out: dict[str, Any] = {}
    for name, ranked in runs.items():
        s = scores(ranked, gold)
        by = {g: scores([ranked[i] for i in ix], [gold[i] for i in ix])["hit@1"] for g, ix in groups.items()}
        out[name] = {**s, "groups": by}
        print(f"{name:<18}{s['hit@1']:>7.3f}{s['hit@5']:>7.3f}{s['MRR']:>7.3f}   "
              + "  ".join(f"{by[g]:>{len(g) + len(str(len(groups[g]))) + 2}.3f}" for g in gnames))
    ours, dense = out["memcli recall"], out["plain dense (e5)"]
    below = [g for g in ("en", "zh-Hans", "zh-Hant", "mixed") if ours["groups"][g] < dense["groups"][g]]
    print(f"\nmemcli hit@1 {ours['hit@1']:.3f} vs plain dense {dense['hit@1']:.3f} "
          f"({ours['hit@1'] - dense['hit@1']:+.3f}; targets: >= 0.92 and >= dense + 0.04); hit@5 {ours['hit@5']:.3f} "
          f"(target >= 0.98); language groups below dense: {below or 'none'}")
    print(f"recall latency p50 {statistics.median(lat):.1f} ms, p95 {np.percentile(lat, 95):.1f} ms")
    return out


# ------------------------------------------------------------------------------------------------ small stores
def small_bench(draws: int = 20, size: int = 25) -> dict[str, Any]:
    """A new user's first weeks: ``draws`` stores of ``size`` agentfacts memories (seeded random samples) with
    the questions they answer; memcli's hit@1 against plain dense retrieval over the same vectors."""
    import tempfile

    data = load()
    rows = []
    for seed in range(draws):
        rng = random.Random(1000 + seed)
        mems = rng.sample(data["memories"], size)
        present = {m["id"] for m in mems}
        qs = [q for q in data["questions"] if set(q["relevant"]) & present]
        home = Path(tempfile.mkdtemp(prefix="memcli-agentfacts-small-"))
        svc = open_service(home)
        af_of = remember_facts(svc, mems)
        stored = svc.store.scan(f"namespace = '{NS}'", with_vector=True)
        ids = [af_of[m.id] for m in stored]
        mat = np.asarray([m.vector for m in stored], dtype=np.float32)
        ours = dense = 0
        for q in qs:
            gold = set(q["relevant"])
            hits = svc.recall(q["question"], top_k=1, namespace=NS)
            ours += bool(hits and af_of[hits[0].memory.id] in gold)
            qv = svc.embedder.embed_query(q["question"])
            dense += ids[int(np.argmax(mat @ qv))] in gold
        svc.close()
        rows.append((len(qs), ours / len(qs), dense / len(qs)))
        print(f"  draw {seed:>2}: {len(qs):>3} questions  memcli hit@1 {ours / len(qs):.3f}  plain dense "
              f"{dense / len(qs):.3f}  ({(ours - dense) / len(qs):+.3f})", flush=True)
    diffs = [o - d for _, o, d in rows]
    print(f"small stores ({draws} draws of {size} memories): memcli hit@1 mean {np.mean([o for _, o, _ in rows]):.3f}"
          f", plain dense {np.mean([d for _, _, d in rows]):.3f} (mean difference {np.mean(diffs):+.3f}, worst draw "
          f"{min(diffs):+.3f}; targets: mean >= dense, no draw below dense - 0.04)")
    return {"rows": rows}


# ------------------------------------------------------------------------------------------------ gate
def filler(n: int, rng: random.Random) -> list[str]:
    from hooks import corpus

    texts = corpus(random.Random(42))
    rng.shuffle(texts)
    return texts[:n]


def gate_store(size: int, data: dict[str, Any]) -> tuple[Path, dict[str, str]]:
    """A cached store of ``size`` memories: a sample of agentfacts (all of it from 1,000 up) plus filler."""
    home = CACHE / f"agentfacts-gate-{size}"
    marker = home / "facts.json"
    if marker.exists():
        return home, json.loads(marker.read_text())
    import shutil

    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    rng = random.Random(size)
    mems = data["memories"] if size >= len(data["memories"]) else rng.sample(data["memories"], size)
    svc = open_service(home)
    af_of = remember_facts(svc, mems)
    extra = size - len(mems)
    if extra:
        now = int(time.time() * 1000)
        recs = [{"content": t, "namespace": NS, "created_at": now - rng.randrange(0, 180 * 86_400_000),
                 "scope": "global", "source": "import"} for t in filler(extra, rng)]
        t0 = time.time()
        svc.import_records(recs, progress=lambda d, n: print(f"  {size}: filler {d}/{n} "
                                                             f"({d / max(1e-9, time.time() - t0):.0f}/s)",
                                                             file=sys.stderr, flush=True) if d % 640 == 0 else None)
    svc.compact()
    svc.close()
    marker.write_text(json.dumps(af_of))
    return home, af_of


def gate_service(size: int, data: dict[str, Any]) -> tuple[Any, Any, dict[str, str]]:
    """The cached store of ``size`` memories opened as the hook's server opens it: (service, its ``[hooks]``
    settings, memcli id -> agentfacts id)."""
    from memcli.config import load_config
    from memcli.memory.service import MemoryService

    home, af_of = gate_store(size, data)
    cfg = load_config(home, env={"MEMCLI_EMBEDDER": "local", "MEMCLI_NAMESPACE": NS})
    return MemoryService.open(cfg), cfg.hooks, af_of


def gate_bench(sizes: list[int], dump: Path | None, sweep: bool = False) -> dict[str, Any]:
    """The prompt hook at each store size, as it runs: its candidates (``inject.candidates``: the hook's query,
    recall, relevance) composed into the block (``inject.compose``: full text, then index lines) with the
    configured ``[hooks]`` settings; ``sweep`` also tries other index settings on the same candidates."""
    from memcli.distill.condense import estimate_tokens
    from memcli.hooks.inject import candidates, compose, score_hits, tiers

    data = load()
    results: dict[str, Any] = {}
    signals: dict[str, Any] = {}
    for size in sizes:
        svc, h, af_of = gate_service(size, data)
        present = set(af_of.values())
        answerable = [q for q in data["questions"] if set(q["relevant"]) & present]

        def scored_of(prompt: str) -> list[Any]:
            return candidates(svc, prompt, project=None, top_k=h.prompt_top_k, index_top_k=h.index_top_k,
                              lift=h.other_script_lift)

        def trace(prompt: str) -> dict[str, Any]:
            hits = svc.recall(prompt, top_k=15, explain=True)
            cos = svc.store.cosines(svc.embedder.embed_query(prompt), None, 50)
            return {"nearest": [round(float(c), 4) for c in cos], "hits": [{"id": af_of.get(s.hit.memory.id, "filler"), "relevance": round(s.relevance, 4),
                     "cosine": s.cosine, "bm25": s.bm25, **{k: s.hit.explain.get(k) for k in ("keyword_coverage", "keyword_match", "similarity")}}
                    for s in score_hits(hits)]}

        lat = []
        ans_scored, off_scored, top5 = [], [], 0
        for q in answerable:
            t = time.perf_counter()
            sc = scored_of(q["question"])
            lat.append((time.perf_counter() - t) * 1000)
            ans_scored.append((q, sc))
            recalled = [af_of.get(s.hit.memory.id) for s in sorted(sc, key=lambda s: s.order)[:5]]
            top5 += bool(set(recalled) & set(q["relevant"]))
        for o in data["offtopic"]:
            off_scored.append((o, scored_of(o["prompt"])))

        def evaluate(index_min: float | None, index_top_k: int, index_budget: int,
                     min_score: float | None = None) -> dict[str, Any]:
            def run(sc: list[Any]) -> tuple[str | None, list[str], list[str]]:
                return compose(sc, project=None, **{**tiers(h), "index_min": index_min, "index_top_k": index_top_k,
                                                     "index_budget": index_budget, "min_relevance":
                                                     h.min_score if min_score is None else min_score})

            full = reach = 0
            misses = []
            for q, sc in ans_scored:
                _, ids, listed = run(sc)
                gold = set(q["relevant"])
                full += bool({af_of.get(i) for i in ids} & gold)
                got = bool({af_of.get(i) for i in ids + listed} & gold)
                reach += got
                if not got:
                    misses.append(q["question"])
            off_full = off_any = 0
            tokens = []
            for o, sc in off_scored:
                text, ids, listed = run(sc)
                off_full += bool(ids)
                off_any += bool(ids or listed)
                tokens.append(estimate_tokens(text) if text else 0)
            n = max(1, len(answerable))
            return {"full": full / n, "reach": reach / n, "offtopic_full": off_full / len(off_scored),
                    "offtopic_any": off_any / len(off_scored), "offtopic_tokens": statistics.mean(tokens),
                    "misses": misses[:10]}

        if dump is not None:  # each prompt's candidates, for tuning the tiers offline
            def rows(sc: list[Any], gold: set[str]) -> list[list[Any]]:
                return [[af_of.get(s.hit.memory.id) in gold, round(s.relevance, 4), round(s.hit.score, 4),
                         len(s.hit.memory.content)] for s in sc]

            signals[f"candidates-{size}"] = {
                "answerable": [rows(sc, set(q["relevant"])) for q, sc in ans_scored],
                "offtopic": [rows(sc, set()) for _, sc in off_scored]}
        r = evaluate(h.index_min_score, h.index_top_k, h.index_budget)
        r.update(answerable=len(answerable), top5=top5 / max(1, len(answerable)), p50_ms=statistics.median(lat))
        results[str(size)] = r
        print(f"{size:>6} memories ({len(answerable)} answerable prompts, {len(off_scored)} off-topic): memory "
              f"reaches the model {r['reach']:.0%} (in full {r['full']:.0%}); gold in the hook's top 5 "
              f"{r['top5']:.0%}; off-topic: full text {r['offtopic_full']:.0%}, anything {r['offtopic_any']:.0%}, "
              f"mean {r['offtopic_tokens']:.0f} tokens; candidates p50 {r['p50_ms']:.0f} ms (in-process)", flush=True)
        if sweep:
            for ms in (0.55, 0.65, 0.75, 0.85):
                for imin in (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45):
                    for k in (3, 5):
                        e = evaluate(imin, k, h.index_budget, ms)
                        print(f"        min_score {ms:.2f} index_min {imin:.2f} top {k}: reach {e['reach']:.0%} "
                              f"(full {e['full']:.0%}), off-topic full {e['offtopic_full']:.0%}, anything "
                              f"{e['offtopic_any']:.0%}, mean {e['offtopic_tokens']:.0f} tokens")
        if dump is not None:
            signals[str(size)] = {"answerable": [{"q": q["question"], "relevant": q["relevant"],
                                                  **trace(q["question"])} for q in answerable],
                                  "offtopic": [{"q": o["prompt"], **trace(o["prompt"])}
                                               for o in data["offtopic"]]}
        svc.close()
    print("targets: memory reaches the model >= 90% / 80% / 70% at 100 / 1,000 / 10,000; gold in the top 5 "
          ">= 85% / 75% at 1,000 / 10,000; off-topic: full text <= 5%, mean <= 60 tokens")
    if dump is not None:
        dump.parent.mkdir(parents=True, exist_ok=True)
        dump.write_text(json.dumps(signals, ensure_ascii=False, indent=1))
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gate", action="store_true", help="measure the prompt hook's relevance gate")
    ap.add_argument("--small", action="store_true", help="small stores: 20 draws of 25 memories, hit@1 vs dense")
    ap.add_argument("--sizes", default="10,100,1000,10000")
    ap.add_argument("--dump", type=Path, default=None, help="write each prompt's scored hits (gate) to this file")
    ap.add_argument("--sweep", action="store_true", help="with --gate: also try other index-line settings")
    args = ap.parse_args()
    if args.small:
        small_bench()
    elif args.gate:
        gate_bench([int(s) for s in args.sizes.split(",")], args.dump, args.sweep)
    else:
        recall_bench()


if __name__ == "__main__":
    main()
