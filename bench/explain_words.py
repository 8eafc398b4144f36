"""What naming the matched words costs recall with ``explain`` (the web view's "why this result"; the prompt hook
recalls with ``explain`` too).

    python bench/explain_words.py                      # hash embedder (the words cost does not depend on it)
    python bench/explain_words.py --embedder local --top-k 12

Loads agentfacts' 186 memories (bench/data/agentfacts.json, 4 language groups) into a fresh store, then for each
of its 385 questions, in one run: recall without explain, recall with explain (which now names each keyword
hit's matched words), and :func:`memcli.memory.search.matched_words` alone on the same hits. Prints the medians and the
words' share of a recall with explain. Figures on the shared 2-core machine are noisy: compare within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedder", default="hash", help="hash (default) or local (the bundled e5)")
    ap.add_argument("--top-k", type=int, default=12, help="hits per recall (default 12, as the prompt hook asks)")
    args = ap.parse_args()
    os.environ["MEMCLI_EMBEDDER"] = args.embedder
    os.environ["MEMCLI_HOME"] = tempfile.mkdtemp(prefix="memcli-explain-words-")

    from memcli.config import load_config
    from memcli.memory.search import matched_words
    from memcli.memory.service import MemoryService

    data = json.loads((ROOT / "bench" / "data" / "agentfacts.json").read_text(encoding="utf-8"))
    svc = MemoryService.open(load_config(Path(os.environ["MEMCLI_HOME"])))
    try:
        for m in data["memories"]:
            svc.remember(m["content"], agent=m["agent"], tags=m["tags"], project=m["project"])
        svc.recall("warm up", top_k=args.top_k, explain=True)
        plain, explained, words, named = [], [], [], 0
        for q in data["questions"]:
            t0 = time.perf_counter()
            svc.recall(q["question"], top_k=args.top_k)
            t1 = time.perf_counter()
            hits = svc.recall(q["question"], top_k=args.top_k, explain=True)
            t2 = time.perf_counter()
            keyword = [h.memory.content for h in hits if h.keyword]
            matched_words(q["question"], keyword)
            t3 = time.perf_counter()
            plain.append(t1 - t0)
            explained.append(t2 - t1)
            words.append(t3 - t2)
            named += sum(1 for h in hits if (h.explain or {}).get("matched_words"))
    finally:
        svc.close()
    med = {k: statistics.median(v) * 1000 for k, v in (("plain", plain), ("explain", explained), ("words", words))}
    n = len(data["questions"])
    print(f"{len(data['memories'])} memories, {n} questions, top_k {args.top_k}, {args.embedder} embedder "
          f"({named} hits named their words)")
    print(f"recall without explain:          median {med['plain']:6.2f} ms")
    print(f"recall with explain (and words):  median {med['explain']:6.2f} ms")
    print(f"matched_words alone on its hits:  median {med['words']:6.2f} ms "
          f"({med['words'] / med['explain']:.1%} of a recall with explain)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
