"""8 writer processes × 60 memories at once, through three faces (CLI processes, the library in-process,
REST clients of one `memcli serve`), on one fresh store → exactly 480 rows, every acknowledged id present
once, every content present once."""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from pathlib import Path

from _util import HERE, PYTHON, Reaper, all_rows, make_env, start_server
from _writers import CLI_REMEMBERS, content

WRITERS = [("cli", 2), ("lib", 3), ("rest", 3)]  # (kind, processes): 8 writers
PER_WRITER = 60  # enough for every face's writes to collide many times; bench/concurrency.py runs bigger ones


def test_eight_processes_at_once_lose_and_duplicate_nothing(home: Path, tmp_path: Path,
                                                                         reaper: Reaper) -> None:
    env = make_env(home)
    srv = start_server(reaper, home, env=env)  # the REST writers' server: also a writer of the same store
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs: list[tuple[str, int, subprocess.Popen]] = []
    w = 0
    for kind, count in WRITERS:
        for _ in range(count):
            args = [PYTHON, str(HERE / "_writers.py"), kind, str(w), str(PER_WRITER), str(barrier)]
            if kind == "rest":
                args.append(srv.url)
            procs.append((kind, w, reaper.track(subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                                                                 stderr=subprocess.PIPE, cwd=tmp_path))))
            w += 1
    deadline = time.monotonic() + 120
    while len(list(barrier.glob("ready-*"))) < len(procs):
        assert time.monotonic() < deadline, "a writer did not start"
        assert all(p.poll() is None for _, _, p in procs), [p.stderr.read() for _, _, p in procs if p.poll() is not None]
        time.sleep(0.02)
    (barrier / "go").touch()

    acked: list[tuple[str, str]] = []
    for kind, writer, p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, f"{kind} writer {writer} failed:\n{err.decode(errors='replace')[-3000:]}"
        assert b"Traceback" not in err, err.decode(errors="replace")[-3000:]
        got = json.loads(out.decode().strip().splitlines()[-1])["acked"]
        assert len(got) == PER_WRITER, f"{kind} writer {writer}: {len(got)} of {PER_WRITER} acknowledged\n{err[-2000:]!r}"
        acked += [(mid, text) for mid, text in got]
    srv.stop()

    expected = {content(kind, writer, i) for kind, writer, _ in procs for i in range(PER_WRITER)}
    TOTAL = 8 * PER_WRITER
    assert len(acked) == TOTAL and len({mid for mid, _ in acked}) == TOTAL  # every writer got its own ids
    rows = all_rows(home, ("id", "content", "source", "tags"))
    ids = Counter(r["id"] for r in rows)
    assert len(rows) == TOTAL, f"{len(rows)} rows for {TOTAL} acknowledged writes"
    assert not [i for i, n in ids.items() if n > 1], "duplicated ids"
    assert set(ids) == {mid for mid, _ in acked}, "an acknowledged write is missing"
    by_id = {r["id"]: r for r in rows}
    assert all(by_id[mid]["content"] == text for mid, text in acked)  # each id holds what was acknowledged
    assert Counter(r["content"] for r in rows) == Counter(expected)  # nothing lost, nothing twice
    assert Counter(r["source"] for r in rows) == {"cli": 2 * CLI_REMEMBERS, "import": 2 * (PER_WRITER - CLI_REMEMBERS),
                                                  "api": 6 * PER_WRITER}
    assert all(r["tags"] == [f"w{r['content'].split()[1]}"] for r in rows)
