"""LoCoMo retrieval benchmark (LLM-free protocol of ../shared/data/README.md) through memcli's own paths.

Each conversation goes into its own namespace through `MemoryService.remember_many` (one memory per turn,
thread = the session, timestamp = the session's date); each question is asked through
`MemoryService.recall`. Prints recall@5, recall@10, hit@10, nDCG@10 and MRR per category and overall
(categories 1-4, micro), recall latency p50/p95, and the same figures for plain BM25 (Okapi, `\\w+` tokens)
and plain dense retrieval (multilingual-e5-small, the memories' own vectors) measured in the same run.

Usage: python bench/locomo.py [--data PATH] [--embedder local]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo10-dev.json"
CATS = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def session_time(s: str) -> int:
    """'1:56 pm on 8 May, 2023' → epoch ms (UTC)."""
    dt = datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def load(path: Path) -> list[dict]:
    """Conversations as {id, turns: [{dia_id, text, session, ts}], questions: [{q, cat, gold}]}."""
    out = []
    for conv in json.loads(path.read_text()):
        c = conv["conversation"]
        turns = []
        for key in sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
            n = int(key.split("_")[1])
            ts = session_time(c[f"{key}_date_time"])
            for j, t in enumerate(c[key]):
                text = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    text += f" [shares {t['blip_caption']}]"
                turns.append({"dia_id": t["dia_id"], "text": text, "session": n, "ts": ts + j * 1000,
                              "date": c[f"{key}_date_time"]})
        ids = {t["dia_id"] for t in turns}
        qs = []
        for q in conv["qa"]:
            if q.get("category") not in CATS:
                continue
            gold = set()
            for ev in q.get("evidence", []):
                for part in re.split(r"[;\s]+", str(ev)):
                    m = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
                    if m and f"D{m.group(1)}:{m.group(2)}" in ids:
                        gold.add(f"D{m.group(1)}:{m.group(2)}")
            if gold:
                qs.append({"q": q["question"], "cat": q["category"], "gold": gold})
        out.append({"id": conv["sample_id"], "turns": turns, "questions": qs})
    return out


def metrics(ranked: list[set[str]], gold: set[str]) -> dict[str, float]:
    """Metrics of one ranking; each rank holds the turns one memory stands for (identical turns are one
    memory: remember is idempotent), so finding that memory counts for every one of them."""
    top5 = set().union(*ranked[:5]) if ranked else set()
    top10 = set().union(*ranked[:10]) if ranked else set()
    rel = [1 if d & gold else 0 for d in ranked[:10]]
    dcg = sum(r / math.log2(i + 2) for i, r in enumerate(rel))
    idcg = sum(1 / math.log2(i + 2) for i in range(min(len(gold), 10)))
    rr = next((1 / (i + 1) for i, d in enumerate(ranked) if d & gold), 0.0)
    return {"R@5": len(gold & top5) / len(gold), "R@10": len(gold & top10) / len(gold),
            "H@10": float(any(rel)), "nDCG@10": dcg / idcg if idcg else 0.0, "MRR": rr}


def report(name: str, rows: list[tuple[int, dict[str, float]]], lat: list[float] | None = None) -> dict:
    by: dict[int, list[dict]] = defaultdict(list)
    for cat, m in rows:
        by[cat].append(m)
    allm = [m for _, m in rows]
    avg = lambda ms, k: sum(m[k] for m in ms) / len(ms)  # noqa: E731
    line = f"{name:<22} " + " ".join(f"{k} {avg(allm, k):.3f}" for k in ("R@5", "R@10", "H@10", "nDCG@10", "MRR"))
    line += " | R@5 " + " ".join(f"{CATS[c]} {avg(by[c], 'R@5'):.3f}" for c in sorted(by))
    if lat:
        line += f" | p50 {statistics.median(lat):.1f} ms p95 {sorted(lat)[int(0.95 * (len(lat) - 1))]:.1f} ms"
    print(line, flush=True)
    return {"overall": avg(allm, "R@5"), **{CATS[c]: avg(by[c], "R@5") for c in by}}


class PlainBM25:
    """Okapi BM25 (k1 1.2, b 0.75) with `\\w+` tokens: the protocol's reference keyword retriever."""

    def __init__(self, docs: list[str]) -> None:
        self.toks = [re.findall(r"\w+", d) for d in docs]
        self.df = Counter(t for toks in self.toks for t in set(toks))
        self.avgdl = sum(map(len, self.toks)) / len(self.toks)
        self.tfs = [Counter(t) for t in self.toks]
        self.n = len(docs)

    def scores(self, q: str) -> np.ndarray:
        out = np.zeros(self.n)
        for t in set(re.findall(r"\w+", q)):
            if t not in self.df:
                continue
            idf = math.log(1 + (self.n - self.df[t] + 0.5) / (self.df[t] + 0.5))
            for i, tf in enumerate(self.tfs):
                f = tf.get(t)
                if f:
                    out[i] += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * len(self.toks[i]) / self.avgdl))
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description="LoCoMo retrieval benchmark through memcli")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--embedder", default="local")
    args = ap.parse_args()
    from memcli.config import load_config
    from memcli.memory.service import MemoryService, NewMemory

    convs = load(args.data)
    home = Path(tempfile.mkdtemp(prefix="memcli-locomo-"))
    svc = MemoryService.open(load_config(home, env={"MEMCLI_EMBEDDER": args.embedder}))
    n_turns = sum(len(c["turns"]) for c in convs)
    print(f"LoCoMo {args.data.name}: {len(convs)} conversations, {n_turns} turns, "
          f"{sum(len(c['questions']) for c in convs)} questions (categories 1-4)", flush=True)
    t0 = time.perf_counter()
    dias_of: dict[str, set[str]] = defaultdict(set)  # memory id -> the turns it stands for
    mem_of: dict[tuple[str, str], str] = {}  # (conversation, turn) -> memory id
    for c in convs:
        items = [NewMemory(content=t["text"], namespace=f"locomo-{c['id']}", thread=f"session-{t['session']}",
                           created_at=t["ts"], metadata={"dia_id": t["dia_id"], "session": t["session"],
                                                         "date": t["date"]}) for t in c["turns"]]
        res = svc.remember_many(items, source="import")
        for t, r in zip(c["turns"], res):
            dias_of[r.memory_id].add(t["dia_id"])
            mem_of[(c["id"], t["dia_id"])] = r.memory_id
    svc.compact()
    print(f"ingested through remember_many in {time.perf_counter() - t0:.0f}s", flush=True)

    ours, bm25, dense, lat = [], [], [], []
    emb = svc.embedder
    for c in convs:
        ns = f"locomo-{c['id']}"
        texts = [t["text"] for t in c["turns"]]
        dias = [t["dia_id"] for t in c["turns"]]
        bm = PlainBM25(texts)
        own = {m.id: m.vector for m in svc.store.scan(f"namespace = '{ns}'", with_vector=True)}
        pv = np.asarray([own[mem_of[(c["id"], d)]] for d in dias], dtype=np.float32)  # the memories' own e5 vectors
        for q in c["questions"]:
            t = time.perf_counter()
            hits = svc.recall(q["q"], namespace=ns, top_k=10)
            lat.append((time.perf_counter() - t) * 1000)
            ours.append((q["cat"], metrics([dias_of[h.memory.id] for h in hits], q["gold"])))
            order = np.argsort(-bm.scores(q["q"]), kind="stable")[:10]
            bm25.append((q["cat"], metrics([{dias[i]} for i in order], q["gold"])))
            order = np.argsort(-(pv @ emb.embed_query(q["q"])), kind="stable")[:10]
            dense.append((q["cat"], metrics([{dias[i]} for i in order], q["gold"])))
    print()
    b = report("plain BM25", bm25)
    report("plain dense (e5)", dense)
    o = report("memcli hybrid recall", ours, lat)
    below = [k for k in b if k != "overall" and o[k] < b[k]]
    print(f"\nrecall@5 {o['overall']:.3f} (target >= 0.62); categories below BM25: {below or 'none'}")
    svc.close()


if __name__ == "__main__":
    sys.exit(main())
