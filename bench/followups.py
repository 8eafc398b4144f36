"""followups: does the prompt hook find what a follow-up prompt needs when it also searches with the last exchange?

    python bench/followups.py                          # stores of 1,000 and 10,000 memories
    python bench/followups.py --sizes 100 --limit 30   # a quick check: the first 30 items and off-topic prompts

The set (bench/data/followups.json, written by hand) has follow-up prompts, each with the exchange just before it
(the developer's previous prompt and the agent's reply), answered by agentfacts memories: ``ellipsis`` — the
follow-up leans on the exchange for its subject ("and which port does it listen on?"); ``self_contained`` — it
names its subject (the prompt alone suffices: context must not hurt); ``topic_switch`` — a complete question about
another subject than the exchange's. The stores are ``bench/agentfacts.py --gate``'s (bench/.cache/agentfacts-gate-
{size}: all 186 agentfacts memories plus filler from 1,000 up, a seeded sample at 10 and 100 — items whose memories
are not in the store are left out). Each variant is the text handed to the hook's ``inject.candidates`` (which
applies ``hook_query`` to it), then ``inject.compose`` with the configured ``[hooks]`` settings:

- ``prompt``: the prompt alone (the hook today);
- ``prev_prompt``: the previous prompt, then the prompt;
- ``prev_exchange``: the previous prompt, the first sentence of the agent's reply, then the prompt;
- ``prompt_first_prev_short``: the prompt, then the previous prompt clipped to 200 characters;

Per variant and kind: ``top5`` = a relevant memory among the hook's 5 best recalled (recall's score); ``reach`` =
a relevant memory in the block (full text or index line); ``full`` = in full text. Off-topic: agentfacts' off-topic
prompts, each after the exchange of a follow-up item drawn at random (seeded) — a variant must not make them inject
more: the share that injects full text, anything, and the mean tokens injected (``condense.estimate_tokens`` of the
block, 0 when none). ``p50 ms``: median time of ``candidates`` (in-process). Then the whole exchange, as a session
runs it: the previous prompt gets its own block first (it names the subject, so it often shows the memory
already), then the follow-up's with each variant — the share of items whose memory reached the model in either.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agentfacts import gate_service
from agentfacts import load as load_agentfacts

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "followups.json"
KINDS = ("ellipsis", "self_contained", "topic_switch")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


def first_sentence(text: str) -> str:
    text = text.strip()
    return next((s.strip() for s in _SENTENCE_END.split(text) if s.strip()), text)


def clip(text: str, n: int) -> str:
    text = text.strip()
    return text if len(text) <= n else text[:n].rstrip()


VARIANTS: dict[str, Callable[[dict[str, Any]], str]] = {
    "prompt": lambda it: it["prompt"],
    "prev_prompt": lambda it: it["previous_prompt"] + "\n" + it["prompt"],
    "prev_exchange": lambda it: it["previous_prompt"] + "\n" + first_sentence(it["previous_reply"]) + "\n"
    + it["prompt"],
    "prompt_first_prev_short": lambda it: it["prompt"] + "\n" + clip(it["previous_prompt"], 200),
}


def load() -> dict[str, Any]:
    return json.loads(DATA.read_text(encoding="utf-8"))


def run(svc: Any, h: Any, text: str) -> tuple[list[Any], tuple[str | None, list[str], list[str]], float]:
    """The hook on ``text``, as it runs: its candidates and the block composed from them, and the time taken by
    ``candidates`` in ms."""
    from memcli.hooks.inject import candidates, compose, tiers

    t = time.perf_counter()
    sc = candidates(svc, text, project=None, top_k=h.prompt_top_k, index_top_k=h.index_top_k,
                    lift=h.other_script_lift)
    ms = (time.perf_counter() - t) * 1000
    return sc, compose(sc, project=None, **tiers(h)), ms


def bench(sizes: list[int], limit: int | None) -> dict[str, Any]:
    from memcli.distill.condense import estimate_tokens

    af = load_agentfacts()
    items = load()["items"]
    rng = random.Random(7)  # each off-topic prompt after a follow-up item's exchange, the same in every run
    offtopic = [(o, rng.choice(items)) for o in af["offtopic"]]
    if limit is not None:
        items, offtopic = items[:limit], offtopic[:limit]
    results: dict[str, Any] = {}
    for size in sizes:
        svc, h, af_of = gate_service(size, af)
        present = set(af_of.values())
        answerable = [it for it in items if set(it["relevant"]) & present]

        per: dict[str, Any] = {}
        for name, make in VARIANTS.items():

            rows: dict[str, list[tuple[bool, bool, bool]]] = {k: [] for k in (*KINDS, "all")}
            lat = []
            for it in answerable:
                sc, (_, ids, listed), ms = run(svc, h, make(it))
                lat.append(ms)
                gold = set(it["relevant"])
                top5 = bool({af_of.get(s.hit.memory.id) for s in sorted(sc, key=lambda s: s.order)[:5]} & gold)
                full = bool({af_of.get(i) for i in ids} & gold)
                reach = bool({af_of.get(i) for i in ids + listed} & gold)
                rows[it["kind"]].append((top5, reach, full))
                rows["all"].append((top5, reach, full))
            off_full = off_any = 0
            tokens = []
            for o, prev in offtopic:
                _, (text, ids, listed), ms = run(svc, h, make({**prev, "prompt": o["prompt"]}))
                lat.append(ms)
                off_full += bool(ids)
                off_any += bool(ids or listed)
                tokens.append(estimate_tokens(text) if text else 0)
            noff = max(1, len(offtopic))
            per[name] = {
                **{k: {"n": len(v), "top5": _share(v, 0), "reach": _share(v, 1), "full": _share(v, 2)}
                   for k, v in rows.items()},
                "offtopic": {"n": len(offtopic), "full": off_full / noff, "any": off_any / noff,
                             "tokens": statistics.mean(tokens) if tokens else 0.0},
                "p50_ms": statistics.median(lat) if lat else 0.0}
        per["exchange"] = exchange(svc, h, answerable, af_of)
        svc.close()
        results[str(size)] = per
        print_table(size, per, len(items))
        print("  in the whole exchange (the previous prompt's own block, then the follow-up's), reach:")
        for name, ex in per["exchange"].items():
            print(f"    {name:<24}" + "  ".join(f"{k} {ex[k]:.0%}" for k in (*KINDS, "all") if ex[k] is not None))
    return results


def exchange(svc: Any, h: Any, answerable: list[dict[str, Any]], af_of: dict[str, str]) -> dict[str, Any]:
    """Reach over the whole exchange, as a session runs it: the previous prompt gets its own block first (it
    names the subject, and may show the memory already; what it shows in full is not shown again), then the
    follow-up's block, searched with each variant's text."""
    from memcli.hooks.inject import candidates, compose, tiers

    def block(text: str, exclude: set[str]) -> tuple[set[str], list[str]]:
        sc = candidates(svc, text, project=None, top_k=h.prompt_top_k, index_top_k=h.index_top_k, exclude=exclude,
                        lift=h.other_script_lift)
        _, ids, listed = compose(sc, project=None, **tiers(h))
        return {af_of.get(i) for i in ids + listed}, ids

    out: dict[str, Any] = {}
    firsts = {it["id"]: block(it["previous_prompt"], set()) for it in answerable}
    for name, make in VARIANTS.items():
        hits: dict[str, list[bool]] = {k: [] for k in (*KINDS, "all")}
        for it in answerable:
            first, full = firsts[it["id"]]
            second, _ = block(make(it), set(full))
            got = bool((first | second) & set(it["relevant"]))
            hits[it["kind"]].append(got)
            hits["all"].append(got)
        out[name] = {k: (sum(v) / len(v) if v else None) for k, v in hits.items()}
    return out


def _share(rows: list[tuple[bool, bool, bool]], i: int) -> float | None:
    return sum(r[i] for r in rows) / len(rows) if rows else None


def print_table(size: int, per: dict[str, Any], total: int) -> None:
    per = {k: v for k, v in per.items() if k != "exchange"}
    first = next(iter(per.values()))
    counts = ", ".join(f"{first[k]['n']} {k}" for k in KINDS)
    print(f"\n{size:,} memories: {first['all']['n']} of {total} follow-ups answerable ({counts}); "
          f"{first['offtopic']['n']} off-topic prompts after a follow-up's exchange")
    cols = (*KINDS, "all")
    head = f"{'variant':<24}" + "".join(f" | {k:^17}" for k in cols) + f" | {'off-topic':^19} | {'p50':>5}"
    sub = f"{'':<24}" + "".join(f" | {'top5':>5} {'reach':>5} {'full':>5}" for _ in cols) + \
        f" | {'full':>5} {'any':>5} {'tok':>5} | {'ms':>5}"
    print(head)
    print(sub)
    print("-" * len(sub))

    def pct(v: float | None) -> str:
        return f"{v:>5.0%}" if v is not None else f"{'-':>5}"

    for name, r in per.items():
        line = f"{name:<24}"
        for k in cols:
            line += f" | {pct(r[k]['top5'])} {pct(r[k]['reach'])} {pct(r[k]['full'])}"
        o = r["offtopic"]
        line += f" | {pct(o['full'])} {pct(o['any'])} {o['tokens']:>5.0f} | {r['p50_ms']:>5.0f}"
        print(line, flush=True)
    base = per["prompt"]
    for name, r in per.items():
        if name == "prompt":
            continue
        d = {k: (r[k]["reach"] - base[k]["reach"]) if r[k]["reach"] is not None else None for k in cols}
        print(f"  {name} vs prompt, reach: " + ", ".join(
            f"{k} {v * 100:+.0f} pts" for k, v in d.items() if v is not None)
            + f"; off-topic full {(r['offtopic']['full'] - base['offtopic']['full']) * 100:+.0f} pts, "
            f"tokens {r['offtopic']['tokens'] - base['offtopic']['tokens']:+.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000", help="store sizes (bench/agentfacts.py --gate's stores)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N items and N off-topic prompts")
    ap.add_argument("--dump", type=Path, default=None, help="write the figures as JSON to this file")
    args = ap.parse_args()
    results = bench([int(s) for s in args.sizes.split(",")], args.limit)
    if args.dump is not None:
        args.dump.parent.mkdir(parents=True, exist_ok=True)
        args.dump.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
