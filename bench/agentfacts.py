"""agentfacts: everyday agent facts, recalled by paraphrased questions — and what the prompt hook injects.

    python bench/agentfacts.py                 # recall: memcli vs plain dense vs plain BM25, by language and kind
    python bench/agentfacts.py --gate          # the hook's relevance gate at 10, 100, 1,000 and 10,000 memories
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
    from memcli.service import MemoryService

    return MemoryService.open(load_config(home, env={"MEMCLI_EMBEDDER": "local"}))


def remember_facts(svc: Any, mems: list[dict[str, Any]]) -> dict[str, str]:
    """The memories, written as agents write them; returns memcli id -> agentfacts id."""
    from memcli.service import NewMemory

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


def gate_bench(sizes: list[int], dump: Path | None) -> dict[str, Any]:
    from memcli.config import load_config
    from memcli.hooks.inject import prompt_context, score_hits

    data = load()
    results: dict[str, Any] = {}
    signals: dict[str, Any] = {}
    for size in sizes:
        home, af_of = gate_store(size, data)
        cfg = load_config(home, env={"MEMCLI_EMBEDDER": "local", "MEMCLI_NAMESPACE": NS})
        from memcli.service import MemoryService

        svc = MemoryService.open(cfg)
        present = set(af_of.values())
        answerable = [q for q in data["questions"] if set(q["relevant"]) & present]

        def inject(prompt: str) -> list[str]:
            return prompt_context(svc, prompt, project=None, budget=cfg.hooks.prompt_budget,
                                  top_k=cfg.hooks.prompt_top_k, min_relevance=cfg.hooks.min_score)[1]

        def trace(prompt: str) -> dict[str, Any]:
            hits = svc.recall(prompt, top_k=15, explain=True)
            cos = svc.store.cosines(svc.embedder.embed_query(prompt), None, 50)
            return {"nearest": [round(float(c), 4) for c in cos], "hits": [{"id": af_of.get(s.hit.memory.id, "filler"), "relevance": round(s.relevance, 4),
                     "cosine": s.cosine, "bm25": s.bm25, **{k: s.hit.explain.get(k) for k in ("keyword_coverage", "keyword_match", "similarity")}}
                    for s in score_hits(svc, prompt, hits)]}

        ok, lat = 0, []
        misses = []
        for q in answerable:
            t = time.perf_counter()
            got = {af_of.get(i) for i in inject(q["question"])}
            lat.append((time.perf_counter() - t) * 1000)
            if got & set(q["relevant"]):
                ok += 1
            else:
                misses.append(q["question"])
        noisy = [o for o in data["offtopic"] if inject(o["prompt"])]
        unrelated = [o for o in data["offtopic"] if o["kind"] == "unrelated"]
        noisy_u = [o["prompt"] for o in noisy if o["kind"] == "unrelated"]
        noisy_n = [o["prompt"] for o in noisy if o["kind"] != "unrelated"]
        n_near = len(data["offtopic"]) - len(unrelated)
        if dump is not None:
            signals[str(size)] = {"answerable": [{"q": q["question"], "relevant": q["relevant"],
                                                  **trace(q["question"])} for q in answerable],
                                  "offtopic": [{"q": o["prompt"], **trace(o["prompt"])}
                                               for o in data["offtopic"]]}
        svc.close()
        results[str(size)] = {"answerable": len(answerable), "injected": ok, "unrelated": len(unrelated),
                              "unrelated_injecting": noisy_u, "near_topic": n_near, "near_topic_injecting": noisy_n,
                              "misses": misses[:10], "p50_ms": statistics.median(lat)}
        print(f"{size:>6} memories: answerable prompts whose memory is injected {ok}/{len(answerable)} "
              f"({ok / max(1, len(answerable)):.0%}); off-topic prompts that inject anything: unrelated "
              f"{len(noisy_u)}/{len(unrelated)} ({len(noisy_u) / len(unrelated):.0%}), near-topic {len(noisy_n)}/"
              f"{n_near} ({len(noisy_n) / n_near:.0%}), all {len(noisy)}/{len(data['offtopic'])} "
              f"({len(noisy) / len(data['offtopic']):.0%}); prompt_context p50 {statistics.median(lat):.0f} ms "
              f"(in-process)", flush=True)
        if noisy_u:
            print(f"        unrelated prompts that injected: {noisy_u}")
    print("targets: >= 90% injected at every size, <= 5% of off-topic prompts inject")
    if dump is not None:
        dump.parent.mkdir(parents=True, exist_ok=True)
        dump.write_text(json.dumps(signals, ensure_ascii=False, indent=1))
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gate", action="store_true", help="measure the prompt hook's relevance gate")
    ap.add_argument("--sizes", default="10,100,1000,10000")
    ap.add_argument("--dump", type=Path, default=None, help="write each prompt's scored hits (gate) to this file")
    args = ap.parse_args()
    if args.gate:
        gate_bench([int(s) for s in args.sizes.split(",")], args.dump)
    else:
        recall_bench()


if __name__ == "__main__":
    main()
