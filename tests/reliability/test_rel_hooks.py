"""The Claude Code hooks (`python -m memcli.hooks <Event>`, real processes) when things go wrong: the server
SIGKILLed while it handles the hook's request, the store directory read-only, the disk full, garbage on stdin.
Every hook exits 0, prints nothing on stdout or stderr and returns within its deadline; a Stop turn is never
lost: it waits in the spool and is stored once the server is back or the disk is writable again."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _util import (
    HookRun,
    Reaper,
    Server,
    make_env,
    open_service,
    run_hook,
    snapshot,
    start_server,
    wait_for,
)

# What each hook may take, wall time of the whole process: the client's own budget (UserPromptSubmit 1.5 s,
# SessionStart 3 s, Stop 4 s, SessionEnd 0.5 s) plus interpreter start on a busy 2-core machine; all within
# the timeouts of hooks/hooks.json (5, 10, 15 s).
LIMITS = {"UserPromptSubmit": 3.5, "SessionStart": 6.0, "Stop": 6.5, "SessionEnd": 2.5}
EVENTS = tuple(LIMITS)


def assert_silent(h: HookRun, event: str, what: str = "", *, may_inject: bool = False) -> None:
    """Exit 0, nothing on stderr, within the deadline; nothing on stdout either, unless ``may_inject`` (the
    store can still be read) and it is the hook's answer: memories injected as Claude Code expects them."""
    assert h.rc == 0, (event, what, h.rc)
    assert h.err == b"", (event, what, h.err[:300])
    if may_inject and h.out and event in ("SessionStart", "UserPromptSubmit"):
        assert json.loads(h.out)["hookSpecificOutput"]["hookEventName"] == event
    else:
        assert h.out == b"", (event, what, h.out[:300])
    assert h.seconds < LIMITS[event], (event, what, h.seconds)


def payload(event: str, session: str, cwd: Path, **extra: Any) -> bytes:
    return json.dumps({"session_id": session, "transcript_path": str(cwd / "transcript.jsonl"), "cwd": str(cwd),
                       "hook_event_name": event, **extra}).encode()


def project(tmp_path: Path) -> Path:
    d = tmp_path / "work" / "alpha"
    (d / ".git").mkdir(parents=True, exist_ok=True)
    return d


TOPICS = ["the nightly job loads the CRM exports into the warehouse and rebuilds the reporting views",
          "billing retries a declined card three times, one day apart, before it suspends the account",
          "the mobile app caches avatars for a week and refreshes them when the ETag changes",
          "flaky upload tests were fixed by waiting for the S3 mock's health endpoint first",
          "staging runs on k3s; its kubectl context is staging-hz and deploys need the VPN",
          "the search service shards by tenant id and rebalances shards every Sunday night",
          "logs go to Loki with a 14 day retention; audit logs are kept for a year in S3",
          "Redis holds session tokens only, with a 15 minute TTL, never durable data",
          "the PDF renderer is pinned to version 3 because version 4 breaks table layouts",
          "feature flags live in Unleash; a stale flag older than 90 days gets a cleanup ticket",
          "the CI cache key includes the lockfile hash so dependency bumps rebuild the cache"]


def stop(session: str, cwd: Path, n: int) -> bytes:
    """A Stop payload whose turn is worth keeping and unlike the others (so none is judged a duplicate)."""
    return payload("Stop", session, cwd, stop_hook_active=False,
                   prompt=f"note for the team, case {n}: remember how it works.",
                   last_assistant_message=f"TURN-MARKER-{n}: {TOPICS[n % len(TOPICS)]}.")


def stored_turns(home: Path, **env: str) -> list[str]:
    svc = open_service(home, **env)
    try:
        return [m.content for m in svc.list(tags=["turn"], limit=1000)]
    finally:
        svc.close()


def markers(turns: list[str]) -> list[str]:
    return sorted(t[t.index("TURN-MARKER-"):].split(":")[0] for t in turns if "TURN-MARKER-" in t)


def spooled(home: Path) -> list[Path]:
    return sorted((home / "spool").glob("*.json"))


def failed(home: Path) -> list[Path]:
    return sorted((home / "spool" / "failed").glob("*")) if (home / "spool" / "failed").exists() else []


def spool_failures(home: Path) -> int:
    """Drain attempts that failed, from the server's lines in hooks.log."""
    try:
        log = (home / "logs" / "hooks.log").read_text(errors="replace")
    except OSError:
        return 0
    return sum(1 for line in log.splitlines() if "spool:" in line and " failed (" in line)


# ------------------------------------------------------------------------------ a slow embeddings service
class SlowEmbeddings:
    """An OpenAI-compatible /v1/embeddings service on 127.0.0.1 that can be told to hang: the memcli server
    then sits inside a hook request (or a capture) for as long as the test wants."""

    def __init__(self) -> None:
        self.hang = threading.Event()  # set: requests wait until released
        self.release = threading.Event()
        self.waiting: list[list[str]] = []  # inputs of the requests now hanging
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                if api.hang.is_set():
                    api.waiting.append(inputs)
                    api.release.wait(120)
                data = [{"object": "embedding", "index": i, "embedding": vector(t)} for i, t in enumerate(inputs)]
                out = json.dumps({"object": "list", "data": data, "model": body.get("model")}).encode()
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                except OSError:  # the memcli server was killed meanwhile
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def vector(text: str, dim: int = 64) -> list[float]:
    """Deterministic: texts sharing words are close (like the hash embedder)."""
    v = np.zeros(dim)
    for w in text.lower().split():
        h = hashlib.blake2b(w.encode(), digest_size=8).digest()
        v[int.from_bytes(h[:4], "little") % dim] += 1.0 if h[4] & 1 else -1.0
    v[0] += 0.01
    return [float(x) for x in v]


def test_server_killed_while_it_handles_the_hook_request(home: Path, tmp_path: Path, reaper: Reaper) -> None:
    api = SlowEmbeddings()
    reaper.cleanups.append(api.close)
    reaper.watch_home(home)
    emb = {"MEMCLI_EMBEDDER": "openai", "MEMCLI_EMBED_BASE_URL": api.url, "MEMCLI_EMBED_MODEL": "slow-embed",
           "MEMCLI_EMBED_DIMS": "64"}
    env = make_env(home, MEMCLI_HOOK_IDLE_TIMEOUT="120", **emb)
    cwd = project(tmp_path)
    srv = start_server(reaper, home, env=env)
    with srv.client() as c:
        assert c.post("/api/memories", json={"content": "the weekly report goes to finance"}).status_code == 201

    # 1. UserPromptSubmit: the server is embedding the prompt when it is SIGKILLed
    api.hang.set()
    done: list[HookRun] = []
    hook = threading.Thread(target=lambda: done.append(run_hook(
        "UserPromptSubmit", payload("UserPromptSubmit", "s1", cwd, prompt="when does the weekly report go out?"),
        srv.hook_env())))
    hook.start()
    wait_for(lambda: any("weekly report" in t for x in api.waiting for t in x), 10, what="the prompt reached the embedder")
    srv.kill()
    hook.join(60)
    assert_silent(done[0], "UserPromptSubmit", "killed mid-request")

    # 2. Stop: the next server answers at once (the turn is queued) and is SIGKILLed while it stores the turn
    api.waiting.clear()
    srv2 = start_server(reaper, home, env=env)
    h = run_hook("Stop", stop("s2", cwd, 1), srv2.hook_env())
    assert_silent(h, "Stop", "server busy storing")
    wait_for(lambda: any("TURN-MARKER-1" in t for x in api.waiting for t in x), 20, what="the capture to start")
    srv2.kill()
    assert len(spooled(home)) == 1, "the turn waits in the spool"

    # 3. Stop with no server at all (killed between requests; server.json still names the dead one): the hook
    # queues the turn itself and starts a server, which stores both queued turns, once each
    api.hang.clear()
    api.release.set()
    env3 = {k: v for k, v in env.items() if k != "MEMCLI_PORT"}
    h = run_hook("Stop", stop("s3", cwd, 2), env3)
    assert_silent(h, "Stop", "no server")
    wait_for(lambda: markers(stored_turns(home, **emb)) == ["TURN-MARKER-1", "TURN-MARKER-2"], 90,
             what="both turns stored")
    wait_for(lambda: not spooled(home), 30, what="an empty spool")
    assert not failed(home)
    time.sleep(1.0)  # nothing stored twice later on
    assert markers(stored_turns(home, **emb)) == ["TURN-MARKER-1", "TURN-MARKER-2"]


# ------------------------------------------------------------------------------ a read-only or full store
@contextlib.contextmanager
def read_only(path: Path) -> Iterator[str]:
    """Make ``path`` (the store directory) unwritable; yields the technique used. As root, permissions do not
    stop writes: the immutable attribute does (`chattr +i`), else a read-only bind mount; else skip."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [path, *path.rglob("*")]}
        for p in modes:
            p.chmod(modes[p] & ~0o222)
        try:
            yield "chmod a-w"
        finally:
            for p, m in modes.items():
                p.chmod(m)
        return
    probe = path / ".rel-probe"
    if shutil.which("chattr") and subprocess.run(["chattr", "-R", "+i", str(path)], capture_output=True).returncode == 0:
        try:
            probe.write_text("x")
        except OSError:
            try:
                yield "chattr +i"
            finally:
                subprocess.run(["chattr", "-R", "-i", str(path)], capture_output=True)
            return
        subprocess.run(["chattr", "-R", "-i", str(path)], capture_output=True)
        probe.unlink()
    if subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True).returncode == 0:
        try:
            if subprocess.run(["mount", "-o", "remount,ro,bind", str(path)], capture_output=True).returncode == 0:
                yield "read-only bind mount"
                return
        finally:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)
    pytest.skip("running as root without chattr +i or a read-only bind mount: cannot make the store read-only")


@contextlib.contextmanager
def small_tmpfs(path: Path, size: str = "8m") -> Iterator[None]:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("a full disk needs a small tmpfs, which only root can mount here")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {p.stderr.decode(errors='replace').strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(path: Path) -> Path:
    """Fill the file system of ``path`` to the last byte; returns the filler file (delete it to free space)."""
    filler = path / "filler.bin"
    with open(filler, "wb", buffering=0) as fh:
        for chunk in (1 << 20, 1 << 12, 1):
            try:
                while True:
                    fh.write(b"\0" * chunk)
            except OSError:
                pass
    assert shutil.disk_usage(path).free < 64 << 10
    return filler


def seeded_server(reaper: Reaper, home: Path, env: dict[str, str]) -> Server:
    srv = start_server(reaper, home, env=env)
    with srv.client() as c:
        for text in ("the weekly report is mailed to finance on Monday mornings",
                     "the on-call rotation changes every Tuesday at noon"):
            assert c.post("/api/memories", json={"content": text}).status_code == 201
    return srv


def every_hook_while_broken(srv: Server, cwd: Path, first: int) -> list[int]:
    """Each event, and enough prompts to make the server retry the queued turns more than five times."""
    env = srv.hook_env()
    assert_silent(run_hook("SessionStart", payload("SessionStart", "b", cwd, source="startup"), env), "SessionStart",
                  may_inject=True)
    turns = [first, first + 1]
    for n in turns:
        assert_silent(run_hook("Stop", stop("b", cwd, n), env), "Stop")
    for i in range(7):
        before = spool_failures(srv.home)
        assert_silent(run_hook("UserPromptSubmit", payload("UserPromptSubmit", "b", cwd,
                                                           prompt=f"when is the nightly job {i} run?"), env),
                      "UserPromptSubmit", may_inject=True)
        wait_for(lambda: spool_failures(srv.home) > before, 30, what="another (failed) attempt to store the turns")
    assert_silent(run_hook("SessionEnd", payload("SessionEnd", "b", cwd, reason="exit"), env), "SessionEnd")
    return turns


def test_store_directory_read_only(home: Path, tmp_path: Path, reaper: Reaper) -> None:
    env = make_env(home)
    srv = seeded_server(reaper, home, env)
    cwd = project(tmp_path)
    before = snapshot(home)
    with read_only(home / "data") as how:
        turns = every_hook_while_broken(srv, cwd, 1)
        assert len(spooled(home)) == 2 and not failed(home), f"the turns stay queued ({how})"
        assert snapshot(home) == before
    # writable again: the next hook's drain stores both turns, once each
    assert_silent(run_hook("UserPromptSubmit", payload("UserPromptSubmit", "b", cwd, prompt="nightly job?"),
                           srv.hook_env()), "UserPromptSubmit", may_inject=True)
    want = [f"TURN-MARKER-{n}" for n in turns]
    wait_for(lambda: markers(stored_turns(home)) == want, 30, what="the queued turns stored")
    wait_for(lambda: not spooled(home), 10, what="an empty spool")
    assert not failed(home)


def test_disk_full(home: Path, tmp_path: Path, reaper: Reaper) -> None:
    """The store's file system full (a small tmpfs at <home>/data); then the whole home full."""
    env = make_env(home)
    cwd = project(tmp_path)
    with small_tmpfs(home / "data"):
        srv = seeded_server(reaper, home, env)
        before = snapshot(home)
        filler = fill(home / "data")
        turns = every_hook_while_broken(srv, cwd, 1)
        assert len(spooled(home)) == 2 and not failed(home), "the turns stay queued"
        assert snapshot(home) == before
        filler.unlink()  # space again: the next hook's drain stores both turns, once each
        assert_silent(run_hook("UserPromptSubmit", payload("UserPromptSubmit", "b", cwd, prompt="nightly job?"),
                               srv.hook_env()), "UserPromptSubmit", may_inject=True)
        want = [f"TURN-MARKER-{n}" for n in turns]
        wait_for(lambda: markers(stored_turns(home)) == want, 30, what="the queued turns stored")
        wait_for(lambda: not spooled(home), 10, what="an empty spool")
        srv.stop()

    # the whole home on a full disk: nothing can even be queued, and still every hook is silent and quick
    home2 = tmp_path / "home2"
    with small_tmpfs(home2, "16m"):
        env2 = make_env(home2)
        srv2 = seeded_server(reaper, home2, env2)
        run_hook("UserPromptSubmit", payload("UserPromptSubmit", "f", cwd, prompt="warm up"), srv2.hook_env())
        filler = fill(home2)
        for event in EVENTS:
            data = stop("f", cwd, 9) if event == "Stop" else payload(event, "f", cwd, prompt="nightly job?",
                                                                       source="startup")
            assert_silent(run_hook(event, data, srv2.hook_env()), event, "home full", may_inject=True)
        filler.unlink()
        assert srv2.client().get("/health").status_code == 200
        assert_silent(run_hook("Stop", stop("f", cwd, 10), srv2.hook_env()), "Stop")
        wait_for(lambda: "TURN-MARKER-10" in markers(stored_turns(home2)), 30, what="a turn stored after the disk is freed")
        srv2.stop()


# ------------------------------------------------------------------------------ garbage on stdin
GARBAGE = {
    "binary": os.urandom(64 << 10),
    "truncated JSON": b'{"session_id": "g", "cwd": "/tmp", "prompt": "which database do we u',
    "20 MB of JSON": b'{"session_id": "g", "prompt": "' + b"a" * (20 << 20) + b'"}',
    "20 MB of bytes": b"{" + os.urandom(20 << 20),
    "invalid UTF-8 in an object": b'{"session_id": "g", "prompt": "\xff\xfe\xfa", "last_assistant_message": "\xc3"}',
    "NUL bytes": b'{"session_id": "g\\u0000", "prompt": "a\\u0000b", "last_assistant_message": "' + b"x\\u0000" * 50 + b'"}',
    "deeply nested": b'{"prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "wrong types": json.dumps({"session_id": {"a": 1}, "cwd": 5, "prompt": ["x"], "transcript_path": 7,
                               "last_assistant_message": 3.5, "stop_hook_active": "no", "source": None}).encode(),
    "lone surrogates": b'{"session_id": "\\ud800", "cwd": "/tmp/\\udfff", "prompt": "why \\ud800 now?", '
                       b'"last_assistant_message": "because \\udc00 of the long explanation that follows here"}',
    "empty": b"",
    "whitespace": b" \n\t ",
}


JSON_OBJECTS = {"NUL bytes", "wrong types", "lone surrogates"}


def test_garbage_on_stdin(home: Path, tmp_path: Path, reaper: Reaper) -> None:
    env = make_env(home)
    srv = seeded_server(reaper, home, env)
    cwd = project(tmp_path)
    before = snapshot(home)
    for name, data in GARBAGE.items():
        for event in EVENTS:
            # a JSON object with odd values is still a hook call: SessionStart may answer it with the digest
            assert_silent(run_hook(event, data, srv.hook_env()), event, name, may_inject=name in JSON_OBJECTS)
    assert srv.client().get("/health").json()["ok"] is True
    # the server stays well and a real turn still gets through: garbage never blocks the queue
    assert_silent(run_hook("Stop", stop("ok", cwd, 3), srv.hook_env()), "Stop")
    wait_for(lambda: "TURN-MARKER-3" in markers(stored_turns(home)), 30, what="the real turn stored")
    wait_for(lambda: not spooled(home), 30, what="an empty spool")
    # a turn whose text holds lone surrogates is still a turn (issue 17.10): kept, each bad code point replaced
    kept = [r for r in snapshot(home) if r["content"].startswith("User: why \ufffd now?")]
    assert len(kept) <= 1 and all("\ud800" not in r["content"] and "\udc00" not in r["content"] for r in kept)
    after = [r for r in snapshot(home) if "TURN-MARKER-3" not in r["content"] and r not in kept]
    assert after == before, "garbage changed the store"
