#!/usr/bin/env python3
"""Validate bench/data/home.json (standard library only).

Checks: 300–500 memories of the three agents (claude-code, codex, openclaw) over four weeks, unique ids
and refs, every memory in exactly one fact; groups: a restatement has 2–4 members of one fact and its ``best``
among them, a look-alike's members are facts of their own, a change's outdated members are older than its
current one and of another fact, a polarity pair is two facts; every name is in its memory's text; one-off
facts are unique texts. Prints counts by kind, variant, agent, week and language. Errors exit 1.

    python3 bench/data/check_home.py [path/to/home.json]
"""
import json
import os
import re
import sys
from collections import Counter

AGENTS = {"agent:claude-code", "agent:codex", "agent:openclaw"}
KINDS = {"restatement", "lookalike", "change", "polarity"}
WEEK = 7 * 86_400_000


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "home.json")
    data = json.load(open(path, encoding="utf-8"))
    errors: list[str] = []
    mems = data["memories"]
    by_id = {m["id"]: m for m in mems}
    if len(by_id) != len(mems) or len({m["ref"] for m in mems}) != len(mems):
        errors.append("ids or refs are not unique")
    if not 300 <= len(mems) <= 500:
        errors.append(f"{len(mems)} memories (300–500 expected)")
    if {m["scope"] for m in mems} != AGENTS:
        errors.append(f"scopes {sorted({m['scope'] for m in mems})}")
    start = data["start_ms"]
    for m in mems:
        if not start <= m["created_at"] < start + 4 * WEEK:
            errors.append(f"{m['ref']}: created_at outside the four weeks")
        for name in m["names"]:
            if name.casefold() not in m["content"].casefold():
                errors.append(f"{m['ref']}: name {name!r} not in its text")
    if len({m["content"] for m in mems}) != len(mems):
        errors.append("a text occurs twice")
    in_group: Counter[str] = Counter()
    for g in data["groups"]:
        if g["kind"] not in KINDS:
            errors.append(f"{g['id']}: unknown kind {g['kind']}")
            continue
        ids = g["ids"]
        if any(i not in by_id for i in ids):
            errors.append(f"{g['id']}: unknown id")
            continue
        in_group.update(ids)
        facts = [by_id[i]["fact"] for i in ids]
        if g["kind"] == "restatement":
            if not 2 <= len(ids) <= 4 or len(set(facts)) != 1 or g["best"] not in ids:
                errors.append(f"{g['id']}: a restatement is 2–4 members of one fact with its best among them")
            if len({by_id[i]["scope"] for i in ids}) < 2:
                errors.append(f"{g['id']}: a restatement spans two agents or more")
        elif g["kind"] in ("lookalike", "polarity"):
            if len(set(facts)) != len(ids):
                errors.append(f"{g['id']}: members must be facts of their own")
        else:
            cur = by_id[g["current"]]
            olds = [by_id[i] for i in g["outdated"]]
            if any(o["created_at"] >= cur["created_at"] or o["fact"] == cur["fact"] for o in olds):
                errors.append(f"{g['id']}: outdated members must be older, of another fact")
            if set(g["outdated"]) | {g["current"]} != set(ids):
                errors.append(f"{g['id']}: ids are the outdated members and the current one")
    if any(n > 1 for n in in_group.values()):
        errors.append("a memory is in two groups")
    facts = Counter(m["fact"] for m in mems)
    for m in mems:
        if m["id"] not in in_group and facts[m["fact"]] != 1:
            errors.append(f"{m['ref']}: a one-off fact with another member")
    cjk = re.compile(r"[\u3400-\u9fff]")
    print(f"{len(mems)} memories, {len(facts)} facts, {len(data['groups'])} groups")
    print("groups: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(g['kind'] for g in data['groups']).items())))
    print("variants: " + ", ".join(f"{k} {v}" for k, v in Counter(m['variant'] for m in mems).most_common()))
    print("agents: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(m['scope'] for m in mems).items())))
    print("weeks: " + ", ".join(str(v) for _, v in sorted(Counter((m['created_at'] - start) // WEEK
                                                                    for m in mems).items())))
    print(f"Chinese: {sum(1 for m in mems if cjk.search(m['content']))}; with names: "
          f"{sum(1 for m in mems if m['names'])}")
    for e in errors:
        print("ERROR:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
