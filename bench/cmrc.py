"""CMRC 2018 trial: Chinese retrieval through memcli's own write and recall paths.

One memory per paragraph (in one namespace), one query per question; gold = the question's paragraph.
Prints hit@1, hit@5 and MRR for memcli's hybrid recall, and in the same run for plain BM25 (`\\w+` tokens,
as the LoCoMo protocol's baseline — nearly useless on Chinese), BM25 over CJK bigrams, and plain dense
retrieval (multilingual-e5-small, the memories' own vectors), plus recall latency p50/p95.

Usage: python bench/cmrc.py [--data PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo import PlainBM25  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "cmrc2018-trial.json"
CJK = re.compile(r"[\u3400-\u9fff]")


def bigrams(text: str) -> str:
    """CJK runs as overlapping character bigrams, other words as they are."""
    out = []
    for tok in re.findall(r"[\u3400-\u9fff]+|\w+", text):
        if CJK.match(tok):
            out += [tok[i:i + 2] for i in range(max(1, len(tok) - 1))]
        else:
            out.append(tok.lower())
    return " ".join(out)


def scores(ranks: list[int]) -> str:
    n = len(ranks)
    h1 = sum(r == 1 for r in ranks) / n
    h5 = sum(1 <= r <= 5 for r in ranks) / n
    mrr = sum(1 / r for r in ranks if r) / n
    return f"hit@1 {h1:.3f}  hit@5 {h5:.3f}  MRR {mrr:.3f}"


def rank_of(order: list[int] | np.ndarray, gold: int) -> int:
    for i, j in enumerate(order[:10]):
        if j == gold:
            return i + 1
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description="CMRC 2018 trial retrieval through memcli")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--embedder", default="local")
    args = ap.parse_args()
    from memcli.config import load_config
    from memcli.memory.service import MemoryService, NewMemory

    paras, qs = [], []
    skipped = 0
    for art in json.loads(args.data.read_text())["data"]:
        for p in art["paragraphs"]:
            for qa in p["qas"]:
                if qa["question"].strip():  # the trial split has an empty question; it cannot be asked
                    qs.append((qa["question"], len(paras)))
                else:
                    skipped += 1
            paras.append(p["context"])
    print(f"CMRC {args.data.name}: {len(paras)} paragraphs, {len(qs)} questions ({skipped} empty skipped)",
          flush=True)
    home = Path(tempfile.mkdtemp(prefix="memcli-cmrc-"))
    svc = MemoryService.open(load_config(home, env={"MEMCLI_EMBEDDER": args.embedder}))
    t0 = time.perf_counter()
    res = svc.remember_many([NewMemory(content=p, namespace="cmrc") for p in paras], source="import")
    svc.compact()
    print(f"ingested through remember_many in {time.perf_counter() - t0:.0f}s", flush=True)
    pid = {r.memory_id: i for i, r in enumerate(res)}
    own = {pid[m.id]: m.vector for m in svc.store.scan("namespace = 'cmrc'", with_vector=True)}
    pv = np.asarray([own[i] for i in range(len(paras))], dtype=np.float32)
    bm_plain, bm_bi = PlainBM25(paras), PlainBM25([bigrams(p) for p in paras])
    r_ours, r_plain, r_bi, r_dense, lat = [], [], [], [], []
    for q, gold in qs:
        t = time.perf_counter()
        hits = svc.recall(q, namespace="cmrc", top_k=10)
        lat.append((time.perf_counter() - t) * 1000)
        r_ours.append(rank_of([pid[h.memory.id] for h in hits], gold))
        r_plain.append(rank_of(np.argsort(-bm_plain.scores(q), kind="stable"), gold))
        r_bi.append(rank_of(np.argsort(-bm_bi.scores(bigrams(q)), kind="stable"), gold))
        r_dense.append(rank_of(np.argsort(-(pv @ svc.embedder.embed_query(q)), kind="stable"), gold))
    print()
    print(f"plain BM25 (\\w+)       {scores(r_plain)}")
    print(f"BM25 (CJK bigrams)     {scores(r_bi)}")
    print(f"plain dense (e5)       {scores(r_dense)}")
    print(f"memcli hybrid recall   {scores(r_ours)}  | p50 {statistics.median(lat):.1f} ms "
          f"p95 {sorted(lat)[int(0.95 * (len(lat) - 1))]:.1f} ms")
    print(f"\nhit@1 {sum(r == 1 for r in r_ours) / len(qs):.3f} (target >= 0.97)")
    svc.close()


if __name__ == "__main__":
    sys.exit(main())
