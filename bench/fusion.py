"""Fusion study: every candidate way of fusing recall's lists, judged on every benchmark set in one run.

    python bench/fusion.py                       # LoCoMo dev, CMRC trial, agentfacts; cached stores
    python bench/fusion.py --sets agentfacts --show minmax,dense --misses 10

Each set is written once through memcli's own write path (``remember_many``, the bundled e5 embedder) into a
store cached under bench/.cache/fusion/. For every question the harness keeps what recall sees before fusion
— the keyword (BM25, memcli's FTS index), own-vector and context-vector candidate lists of the store, with
their raw scores — plus each query token's document frequency (``lance.tokenize``, the index's own
tokenizer). Fusions are then plain functions of those lists, so dozens are compared on identical inputs,
beside plain dense (cosine over every memory) and plain BM25 (``\\w+`` tokens) in the same run.

The fusion memcli ships is ``search.relevance`` (selected by measurement here; see bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo import PlainBM25  # noqa: E402
from locomo import load as load_locomo

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
CACHE = ROOT / "bench" / ".cache" / "fusion"
AGENTFACTS = ROOT / "bench" / "data" / "agentfacts.json"
K = 50  # candidates per list, as recall


@dataclass
class Query:
    text: str
    gold: set[str]
    group: str
    namespace: str
    qvec: Any = None
    text_hits: list[tuple[str, float]] = field(default_factory=list)
    vector_hits: list[tuple[str, float]] = field(default_factory=list)
    context_hits: list[tuple[str, float]] = field(default_factory=list)
    tokens: list[tuple[str, int]] = field(default_factory=list)  # (token, document frequency)
    n_docs: int = 0
    dense: list[str] = field(default_factory=list)  # plain dense ranking (top 50 memory ids)
    bm25: list[str] = field(default_factory=list)  # plain BM25 ranking (top 50)
    top1: dict[str, float] = field(default_factory=dict)  # token -> best score of that token alone
    live: list[str] = field(default_factory=list)  # what memcli's recall returns (top 10)


@dataclass
class DataSet:
    name: str
    metric: str  # the headline metric
    queries: list[Query]
    keys_of: dict[str, set[str]]  # memory id -> the gold keys it stands for


# ------------------------------------------------------------------------------------------ the data sets
def locomo_items() -> tuple[list[tuple[Any, str]], list[tuple[str, set[str], str, str]]]:
    from memcli.memory.service import NewMemory

    items, qs = [], []
    for c in load_locomo(SHARED / "locomo10-dev.json"):
        ns = f"locomo-{c['id']}"
        for t in c["turns"]:
            items.append((NewMemory(content=t["text"], namespace=ns, thread=f"session-{t['session']}",
                                    created_at=t["ts"]), t["dia_id"]))
        cats = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
        qs += [(q["q"], q["gold"], cats[q["cat"]], ns) for q in c["questions"]]
    return items, qs


def cmrc_items() -> tuple[list[tuple[Any, str]], list[tuple[str, set[str], str, str]]]:
    from memcli.memory.service import NewMemory

    data = json.loads((SHARED / "cmrc2018-trial.json").read_text())
    items, qs = [], []
    for art in data["data"]:
        for p in art["paragraphs"]:
            pid = p["id"]
            items.append((NewMemory(content=p["context"], namespace="cmrc"), pid))
            for qa in p["qas"]:
                if qa["question"].strip():
                    qs.append((qa["question"], {pid}, "zh", "cmrc"))
    return items, qs


def agentfacts_items() -> tuple[list[tuple[Any, str]], list[tuple[str, set[str], str, str]]]:
    from memcli.memory.service import NewMemory

    data = json.loads(AGENTFACTS.read_text())
    items = [(NewMemory(content=m["content"], namespace="agentfacts", agent=m["agent"], tags=m.get("tags"),
                        project=m.get("project")), m["id"]) for m in data["memories"]]
    qs = [(q["question"], set(q["relevant"]), f"{q['lang']}/{q['kind']}", "agentfacts") for q in data["questions"]]
    return items, qs


SETS: dict[str, tuple[str, Callable[[], Any]]] = {
    "locomo": ("R@5", locomo_items), "cmrc": ("hit@1", cmrc_items), "agentfacts": ("hit@1", agentfacts_items),
}


FEATURES = 6  # bump when what is kept per question changes


def build(name: str, rebuild: bool = False) -> DataSet:
    """The set's store (cached; rebuilt when its memories change) and, for every question, the lists
    recall fuses (cached; recomputed when the questions change)."""
    import hashlib

    from memcli.config import load_config
    from memcli.memory.service import MemoryService

    metric, loader = SETS[name]
    items, qs = loader()
    home = CACHE / name
    stamp, feats = home / "stamp.json", home / "queries.pkl"
    fp = hashlib.sha1("\x00".join(f"{i.namespace}\x01{i.content}" for i, _ in items).encode()).hexdigest()
    qfp = hashlib.sha1(repr([(q, sorted(g), grp) for q, g, grp, _ in qs]).encode()).hexdigest()
    meta = json.loads(stamp.read_text()) if stamp.exists() else {}
    if not rebuild and meta.get("fp") == fp and ("keys_of" in meta or feats.exists()):
        if meta.get("qfp") == qfp and meta.get("features") == FEATURES and feats.exists():
            return pickle.loads(feats.read_bytes())
        svc = MemoryService.open(load_config(home, env={"MEMCLI_EMBEDDER": "local"}))
        keys_of = ({k: set(v) for k, v in meta["keys_of"].items()} if "keys_of" in meta
                   else pickle.loads(feats.read_bytes()).keys_of)
    else:
        import shutil

        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        svc = MemoryService.open(load_config(home, env={"MEMCLI_EMBEDDER": "local"}))
        t0 = time.perf_counter()
        keys_of = defaultdict(set)
        for start in range(0, len(items), 512):
            chunk = items[start:start + 512]
            for (_, key), r in zip(chunk, svc.remember_many([i for i, _ in chunk], source="import")):
                keys_of[r.memory_id].add(key)
            print(f"  {name}: {min(start + 512, len(items))}/{len(items)} memories", flush=True)
        svc.compact()
        print(f"  {name}: stored in {time.perf_counter() - t0:.0f}s", flush=True)
    queries = features(svc, qs)
    svc.close()
    ds = DataSet(name, metric, queries, dict(keys_of))
    feats.write_bytes(pickle.dumps(ds))
    stamp.write_text(json.dumps({"fp": fp, "qfp": qfp, "features": FEATURES,
                                 "keys_of": {k: sorted(v) for k, v in keys_of.items()}}))
    return ds


def features(svc: Any, qs: list[tuple[str, set[str], str, str]]) -> list[Query]:
    import lance

    from memcli.memory.search import build_where
    from memcli.textnorm import query_text

    by_ns: dict[str, tuple[list[str], np.ndarray, PlainBM25, Counter, int]] = {}
    queries = []
    for qtext, gold, group, ns in qs:
        if ns not in by_ns:
            mems = svc.store.scan(f"namespace = '{ns}'", with_vector=True)
            df: Counter = Counter()
            for r in svc.store.reader.rows(f"namespace = '{ns}'", ["search_text"]):  # what the index holds
                df.update({t.text for t in _tok(lance, r["search_text"])})
            by_ns[ns] = ([m.id for m in mems], np.asarray([m.vector for m in mems], dtype=np.float32),
                         PlainBM25([m.content for m in mems]), df, len(mems))
        ids, mat, bm, df, n = by_ns[ns]
        q = Query(qtext, gold, group, ns)
        q.qvec = svc.embedder.embed_query(qtext)
        where = build_where(namespace=ns)
        cands = svc.store.search(text=qtext, vector=q.qvec, where=where, k=K, context=svc.store.has_context())
        rows = svc.store.fetch(cands, list({k for k, _ in cands.text + cands.vector + cands.context}))
        q.text_hits = [(rows[k].id, s) for k, s in cands.text]
        q.vector_hits = [(rows[k].id, s) for k, s in cands.vector]
        q.context_hits = [(rows[k].id, s) for k, s in cands.context]
        q.tokens = [(t, df.get(t, 0)) for t in dict.fromkeys(x.text for x in _tok(lance, query_text(qtext)))]
        snap = svc.store.reader.snapshot()
        q.top1 = {}
        for t, _ in q.tokens:  # the best single memory's score for each token alone
            hit = svc.store.reader.text(snap, t, "search_text", where, 1, [])
            q.top1[t] = float(hit[0]["_score"]) if hit else 0.0
        q.n_docs = n
        q.live = [h.memory.id for h in svc.recall(qtext, namespace=ns, top_k=10)]
        q.dense = [ids[i] for i in np.argsort(-(mat @ q.qvec), kind="stable")[:K]]
        q.bm25 = [ids[i] for i in np.argsort(-bm.scores(qtext), kind="stable")[:K]]
        queries.append(q)
    return queries


def _tok(lance: Any, text: str) -> list[Any]:
    from memcli.textnorm import STOP_WORDS

    return lance.tokenize(text, base_tokenizer="icu", language="English", stem=True, remove_stop_words=True,
                          custom_stop_words=list(STOP_WORDS), lower_case=True, ascii_folding=True)


# ------------------------------------------------------------------------------------------ metrics
def evaluate(ds: DataSet, ranking: Callable[[Query], list[str]]) -> dict[str, Any]:
    per: list[tuple[str, dict[str, float]]] = []
    for q in ds.queries:
        ranked = [ds.keys_of.get(m, {m}) for m in ranking(q)]
        top = lambda k: set().union(*ranked[:k]) if ranked else set()  # noqa: E731
        rr = next((1 / (i + 1) for i, d in enumerate(ranked[:10]) if d & q.gold), 0.0)
        per.append((q.group, {"R@5": len(q.gold & top(5)) / len(q.gold), "hit@1": float(bool(top(1) & q.gold)),
                              "hit@5": float(bool(top(5) & q.gold)), "MRR": rr}))
    out: dict[str, Any] = {k: float(np.mean([m[k] for _, m in per])) for k in ("R@5", "hit@1", "hit@5", "MRR")}
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for g, m in per:
        groups[g].append(m)
        groups[g.split("/")[0]].append(m) if "/" in g else None
        groups[g.split("/")[1]].append(m) if "/" in g else None
    out["groups"] = {g: (len(ms), float(np.mean([m[ds.metric] for m in ms]))) for g, ms in groups.items()
                     if "/" not in g}
    return out


# ------------------------------------------------------------------------------------------ fusions
def _minmax(hits: list[tuple[str, float]]) -> dict[str, float]:
    if not hits:
        return {}
    vals = [s for _, s in hits]
    lo, hi = min(vals), max(vals)
    return {m: (s - lo) / (hi - lo) if hi - lo > 1e-12 else 1.0 for m, s in hits}


def order(scores: dict[str, float]) -> list[str]:
    return [m for m, _ in sorted(scores.items(), key=lambda kv: -kv[1])][:K]


def lists(q: Query) -> tuple[list, list]:
    """(own, context) vector lists; context = own when the store has no thread context."""
    return q.vector_hits, (q.context_hits or q.vector_hits)


def convex(parts: list[tuple[dict[str, float], float]]) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for d, w in parts:
        for m, s in d.items():
            out[m] += w * s
    return out


def f_minmax(q: Query, wt: float = 0.5) -> list[str]:
    own, ctx = lists(q)
    wv = (1 - wt) / 2
    return order(convex([(_minmax(q.text_hits), wt), (_minmax(own), wv), (_minmax(ctx), wv)]))


def f_rrf(q: Query, k: float = 60, wt: float = 0.5) -> list[str]:
    own, ctx = lists(q)
    wv = (1 - wt) / 2
    r = lambda hits: {m: 1 / (k + i + 1) for i, (m, _) in enumerate(hits)}  # noqa: E731
    return order(convex([(r(q.text_hits), wt), (r(own), wv), (r(ctx), wv)]))


def idf(df: int, n: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def ideal_bm25(q: Query) -> float:
    """The score a document holding every query token once (at average length) would get: Σ idf."""
    return sum(idf(df, q.n_docs) for _, df in q.tokens) or 1.0


def f_idfnorm(q: Query, wt: float = 0.5, vnorm: str = "minmax", power: float = 1.0) -> list[str]:
    """BM25 / the query's ideal BM25 (clipped to 1): a lone match of one of three terms scores ~1/3."""
    own, ctx = lists(q)
    wv = (1 - wt) / 2
    ideal = ideal_bm25(q)
    text = {m: min(1.0, s / ideal) ** power for m, s in q.text_hits}
    vn = _minmax if vnorm == "minmax" else _vcal
    return order(convex([(text, wt), (vn(own), wv), (vn(ctx), wv)]))


def _vcal(hits: list[tuple[str, float]], lo: float = 0.70, hi: float = 0.95) -> dict[str, float]:
    return {m: max(0.0, min(1.0, (s - lo) / (hi - lo))) for m, s in hits}


def f_textminmax_idfscaled(q: Query, wt: float = 0.5) -> list[str]:
    """min-max BM25, its weight scaled by the best hit's share of the query's ideal score."""
    own, ctx = lists(q)
    ideal = ideal_bm25(q)
    strength = min(1.0, max((s for _, s in q.text_hits), default=0.0) / ideal)
    w = wt * strength
    wv = (1 - w) / 2
    return order(convex([(_minmax(q.text_hits), w), (_minmax(own), wv), (_minmax(ctx), wv)]))


def f_maxnorm(q: Query, wt: float = 0.5) -> list[str]:
    """BM25 / its best hit (no min subtraction), vectors min-max."""
    own, ctx = lists(q)
    wv = (1 - wt) / 2
    mx = max((s for _, s in q.text_hits), default=1.0) or 1.0
    return order(convex([({m: s / mx for m, s in q.text_hits}, wt), (_minmax(own), wv), (_minmax(ctx), wv)]))


def ideal_present(q: Query) -> float:
    """Σ idf over the query tokens that some memory holds (a token no memory holds cannot be matched)."""
    return sum(idf(df, q.n_docs) for _, df in q.tokens if df > 0) or 1.0


def f_cover(q: Query, wt: float = 0.5, ideal: Callable[[Query], float] = ideal_present, vnorm: str = "minmax",
            tnorm: str = "ideal", power: float = 1.0) -> list[str]:
    """BM25 over the query's attainable ideal score; vectors min-max."""
    own, ctx = lists(q)
    wv = (1 - wt) / 2
    i = ideal(q)
    if tnorm == "ideal":
        text = {m: min(1.0, s / i) for m, s in q.text_hits}
    else:  # min-max scaled by the best hit's coverage
        best = min(1.0, max((s for _, s in q.text_hits), default=0.0) / i) ** power
        text = {m: v * best for m, v in _minmax(q.text_hits).items()}
    vn = _minmax if vnorm == "minmax" else _vcal
    return order(convex([(text, wt), (vn(own), wv), (vn(ctx), wv)]))


def f_gated(q: Query, wt: float = 0.5, delta: float = 0.05, cover: bool = False) -> list[str]:
    """min-max BM25 whose weight for a memory fades as its cosine falls below the best cosine (a keyword
    match the meaning does not back is incidental)."""
    own, ctx = lists(q)
    wv = (1 - wt) / 2
    cos = dict(own)
    best = max(cos.values(), default=0.0)
    scale = 1.0
    if cover:
        scale = min(1.0, max((s for _, s in q.text_hits), default=0.0) / ideal_present(q))
    floor = min(cos.values(), default=0.0)
    text = {m: v * scale * max(0.0, min(1.0, (cos.get(m, floor) - (best - delta)) / delta))
            for m, v in _minmax(q.text_hits).items()}
    return order(convex([(text, wt), (_minmax(own), wv), (_minmax(ctx), wv)]))


def ideal_top1(q: Query) -> float:
    """Σ over query tokens of the best score that token alone reaches (no document frequencies needed)."""
    return sum(q.top1.values()) or 1.0


def ideal_absent(q: Query, share: float = 1.0) -> float:
    """Σ top1 over present tokens, plus, for each token no memory holds, ``share`` × the best present
    token's top1 (an absent token is rarer than any present one)."""
    present = [v for v in q.top1.values() if v > 0]
    if not present:
        return 1.0
    return sum(present) + share * max(present) * sum(1 for v in q.top1.values() if v <= 0)


def f_mix(q: Query, wt: float = 0.6, alpha: float = 0.5) -> list[str]:
    """Keyword part = alpha · (BM25 / attainable score) + (1 − alpha) · coverage · min-max(BM25): a partial
    match that is not the list's best keeps the share of the query it matches."""
    own, ctx = lists(q)
    wv = (1 - wt) / 2
    i = ideal_top1(q)
    cover = min(1.0, max((s for _, s in q.text_hits), default=0.0) / i)
    mm = _minmax(q.text_hits)
    text = {m: alpha * min(1.0, s / i) + (1 - alpha) * cover * mm[m] for m, s in q.text_hits}
    return order(convex([(text, wt), (_minmax(own), wv), (_minmax(ctx), wv)]))


FUSIONS: dict[str, Callable[[Query], list[str]]] = {
    "plain dense": lambda q: q.dense,
    "plain BM25": lambda q: q.bm25,
    "memcli recall": lambda q: q.live,
    "memcli BM25 only": lambda q: [m for m, _ in q.text_hits],
    "minmax .5 (shipped)": f_minmax,
    "minmax .3": lambda q: f_minmax(q, 0.3),
    "minmax .2": lambda q: f_minmax(q, 0.2),
    "rrf k60": f_rrf,
    "rrf k10": lambda q: f_rrf(q, 10),
    "maxnorm .5": f_maxnorm,
    "idfnorm .5": f_idfnorm,
    "idfnorm .4": lambda q: f_idfnorm(q, 0.4),
    "idfnorm .6": lambda q: f_idfnorm(q, 0.6),
    "idfnorm .5 sq": lambda q: f_idfnorm(q, 0.5, power=2.0),
    "idfnorm .5 vcal": lambda q: f_idfnorm(q, 0.5, "cal"),
    "minmax idf-scaled .5": f_textminmax_idfscaled,
    "cover .5": f_cover,
    "cover .6": lambda q: f_cover(q, 0.6),
    "cover .5 mm": lambda q: f_cover(q, 0.5, tnorm="mm"),
    "cover .6 mm": lambda q: f_cover(q, 0.6, tnorm="mm"),
    "top1cover .6 mm": lambda q: f_cover(q, 0.6, ideal=ideal_top1, tnorm="mm"),
    "top1cover .5 mm": lambda q: f_cover(q, 0.5, ideal=ideal_top1, tnorm="mm"),
    "top1cover .6": lambda q: f_cover(q, 0.6, ideal=ideal_top1),
    **{f"grid top1cover {w} p{p}": (lambda w, p: lambda q: f_cover(q, w, ideal=ideal_top1, tnorm="mm",
                                                                    power=p))(w, p)
       for w in (0.5, 0.55, 0.6, 0.65, 0.7) for p in (0.5, 1.0, 2.0)},
    **{f"absent {w} s{a}": (lambda w, a: lambda q: f_cover(q, w, ideal=lambda q: ideal_absent(q, a), tnorm="mm"))(w, a)
       for w in (0.6, 0.65, 0.7) for a in (0.25, 0.5, 1.0)},
    **{f"perdoc {w}": (lambda w: lambda q: f_cover(q, w, ideal=ideal_top1))(w) for w in (0.6, 0.65, 0.7, 0.75, 0.8)},
    **{f"mix {w} a{a}": (lambda w, a: lambda q: f_mix(q, w, a))(w, a)
       for w in (0.55, 0.6, 0.65, 0.7, 0.75) for a in (0.25, 0.5, 0.75)},
    "gated .5 d.03": lambda q: f_gated(q, 0.5, 0.03),
    "gated .5 d.05": lambda q: f_gated(q, 0.5, 0.05),
    "gated .5 d.08": lambda q: f_gated(q, 0.5, 0.08),
    "gated .6 d.05": lambda q: f_gated(q, 0.6, 0.05),
    "gated .6 d.08": lambda q: f_gated(q, 0.6, 0.08),
    "gated cover .6 d.08": lambda q: f_gated(q, 0.6, 0.08, True),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default="locomo,cmrc,agentfacts")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--show", default="", help="only these fusions (comma-separated name prefixes)")
    ap.add_argument("--misses", type=int, default=0, help="print this many questions the first shown fusion misses")
    args = ap.parse_args()
    names = [s for s in args.sets.split(",") if s and (s != "agentfacts" or AGENTFACTS.exists())]
    sets = [build(n, args.rebuild) for n in names]
    show = [f for f in FUSIONS if not args.show or any(f.startswith(p) for p in args.show.split(","))]
    head = f"{'fusion':<24}" + "".join(f"{ds.name + ' ' + ds.metric:>18}" for ds in sets)
    if "agentfacts" in names:
        head += f"{'af hit@5':>10}{'af MRR':>8}"
    print(head)
    results = {}
    for f in show:
        res = [evaluate(ds, FUSIONS[f]) for ds in sets]
        results[f] = res
        line = f"{f:<24}" + "".join(f"{r[ds.metric]:>18.3f}" for r, ds in zip(res, sets))
        if "agentfacts" in names:
            r = res[names.index("agentfacts")]
            line += f"{r['hit@5']:>10.3f}{r['MRR']:>8.3f}"
        print(line, flush=True)
    for ds, i in ((ds, i) for i, ds in enumerate(sets) if len({g for g in
                                                               results[show[0]][i]["groups"]}) > 1):
        groups = sorted(results[show[0]][i]["groups"])
        print(f"\n{ds.name} {ds.metric} by group: " + ", ".join(
            f"{g} ({results[show[0]][i]['groups'][g][0]})" for g in groups))
        for f in show:
            print(f"{f:<24}" + " ".join(f"{results[f][i]['groups'][g][1]:.3f}" for g in groups))
    if args.misses:
        f = FUSIONS[show[0]]
        for ds in sets:
            n = 0
            for q in ds.queries:
                top = f(q)[:1]
                if top and not (ds.keys_of.get(top[0], {top[0]}) & q.gold) and n < args.misses:
                    n += 1
                    print(f"\n[{ds.name}] {q.text!r} gold {sorted(q.gold)} got {sorted(ds.keys_of.get(top[0], {top[0]}))}")


if __name__ == "__main__":
    main()
