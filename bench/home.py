"""distill on a realistic home: three agents over four weeks (bench/data/home.json), labelled.

    python bench/home.py                 # the bundled e5 embedder (as users run it)
    python bench/home.py --embedder hash # the fake embedder (fast, meaningless similarity)

The home is imported once (ids, scopes, projects, created_at as labelled), then copied for each policy, and
each copy runs what a user runs: ``distill`` (the plan), ``distill --apply``, ``distill`` again (the plan
after the apply: the incremental one a cron job makes), and ``distill --undo``, through DistillService.
Policies, from the same run:

- ``dense``: plain dense-threshold merge — every candidate pair (calibrated similarity ≥ 0.80) merges, the
  newest member keeps its words (what similarity alone does);
- ``newest``: memcli's same-fact test decides, the newest member keeps its words, no keyword aliases (the
  keeper before issue 28);
- ``memcli``: what memcli does now.

Printed, per policy (targets for memcli: 0 / 0 / 0 and ≥ 50%): wrong merges (memories merged into a memory
of another fact), names lost (a product name, identifier or path of a merged memory that keyword recall no
longer finds in its fact's active memory), outdated values promoted (a memory whose value changed later
made ``global``), restatements merged (share of the possible merges of the restatement groups made), best
keeper (merged groups whose kept text is the labelled best-written member), conflicts listed before and
after the apply (of the polarity pairs and later changes), restatements reported as conflicts, and whether
undo put every row back exactly (version and updated_at included).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
DATA = ROOT / "bench" / "data" / "home.json"
NS = "default"


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def records(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"id": m["id"], "content": m["content"], "namespace": NS, "project": m["project"], "scope": m["scope"],
             "source": m["source"], "tags": m["tags"], "importance": m["importance"], "created_at": m["created_at"],
             "updated_at": m["created_at"]} for m in data["memories"]]


@contextmanager
def policy(name: str) -> Iterator[None]:
    """Patch the distiller into a baseline for the duration (``memcli``: nothing patched)."""
    import memcli.distill.distiller as dist
    import memcli.facts.samefact as sf

    saved: list[tuple[Any, str, Any]] = []

    def patch(mod: Any, attr: str, value: Any) -> None:
        if hasattr(mod, attr):
            saved.append((mod, attr, getattr(mod, attr)))
            setattr(mod, attr, value)

    if name in ("dense", "newest"):
        # the keeper is the centre of its star (most important, deliberate, newest), its text unchanged
        patch(dist, "_pick_keeper", lambda centre, members, *a, **k: centre)
        patch(dist, "_aliases", lambda keeper, others: "")
        patch(dist, "_hold_outdated", lambda plan: set())
    if name == "dense":
        same = sf.Verdict(sf.SAME, "similar enough")
        patch(sf, "merge_verdict", lambda a, b: same)
        patch(sf, "compare", lambda a, b: same)
        patch(sf, "same_fact", lambda a, b: same)
    try:
        yield
    finally:
        for mod, attr, value in reversed(saved):
            setattr(mod, attr, value)


def snapshot(svc: Any) -> dict[str, dict[str, Any]]:
    rows = svc.store.read_rows(None, ["id", "content", "scope", "status", "superseded_by", "version", "updated_at",
                                      "tags", "importance", "merged_from", "search_text"])
    return {r["id"]: {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in r.items()} for r in rows}


def conflict_pairs(data: dict[str, Any]) -> list[tuple[set[str], set[str]]]:
    """The contradictions to list: each polarity pair, and each later change (outdated members vs current)."""
    out = []
    for g in data["groups"]:
        if g["kind"] == "polarity":
            out.append(({g["ids"][0]}, {g["ids"][1]}))
        elif g["kind"] == "change":
            out.append((set(g["outdated"]), {g["current"]}))
    return out


def listed(plan: Any, pairs: list[tuple[set[str], set[str]]]) -> int:
    found = [set(c["ids"]) for c in plan.conflicts]
    return sum(1 for a, b in pairs if any(ids & a and ids & b for ids in found))


def run_policy(name: str, home: Path, data: dict[str, Any], embedder: str) -> dict[str, Any]:
    from memcli.config import load_config
    from memcli.distill.distiller import DistillOptions
    from memcli.distill.service import DistillService
    from memcli.memory.service import MemoryService

    by_id = {m["id"]: m for m in data["memories"]}
    fact = {i: m["fact"] for i, m in by_id.items()}
    pairs = conflict_pairs(data)
    out: dict[str, Any] = {}
    with policy(name):
        svc = MemoryService.open(load_config(home, env={"MEMCLI_EMBEDDER": embedder}))
        ds = DistillService(svc)
        before = snapshot(svc)
        t0 = time.perf_counter()
        plan = ds.plan(DistillOptions())
        out["plan_s"] = time.perf_counter() - t0
        out["conflicts_before"] = listed(plan, pairs)
        restated = {frozenset(g["ids"]) for g in data["groups"] if g["kind"] == "restatement"}
        out["restatement_conflicts"] = sum(1 for c in plan.conflicts
                                           if any(set(c["ids"]) <= g for g in restated))
        t0 = time.perf_counter()
        d = ds._distiller(DistillOptions())
        applied = d.apply(plan)
        out["apply_s"] = time.perf_counter() - t0
        after = snapshot(svc)
        again = ds.plan(DistillOptions())
        out["conflicts_after"] = listed(again, pairs)
        out["second_plan_merges"] = len(again.merge)
        out["merges"] = len(plan.merge)
        out["superseded"] = sum(len(s.merge) for s in plan.merge)
        out["promoted"] = len(plan.promote)
        out["wrong"] = sum(1 for s in plan.merge for i in s.merge if fact[i] != fact[s.keep])
        # names: each merged memory's names must still find an active memory of its fact by keyword
        lost: list[tuple[str, str]] = []
        for s in plan.merge:
            for i in [s.keep, *s.merge]:
                for nm in by_id[i]["names"]:
                    hits = svc.recall(nm, mode="text", top_k=10, namespace=NS)
                    if not any(fact.get(h.memory.id) == fact[i] for h in hits):
                        lost.append((by_id[i]["ref"], nm))
        out["names_lost"] = len(lost)
        out["names_lost_list"] = lost[:12]
        def promoted(i: str) -> bool:  # made global, itself or as the memory it was merged into
            row = after[i]
            if row["status"] == "superseded" and fact.get(row["superseded_by"]) == fact[i]:
                row = after[row["superseded_by"]]
            return row["status"] == "active" and row["scope"] == "global" and before[i]["scope"] != "global"

        # an outdated value promoted: a change group whose older value became global (counted once a value)
        out["outdated_promoted"] = sorted(g["id"] for g in data["groups"] if g["kind"] == "change"
                                          and any(promoted(i) for i in g["outdated"]))
        possible = merged = best = groups_merged = 0
        sloppy = {"lower", "typo", "fragment", "hedge", "case"}  # wordings a reader would call worse
        best_s = groups_s = 0
        not_best: list[str] = []
        for g in data["groups"]:
            if g["kind"] != "restatement":
                continue
            possible += len(g["ids"]) - 1
            absorbed = [i for i in g["ids"] if after[i]["status"] == "superseded" and after[i]["superseded_by"] in g["ids"]]
            merged += len(absorbed)
            if absorbed:
                groups_merged += 1
                keeper = after[absorbed[0]]["superseded_by"]
                ok = after[keeper]["content"] == by_id[g["best"]]["content"]
                best += ok
                if set(g["variants"][1:]) <= sloppy:
                    groups_s += 1
                    best_s += ok
                if not ok:
                    not_best.append(f"{g['id']}:{by_id[keeper]['variant']}")
        out["restatements_merged"] = (merged, possible)
        out["best_keeper"] = (best, groups_merged)
        out["best_keeper_sloppy"] = (best_s, groups_s)
        out["not_best"] = not_best
        # undo: every row back as it was (version and updated_at included)
        t0 = time.perf_counter()
        if applied.get("tag"):
            ds.undo()
        out["undo_s"] = time.perf_counter() - t0
        back = snapshot(svc)
        fields = ("content", "scope", "status", "superseded_by", "tags", "importance", "merged_from", "search_text")
        changed = [i for i in before if before[i] != after.get(i)]
        out["undo_values"] = sum(1 for i in changed if all(back[i][f] == before[i][f] for f in fields))
        out["undo_exact"] = sum(1 for i in changed if back[i] == before[i])
        out["undo_rows"] = len(changed)
        svc.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--embedder", default="local", help="local (the bundled e5, default) or hash")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--policies", default="dense,newest,memcli")
    ap.add_argument("-v", "--verbose", action="store_true", help="list the names lost and outdated promoted")
    args = ap.parse_args()
    data = load(args.data)
    n_rest = sum(1 for g in data["groups"] if g["kind"] == "restatement")
    n_change = sum(1 for g in data["groups"] if g["kind"] == "change")
    print(f"{len(data['memories'])} memories of {len(data['agents'])} agents over {data['days']} days; "
          f"{n_rest} restatement groups, {len(conflict_pairs(data))} contradictions to list\n")
    from memcli.config import load_config
    from memcli.memory.service import MemoryService

    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        t0 = time.perf_counter()
        svc = MemoryService.open(load_config(base, env={"MEMCLI_EMBEDDER": args.embedder}))
        svc.import_records(records(data), keep_secrets=True)
        svc.close()
        print(f"imported in {time.perf_counter() - t0:.1f} s ({args.embedder} embedder)")
        for name in args.policies.split(","):
            home = Path(tmp) / name
            shutil.copytree(base, home)
            results[name] = run_policy(name, home, data, args.embedder)
    names = list(results)
    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("wrong merges", lambda r: str(r["wrong"])),
        ("names lost", lambda r: str(r["names_lost"])),
        ("outdated values promoted", lambda r: f"{len(r['outdated_promoted'])}/{n_change}"),
        ("restatements merged", lambda r: f"{r['restatements_merged'][0]}/{r['restatements_merged'][1]} "
                                          f"({r['restatements_merged'][0] / r['restatements_merged'][1]:.0%})"),
        ("best-written keeper, all groups", lambda r: f"{r['best_keeper'][0]}/{r['best_keeper'][1]}"),
        ("  of case/typo/fragment/hedge", lambda r: f"{r['best_keeper_sloppy'][0]}/{r['best_keeper_sloppy'][1]}"),
        ("conflicts listed, before apply", lambda r: f"{r['conflicts_before']}/{len(conflict_pairs(data))}"),
        ("conflicts listed, after apply", lambda r: f"{r['conflicts_after']}/{len(conflict_pairs(data))}"),
        ("restatements shown as conflicts", lambda r: str(r["restatement_conflicts"])),
        ("merges / superseded / promoted", lambda r: f"{r['merges']} / {r['superseded']} / {r['promoted']}"),
        ("second plan: merges", lambda r: str(r["second_plan_merges"])),
        ("undo: rows exact (values only)", lambda r: f"{r['undo_exact']}/{r['undo_rows']} ({r['undo_values']})"),
        ("plan / apply / undo s", lambda r: f"{r['plan_s']:.1f} / {r['apply_s']:.1f} / {r['undo_s']:.1f}"),
    ]
    print(f"\n{'':<34}" + "".join(f"{n:>18}" for n in names))
    for label, fmt in rows:
        print(f"{label:<34}" + "".join(f"{fmt(results[n]):>18}" for n in names))
    if args.verbose:
        for n in names:
            print(f"\n{n}: names lost {results[n]['names_lost_list']}; outdated promoted "
                  f"{results[n]['outdated_promoted']}; another keeper than the labelled best {results[n]['not_best']}")


if __name__ == "__main__":
    main()
