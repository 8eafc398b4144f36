"""How well memcli's redaction (memcli.redact) tells secrets from ordinary text.

    python bench/redact.py            # secrets caught, ordinary texts changed (false positives), speed

Secrets: the 55 kinds of bench/data/redact_cases.json, each in the sentence an agent would write it in; a
kind counts as caught when no 6+ character piece of its value survives. False positives, over texts that hold
no secret: the hand-written tricky sentences of the same file (ids, hashes, paths, "the token is expired"),
generated identifiers (40-hex git SHAs, UUIDs, memcli ids, sha256/sha512 digests, 40-character CamelCase
paths and names), every turn of LoCoMo's dev split, agentfacts' 186 facts and the CMRC paragraphs. Prints
each text it changed, so a new pattern's cost is visible.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import re
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from memcli.redact import redact  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
WORDS = ("src components header button styles main index utils services auth controller handlers users "
         "documents projects app config models views api client server tests fixtures assets images lib core "
         "data store cache memory hooks plugin skills Header Button Main Index Utils Auth User Service Api "
         "Client Server Store Cache Memory Hook Plugin Model View Controller Handler Docs Projects Home").split()


def generated(n: int, seed: int = 5) -> dict[str, list[str]]:
    """Identifiers that are not secrets, in sentences."""
    r = random.Random(seed)
    out: dict[str, list[str]] = {"git SHA-1": [], "UUID": [], "memcli id": [], "sha256 hex": [],
                                 "sha512 base64 (npm integrity)": [], "40-char path or name": []}
    from memcli.models import new_id

    for i in range(n):
        blob = r.randbytes(64)
        out["git SHA-1"].append(f"fixed in {hashlib.sha1(blob).hexdigest()} (short {hashlib.sha1(blob).hexdigest()[:7]})")
        out["UUID"].append(f"request {uuid.UUID(bytes=blob[:16], version=4)} failed")
        out["memcli id"].append(f"merged {new_id()} into {new_id()}")
        out["sha256 hex"].append(f"digest sha256:{hashlib.sha256(blob).hexdigest()}")
        out["sha512 base64 (npm integrity)"].append(
            f"integrity sha512-{base64.b64encode(hashlib.sha512(blob).digest()).decode()}")
        while True:  # exactly 40 characters: the length of an AWS secret key
            parts = [r.choice(WORDS) + (str(r.randint(1, 9)) if r.random() < 0.2 else "")
                     for _ in range(r.randint(2, 7))]
            sep = r.choice(["/", "", "/"])
            text = sep.join(p if sep else p[:1].upper() + p[1:] for p in parts)
            if len(text) >= 40:
                text = text[:40]
                break
        out["40-char path or name"].append(f"see {text} for details")
    return out


def corpora() -> dict[str, list[str]]:
    """Real text without secrets: LoCoMo turns, agentfacts facts, CMRC paragraphs (when the files exist)."""
    out: dict[str, list[str]] = {}
    locomo = SHARED / "locomo10-dev.json"
    if locomo.exists():
        turns = []
        for conv in json.loads(locomo.read_text()):
            c = conv["conversation"]
            for key in (k for k in c if re.fullmatch(r"session_\d+", k)):
                turns += [f"{t['speaker']}: {t['text']}" for t in c[key]]
        out["LoCoMo turns"] = turns
    facts = ROOT / "bench" / "data" / "agentfacts.json"
    if facts.exists():
        out["agentfacts facts"] = [m["content"] for m in json.loads(facts.read_text())["memories"]]
    cmrc = SHARED / "cmrc2018-trial.json"
    if cmrc.exists():
        data = json.loads(cmrc.read_text())
        paras = [p["context"] for d in data.get("data", []) for p in d.get("paragraphs", [])]
        if paras:
            out["CMRC paragraphs"] = paras
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--generated", type=int, default=2000, help="generated identifiers of each kind")
    ap.add_argument("--show", type=int, default=10, help="changed texts to print per set")
    args = ap.parse_args()
    cases = json.loads((ROOT / "bench" / "data" / "redact_cases.json").read_text())

    missed = []
    for c in cases["secrets"]:
        out = redact(c["text"])
        if any(len(p) >= 6 and p in out for p in c["secret"].split("\n")):
            missed.append((c["kind"], out))
    print(f"secrets: {len(cases['secrets']) - len(missed)}/{len(cases['secrets'])} kinds redacted")
    for kind, out in missed:
        print(f"  MISSED {kind}: {out[:160]!r}")
    r = random.Random(1)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+"
    bare = ["".join(r.choice(alphabet) for _ in range(40)) for _ in range(args.generated * 10)]
    caught = sum("[REDACTED" in redact(f"then paste {k} into the console") for k in bare)
    print(f"bare random 40-character keys (AWS secret key shape), no hint in the text: {caught}/{len(bare)} "
          f"redacted ({caught / len(bare):.2%})")

    sets = {"tricky sentences (redact_cases.json)": cases["ordinary"], **generated(args.generated), **corpora()}
    total = changed_total = 0
    times = []
    for name, texts in sets.items():
        changed = []
        t0 = time.perf_counter()
        for t in texts:
            out = redact(t)
            if out != t:
                changed.append((t, out))
        times.append((time.perf_counter() - t0) / max(1, len(texts)) * 1e6)
        total += len(texts)
        changed_total += len(changed)
        print(f"false positives, {name}: {len(changed)}/{len(texts)} texts changed")
        for t, out in changed[:args.show]:
            print(f"  {t[:140]!r}\n  → {out[:140]!r}")
    print(f"false positives overall: {changed_total}/{total} texts ({changed_total / max(1, total):.3%})")
    print(f"speed: median {statistics.median(times):.1f} µs per text over the sets")


if __name__ == "__main__":
    main()
