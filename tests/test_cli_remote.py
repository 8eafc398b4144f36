"""The CLI's read commands go through the home's warm server (real `memcli serve`, real `memcli` processes):
same output, same errors and exit codes as opening the store directly, and a fallback to the store whenever
no server of this home can answer. (Writes: test_cli_server_writes.py.)"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _memcli_server import MEMCLI, ServerProc, start_server

from memcli.config import load_config
from memcli.memory.service import MemoryService

pytestmark = pytest.mark.slow



def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    return {**env, "MEMCLI_HOME": str(home), "MEMCLI_EMBEDDER": "hash", "MEMCLI_AUTOSTART": "0", **extra}


def cli(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """A real `memcli` process (the path the skills take)."""
    return subprocess.run([MEMCLI, *args], env=env, capture_output=True, text=True, timeout=120,
                          cwd=str(cwd) if cwd else None)


def local(env: dict[str, str], *args: str) -> Any:
    """The same command in this process (the store path, without paying LanceDB's import per command)."""
    from typer.testing import CliRunner

    from memcli.cli.app import app

    r = CliRunner().invoke(app, list(args), env=env)
    assert r.exit_code == 0, (args, r.output)
    return json.loads(r.output)


def _seed(home: Path) -> None:
    svc = MemoryService.open(load_config(home, env={"MEMCLI_EMBEDDER": "hash"}))
    try:
        svc.remember("The billing service uses PostgreSQL 16 for JSONB support", tags=["decision"],
                     importance=0.9, project="shop")
        svc.remember("Error E4021 means the upload token expired", tags=["bug"], project="other")
        svc.remember("Deploys run through GitHub Actions on a v* tag", agent="codex", project="shop")
        svc.remember("Lunch is at noon on Fridays", namespace="social")
    finally:
        svc.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("remote")
    home = tmp / "home"
    _seed(home)
    srv = start_server(MEMCLI, _env(home, HOME=str(tmp)), home)
    yield srv
    srv.stop()


READS = [
    ("recall", "which database does billing use", "--json"),
    ("recall", "E4021", "--top-k", "2", "--mode", "text", "--json"),
    ("recall", "billing deploys", "--project", "shop", "--explain", "--json"),
    ("recall", "lunch", "--namespace", "social", "--json"),
    ("list", "--tag", "decision", "--json"),
    ("list", "--agent", "codex", "--json"),
    ("list", "--all-namespaces", "--limit", "10", "--json"),
    ("list", "--since", "100y", "--json"),  # before 1970: negative epoch ms, sent exactly (since_ms)
    ("recall", "billing", "--since", "1970-01-01T00:00:05", "--until", "1h", "--json"),
    ("check-duplicate", "The billing service uses PostgreSQL 16 for JSONB support", "--json"),
    ("stats", "--json"),
]


def _same(a: Any, b: Any) -> None:
    """Equal JSON, scores within rounding (the recency boost moves with the clock between the two runs)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert set(a) == set(b), (a, b)
        for k in a:
            if k == "score" or k == "explain":
                assert isinstance(b[k], type(a[k]))
                if k == "score":
                    assert abs(a[k] - b[k]) < 2e-3, (a, b)
            else:
                _same(a[k], b[k])
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b


def test_reads_go_through_the_server_with_the_same_output(served: ServerProc, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = tmp_path / "shop"
    cwd.mkdir()
    # Proof that the server answers: this environment names an embedder the store was not built with, so
    # opening the store here would fail (embedder mismatch); the warm server answers instead.
    foreign = _env(served.home, MEMCLI_EMBEDDER="jina", MEMCLI_EMBED_API_KEY="not-used")
    through_server = {}
    for args in READS:
        p = cli(foreign, *args, cwd=cwd)
        assert p.returncode == 0, (args, p.stdout, p.stderr)
        through_server[args] = json.loads(p.stdout)
    mid = through_server[READS[0]][0]["memory_id"]
    p = cli(foreign, "get", mid[-8:], "--json", cwd=cwd)
    assert p.returncode == 0 and json.loads(p.stdout)["memory_id"] == mid
    assert through_server[READS[0]][0]["content"].startswith("The billing service")
    assert [h["content"] for h in through_server[READS[3]]] == ["Lunch is at noon on Fridays"]
    assert through_server[READS[2]][0]["explain"] and through_server[READS[9]]["is_duplicate"] is True
    assert len(through_server[READS[7]]) == 3 and through_server[READS[8]] == []
    # the store cannot be opened here: a command that must work in this process fails
    assert cli(foreign, "--no-server", *READS[0], cwd=cwd).returncode == 1

    # The same commands with no server of this home (server.json moved away): the store, opened here.
    sj = served.home / "server.json"
    hidden = sj.with_name("server.json.hidden")
    os.replace(sj, hidden)
    monkeypatch.chdir(cwd)
    try:
        env = _env(served.home)
        for args in READS:
            _same(local(env, *args), through_server[args])
        assert local(env, "get", mid, "--json")["memory_id"] == mid
        assert cli(env, *READS[0], cwd=cwd).returncode == 0  # and as a process
    finally:
        os.replace(hidden, sj)


@pytest.mark.parametrize("args, code, message", [
    (("get", "ffff0000"), "not_found", "no memory with id ffff0000"),
    (("get", "01"), "invalid_input", "invalid memory id"),
    (("recall", "   "), "invalid_input", "the query is empty"),
    (("recall", "x", "--top-k", "5000"), "invalid_input", "top_k must be between 1 and 1000"),
    (("list", "--limit", "0"), "invalid_input", "limit must be"),
    (("check-duplicate", "x", "--threshold", "2"), "invalid_input", "threshold must be between 0 and 1"),
])
def test_errors_through_the_server_are_the_cli_errors(served: ServerProc, args: tuple[str, ...], code: str,
                                                      message: str) -> None:
    foreign = _env(served.home, MEMCLI_EMBEDDER="jina", MEMCLI_EMBED_API_KEY="not-used")
    p = cli(foreign, *args, "--json")
    assert p.returncode == 1, (p.stdout, p.stderr)
    err = json.loads(p.stdout)
    assert err["ok"] is False and err["code"] == code and message in err["error"], err
    human = cli({**foreign, "MEMCLI_JSON": "0"}, *args)
    assert human.returncode == 1 and message in " ".join(human.stderr.split()) and human.stdout == ""


def test_an_ambiguous_prefix_is_409_and_exit_1(served: ServerProc) -> None:
    ids = [m["memory_id"] for m in json.loads(cli(_env(served.home), "list", "-A", "--json").stdout)]
    prefix = ids[0][:4]
    assert sum(i.startswith(prefix) for i in ids) > 1  # UUIDv7: the first digits are the time
    foreign = _env(served.home, MEMCLI_EMBEDDER="jina", MEMCLI_EMBED_API_KEY="not-used")
    p = cli(foreign, "get", prefix, "--json")
    assert p.returncode == 1 and json.loads(p.stdout)["code"] == "ambiguous_id"


class _Answer500(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        body = b'{"ok": false, "error": "boom", "code": "internal_error"}'
        self.send_response(500)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET  # noqa: N815

    def log_message(self, *args: Any) -> None:
        pass


def test_falls_back_to_the_store_when_no_server_of_this_home_answers(tmp_path: Path,
                                                                       served: ServerProc) -> None:
    home = tmp_path / "home"
    _seed(home)
    env = _env(home)
    expected = local(env, "list", "-A", "--json")  # no server.json: the store
    assert len(expected) == 4
    from memcli.home import load_or_create_auth

    load_or_create_auth(home)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer500)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        cases = {
            "a server answering 5xx": {"pid": os.getpid(), "port": httpd.server_address[1]},
            "a stale server.json (its process is gone)": {"pid": dead.pid, "port": served.port},
            "another home's server (401/421)": {"pid": served.proc.pid, "port": served.port},
            "nothing listening": {"pid": os.getpid(), "port": _closed_port()},
        }
        for why, info in cases.items():
            (home / "server.json").write_text(json.dumps(info))
            _same(local(env, "list", "-A", "--json"), expected)  # falls back: the same answer
        p = cli(env, "list", "-A", "--json")  # and as a process, with the last case
        assert p.returncode == 0 and len(json.loads(p.stdout)) == 4, p.stderr
    finally:
        httpd.shutdown()
        (home / "server.json").unlink(missing_ok=True)


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
