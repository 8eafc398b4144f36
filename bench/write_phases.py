"""Where a batch of single writes spends its time: ``remember_many`` of ``--group`` memories at a time (the
server's group commit of 8 writers), each phase's own time per memory (nested phases counted apart, as
bench/s3.py's profile does), on a fresh local store, with the bench's writer texts (bench/concurrency.py).

    python bench/write_phases.py                      # the bundled embedder, 200 writes, groups of 8
    python bench/write_phases.py --embedder hash --group 1
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


class Phases:
    """Own wall time of each wrapped call's phase; what no wrapper covers is ``other``."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {"other": 0.0}
        self.calls: dict[str, int] = {}
        self.stack = ["other"]
        self.mark = time.perf_counter()

    def _switch(self, to: str | None) -> None:
        now = time.perf_counter()
        self.ms[self.stack[-1]] = self.ms.get(self.stack[-1], 0.0) + (now - self.mark) * 1000
        self.mark = now
        if to is None:
            self.stack.pop()
        else:
            self.stack.append(to)
            self.calls[to] = self.calls.get(to, 0) + 1

    def wrap(self, obj: Any, name: str, phase: str) -> None:
        fn = getattr(obj, name)

        def timed(*a: Any, **kw: Any) -> Any:
            self._switch(phase)
            try:
                return fn(*a, **kw)
            finally:
                self._switch(None)

        setattr(obj, name, timed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedder", default="local")
    ap.add_argument("--writes", type=int, default=200)
    ap.add_argument("--group", type=int, default=8)
    a = ap.parse_args()
    import concurrency
    from memcli import facts
    from memcli.config import load_config
    from memcli.memory import current, lookups, service as service_mod
    from memcli.memory.service import MemoryService, NewMemory

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    cfg = load_config(Path(tempfile.mkdtemp(prefix="memcli-bench-phases-")), env={**env, "MEMCLI_EMBEDDER": a.embedder})
    svc = MemoryService.open(cfg)
    svc.remember("warm up: the first write creates the tables and the keyword index")
    svc.embedder.embed_query("warm up")
    texts = [concurrency.content("rest", w, i) for i in range(a.writes // 8 + 1) for w in range(8)][:a.writes]
    p = Phases()
    p.wrap(svc.embedder, "embed_passages", "embedding")
    p.wrap(svc.store, "column_values", "exact-copy lookup")
    p.wrap(svc.store, "find", "key / other find")
    p.wrap(svc.store, "page", "thread context")
    p.wrap(svc.store, "vector_search", "neighbour search")
    p.wrap(service_mod, "neighbours", "neighbour search")  # a batch's searches together (memory/lookups.py)
    p.wrap(svc.store, "add", "lance commit")
    p.wrap(svc.store, "after_write", "index upkeep")
    p.wrap(svc.store.audit, "record", "audit log")
    p.wrap(svc.store, "get", "get / update (links)")
    p.wrap(svc.store, "update", "get / update (links)")
    p.wrap(svc.store.write_lock, "hold", "write lock")
    p.wrap(svc, "_relate", "same-fact rules")
    p.wrap(current, "changed_by", "update rules")
    del facts, lookups
    t0 = time.perf_counter()
    p.mark = t0
    links = 0
    for start in range(0, len(texts), a.group):
        res = svc.remember_many([NewMemory(content=t) for t in texts[start:start + a.group]], source="api")
        links += sum(1 for r in res if getattr(r, "updates", None))
    p._switch("other")
    p._switch(None)
    wall = (time.perf_counter() - t0) * 1000
    n = len(texts)
    print(f"{n} writes in groups of {a.group}, embedder {a.embedder}: {wall / n:.1f} ms a write, {n / wall * 1000:.1f}"
          f" writes/s (load average {os.getloadavg()[0]:.1f})")
    for phase, ms in sorted(p.ms.items(), key=lambda kv: -kv[1]):
        print(f"  {phase:<24} {ms / n:7.2f} ms/write {100 * ms / wall:5.1f} %   {p.calls.get(phase, 0) / n:.2f} calls/write")
    stored = svc.store.column_values(None, ["id", "outdated_by"])
    print(f"  rows {len(stored)}, outdated {sum(1 for r in stored if r.get('outdated_by'))}")
    svc.close()


if __name__ == "__main__":
    main()
