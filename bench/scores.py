"""Do scores mean something? Off-topic questions' best hit and answering memories, per embedder.

    python bench/scores.py                       # the bundled e5 (`local`) and `hash`, every set
    python bench/scores.py --embedders local --sets agentfacts --dump bench/results/scores.json

Stores (cached under bench/.cache/): agentfacts' 186 memories (bench/data/agentfacts.json), the LoCoMo dev
conversations (one namespace each, as bench/locomo.py stores them) and the CMRC 2018 trial paragraphs
(as bench/cmrc.py). Answering queries: each set's own questions (a seeded sample of ``--limit`` per set);
an answering memory is the question's gold memory when recall ranks it in the top 5. Off-topic queries:
bench/data/offtopic.json (90 questions in English and Chinese about nothing stored: geography, cooking,
sports, trivia, and ones sharing a word with a store), asked against every store (every LoCoMo conversation).

Printed per embedder and set, for recall's ``score`` (the calibrated relevance, capped best-first), the hit's
own ``relevance`` and the old rank-fused value (``explain.fused``, what ``score`` was before issue 28) from
the same recalls: the share of off-topic questions whose best hit scores >= 0.5 (target <= 1 in 8) and the
share of answering memories scoring >= 0.5 (target >= 80%). Never gates CI.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo import DATA as LOCOMO_DATA  # noqa: E402
from locomo import load as load_locomo  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "bench" / ".cache"
AGENTFACTS = ROOT / "bench" / "data" / "agentfacts.json"
OFFTOPIC = ROOT / "bench" / "data" / "offtopic.json"
CMRC = ROOT.parent / "shared" / "data" / "cmrc2018-trial.json"
SIGNALS = ("relevance", "fused", "cosine", "baseline_cosine", "keyword_match", "context_cosine")


def offtopic() -> list[str]:
    return [q["question"] for q in json.loads(OFFTOPIC.read_text(encoding="utf-8"))["questions"]]


def open_service(home: Path, embedder: str) -> Any:
    from memcli.config import load_config
    from memcli.memory.service import MemoryService

    return MemoryService.open(load_config(home, env={"MEMCLI_EMBEDDER": embedder}))


def cached_store(name: str, embedder: str, build: Any) -> tuple[Any, dict[str, Any]]:
    """The service over a store built once by ``build(svc) -> mapping`` (kept beside it as JSON)."""
    home = CACHE / f"scores-{name}-{embedder}"
    marker = home / "mapping.json"
    if not marker.exists():
        import shutil

        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        svc = open_service(home, embedder)
        t0 = time.perf_counter()
        mapping = build(svc)
        svc.compact()
        svc.close()
        marker.write_text(json.dumps(mapping))
        print(f"  {name}: store built in {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    return open_service(home, embedder), json.loads(marker.read_text())


# ------------------------------------------------------------------------------------------- the sets
# Each set: (namespaces, answering questions as (namespace, question, gold memory ids)).
def agentfacts_set(embedder: str) -> tuple[Any, list[str], list[tuple[str, str, set[str]]]]:
    from memcli.memory.service import NewMemory

    data = json.loads(AGENTFACTS.read_text(encoding="utf-8"))

    def build(svc: Any) -> dict[str, Any]:
        items = [NewMemory(content=m["content"], agent=m["agent"], tags=m.get("tags"), project=m.get("project"),
                           namespace="agentfacts") for m in data["memories"]]
        return {m["id"]: r.memory_id for m, r in zip(data["memories"], svc.remember_many(items, source="cli"))}

    svc, mem_of = cached_store("agentfacts", embedder, build)
    qs = [("agentfacts", q["question"], {mem_of[r] for r in q["relevant"]}) for q in data["questions"]]
    return svc, ["agentfacts"], qs


def locomo_set(embedder: str) -> tuple[Any, list[str], list[tuple[str, str, set[str]]]]:
    from memcli.memory.service import NewMemory

    convs = load_locomo(LOCOMO_DATA)[:CONVERSATIONS[0]]

    def build(svc: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for c in convs:
            items = [NewMemory(content=t["text"], namespace=f"locomo-{c['id']}", thread=f"session-{t['session']}",
                               created_at=t["ts"]) for t in c["turns"]]
            for t, r in zip(c["turns"], svc.remember_many(items, source="import")):
                out[f"{c['id']}/{t['dia_id']}"] = r.memory_id
        return out

    svc, mem_of = cached_store(f"locomo{len(convs)}", embedder, build)
    qs = [(f"locomo-{c['id']}", q["q"], {mem_of[f"{c['id']}/{d}"] for d in q["gold"]})
          for c in convs for q in c["questions"]]
    return svc, [f"locomo-{c['id']}" for c in convs], qs


def cmrc_set(embedder: str) -> tuple[Any, list[str], list[tuple[str, str, set[str]]]]:
    from memcli.memory.service import NewMemory

    paras: list[str] = []
    pairs: list[tuple[str, int]] = []
    for art in json.loads(CMRC.read_text(encoding="utf-8"))["data"]:
        for p in art["paragraphs"]:
            pairs += [(qa["question"], len(paras)) for qa in p["qas"] if qa["question"].strip()]
            paras.append(p["context"])

    def build(svc: Any) -> dict[str, Any]:
        res = svc.remember_many([NewMemory(content=p, namespace="cmrc") for p in paras], source="import")
        return {str(i): r.memory_id for i, r in enumerate(res)}

    svc, mem_of = cached_store("cmrc", embedder, build)
    return svc, ["cmrc"], [("cmrc", q, {mem_of[str(i)]}) for q, i in pairs]


CONVERSATIONS = [5]  # how many LoCoMo conversations (--conversations)
SETS = {"agentfacts": agentfacts_set, "locomo": locomo_set, "cmrc": cmrc_set}


# ------------------------------------------------------------------------------------------- measuring
def signals(hit: Any) -> dict[str, Any]:
    ex = hit.explain or {}
    return {"score": round(hit.score, 4), **{k: ex.get(k) for k in SIGNALS}}


def measure(svc: Any, namespaces: list[str], questions: list[tuple[str, str, set[str]]],
            off: list[str]) -> dict[str, Any]:
    """Each answering question's gold hit in the top 5 (or None) and each off-topic question's best hit,
    with their signals."""
    answering = []
    for ns, q, gold in questions:
        hits = svc.recall(q, namespace=ns, top_k=5, explain=True, words=False)
        found = next(((i, h) for i, h in enumerate(hits) if h.memory.id in gold), None)
        answering.append({"q": q, "rank": found[0] if found else None,
                          **(signals(found[1]) if found else {}),
                          "best": signals(hits[0]) if hits else None})
    offs = []
    for ns in namespaces:
        for q in off:
            hits = svc.recall(q, namespace=ns, top_k=5, explain=True, words=False)
            offs.append({"q": q, "ns": ns, "best": signals(hits[0]) if hits else None,
                         "max_relevance": max((h.relevance or 0.0 for h in hits), default=0.0)})
    return {"answering": answering, "offtopic": offs}


def rate(values: list[float | None], threshold: float = 0.5) -> float:
    return sum(1 for v in values if v is not None and v >= threshold) / max(1, len(values))


def report(name: str, m: dict[str, Any]) -> dict[str, float]:
    found = [a for a in m["answering"] if a["rank"] is not None]
    best = [o["best"] or {} for o in m["offtopic"]]
    out = {
        "offtopic_score": rate([b.get("score") for b in best]),
        "offtopic_relevance_any": rate([o["max_relevance"] for o in m["offtopic"]]),
        "offtopic_fused": rate([b.get("fused") for b in best]),
        "answering_score": rate([a["score"] for a in found]),
        "answering_relevance": rate([a["relevance"] for a in found]),
        "answering_fused": rate([a["fused"] for a in found]),
        "answering_top1_score": rate([a["score"] for a in found if a["rank"] == 0]),
        "found": len(found) / max(1, len(m["answering"])),
    }
    print(f"{name:<18} off-topic best >= 0.5: score {out['offtopic_score']:6.1%} (any hit's relevance "
          f"{out['offtopic_relevance_any']:5.1%}) | old fused {out['offtopic_fused']:6.1%}   answering memories "
          f">= 0.5: score {out['answering_score']:6.1%} (relevance {out['answering_relevance']:5.1%}; at rank 1 "
          f"{out['answering_top1_score']:5.1%}) | old fused {out['answering_fused']:6.1%}   "
          f"[{len(m['offtopic'])} off-topic, {len(found)}/{len(m['answering'])} answers in the top 5]", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--embedders", default="local,hash")
    ap.add_argument("--sets", default="agentfacts,locomo,cmrc")
    ap.add_argument("--limit", type=int, default=400, help="answering questions per set (a seeded sample)")
    ap.add_argument("--conversations", type=int, default=5, help="LoCoMo conversations to store (1-5)")
    ap.add_argument("--dump", type=Path, default=None, help="write every measured hit's signals to this file")
    args = ap.parse_args()
    CONVERSATIONS[0] = args.conversations
    off = offtopic()
    dump: dict[str, Any] = {}
    summary: dict[str, Any] = {}
    for emb in args.embedders.split(","):
        print(f"\nembedder {emb}", flush=True)
        allm: dict[str, list[Any]] = {"answering": [], "offtopic": []}
        for name in args.sets.split(","):
            svc, namespaces, qs = SETS[name](emb)
            if len(qs) > args.limit:
                qs = random.Random(28).sample(qs, args.limit)
            t0 = time.perf_counter()
            m = measure(svc, namespaces, qs, off)
            svc.close()
            summary[f"{emb}/{name}"] = report(name, m)
            print(f"{'':<18} ({time.perf_counter() - t0:.0f}s)", file=sys.stderr, flush=True)
            dump[f"{emb}/{name}"] = m
            for k in allm:
                allm[k] += m[k]
            if args.dump:  # after each set: a long run's signals are kept as they come
                args.dump.parent.mkdir(parents=True, exist_ok=True)
                args.dump.write_text(json.dumps(dump, ensure_ascii=False))
        summary[f"{emb}/all"] = report("all sets", allm)
    print("\ntargets: off-topic best hit >= 0.5 in at most 1 of 8 (12.5%); answering memories >= 0.5: >= 80%")


if __name__ == "__main__":
    main()
