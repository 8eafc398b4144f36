"""Does distill merge only the same fact? Pairs of memories, each labelled keep (different facts) or merge.

    python bench/distill_pairs.py                # the bundled e5 embedder (as users run it)
    python bench/distill_pairs.py --rules-only   # the same-fact test alone, no store (seconds)

Data: ``bench/data/distill_pairs.json`` (≥ 300 pairs in English, 简体, 繁體 and mixed, every kind of "close in
meaning, another fact" and every kind of restatement; see its description). Each pair goes into a store of its
own namespace as two agents' memories; then, as a user would run them:

- ``distill``: ``DistillService.plan`` over the whole store — a pair is merged when one of its memories
  is planned to be superseded by the other;
- ``check-duplicate``: the first memory stored alone (another namespace), ``check_duplicate(second)`` — a
  "merge" when it answers ``is_duplicate``;
- ``rules``: the same-fact test alone (``memcli.facts.samefact.same_fact``), without the similarity step.

Each with no LLM, and with an LLM that distill may ask to confirm a candidate the rules are unsure of — a
local fake OpenAI-compatible server, twice: one that always answers SAME (the worst model: what the rules'
vetoes alone must hold) and one that answers right (the label: the best a model can add). Printed: wrong
merges (keep pairs merged) by class — the target is 0 — and merge recall (merge pairs merged; target ≥ 0.6
without an LLM), overall and by class.
"""

from __future__ import annotations

import argparse
import http.server
import json
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
DATA = ROOT / "bench" / "data" / "distill_pairs.json"


class Fake(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint answering the distill's same-fact question."""

    mode = "yes"  # "yes": always SAME; "oracle": SAME only for pairs labelled merge
    labels: dict[tuple[str, str], str] = {}
    calls = 0

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        user = body["messages"][-1]["content"]
        a = user.split("Memory A: ", 1)[1].split("\nMemory B: ", 1)[0]
        b = user.split("\nMemory B: ", 1)[1].rsplit("\nAnswer SAME", 1)[0]
        label = self.labels.get((a, b)) or self.labels.get((b, a))
        same = self.mode == "yes" or label == "merge"
        type(self).calls += 1
        out = json.dumps({"choices": [{"message": {"content": "SAME" if same else "DIFFERENT"}}],
                          "usage": {"total_tokens": 60}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


def score(pairs: list[dict[str, Any]], merged: set[str], name: str) -> dict[str, Any]:
    wrong: Counter[str] = Counter()
    hit: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for p in pairs:
        total[(p["label"], p["class"])] += 1
        if p["id"] in merged:
            (wrong if p["label"] == "keep" else hit)[p["class"]] += 1
    n_keep = sum(1 for p in pairs if p["label"] == "keep")
    n_merge = len(pairs) - n_keep
    recall = sum(hit.values()) / n_merge if n_merge else 0.0
    print(f"{name:<34} wrong merges {sum(wrong.values()):>3} / {n_keep}   merge recall {recall:.3f} "
          f"({sum(hit.values())} / {n_merge})")
    if wrong:
        print("    wrong, by class: " + ", ".join(f"{c} {n}" for c, n in wrong.most_common()))
    return {"wrong": dict(wrong), "hit": dict(hit), "total": {f"{k[0]}/{k[1]}": v for k, v in total.items()},
            "recall": recall}


def by_class(pairs: list[dict[str, Any]], results: dict[str, dict[str, Any]]) -> None:
    classes = sorted({p["class"] for p in pairs if p["label"] == "merge"})
    names = list(results)
    print("\nmerge recall by class: " + " | ".join(names))
    for c in classes:
        n = sum(1 for p in pairs if p["label"] == "merge" and p["class"] == c)
        print(f"  {c:<14} " + "  ".join(f"{results[k]['hit'].get(c, 0):>3}/{n}" for k in names))


def rules(pairs: list[dict[str, Any]]) -> set[str]:
    from memcli.facts.samefact import same_fact

    return {p["id"] for p in pairs if same_fact(p["a"], p["b"]).same}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rules-only", action="store_true", help="only the same-fact test, no store or embedder")
    ap.add_argument("--embedder", default="local", help="local (the bundled e5, default) or hash")
    ap.add_argument("--threshold", type=float, default=0.80,
                    help="distill's calibrated similarity threshold (the default of [distill] threshold)")
    args = ap.parse_args()
    data = json.loads(DATA.read_text(encoding="utf-8"))
    pairs = data["pairs"]
    print(f"{len(pairs)} pairs: {sum(p['label'] == 'keep' for p in pairs)} keep (different facts), "
          f"{sum(p['label'] == 'merge' for p in pairs)} merge (restatements)\n")
    results: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    results["rules"] = score(pairs, rules(pairs), "same-fact test alone")
    print(f"    ({(time.perf_counter() - t0) * 1000 / len(pairs):.2f} ms a pair)")
    if args.rules_only:
        return

    import os

    from memcli.config import load_config
    from memcli.distill.condense import LlmSettings
    from memcli.distill.distiller import DistillOptions
    from memcli.distill.service import DistillService
    from memcli.memory.service import MemoryService

    os.environ["MEMCLI_EMBEDDER"] = args.embedder
    with tempfile.TemporaryDirectory() as tmp:
        svc = MemoryService.open(load_config(Path(tmp)))
        from memcli.memory.service import NewMemory

        items = []
        for p in pairs:
            items += [NewMemory(p["a"], agent="codex", namespace=f"d-{p['id']}"),
                      NewMemory(p["b"], agent="claude-code", namespace=f"d-{p['id']}"),
                      NewMemory(p["a"], agent="codex", namespace=f"c-{p['id']}")]
        t0 = time.perf_counter()
        svc.remember_many(items, source="import")
        print(f"\nstored {len(items)} memories in {time.perf_counter() - t0:.1f} s ({args.embedder} embedder)")
        ns_of = {f"d-{p['id']}": p["id"] for p in pairs}

        def distill_merged(options: DistillOptions) -> set[str]:
            plan = DistillService(svc).plan(options)
            return {ns_of[s.namespace] for s in plan.merge if s.namespace in ns_of}

        t0 = time.perf_counter()
        results["distill"] = score(pairs, distill_merged(DistillOptions(threshold=args.threshold)),
                                   "distill, no LLM")
        print(f"    (plan of {len(items)} memories: {time.perf_counter() - t0:.1f} s)")
        dup = set()
        for p in pairs:
            if svc.check_duplicate(p["b"], namespace=f"c-{p['id']}").is_duplicate:
                dup.add(p["id"])
        results["check-duplicate"] = score(pairs, dup, "check-duplicate")

        Fake.labels = {(p["a"], p["b"]): p["label"] for p in pairs}
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        llm = LlmSettings(provider="openai", base_url=f"http://127.0.0.1:{server.server_address[1]}/v1",
                          model="fake", token_budget=10_000_000)
        for mode, name in (("yes", "distill, LLM that always says SAME"), ("oracle", "distill, LLM that is right")):
            Fake.mode, Fake.calls = mode, 0
            results[f"llm-{mode}"] = score(pairs, distill_merged(DistillOptions(threshold=args.threshold, llm=llm)),
                                           name)
            print(f"    ({Fake.calls} pairs asked of the LLM)")
        server.shutdown()
        svc.close()
    by_class(pairs, results)
    groups: dict[str, int] = defaultdict(int)
    for p in pairs:
        groups[p["lang"]] += 1
    print("\nlanguages: " + ", ".join(f"{k} {v}" for k, v in sorted(groups.items())))


if __name__ == "__main__":
    main()
