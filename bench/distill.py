"""distill: a realistic store of captured turns, before and after `memcli distill --apply`.

    python bench/distill.py                     # 2,000 turns from 3 agents (bundled e5 embedder)
    python bench/distill.py --turns 600         # smaller, when the machine is busy

The store is what the Stop hook leaves behind: every turn of three agents (codex, claude-code, gemini) is a
memory tagged ``turn`` (source ``hook:stop``), over 30 days. 60% of the turns state one of 40 project facts
(8 kinds × 5 services: database, port, deploy tool, owner, test command, a crash's root cause, language,
config path), each fact said in 3 paraphrases and asked in 2 ways, so the same fact is learnt again and again
by all three agents; 40% are one-off turns with a unique detail (a renamed variable, a bumped version...).

Measured: active memories before/after; recall hit@5 on 40 held-out questions about the repeated facts (a
phrasing never stored; a hit is a top-5 memory stating that fact) and on 40 questions about one-off details
(a hit is a top-5 memory holding that detail: what merging must not lose); the run time of the plan (median
of 3) and of the apply (tag, one commit, audit, compaction). Figures are noisy on a shared machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SERVICES = ["billing", "auth", "search", "payments", "notifier", "ledger", "gateway", "reports", "inventory",
            "scheduler"]
KINDS: dict[str, dict[str, Any]] = {
    "db": {"values": ["PostgreSQL 16", "MySQL 8", "MongoDB", "SQLite", "CockroachDB", "DynamoDB"],
           "answers": ["The {s} service stores its data in {v}.", "{s} persists everything to {v}.",
                       "We picked {v} as the database for {s}."],
           "questions": ["what database does {s} use?", "where does {s} keep its data?"],
           "heldout": "which datastore backs the {s} service?"},
    "port": {"values": ["8080", "9090", "5001", "7443", "8125", "6060"],
             "answers": ["{s} listens on port {v}.", "The {s} server binds port {v}.", "{s} runs on port {v} locally."],
             "questions": ["what port is {s} on?", "which port does {s} bind?"],
             "heldout": "on which port can I reach the {s} server?"},
    "deploy": {"values": ["Helm charts", "Terraform", "ArgoCD", "a GitHub Actions workflow", "Ansible", "Nomad"],
               "answers": ["{s} is deployed with {v}.", "We ship {s} to production using {v}.",
                           "Deployments of {s} go through {v}."],
               "questions": ["how do we deploy {s}?", "what deploys {s}?"],
               "heldout": "which tool releases {s} to production?"},
    "owner": {"values": ["Alice Chen", "Bogdan Ilic", "Carla Diaz", "Deepak Rao", "Emma Stone", "Farid Haddad"],
              "answers": ["{v} owns the {s} service.", "The {s} service is maintained by {v}.",
                          "Ask {v} about anything in {s}, they own it."],
              "questions": ["who owns {s}?", "who maintains {s}?"],
              "heldout": "who is responsible for the {s} service?"},
    "tests": {"values": ["make test-all", "pytest -x tests/", "npm run test:ci", "go test ./...", "cargo nextest run",
                         "tox -e py311"],
              "answers": ["Run the {s} tests with `{v}`.", "The {s} test suite runs via `{v}`.",
                          "`{v}` executes all tests of {s}."],
              "questions": ["how do I run the {s} tests?", "what's the test command for {s}?"],
              "heldout": "which command runs the test suite of {s}?"},
    "crash": {"values": ["a missing TLS certificate", "an expired API key", "a race in the connection pool",
                         "a full /tmp partition", "a wrong timezone setting", "an unbounded retry loop"],
              "answers": ["The {s} crash on startup was caused by {v}.", "{s} crashed at startup because of {v}.",
                          "Root cause of the {s} startup crash: {v}."],
              "questions": ["why did {s} crash?", "what caused the {s} startup crash?"],
              "heldout": "what was the root cause of {s} failing to start?"},
    "lang": {"values": ["Go", "Rust", "Python", "TypeScript", "Kotlin", "Elixir"],
             "answers": ["{s} is written in {v}.", "The {s} codebase uses {v}.", "We implemented {s} in {v}."],
             "questions": ["what language is {s}?", "which language is {s} written in?"],
             "heldout": "what programming language does the {s} code use?"},
    "config": {"values": ["config/{s}.yaml", "/etc/{s}/settings.toml", "deploy/{s}.env", "{s}/conf/app.json",
                          "charts/{s}/values.yaml", "settings/{s}.ini"],
               "answers": ["The {s} config lives in {v}.", "{s} reads its settings from {v}.",
                           "Configuration for {s} is in {v}."],
               "questions": ["where is the {s} config?", "where are the settings of {s}?"],
               "heldout": "which file configures {s}?"},
}
ONE_OFF = [
    ("rename {a} to {b} in {f}", "Renamed {a} to {b} in {f}; {n} call sites updated.", "where did we rename {a}?", "{f}"),
    ("bump {p} please", "Bumped {p} to version {n}.{m}.0 in the lock file.", "which version of {p} do we use now?",
     "{n}.{m}.0"),
    ("the flaky test in {f} again", "Marked test_{a} in {f} as flaky; it times out after {n} seconds.",
     "which test did we mark as flaky in {f}?", "test_{a}"),
    ("add a log line to {f}", "Added a debug log of {a} at line {n} of {f}.", "where did we add the debug log of {a}?",
     "line {n}"),
    ("why is {p} slow?", "{p} was slow because the cache TTL was {n} ms; raised it to {m}000 ms.",
     "what cache TTL did we set for {p}?", "{m}000 ms"),
]
WORDS = ["alpha", "bravo", "cobalt", "delta", "ember", "falcon", "glacier", "harbor", "iris", "juniper", "kepler",
         "lumen", "maple", "nebula", "onyx", "prism", "quartz", "raven", "sierra", "tundra"]
AGENTS = ["codex", "claude-code", "gemini"]


def facts(rng: random.Random) -> list[dict[str, Any]]:
    """40 facts: each kind about 5 services, each with its own value."""
    out = []
    for kind, spec in KINDS.items():
        for s in rng.sample(SERVICES, 5):
            v = rng.choice(spec["values"]).format(s=s)
            out.append({"kind": kind, "s": s, "v": v, "answers": [a.format(s=s, v=v) for a in spec["answers"]],
                        "questions": [q.format(s=s) for q in spec["questions"]], "heldout": spec["heldout"].format(s=s)})
    return out


def turns(n: int, rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """n turns (60% repeated facts, 40% one-offs), the facts, and the one-off probes (question, detail)."""
    fs = facts(rng)
    out: list[dict[str, Any]] = []
    probes: list[dict[str, Any]] = []
    start = int(time.time() * 1000) - 30 * 86_400_000
    for i in range(n):
        agent = rng.choice(AGENTS)
        at = start + int(i * 30 * 86_400_000 / n)
        if rng.random() < 0.6:
            fid = rng.randrange(len(fs))
            f = fs[fid]
            text = f"User: {rng.choice(f['questions'])}\nAssistant: {rng.choice(f['answers'])}"
            out.append({"content": text, "agent": agent, "at": at, "fact": fid})
        else:
            prompt, reply, question, detail = rng.choice(ONE_OFF)
            slots = {"a": f"{rng.choice(WORDS)}_{rng.choice(WORDS)}", "b": f"{rng.choice(WORDS)}_{rng.choice(WORDS)}",
                     "f": f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py", "p": f"lib{rng.choice(WORDS)}",
                     "n": str(rng.randrange(2, 99)), "m": str(rng.randrange(1, 9))}
            out.append({"content": f"User: {prompt.format(**slots)}\nAssistant: {reply.format(**slots)}",
                        "agent": agent, "at": at, "fact": None})
            probes.append({"question": question.format(**slots), "detail": detail.format(**slots)})
    rng.shuffle(probes)
    return out, fs, probes[:40]


def hit_at5(svc: Any, fs: list[dict[str, Any]], probes: list[dict[str, Any]]) -> tuple[float, float]:
    """hit@5 on the held-out fact questions, and on the one-off detail questions."""
    fact_hits = 0
    for fid, f in enumerate(fs):
        hits = svc.recall(f["heldout"], top_k=5)
        fact_hits += any(h.memory.metadata.get("fact") == fid for h in hits)
    detail_hits = 0
    for p in probes:
        hits = svc.recall(p["question"], top_k=5)
        detail_hits += any(p["detail"] in h.memory.content for h in hits)
    return fact_hits / len(fs), detail_hits / max(1, len(probes))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--embedder", default="local", help="local (bundled e5, default) or hash (a quick smoke run)")
    args = ap.parse_args()
    from memcli.config import load_config
    from memcli.distill.service import DistillService
    from memcli.memory.service import MemoryService, NewMemory

    rng = random.Random(args.seed)
    data, fs, probes = turns(args.turns, rng)
    with tempfile.TemporaryDirectory(prefix="memcli-distill-bench-") as tmp:
        svc = MemoryService.open(load_config(Path(tmp), env={"MEMCLI_EMBEDDER": args.embedder}))
        t0 = time.perf_counter()
        items = [NewMemory(content=d["content"], agent=d["agent"], tags=["turn"], created_at=d["at"],
                           metadata={"fact": d["fact"]} if d["fact"] is not None else None) for d in data]
        for start in range(0, len(items), 500):
            svc.remember_many(items[start:start + 500], source="hook:stop")
        svc.compact()
        print(f"store: {len(data)} turns ({sum(d['fact'] is not None for d in data)} about {len(fs)} repeated "
              f"facts) from {len(AGENTS)} agents, written in {time.perf_counter() - t0:.0f} s; "
              f"{svc.store.count()} memories (exact repeats of one agent are stored once)", flush=True)
        before = len(svc.list(all_namespaces=True, limit=100_000))
        fact_before, detail_before = hit_at5(svc, fs, probes)
        plan_s = []
        for _ in range(3):
            t = time.perf_counter()
            plan = DistillService(svc).plan()
            plan_s.append(time.perf_counter() - t)
        counts = plan.counts()
        t = time.perf_counter()
        res = DistillService(svc).apply()
        apply_s = time.perf_counter() - t
        after = len(svc.list(all_namespaces=True, limit=100_000))
        fact_after, detail_after = hit_at5(svc, fs, probes)
        t = time.perf_counter()
        again = DistillService(svc).plan()
        again_s = time.perf_counter() - t
        t = time.perf_counter()
        DistillService(svc).undo(res["tag"])
        undo_s = time.perf_counter() - t
        restored = len(svc.list(all_namespaces=True, limit=100_000))
        svc.close()
    print(f"plan: {counts['merge']} merges ({counts['supersede']} superseded), {counts['promote']} promoted, "
          f"{counts['archive']} archived")
    print(f"active memories: {before} -> {after} ({100 * (before - after) / max(1, before):.0f}% fewer)")
    print(f"hit@5, held-out questions about the repeated facts: {fact_before:.3f} -> {fact_after:.3f}")
    print(f"hit@5, questions about one-off details:            {detail_before:.3f} -> {detail_after:.3f}")
    print(f"plan {statistics.median(plan_s):.2f} s (median of 3), apply {apply_s:.2f} s (tag, commit, audit, "
          f"compaction); a second plan: {again.counts()['merge']} merges in {again_s:.2f} s; undo {undo_s:.2f} s "
          f"({restored} active again)")


if __name__ == "__main__":
    sys.exit(main())
