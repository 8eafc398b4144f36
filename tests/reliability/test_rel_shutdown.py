"""`memcli serve` and `memcli mcp` stopping while their own threads are busy: the idle timeout or SIGTERM while
the store is still opening, while the embedder warms up, while group commits and a spool drain run.

Python finalizing the interpreter under a daemon thread inside native code (LanceDB, the embedder) aborted
the process after a clean shutdown (SIGABRT, "Fatal Python error: PyGILState_Release" or "FATAL: exception not
rethrown"), and uvicorn died of the SIGTERM it had just handled (exit -15). Every stop here exits 0, logs
nothing fatal, leaves no server.json and loses nothing: every acknowledged write, and every queued turn, is in
the store (once) or still queued when the store is opened again. Several servers stop at once in each case
(the race needs the machine busy), bounded to seconds each.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from _util import (
    AUTH,
    MEMCLI,
    Reaper,
    Server,
    make_env,
    open_service,
    start_server,
    wait_for,
)

FATAL = ("Fatal Python error", "FATAL:", "Traceback (most recent call last)")
WORDS = ("billing", "ledger", "warehouse", "avatar", "kubectl", "tenant", "shard", "retention", "renderer",
         "unleash", "lockfile", "postgres", "redis", "nightly", "exports", "webhook", "invoice", "cron", "vpn",
         "sentry", "grafana", "terraform", "bucket", "replica")


def assert_clean_exit(srv: Server, rc: int | None, what: str) -> None:
    log = srv.log.read_text(errors="replace")
    assert rc == 0, f"{what}: memcli serve exited with {rc}:\n{log[-4000:]}"
    assert not any(f in log for f in FATAL), f"{what}:\n{log[-4000:]}"
    assert not (srv.home / "server.json").exists(), what


def queue_turns(home: Path, n: int) -> set[str]:
    """``n`` Stop turns queued in ``home``'s spool, as the hook client leaves them while no server runs; each
    worth keeping and unlike the others. Returns their markers."""
    from memcli.hooks.transport import spool

    cwd = home.parent / "work" / "alpha"
    (cwd / ".git").mkdir(parents=True, exist_ok=True)
    rnd = random.Random(home.name)
    markers = set()
    for i in range(n):
        marker = f"TURN-MARKER-{i}"
        words = " ".join(rnd.sample(WORDS, 6))
        payload = {"session_id": f"s{i}", "transcript_path": str(cwd / "transcript.jsonl"), "cwd": str(cwd),
                   "hook_event_name": "Stop", "stop_hook_active": False,
                   "prompt": f"note for the team, case {i}: remember how it works.",
                   "last_assistant_message": f"{marker}: {words} ({i * 7919 % 1000}) are set up this way."}
        spool(str(home), json.dumps(payload).encode())
        markers.add(marker)
    return markers


def _marker(text: str) -> str | None:
    if "TURN-MARKER-" not in text:
        return None
    return text[text.index("TURN-MARKER-"):].split(":")[0]


def assert_turns_kept(home: Path, markers: set[str]) -> tuple[int, int]:
    """Every queued turn is stored once or still queued (none failed); returns (stored, queued)."""
    queued = {_marker(json.loads(p.read_text())["last_assistant_message"]) for p in (home / "spool").glob("*.json")}
    assert not list((home / "spool" / "failed").glob("*")), "no turn given up"
    svc = open_service(home)
    try:
        stored = [_marker(m.content) for m in svc.list(tags=["turn"], limit=1000)]
    finally:
        svc.close()
    stored = [m for m in stored if m]
    assert len(stored) == len(set(stored)), "no turn stored twice"
    assert set(stored) | queued == markers, sorted(markers - set(stored) - queued)
    return len(stored), len(queued)


def poll_all(servers: list[Server], until: Callable[[Server, dict[str, Any]], bool], timeout: float = 90.0) -> None:
    """Ask each server's /health (two threads each, so that a request is nearly always in flight: none idles
    out meanwhile) until ``until(server, its answer)``; from then on it is asked no more: its idle timeout
    runs. (A server may still idle out before, when a crowded machine leaves its requests unread for longer
    than the idle timeout; its exit is checked all the same.)"""
    done = {id(srv): threading.Event() for srv in servers}

    def poll(srv: Server) -> None:
        deadline = time.monotonic() + timeout
        up = done[id(srv)]
        while not up.is_set():
            if srv.proc.poll() is not None:
                return up.set()
            assert time.monotonic() < deadline, f"not up in {timeout:.0f}s:\n{srv.log_text()}"
            try:
                r = httpx.get(srv.url + "/health", headers=AUTH, timeout=5)
                if r.status_code == 200 and until(srv, r.json()):
                    return up.set()
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.02)

    errors: list[BaseException] = []

    def run(srv: Server) -> None:
        try:
            poll(srv)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(srv,)) for srv in servers for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def wait_exit(srv: Server, timeout: float = 60.0) -> int | None:
    try:
        return srv.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


def test_idle_exit_while_the_spool_drains(reaper: Reaper, tmp_path: Path) -> None:
    """Turns queued while no server ran: the server stores them in the background, and its idle timeout (2 s
    after the last request) comes while that drain is writing to the store. (Before the fix 15 such exits in
    18 died of SIGABRT or SIGSEGV here; four servers.)"""
    homes = [tmp_path / f"h{i}" for i in range(4)]
    turns = {home: queue_turns(home, 100) for home in homes}
    ready_at: dict[Path, float] = {}

    def draining(srv: Server, health: dict[str, Any]) -> bool:
        if not health.get("ready"):
            return False
        ready_at.setdefault(srv.home, time.monotonic())
        # the drain has stored a turn (or, on a machine too crowded to open the store within the 20 s a turn
        # waits for it, has given up until the next hook request: the server stops all the same)
        return len(list((srv.home / "spool").glob("*.json"))) < 100 or time.monotonic() - ready_at[srv.home] > 10

    servers = []
    for home in homes:  # one after the other (six stores opening at once take long): the next one starts
        srv = start_server(reaper, home, ready=False, args=("--idle-timeout", "2"))  # while this one stops
        servers.append(srv)
        poll_all([srv], draining)  # then the idle countdown starts, with the drain halfway
    codes = [wait_exit(srv) for srv in servers]
    assert codes == [0] * len(servers), f"exit codes {codes}"  # before the fix mostly -6 and -11
    progress = []
    for srv in servers:
        assert_clean_exit(srv, 0, "idle exit during a spool drain")
        progress.append(assert_turns_kept(srv.home, turns[srv.home]))
    assert any(stored and queued for stored, queued in progress), f"no drain was cut short by the stop: {progress}"


def test_sigterm_during_group_commits_and_a_drain(reaper: Reaper, tmp_path: Path) -> None:
    """SIGTERM while four clients remember at once (group commits in flight) and queued turns are drained:
    exit 0, every acknowledged write stored, every turn stored or still queued."""
    homes = [tmp_path / f"h{i}" for i in range(2)]
    turns = {home: queue_turns(home, 100) for home in homes}
    servers = [start_server(reaper, home, ready=False) for home in homes]
    for srv in servers:
        srv.wait_ready()
    acked: dict[Path, list[str]] = {srv.home: [] for srv in servers}
    lock = threading.Lock()
    halt = threading.Event()

    def writer(srv: Server, w: int) -> None:
        with srv.client(timeout=30) as c:
            i = 0
            while not halt.is_set():
                try:
                    r = c.post("/api/memories", json={"content": f"writer {w} fact {i}: {random.choice(WORDS)}"})
                except httpx.HTTPError:
                    return  # the server went away: this write was never acknowledged
                if r.status_code // 100 == 2:
                    with lock:
                        acked[srv.home].append(r.json()["memory_id"])
                else:
                    assert r.status_code == 503 and "shutting down" in r.json()["error"], r.text
                i += 1

    threads = [threading.Thread(target=writer, args=(srv, w)) for srv in servers for w in range(4)]
    for t in threads:
        t.start()
    try:
        for srv in servers:
            wait_for(lambda: len(acked[srv.home]) >= 12, 30, what="writes acknowledged")  # noqa: B023
            srv.proc.send_signal(signal.SIGTERM)
        rcs = [wait_exit(srv) for srv in servers]
    finally:
        halt.set()
        for t in threads:
            t.join(30)
    for srv, rc in zip(servers, rcs):
        assert_clean_exit(srv, rc, "SIGTERM during group commits")
        assert_turns_kept(srv.home, turns[srv.home])
        svc = open_service(srv.home)
        try:
            found = {m.id for m in svc.store.get_many(acked[srv.home])}
        finally:
            svc.close()
        assert found == set(acked[srv.home]), "every acknowledged write is stored"


def test_exit_while_the_store_is_still_opening(reaper: Reaper, tmp_path: Path) -> None:
    """The idle timeout (or SIGTERM, SIGINT) comes before the store's first opening is done: the opening thread is
    inside LanceDB (creating a new store) when the server stops."""
    servers = [start_server(reaper, tmp_path / f"h{i}", ready=False, args=("--idle-timeout", "1"))
               for i in range(4)]
    poll_all(servers, lambda srv, health: True)  # answering; the store may still be opening
    for i, srv in enumerate(servers):
        if i % 2:  # half by a signal (SIGTERM, SIGINT), a little later each: the opening is at another step
            time.sleep(0.3)
            if srv.proc.poll() is None:
                srv.proc.send_signal(signal.SIGTERM if i == 1 else signal.SIGINT)
    early = 0
    for srv in servers:
        assert_clean_exit(srv, wait_exit(srv), "exit while the store opens")
        log = srv.log.read_text()
        stopped = min(log.find(s) for s in ("idle for 1s", "Shutting down") if s in log)
        early += "opened in" not in log[:stopped]
        svc = open_service(srv.home)  # the store is usable afterwards (a half-made new store would not be)
        try:
            assert svc.remember("after the restart").created
        finally:
            svc.close()
    assert early, "at least one server stopped before its store was open"


def test_sigterm_while_the_local_embedder_warms_up(reaper: Reaper, tmp_path: Path) -> None:
    """The real bundled embedder: the server warms it (one embedding in a thread of its own, in the engine's
    native code) right after the store opens; SIGTERM comes then."""
    home = tmp_path / "home"
    srv = start_server(reaper, home, env=make_env(home, MEMCLI_EMBEDDER="local"))
    srv.proc.send_signal(signal.SIGTERM)
    assert_clean_exit(srv, wait_exit(srv), "SIGTERM while the embedder warms")


def test_mcp_stdio_exits_0_when_the_client_leaves_during_the_opening(reaper: Reaper, tmp_path: Path) -> None:
    """`memcli mcp`: the client initializes and closes stdin while the store is still opening."""
    procs = []
    for i in range(2):
        home = tmp_path / f"h{i}"
        home.mkdir()
        errlog = tmp_path / f"mcp{i}.log"
        with open(errlog, "wb") as err:
            procs.append((reaper.track(subprocess.Popen([MEMCLI, "mcp"], stdin=subprocess.PIPE,
                                                        stdout=subprocess.PIPE, stderr=err, env=make_env(home))),
                          errlog))
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    for proc, _ in procs:
        assert proc.stdin and proc.stdout
        proc.stdin.write((json.dumps(init) + "\n").encode())
        proc.stdin.flush()
    for proc, errlog in procs:
        assert proc.stdout and proc.stdin
        assert json.loads(proc.stdout.readline())["result"]["serverInfo"]["name"] == "memcli", errlog.read_text()
        proc.stdin.close()
    for proc, errlog in procs:
        try:
            rc: Any = proc.wait(60)
        except subprocess.TimeoutExpired:
            rc = None
        text = errlog.read_text(errors="replace")
        assert rc == 0 and not any(f in text for f in FATAL), (rc, text[-3000:])
