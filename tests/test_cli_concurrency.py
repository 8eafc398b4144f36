"""Several processes writing one store at the same time: nothing lost, nothing duplicated, consistent."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from memcli.cli.app import app
from memcli.config import load_config
from memcli.memory.service import MemoryService, NewMemory

# Each worker opens the store, says it is ready, and waits for the common "go" so that the writes really
# overlap (imports alone take ~1 s, and longer when four processes start on two cores).
WORKER = r"""
import json, os, sys, time
from memcli.config import load_config
from memcli.memory.service import MemoryService

role, barrier, arg = sys.argv[1], sys.argv[2], sys.argv[3]
svc = MemoryService.open(load_config())
open(os.path.join(barrier, f"ready-{os.getpid()}"), "w").close()
deadline = time.time() + 60
while not os.path.exists(os.path.join(barrier, "go")) and time.time() < deadline:
    time.sleep(0.005)
done = []
if role == "remember":
    worker, n = arg.split(":")
    for i in range(int(n)):
        res = svc.remember(f"worker {worker} wrote memory number {i} about topic {worker}-{i}",
                           tags=[f"w{worker}"], source="api")
        assert res.created, res
        done.append(res.memory_id)
elif role == "forget":
    for mid in json.loads(arg):
        done += svc.forget([mid])
elif role == "compact":
    for _ in range(int(arg)):
        done.append(svc.compact())
        time.sleep(0.2)
svc.close()
print(json.dumps(done))
"""


def start(role: str, barrier: Path, arg: str, env: dict[str, str]) -> subprocess.Popen:
    barrier.mkdir(exist_ok=True)
    return subprocess.Popen([sys.executable, "-c", WORKER, role, str(barrier), arg], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def go(barrier: Path, procs: list[subprocess.Popen]) -> None:
    """Wait until every worker is ready, then start them all at once."""
    deadline = time.time() + 60
    while len(list(barrier.glob("ready-*"))) < len(procs):
        assert time.time() < deadline and all(p.poll() is None for p in procs), "a worker did not start"
        time.sleep(0.01)
    (barrier / "go").touch()


def finish(procs: list[subprocess.Popen]) -> list[list]:
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=180)
        assert p.returncode == 0, f"worker failed ({p.returncode}):\n{stderr[-3000:]}"
        assert "Traceback" not in stderr, stderr
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    return outs


def test_four_processes_remember_fifty_each(home: Path, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    """A fresh home (the processes also race to create the store): exactly 200 rows, none lost."""
    barrier = tmp_path / "barrier"
    procs = [start("remember", barrier, f"{w}:50", subprocess_env) for w in range(4)]
    go(barrier, procs)
    written = [mid for out in finish(procs) for mid in out]
    assert len(written) == 200 and len(set(written)) == 200

    s = MemoryService.open(load_config(home))
    try:
        assert s.store.count() == 200
        ids = [r["id"] for r in s.store.column_values(None, ["id"])]
        assert len(ids) == 200 and set(ids) == set(written)  # no duplicate rows, none lost
        contents = {m.content for m in s.export()}
        assert contents == {f"worker {w} wrote memory number {i} about topic {w}-{i}"
                            for w in range(4) for i in range(50)}
        for w in range(4):
            assert len(s.list(tags=[f"w{w}"], limit=1000)) == 50
        hit = s.recall("worker 2 wrote memory number 17 about topic 2-17", top_k=1)
        assert hit[0].memory.content.endswith("topic 2-17")
    finally:
        s.close()


def test_concurrent_remember_forget_and_compact_leave_a_consistent_store(
        home: Path, subprocess_env: dict[str, str], memcli_bin: str, tmp_path: Path) -> None:
    s = MemoryService.open(load_config(home))
    initial = [r.memory_id for r in s.remember_many(
        [NewMemory(f"initial memory {i} about the old topic {i}", tags=["initial"]) for i in range(60)])]
    s.close()
    doomed, kept = initial[:30], initial[30:]

    barrier = tmp_path / "barrier"
    procs = [
        start("remember", barrier, "new:40", subprocess_env),
        start("forget", barrier, json.dumps(doomed), subprocess_env),
        start("compact", barrier, "6", subprocess_env),
    ]
    go(barrier, procs)
    # and the CLI compacting at the same time, as cron or a user would
    cli = subprocess.Popen([memcli_bin, "compact", "--json"], env=subprocess_env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    new_ids, forgotten, compactions = finish(procs)
    cli_out, cli_err = cli.communicate(timeout=180)
    assert cli.returncode == 0, cli_err
    assert json.loads(cli_out)["ok"] is True
    assert sorted(forgotten) == sorted(doomed) and len(new_ids) == 40
    assert all(c["compacted"] or "another process" in c["reason"] for c in compactions)

    s = MemoryService.open(load_config(home))
    try:
        ids = [r["id"] for r in s.store.column_values(None, ["id"])]
        assert len(ids) == len(set(ids)) == 70
        assert set(ids) == set(kept) | set(new_ids)
        assert s.store.count() == 70
        hits = s.recall("initial memory 45 about the old topic 45", top_k=3)
        assert hits[0].memory.id == initial[45], [(h.memory.content, h.score) for h in hits]
        assert not any(h.memory.id in doomed for h in s.recall("initial memory about the old topic", top_k=50))
        res = s.compact()
        assert s.store.count() == 70 and s.store.fragment_count() <= 2, res
    finally:
        s.close()
    # the CLI sees the same consistent store
    res = CliRunner().invoke(app, ["list", "--limit", "1000", "--json"], catch_exceptions=False)
    listed = json.loads(res.stdout)
    assert {it["memory_id"] for it in listed} == set(kept) | set(new_ids)
