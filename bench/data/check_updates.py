#!/usr/bin/env python3
"""Validate bench/data/updates.json (standard library only).

Checks the shape (top-level keys; the fields of changes, chains and lookalikes; ids c001…, a001…, l001…), the
kinds and languages (the script of every text: no Chinese in "en"; Chinese in "zh-hans"/"zh-hant" with no
character only the other script uses; "mixed": Chinese and Latin letters in one text, or, with ``cross``, two
texts in different languages or scripts), that no text occurs twice in the whole file (one store holds them
all), that a change's two texts differ, that a chain's last text states its first text's value again (the
same numbers and Latin names), that a question names no value only one side of its change states, and the
minimum counts (≥ 60 changes over every kind and language, ≥ 8 chains, ≥ 40 lookalikes over ≥ 5 kinds of
difference). Prints the counts. Errors exit 1.

    python3 bench/data/check_updates.py [path/to/updates.json]
"""
import json
import os
import re
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_distill_pairs import HANS_ONLY, HANT_ONLY  # noqa: E402  (the same character tables)

KINDS = ("version", "number_unit", "schedule", "owner", "tool", "place", "enabled", "allowed", "always_never",
         "negation")
LANGS = ("en", "zh-hans", "zh-hant", "mixed")
DIFFERS = ("environment", "service", "team", "platform", "region", "subject", "attribute")
MIN_CHANGES, MIN_CHAINS, MIN_LOOKALIKES = 60, 8, 40
MIN_PER_LANG = {"en": 20, "zh-hans": 8, "zh-hant": 6, "mixed": 8}
CHANGE_FIELDS, CHAIN_FIELDS, LOOK_FIELDS = ({"id", "older", "newer", "question", "lang", "kind"},
                                            {"id", "texts", "question", "lang", "kind"},
                                            {"id", "a", "b", "differs", "lang", "kind"})
OPTIONAL = {"note", "cross"}
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
LATIN = re.compile(r"[A-Za-z]")
VALUE = re.compile(r"\d+(?:[.:]\d+)*|[A-Za-z][\w.\-]*\d[\w.\-]*")  # numbers, versions, times, ids with digits


def script(text):
    """en, zh-hans, zh-hant or mixed for one text (Chinese with no script-only character counts as both)."""
    if not CJK.search(text):
        return {"en"}
    hans, hant = any(c in HANS_ONLY for c in text), any(c in HANT_ONLY for c in text)
    zh = {"zh-hans"} if hans and not hant else {"zh-hant"} if hant and not hans else \
        {"zh-hans", "zh-hant"} if not hans else set()
    return zh | ({"mixed"} if LATIN.search(text) else set())


def lang_errors(lang, texts, cross):
    found = [script(t) for t in texts]
    if cross:
        if lang != "mixed":
            return ["a cross pair has lang mixed"]
        langs = [s - {"mixed"} or {"en"} for s in found]
        return [] if any(not (x & y) for x in langs for y in langs) else \
            ["cross is set but both texts are in one language and script"]
    errs = []
    for t, s in zip(texts, found):
        if lang == "mixed":
            if "mixed" not in s:
                errs.append(f"{t!r} is not Chinese with Latin letters but lang is mixed")
            if any(c in HANS_ONLY for c in t) and any(c in HANT_ONLY for c in t):
                errs.append(f"{t!r} mixes Simplified and Traditional characters")
        elif lang not in s and not (lang != "en" and "mixed" in s and lang in s):
            errs.append(f"{t!r} is not {lang}")
    return errs


def values(text):
    return set(VALUE.findall(text))


def main(argv):
    path = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "updates.json")
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    errors = []
    for key in ("name", "version", "description", "changes", "chains", "lookalikes"):
        if key not in data:
            errors.append(f"missing top-level key {key!r}")
    if errors:
        print("\n".join(errors))
        return 1
    seen_texts = Counter()
    count = {"kind": Counter(), "lang": Counter(), "differs": Counter(), "cross": 0}
    groups = (("changes", "c", CHANGE_FIELDS), ("chains", "a", CHAIN_FIELDS), ("lookalikes", "l", LOOK_FIELDS))
    for group, prefix, fields in groups:
        for n, rec in enumerate(data[group]):
            where = f"{group}[{n}] ({rec.get('id')})"
            keys = set(rec)
            if not fields <= keys or keys - fields - OPTIONAL:
                errors.append(f"{where}: fields {sorted(keys)}, expected {sorted(fields)} (+ {sorted(OPTIONAL)})")
                continue
            if rec["id"] != f"{prefix}{n + 1:03d}":
                errors.append(f"{where}: id should be {prefix}{n + 1:03d}")
            if rec["kind"] not in KINDS:
                errors.append(f"{where}: unknown kind {rec['kind']!r}")
            if rec["lang"] not in LANGS:
                errors.append(f"{where}: unknown lang {rec['lang']!r}")
            texts = rec["texts"] if group == "chains" else [rec["older"], rec["newer"]] if group == "changes" \
                else [rec["a"], rec["b"]]
            if any(not isinstance(t, str) or not t.strip() for t in texts):
                errors.append(f"{where}: an empty text")
                continue
            errors += [f"{where}: {e}" for e in lang_errors(rec["lang"], texts, rec.get("cross", False))]
            for t in texts:
                seen_texts[t] += 1
            if group == "changes":
                count["kind"][rec["kind"]] += 1
                count["lang"][rec["lang"]] += 1
                count["cross"] += bool(rec.get("cross"))
                if rec["older"] == rec["newer"]:
                    errors.append(f"{where}: older and newer are the same text")
                only = values(rec["older"]) ^ values(rec["newer"])
                named = sorted(values(rec["question"]) & only)
                if named:
                    errors.append(f"{where}: the question names {named}, a value of one side only")
            if group == "chains":
                if len(texts) < 3 or any(x == y for x, y in zip(texts, texts[1:])) or len(set(texts)) < 2:
                    errors.append(f"{where}: a chain is three or more texts, each another than the one before")
                elif values(texts[0]) != values(texts[-1]):
                    errors.append(f"{where}: the last text should state the first one's values again")
            if group == "lookalikes":
                if rec["differs"] not in DIFFERS:
                    errors.append(f"{where}: unknown differs {rec['differs']!r}")
                count["differs"][rec["differs"]] += 1
                if rec["a"] == rec["b"]:
                    errors.append(f"{where}: a and b are the same text")
    for t, k in seen_texts.items():
        if k > 1 and not any(t == c["texts"][-1] and t == c["texts"][0] for c in data["chains"]):
            errors.append(f"text occurs {k} times: {t!r}")
    n_c, n_a, n_l = len(data["changes"]), len(data["chains"]), len(data["lookalikes"])
    if n_c < MIN_CHANGES:
        errors.append(f"{n_c} changes, at least {MIN_CHANGES} wanted")
    if n_a < MIN_CHAINS:
        errors.append(f"{n_a} chains, at least {MIN_CHAINS} wanted")
    if n_l < MIN_LOOKALIKES:
        errors.append(f"{n_l} lookalikes, at least {MIN_LOOKALIKES} wanted")
    errors += [f"no change of kind {k}" for k in KINDS if not count["kind"][k]]
    errors += [f"{count['lang'][k]} changes in {k}, at least {m} wanted" for k, m in MIN_PER_LANG.items()
               if count["lang"][k] < m]
    if len(count["differs"]) < 5:
        errors.append(f"lookalikes differ in {len(count['differs'])} ways, at least 5 wanted")
    print(f"changes {n_c} (cross-language {count['cross']}), chains {n_a}, lookalikes {n_l}")
    print("  kinds:   " + ", ".join(f"{k} {count['kind'][k]}" for k in KINDS))
    print("  langs:   " + ", ".join(f"{k} {count['lang'][k]}" for k in LANGS))
    print("  differs: " + ", ".join(f"{k} {count['differs'][k]}" for k in DIFFERS))
    if errors:
        print("\n".join(["ERRORS:"] + errors))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
