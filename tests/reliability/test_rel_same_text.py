"""The same texts remembered at once through every face: 2 REST clients and 2 MCP clients (Streamable HTTP)
of one `memcli serve`, 2 CLI processes (`memcli remember` through that server) and 2 stdio `memcli mcp`
processes (each writing to the store itself) send the same 15 texts at the same moment, round after round.
`remember` is idempotent: each text is stored exactly once, and every writer is told that one copy's id."""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from pathlib import Path

from _same_writers import TEXTS, text
from _util import HERE, PYTHON, Reaper, all_rows, make_env, start_server

WRITERS = ["rest", "rest", "mcp-http", "mcp-http", "cli", "cli", "mcp-stdio", "mcp-stdio"]
ROUNDS = 2  # before the fix runs of 3 and 4 rounds stored 44 of 45 and 46 of 60 texts two or three times


def test_the_same_text_from_every_face_at_once_is_stored_once(home: Path, tmp_path: Path, reaper: Reaper) -> None:
    env = make_env(home)
    srv = start_server(reaper, home, env=env)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = []
    for w, kind in enumerate(WRITERS):
        args = [PYTHON, str(HERE / "_same_writers.py"), kind, str(w), str(ROUNDS), str(barrier), srv.url]
        procs.append((kind, w, reaper.track(subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                                                             stderr=subprocess.PIPE, cwd=tmp_path))))
    for r in range(ROUNDS):  # every writer ready (round 0: its client connected, its store open), then go
        deadline = time.monotonic() + 120
        while len(list(barrier.glob(f"ready-{r}-*"))) < len(procs):
            assert time.monotonic() < deadline, f"a writer did not get ready for round {r}"
            dead = [(k, w, p.stderr.read()) for k, w, p in procs if p.poll() is not None]
            assert not dead, dead
            time.sleep(0.01)
        (barrier / f"go-{r}").touch()

    acked: dict[tuple[int, int], set[str]] = {}
    for kind, w, p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, f"{kind} writer {w} failed:\n{err.decode(errors='replace')[-3000:]}"
        got = json.loads(out.decode().strip().splitlines()[-1])["acked"]
        assert len(got) == ROUNDS * TEXTS, f"{kind} writer {w}: {len(got)} acknowledged\n{err.decode()[-3000:]}"
        for r, i, mid in got:
            acked.setdefault((r, i), set()).add(mid)
    srv.stop()

    rows = all_rows(home, ("id", "content", "scope", "namespace"))
    assert {(r["namespace"], r["scope"]) for r in rows} == {("default", "global")}  # one identity per text
    copies = Counter(r["content"] for r in rows)
    twice = {c: n for c, n in copies.items() if n > 1}
    assert not twice, f"{len(twice)} of {ROUNDS * TEXTS} texts stored more than once: {sorted(twice.values())}"
    assert set(copies) == {text(r, i) for r in range(ROUNDS) for i in range(TEXTS)}
    by_content = {r["content"]: r["id"] for r in rows}
    told = {k: ids for k, ids in acked.items() if ids != {by_content[text(*k)]}}
    assert not told, f"writers were told other ids than the stored copy's for {len(told)} texts"
