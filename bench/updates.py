"""Does recall show what is current? Changes of one fact, A-B-A chains and look-alikes (bench/data/updates.json),
written over time into one store with the bundled e5 embedder, beside 186 other agent memories
(bench/data/agentfacts.json) as the rest of the store.

    python bench/updates.py                 # the bundled e5 (`local`), as users run it
    python bench/updates.py --embedder hash # the test embedder (seconds; meaning not measured)

Printed, for memcli recall and, from the same run and store, plain dense (e5 cosine over the memories' own
vectors) and "newest first" (plain dense's top 10, newest first):

- later above older: the later memory of a change ranks above the one it changes for the change's neutral
  question (top 10; missing counts as below) — target ≥ 90%; for chains, the last above the two before;
- outdated_by: the older memory carries ``outdated_by`` = the later one (chains: each link) — target ≥ 80%;
- look-alikes marked: the earlier of a look-alike pair (another subject) marked outdated — target 0; and every
  other mark the store holds that the data does not expect (wrong links), among the other memories too;
- the prompt hook (UserPromptSubmit's block for each question) showing an outdated memory without the memory
  that replaced it — target 0; and the SessionStart digest showing one;
- findable: the older memory still in memcli's top 10 ("what was it before?"), and ``as_of`` a day after the
  older was written: the older ranks first and the later is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
DATA = ROOT / "bench" / "data" / "updates.json"
BACKGROUND = ROOT / "bench" / "data" / "agentfacts.json"
DAY, HOUR = 86_400_000, 3_600_000
TOP = 10


def plan(data: dict[str, Any], background: list[dict[str, Any]], now: int) -> list[tuple[int, str, str]]:
    """(created_at, text, key) of every memory, oldest first; key names its role (c001.old, a001.2, bg)."""
    base = now - 120 * DAY
    out = [(base + i * HOUR, m["content"], "bg") for i, m in enumerate(background)]
    for i, c in enumerate(data["changes"]):
        out += [(base + 20 * DAY + i * HOUR, c["older"], f"{c['id']}.old"),
                (base + 70 * DAY + i * HOUR, c["newer"], f"{c['id']}.new")]
    for i, a in enumerate(data["chains"]):
        out += [(base + (15 + 30 * k) * DAY + i * HOUR, t, f"{a['id']}.{k}") for k, t in enumerate(a["texts"])]
    for i, lk in enumerate(data["lookalikes"]):
        out += [(base + 25 * DAY + i * HOUR, lk["a"], f"{lk['id']}.a"), (base + 75 * DAY + i * HOUR, lk["b"],
                                                                        f"{lk['id']}.b")]
    return sorted(out)


def rank_of(ids: list[str], mid: str) -> float:
    return ids.index(mid) if mid in ids else float("inf")


def pct(n: int, d: int) -> str:
    return f"{100 * n / d:5.1f}% ({n}/{d})" if d else "   n/a"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embedder", default="local")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--no-background", action="store_true", help="only the data set's memories")
    ap.add_argument("--verbose", "-v", action="store_true", help="name every miss")
    args = ap.parse_args()
    data = json.loads(args.data.read_text(encoding="utf-8"))
    background = [] if args.no_background else json.loads(BACKGROUND.read_text(encoding="utf-8"))["memories"]
    home = Path(tempfile.mkdtemp(prefix="memcli-updates-"))
    os.environ["MEMCLI_HOME"] = str(home)
    os.environ["MEMCLI_EMBEDDER"] = args.embedder
    from memcli.config import load_config
    from memcli.hooks.digest import session_digest
    from memcli.hooks.inject import prompt_context, tiers
    from memcli.memory.search import build_where
    from memcli.memory.service import MemoryService

    cfg = load_config(home)
    svc = MemoryService.open(cfg)
    now = int(time.time() * 1000)
    ids: dict[str, str] = {}
    t0 = time.perf_counter()
    for created, text, key in plan(data, background, now):
        mid = svc.remember(text, created_at=created, source="import" if key == "bg" else "cli").memory_id
        if key != "bg":
            ids[key] = mid
    write_s = time.perf_counter() - t0
    mems = {m.id: m for m in svc.list(limit=100_000)}
    print(f"updates: {len(data['changes'])} changes, {len(data['chains'])} chains, {len(data['lookalikes'])} "
          f"look-alikes, {len(background)} other memories; {len(mems)} memories written in {write_s:.0f} s "
          f"(embedder {args.embedder})")

    # the questions: (id, lang, question, ordered ids newest → oldest that must rank in that order)
    questions = [(c["id"], c["lang"], c["question"], [ids[c["id"] + ".new"], ids[c["id"] + ".old"]])
                 for c in data["changes"]]
    chains = [(a["id"], a["lang"], a["question"], [ids[f"{a['id']}.{k}"] for k in range(len(a["texts"]))][::-1])
              for a in data["chains"]]
    where = build_where(namespace=svc.namespace, now=now_ms())

    def dense(q: str) -> list[str]:
        return [m.id for m, _ in svc.store.vector_search(svc.embedder.embed_query(q), where, TOP)]

    def newest(q: str) -> list[str]:
        return sorted(dense(q), key=lambda i: -mems[i].created_at)

    def memcli(q: str) -> list[str]:
        return [h.memory.id for h in svc.recall(q, top_k=TOP)]

    methods = {"memcli recall": memcli, "plain dense (e5 cosine)": dense, "newest first (dense top 10)": newest}
    lat: list[float] = []
    print(f"\nlater above older (top {TOP}; target ≥ 90%)        changes         chains (last above both)")
    by_lang: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    misses: dict[str, list[str]] = defaultdict(list)
    for name, fn in methods.items():
        ok_c = ok_a = 0
        for qid, lang, q, order in questions:
            t = time.perf_counter()
            got = fn(q)
            if name == "memcli recall":
                lat.append((time.perf_counter() - t) * 1000)
            ok = rank_of(got, order[0]) < rank_of(got, order[1])
            ok_c += ok
            by_lang[name][lang].append(ok)
            if not ok:
                misses[name].append(qid)
        for qid, _lang, q, order in chains:
            got = fn(q)
            ok = all(rank_of(got, order[0]) < rank_of(got, o) for o in order[1:])
            ok_a += ok
            if not ok:
                misses[name].append(qid)
        print(f"  {name:<44} {pct(ok_c, len(questions)):<15} {pct(ok_a, len(chains))}")
    print("  by language (changes):")
    for name in methods:
        print("    " + f"{name:<28}" + "  ".join(f"{lang} {pct(sum(v), len(v))}" for lang, v in
                                                sorted(by_lang[name].items())))

    # the links themselves
    expected: set[tuple[str, str]] = {(ids[c["id"] + ".old"], ids[c["id"] + ".new"]) for c in data["changes"]}
    for a in data["chains"]:
        ks = [ids[f"{a['id']}.{k}"] for k in range(len(a["texts"]))]
        expected |= set(zip(ks, ks[1:]))
    fresh = {m.id: m for m in svc.list(limit=100_000)}
    linked = {(m.id, m.outdated_by) for m in fresh.values() if m.outdated_by}
    got_c = sum((ids[c["id"] + ".old"], ids[c["id"] + ".new"]) in linked for c in data["changes"])
    got_a = sum(all((x, y) in linked for x, y in zip(ks, ks[1:])) for ks in
                ([ids[f"{a['id']}.{k}"] for k in range(len(a["texts"]))] for a in data["chains"]))
    look = [lk["id"] for lk in data["lookalikes"] if fresh[ids[lk["id"] + ".a"]].outdated_by]
    wrong = linked - expected
    back = {i for i in fresh if i not in ids.values()}
    print("\noutdated_by (target ≥ 80%)")
    print(f"  changes: the older carries outdated_by the later   {pct(got_c, len(data['changes']))}")
    print(f"  chains: every link (A→B, B→A')                      {pct(got_a, len(data['chains']))}")
    missed_links = [c["id"] for c in data["changes"] if (ids[c["id"] + ".old"], ids[c["id"] + ".new"]) not in linked]
    print(f"  look-alikes marked outdated (target 0)              {len(look)} of {len(data['lookalikes'])}"
          + (f": {', '.join(look)}" if look else ""))
    print(f"  other wrong links (not in the data's pairs)         {len(wrong)} "
          f"({sum(1 for x, y in wrong if x in back or y in back)} touching the other {len(back)} memories)")
    for x, y in sorted(wrong)[:8]:
        print(f"      {fresh[x].content[:70]!r} → {fresh[y].content[:70]!r}")

    # the hooks
    hook_bad = hook_new = hook_old = 0
    for _qid, _lang, q, order in questions + chains:
        _text, full, listed = prompt_context(svc, q, project=None, **tiers(cfg.hooks))
        shown = set(full) | set(listed)
        hook_bad += any(fresh[i].outdated_by and fresh[i].outdated_by not in shown for i in shown)
        hook_new += order[0] in shown
        hook_old += any(o in shown for o in order[1:])
    _t, digest_ids = session_digest(svc, project=None, budget=cfg.hooks.session_start_budget,
                                    index_top_k=cfg.hooks.index_top_k, index_budget=cfg.hooks.index_budget)
    n_q = len(questions) + len(chains)
    print("\nhooks")
    print(f"  prompt blocks showing an outdated memory without its replacement (target 0)  {hook_bad} of {n_q}")
    print(f"  prompt blocks showing the current memory                                   {pct(hook_new, n_q)}")
    print(f"  prompt blocks showing an older one (with its replacement)                  {pct(hook_old, n_q)}")
    print(f"  SessionStart digest: outdated memories shown                               "
          f"{sum(1 for i in digest_ids if fresh[i].outdated_by)} of {len(digest_ids)}")

    # still findable, and as of then
    found = sum(order[1] in memcli(q) for _, _, q, order in questions)
    asof_ok = 0
    for c, (_qid, _lang, q, order) in zip(data["changes"], questions):
        then = fresh[order[1]].created_at + DAY
        got = [h.memory.id for h in svc.recall(q, top_k=TOP, as_of=then)]
        asof_ok += bool(got) and got[0] == order[1] and order[0] not in got
    print("\nwhat it was before")
    print(f"  the older memory still in memcli's top {TOP}                 {pct(found, len(questions))}")
    print(f"  recall --as-of (a day after the older): older first, later absent  {pct(asof_ok, len(questions))}")
    print(f"\nmemcli recall latency p50 {statistics.median(lat):.1f} ms over {len(lat)} questions")
    if args.verbose:
        for name, ms in misses.items():
            print(f"  {name} below: {', '.join(ms)}")
        print(f"  links missed: {', '.join(missed_links)}")
    svc.close()
    return 0


def now_ms() -> int:
    return int(time.time() * 1000)


if __name__ == "__main__":
    sys.exit(main())
