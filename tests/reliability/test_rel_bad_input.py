"""Bad input over every face — the CLI as real processes, REST on a real server, MCP through the official SDK
over stdio (`memcli mcp`) and Streamable HTTP (`/mcp`), and raw bytes on both MCP transports.

Each bad input gets a clear error (CLI: exit 1 with the JSON error object, or exit 2 with a usage message;
HTTP: 4xx with {"ok": false, "error", "code"}; MCP: a tool result with isError and a message, or a JSON-RPC
error), never a 500 or a traceback, and the store is unchanged: every row, field for field, before and after.
A filter value that looks like SQL is data: it matches the one memory tagged with that exact text, no other.
Fuzz values of every face (issue 26): NaN/Infinity (Python's json reads them; stored, they made every JSON
answer that included the memory a 500), numbers of 5,000 digits, metadata nested 40 and 500 levels deep, and
content made only of zero-width and direction marks (refused like empty content).
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import httpx
import pytest
from _util import AUTH, MEMCLI, Reaper, Server, cli, make_env, snapshot, start_server
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

SQL = "x' OR '1'='1"
BIG = "x" * 1_000_000
ZW = "\u200b\u200c\u200d\u2060\ufeff \u200e\u200f\u202a\u202e\u2066\u2069\u00ad"  # nothing visible
LONG = "9" * 5000  # Python's int() refuses more than 4,300 digits (a ValueError, once a 500)
NON_FINITE = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "Infinity", "1e999": "finite"}  # word said


def nested(levels: int) -> str:
    """A JSON object ``levels`` deep: {"a": {"a": ... 1}}."""
    return '{"a": ' * levels + "1" + "}" * levels


def nested_obj(levels: int) -> dict[str, Any]:
    out: Any = 1
    for _ in range(levels):
        out = {"a": out}
    return out


SEEDS = [
    {"content": "the billing service uses PostgreSQL 16", "tags": ["decision"]},
    {"content": "a memory whose tag looks like SQL", "tags": [SQL]},
    {"content": "deploys run through GitHub Actions", "tags": ["ops"], "agent": "codex"},
    {"content": "the team space keeps its own notes", "namespace": "team"},
]


@pytest.fixture(scope="module")
def module_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, list[str]]]:
    """One seeded server for the module: no case may change its store (each test compares snapshots)."""
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment (pip install -e .)")
    home = tmp_path_factory.mktemp("bad-input") / "home"
    reaper = Reaper()
    try:
        srv = start_server(reaper, home, env=make_env(home, MEMCLI_EMBEDDER="hash"))
        with srv.client() as c:
            ids = [c.post("/api/memories", json=s).json()["memory_id"] for s in SEEDS]
        yield srv, ids
    finally:
        reaper.reap()


@pytest.fixture
def seeded(module_server: tuple[Server, list[str]]) -> tuple[Server, list[str], list[dict[str, Any]]]:
    srv, ids = module_server
    assert srv.proc.poll() is None, srv.log_text()
    return srv, ids, snapshot(srv.home)


# ------------------------------------------------------------------------------------------------ CLI
class Case(NamedTuple):
    argv: list[str]
    stdin: bytes | None
    expected: Any  # "error" (exit 1, JSON error), "usage" (exit 2), or the contents a filter must list
    needle: str  # a word the message must contain
    process: bool = False  # also run as a real `memcli` process (each costs ~3 s of CPU: LanceDB's import)


def _cli_cases(ids: list[str], tmp: Path) -> list[Case]:
    bad_files = {
        "garbage.jsonl": b"this is not json\n",
        "latin1.jsonl": b'{"content": "caf\xe9"}\n',
        "huge-time.jsonl": json.dumps({"content": "a fine memory", "created_at": 10 ** 30}).encode() + b"\n",
        "surrogate.jsonl": b'{"content": "a fine memory", "metadata": {"a": "\\ud800"}}\n',
        "wrong-types.jsonl": json.dumps({"content": "a fine memory", "tags": [1, 2], "project": 5}).encode() + b"\n",
    }
    fuzz_files = {  # name: (contents, a word the message must hold)
        "nan.jsonl": (b'{"content": "a fine memory", "metadata": {"a": NaN}}\n', "NaN"),
        "infinity.json": (b'[{"content": "a fine memory", "metadata": {"a": -Infinity}}]', "Infinity"),
        "long-number.jsonl": (b'{"content": "a fine memory"}\n{"content": "another", "metadata": {"n": '
                              + LONG.encode() + b'}}\n', "line 2"),
        "deep.jsonl": (('{"content": "a fine memory", "metadata": ' + nested(500) + "}\n").encode(), "nested"),
        "big-int.jsonl": (json.dumps({"content": "a fine memory", "metadata": {"n": 10 ** 30}}).encode(), "64 bits"),
        "invisible.jsonl": (json.dumps({"content": ZW}).encode(), "empty"),
    }
    for name, data in bad_files.items():
        (tmp / name).write_bytes(data)
    for name, (data, _) in fuzz_files.items():
        (tmp / name).write_bytes(data)
    mid = ids[0]
    return [
        Case(["remember", ""], None, "error", "empty", True),
        Case(["remember", " \t\n "], None, "error", "empty"),
        Case(["remember", "-"], BIG.encode(), "error", "32,000", True),
        Case(["remember", "-"], b"caf\xe9 \xff\xfe", "error", "UTF-8", True),
        Case(["remember", "-"], b"nul\x00byte", "error", "NUL", True),
        Case(["remember", "fine", "--metadata", '{"a": "\\ud800"}'], None, "error", "metadata"),
        Case(["remember", "fine", "--namespace", SQL], None, "error", "namespace", True),
        Case(["remember", "fine", "--tag", "bad\ttag"], None, "error", "tag"),
        Case(["remember", "fine", "--importance", "abc"], None, "usage", "importance", True),
        Case(["remember", "fine", "--unknown-flag"], None, "usage", "unknown-flag", True),
        Case(["recall", ""], None, "error", "empty"),
        Case(["recall", "billing", "--top-k", "100000000"], None, "error", "top_k", True),
        Case(["recall", "billing", "--top-k", "-1"], None, "error", "top_k"),
        Case(["recall", "billing", "--top-k", "many"], None, "usage", "top-k"),
        Case(["recall", "billing", "--agent", SQL], None, "error", "scope"),
        Case(["recall", "memory", "--tag", SQL], None, ["a memory whose tag looks like SQL"], ""),
        Case(["list", "--limit", "-1"], None, "error", "limit", True),
        Case(["list", "--limit", "0"], None, "error", "limit"),
        Case(["list", "--offset", "-5"], None, "error", "offset"),
        Case(["list", "--tag", SQL], None, ["a memory whose tag looks like SQL"], "", True),
        Case(["list", "--project", SQL], None, [], ""),
        Case(["list", "--namespace", SQL], None, "error", "namespace"),
        Case(["get", SQL], None, "error", "invalid memory id"),
        Case(["forget", SQL], None, "error", "invalid memory id", True),
        Case(["forget", "____"], None, "error", "invalid memory id"),
        Case(["update", mid, "--content", ""], None, "error", "empty"),
        Case(["update", mid, "--importance", "7"], None, "error", "importance"),
        Case(["check-duplicate", ""], None, "error", "empty"),
        *[Case(["import", str(tmp / name)], None, "error", "", name == "huge-time.jsonl") for name in bad_files],
        Case(["remember", ZW], None, "error", "empty", True),
        Case(["remember", "-"], ZW.encode(), "error", "empty"),
        *[Case(["remember", "fine", "--metadata", '{"a": %s}' % v], None, "error", word, v == "NaN")
          for v, word in NON_FINITE.items()],
        Case(["remember", "fine", "--metadata", '{"n": %s}' % LONG], None, "error", "5,000"),
        Case(["remember", "fine", "--metadata", json.dumps({"n": 10 ** 30})], None, "error", "64 bits"),
        Case(["remember", "fine", "--metadata", nested(500)], None, "error", "nested"),
        Case(["remember", "fine", "--metadata", nested(33)], None, "error", "nested"),
        Case(["update", mid, "--metadata", '{"a": Infinity}'], None, "error", "Infinity", True),
        Case(["update", mid, "--metadata", nested(500)], None, "error", "nested"),
        Case(["update", mid, "--content", ZW], None, "error", "empty"),
        Case(["check-duplicate", ZW], None, "error", "empty"),
        *[Case(["import", str(tmp / name)], None, "error", needle, name == "nan.jsonl")
          for name, (_, needle) in fuzz_files.items()],
    ]


def _check_cli(code: int, out: str, err: str, expected: Any, needle: str, what: str) -> None:
    assert "Traceback" not in out + err, (what, out + err)
    if expected == "usage":
        assert code == 2 and err.strip(), (what, code, out, err)
        assert needle.lower() in err.lower(), (what, err)
    elif expected == "error":
        assert code == 1, (what, code, out, err)
        body = json.loads(out)
        assert body["ok"] is False and body["error"] and body["code"], (what, body)
        assert needle.lower() in body["error"].lower(), (what, body)
    else:
        assert code == 0, (what, out, err)
        assert sorted(item["content"] for item in json.loads(out)) == sorted(expected), (what, out)


def test_cli_bad_input(seeded: tuple[Server, list[str], list[dict[str, Any]]], tmp_path: Path,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Every case through the CLI app in this process, and one of each kind as a real `memcli` process."""
    srv, ids, before = seeded
    cases = _cli_cases(ids, tmp_path)
    real = [c for c in cases if c.process]
    with ThreadPoolExecutor(2) as pool:
        procs = list(pool.map(lambda c: cli(c.argv, srv.env, input=c.stdin), real))
    for c, p in zip(real, procs):
        _check_cli(p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"), c.expected,
                   c.needle, "process: " + " ".join(a[:40] for a in c.argv))
    from typer.testing import CliRunner

    from memcli.cli.app import app

    for k, v in srv.env.items():
        if k.startswith("MEMCLI_"):
            monkeypatch.setenv(k, v)
    runner = CliRunner()
    for c in cases:
        res = runner.invoke(app, c.argv, input=c.stdin)
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            raise AssertionError(f"{c.argv}: {res.exception!r}") from res.exception
        _check_cli(res.exit_code, res.stdout, res.stderr, c.expected, c.needle, " ".join(a[:40] for a in c.argv))
    assert snapshot(srv.home) == before


# ------------------------------------------------------------------------------------------------ REST
def _rest_cases(ids: list[str]) -> list[tuple[str, str, dict[str, Any], int]]:
    """(method, path, httpx arguments, expected status)."""
    mid = ids[0]
    post = "/api/memories"
    return [
        ("POST", post, {"content": b""}, 400),
        ("POST", post, {"content": b"   \n"}, 400),
        ("POST", post, {"content": b'{"content": "unterminated'}, 400),
        ("POST", post, {"content": b'{"content": "caf\xe9"}'}, 400),
        ("POST", post, {"content": b'{"content": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"}, 400),
        ("POST", post, {"content": b"[" * 50_000 + b"]" * 50_000}, 400),
        ("POST", post, {"json": {"content": BIG + BIG}}, 413),
        ("POST", post, {"json": {"content": ""}}, 422),
        ("POST", post, {"json": {"content": " \t "}}, 422),
        ("POST", post, {"json": {"content": BIG}}, 422),
        ("POST", post, {"json": {"content": "nul\x00byte"}}, 422),
        ("POST", post, {"content": b'{"content": "lone \\ud800 surrogate"}'}, 422),
        ("POST", post, {"content": b'{"content": "fine", "metadata": {"k": "\\udfff"}}'}, 422),
        ("POST", post, {"content": b'{"content": "fine", "key": "\\ud800"}'}, 422),
        ("POST", post, {"content": b'{"content": "fine", "project": "\\ud800"}'}, 422),
        ("POST", post, {"json": {"content": "fine", "namespace": SQL}}, 422),
        ("POST", post, {"json": {"content": "fine", "agent": SQL}}, 422),
        ("POST", post, {"json": {"content": "fine", "scope": SQL}}, 422),
        ("POST", post, {"json": {"content": "fine", "unknown_field": 1}}, 422),
        ("POST", post, {"json": {"content": 123}}, 422),
        ("POST", post, {"json": {"content": ["a", "list"]}}, 422),
        ("POST", post, {"json": {"content": "fine", "tags": [1, 2]}}, 422),
        ("POST", post, {"json": {"content": "fine", "tags": {"a": 1}}}, 422),
        ("POST", post, {"json": {"content": "fine", "importance": "high"}}, 422),
        ("POST", post, {"json": {"content": "fine", "importance": True}}, 422),
        ("POST", post, {"content": b'{"content": "fine", "importance": NaN}'}, 422),
        ("POST", post, {"content": b'{"content": "fine", "importance": 1e999}'}, 422),
        ("POST", post, {"json": {"content": "fine", "metadata": [1]}}, 422),
        ("POST", post, {"json": {"content": "fine", "ttl": -5}}, 422),
        ("POST", post, {"json": {"content": "fine", "ttl": []}}, 422),
        ("POST", post, {"json": {"content": "fine", "key": {}}}, 422),
        ("POST", post, {"json": {"content": "fine", "project": 5}}, 422),
        ("POST", post, {"json": {"content": "fine", "created_at": 10 ** 30}}, 422),
        ("POST", post, {"json": {"content": "fine", "created_at": -1}}, 422),
        ("POST", post, {"json": {"content": "fine", "created_at": "yesterday"}}, 422),
        ("POST", post, {"json": ["content"]}, 422),
        ("POST", post + "/batch", {"json": []}, 422),
        ("POST", post + "/batch", {"json": {"memories": "x"}}, 422),
        ("POST", post + "/batch", {"json": [{"content": "fine"}] * 1001}, 422),
        ("POST", post + "/batch", {"json": [{"content": "fine one"}, {"content": 5}]}, 422),
        ("POST", post + "/batch", {"json": [{"content": "fine two"}, "not an object"]}, 422),
        ("POST", post + "/batch", {"json": [{"content": "fine three"}, {"content": "x", "project": 5}]}, 422),
        ("GET", post, {"params": {"limit": -1}}, 422),
        ("GET", post, {"params": {"limit": 0}}, 422),
        ("GET", post, {"params": {"limit": 10 ** 12}}, 422),
        ("GET", post, {"params": {"limit": "many"}}, 422),
        ("GET", post, {"params": {"offset": -3}}, 422),
        ("GET", post, {"params": {"namespace": SQL}}, 422),
        ("GET", post, {"params": {"scope": SQL}}, 422),
        ("GET", post, {"params": {"since": "whenever"}}, 422),
        ("GET", "/api/search", {"params": {"q": ""}}, 422),
        ("GET", "/api/search", {"params": {"q": "billing", "limit": 10 ** 9}}, 422),
        ("GET", "/api/search", {"params": {"q": "billing", "limit": -1}}, 422),
        ("GET", "/api/search", {"params": {"q": "billing", "top_k": 0}}, 422),
        ("GET", "/api/search", {"params": {"q": "billing", "namespace": SQL}}, 422),
        ("GET", "/api/search", {"params": {"q": "billing", "mode": "sql"}}, 422),
        ("GET", "/api/vector-search", {"params": {"q": "billing", "limit": 10 ** 9}}, 422),
        ("GET", f"/api/memories/{SQL}", {}, 422),
        ("DELETE", f"/api/memories/{SQL}", {}, 422),
        ("DELETE", "/api/memories/%25%25%25%25", {}, 422),
        ("DELETE", "/api/memories/____", {}, 422),
        ("PATCH", f"/api/memories/{mid}", {"json": {"content": ""}}, 422),
        ("PATCH", f"/api/memories/{mid}", {"json": {"importance": True}}, 422),
        ("PATCH", f"/api/memories/{mid}", {"json": {"tags": 5}}, 422),
        ("PATCH", f"/api/memories/{mid}", {"json": {"unknown_field": 1}}, 422),
        ("PATCH", f"/api/memories/{mid}", {"json": {"scope": SQL}}, 422),
        ("PATCH", f"/api/memories/{mid}", {"json": {"expected_version": "1"}}, 422),
        ("PATCH", f"/api/memories/{mid}", {"content": b"\xff"}, 400),
        ("PATCH", f"/api/memories/{mid}", {"json": {"importance": 0.1}, "headers": {"If-Match": "one"}}, 422),
        ("PATCH", f"/api/memories/{mid}", {"json": {"importance": 0.1}, "headers": {"If-Match": "7"}}, 412),
        *_fuzz_cases(mid),
    ]


def _fuzz_cases(mid: str) -> list[tuple[str, str, dict[str, Any], int]]:
    """NaN/Infinity, 5,000-digit numbers, deep metadata and invisible content on every write route: 422, or
    400 for a body nested beyond what any request needs (like broken JSON)."""
    post, one = "/api/memories", f"/api/memories/{mid}"

    def raw(text: str) -> dict[str, Any]:
        return {"content": text.encode(), "headers": {"Content-Type": "application/json"}}

    cases: list[tuple[str, str, dict[str, Any], int]] = []
    for v in NON_FINITE:
        cases += [("POST", post, raw('{"content": "fine", "metadata": {"a": %s}}' % v), 422),
                  ("POST", post, raw('{"content": "fine", "metadata": {"a": [1, {"b": %s}]}}' % v), 422),
                  ("POST", post + "/batch", raw('[{"content": "fine four", "metadata": {"a": %s}}]' % v), 422),
                  ("PATCH", one, raw('{"metadata": {"a": %s}}' % v), 422),
                  ("POST", "/api/import", raw('{"records": [{"content": "fine", "metadata": {"a": %s}}]}' % v), 422)]
    return cases + [
        ("POST", post, raw('{"content": "fine", "metadata": {"n": %s}}' % LONG), 422),
        ("POST", post, raw('{"content": "fine", "importance": %s}' % LONG), 422),
        ("POST", post, raw('{"content": "fine", "created_at": %s}' % LONG), 422),
        ("POST", post, {"json": {"content": "fine", "metadata": {"n": 10 ** 30}}}, 422),
        ("POST", post, raw('{"content": "fine", "metadata": %s}' % nested(500)), 400),
        ("POST", post, raw('{"content": "fine", "metadata": %s}' % nested(40)), 422),
        ("POST", post, {"json": {"content": ZW}}, 422),
        ("POST", post + "/batch", {"json": [{"content": "fine five"}, {"content": ZW}]}, 422),
        ("PATCH", one, raw('{"metadata": {"n": %s}}' % LONG), 422),
        ("PATCH", one, raw('{"metadata": %s}' % nested(500)), 400),
        ("PATCH", one, raw('{"metadata": %s}' % nested(40)), 422),
        ("PATCH", one, {"json": {"content": ZW}}, 422),
        ("POST", "/api/check-duplicate", {"json": {"content": ZW}}, 422),
        ("POST", "/api/import", raw('{"records": [{"content": "fine", "metadata": %s}]}' % nested(40)), 422),
        ("POST", "/api/import", raw('{"records": [{"content": "fine", "created_at": %s}]}' % LONG), 422),
        ("POST", "/api/import", {"json": {"records": [{"content": ZW}]}}, 422),
    ]


def test_rest_bad_input(seeded: tuple[Server, list[str], list[dict[str, Any]]]) -> None:
    srv, ids, before = seeded
    with srv.client() as c:
        for method, path, kwargs, status in _rest_cases(ids):
            what = f"{method} {path[:60]} {str(kwargs)[:120]}"
            try:
                r = c.request(method, path, **kwargs)
            except httpx.HTTPError as exc:  # the server must answer, not drop the connection
                raise AssertionError(f"{what}: {exc!r}") from None
            assert r.status_code == status, (what, r.status_code, r.text[:300])
            body = r.json()
            assert body["ok"] is False and body["error"] and body["code"], (what, body)
            assert "Traceback" not in r.text and "internal error" not in body["error"], (what, body)
        # filter values are data
        tagged = c.get("/api/memories", params={"tag": SQL}).json()
        assert [m["content"] for m in tagged] == ["a memory whose tag looks like SQL"]
        hits = c.get("/api/search", params={"q": "memory tag", "tags": SQL}).json()
        assert [m["content"] for m in hits] == ["a memory whose tag looks like SQL"]
        assert c.get("/api/memories", params={"project": SQL}).json() == []
        assert c.get("/api/memories", params={"source": SQL}).json() == []
        assert c.get("/health").json()["ok"] is True
    assert "Traceback" not in srv.log_text()
    assert snapshot(srv.home) == before


def test_a_space_token_cannot_break_the_admins_reads(seeded: tuple[Server, list[str], list[dict[str, Any]]]) -> None:
    """A space token's write of NaN or deep metadata is refused; the admin's export and list still answer."""
    srv, _, before = seeded
    with srv.client() as admin:
        r = admin.post("/api/spaces", json={"name": "fuzz", "agent": "eve"})
        assert r.status_code in (200, 201), r.text
        token = r.json()["api_token"]
        with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {token}",
                                                       "Content-Type": "application/json"}, timeout=60) as eve:
            for body in ['{"content": "eve was here", "metadata": {"a": NaN}}',
                         '{"content": "eve was here", "metadata": {"a": -Infinity}}',
                         '{"content": "eve was here", "metadata": %s}' % nested(40),
                         '{"content": "%s"}' % ZW]:
                r = eve.post("/api/memories", content=body.encode())
                assert r.status_code == 422 and r.json()["ok"] is False, (body[:60], r.status_code, r.text[:200])
            assert eve.get("/api/memories").json() == []
        assert admin.get("/api/export").status_code == 200
        assert admin.get("/api/memories", params={"all_namespaces": "1"}).status_code == 200
    assert snapshot(srv.home) == before


# ------------------------------------------------------------------------------------------------ MCP
@asynccontextmanager
async def stdio_session(env: dict[str, str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=MEMCLI, args=["mcp"], env=env)
    with open(Path(env["MEMCLI_HOME"]).parent / "mcp-stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    async with create_mcp_http_client(headers=AUTH) as client, \
            streamable_http_client(url, http_client=client) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


MCP_CASES: list[tuple[str, dict[str, Any]]] = [
    ("remember", {"content": ""}),
    ("remember", {"content": " \n\t "}),
    ("remember", {"content": BIG}),
    ("remember", {"content": "nul\x00byte"}),
    ("remember", {}),
    ("remember", {"content": 123}),
    ("remember", {"content": ["a", "list"]}),
    ("remember", {"content": "fine", "namespace": SQL}),
    ("remember", {"content": "fine", "agent": SQL}),
    ("remember", {"content": "fine", "tags": "not a list"}),
    ("remember", {"content": "fine", "tags": ["bad\ttag"]}),
    ("remember", {"content": "fine", "importance": "high"}),
    ("remember", {"content": "fine", "importance": 7}),
    ("remember", {"content": "fine", "metadata": [1, 2]}),
    ("remember", {"content": "fine", "ttl": "soon"}),
    ("remember", {"content": "fine", "tag": "decision"}),  # unknown argument (the tool has `tags`)
    ("recall", {"query": ""}),
    ("recall", {"query": "billing", "top_k": 10 ** 9}),
    ("recall", {"query": "billing", "top_k": -1}),
    ("recall", {"query": "billing", "top_k": "many"}),
    ("recall", {"query": "billing", "namespace": SQL}),
    ("recall", {"query": "billing", "agent_filter": SQL}),
    ("recall", {"query": "billing", "unknown": True}),
    ("list_facts", {"limit": -1}),
    ("list_facts", {"limit": 0}),
    ("list_facts", {"limit": 10 ** 9}),
    ("list_facts", {"offset": -1}),
    ("list_facts", {"namespace": SQL}),
    ("get", {"memory_id": SQL}),
    ("get", {"memory_id": 5}),
    ("forget", {"memory_id": SQL}),
    ("forget", {"memory_id": "____"}),
    ("update", {"memory_id": "0000", "content": "x"}),
    ("check_duplicate", {"content": ""}),
    ("check_duplicate", {"content": "fine", "threshold": 5}),
    ("no_such_tool", {}),
    ("remember", {"content": ZW}),
    ("remember", {"content": "fine", "metadata": nested_obj(40)}),
    ("remember", {"content": "fine", "metadata": {"n": 10 ** 30}}),
    ("check_duplicate", {"content": ZW}),
]


async def _mcp_matrix(session: ClientSession, ids: list[str]) -> None:
    cases = MCP_CASES + [("update", {"memory_id": ids[0], "content": ""}),
                         ("update", {"memory_id": ids[0], "importance": 3}),
                         ("update", {"memory_id": ids[0], "scope": SQL}),
                         ("update", {"memory_id": ids[0], "content": ZW})]
    for tool, args in cases:
        res = await session.call_tool(tool, args)
        text = res.content[0].text if res.content else ""
        assert res.is_error, (tool, str(args)[:100], text[:200])
        assert text.strip() and "Traceback" not in text, (tool, text)
    tagged = await session.call_tool("list_facts", {"tag": SQL})
    assert [m["content"] for m in json.loads(tagged.content[0].text)] == ["a memory whose tag looks like SQL"]
    hits = await session.call_tool("recall", {"query": "memory tag", "tags": [SQL]})
    assert [m["content"] for m in json.loads(hits.content[0].text)] == ["a memory whose tag looks like SQL"]


def test_mcp_bad_input_over_stdio_and_http(seeded: tuple[Server, list[str], list[dict[str, Any]]]) -> None:
    srv, ids, before = seeded

    async def main() -> None:
        async with stdio_session(srv.env) as local, http_session(srv.url + "/mcp") as remote:
            for session in (local, remote):
                await _mcp_matrix(session, ids)

    anyio.run(main)
    assert "Traceback" not in srv.log_text()
    assert snapshot(srv.home) == before


def _rpc(id_: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "rel", "version": "1"}}
RAW_TOOL_CALLS = [  # JSON that no SDK client would send: \u escapes of lone surrogates, deep nesting
    b'{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "remember", '
    b'"arguments": {"content": "lone \\ud800 surrogate"}}}',
    b'{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "remember", '
    b'"arguments": {"content": "fine", "metadata": {"k": "\\udfff"}}}}',
    b'{"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name": "remember", '
    b'"arguments": {"content": "fine", "tags": ["\\ud800"]}}}',
    # the SDK's parser reads NaN and Infinity (the stdio line check too): the tool must refuse them
    *[b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "remember", '
      b'"arguments": {"content": "fine", "metadata": {"a": %s}}}}' % (14 + i, v.encode())
      for i, v in enumerate(NON_FINITE)],
    b'{"jsonrpc": "2.0", "id": 18, "method": "tools/call", "params": {"name": "remember", '
    b'"arguments": {"content": "fine", "metadata": {"n": %s}}}}' % LONG.encode(),
    b'{"jsonrpc": "2.0", "id": 19, "method": "tools/call", "params": {"name": "remember", '
    b'"arguments": {"content": "fine", "metadata": %s}}}' % nested(500).encode(),
]
RAW_GARBAGE = [b"caf\xe9 \xff\xfe not utf-8", b"[" * 50_000 + b"]" * 50_000, b"{}", b'{"jsonrpc": "2.0"}', b"null"]


def test_mcp_raw_bytes_over_stdio_and_http(seeded: tuple[Server, list[str], list[dict[str, Any]]], reaper: Reaper,
                                           tmp_path: Path) -> None:
    srv, _, before = seeded
    # stdio: one message per line
    errlog = open(tmp_path / "mcp-raw.err", "wb")
    proc = reaper.track(subprocess.Popen([MEMCLI, "mcp"], env=srv.env, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=errlog))
    assert proc.stdin and proc.stdout
    watchdog = threading.Timer(120, proc.kill)  # a call left unanswered ends the read (EOF), not the suite
    watchdog.start()

    def send(line: bytes) -> None:
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()

    def replies_until(*ids: int) -> list[dict[str, Any]]:
        """Every message up to the one that answers the last of ``ids`` (the SDK runs calls concurrently:
        the answers may come in any order)."""
        msgs: list[dict[str, Any]] = []
        while not set(ids) <= {m.get("id") for m in msgs}:
            line = proc.stdout.readline()
            assert line, (tmp_path / "mcp-raw.err").read_text()
            msgs.append(json.loads(line))
        return msgs

    send(json.dumps(_rpc(1, "initialize", INIT)).encode())
    replies_until(1)
    send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    for line in RAW_GARBAGE + RAW_TOOL_CALLS:
        send(line)
    send(json.dumps(_rpc(20, "tools/list", {})).encode())
    msgs = replies_until(*range(11, 21))  # every call is answered, none left waiting
    tools = next(m for m in msgs if m.get("id") == 20)
    assert {"remember", "recall", "forget"} <= {t["name"] for t in tools["result"]["tools"]}  # still serving
    assert all(m.get("error") or m["result"]["isError"] is True for m in msgs if m is not tools), msgs
    watchdog.cancel()
    proc.stdin.close()
    proc.wait(30)
    errlog.close()
    assert b"Traceback" not in (tmp_path / "mcp-raw.err").read_bytes()

    # Streamable HTTP: the same bytes as request bodies
    headers = {**AUTH, "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx.Client(base_url=srv.url, headers=headers, timeout=30) as c:
        r = c.post("/mcp", json=_rpc(1, "initialize", INIT))
        assert r.status_code == 200, r.text
        h = {"mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        assert c.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h).status_code == 202
        for body in RAW_GARBAGE:
            r = c.post("/mcp", content=body, headers=h)
            assert 400 <= r.status_code < 500 or (r.status_code == 202 and body == b'{"jsonrpc": "2.0"}'), (
                body[:40], r.status_code, r.text[:200])
        for body in RAW_TOOL_CALLS:
            r = c.post("/mcp", content=body, headers=h)
            assert r.status_code in (200, 400), (body[:80], r.status_code, r.text[:200])
            msg = r.json()
            assert msg.get("error") or msg["result"]["isError"] is True, msg
    assert "Traceback" not in srv.log_text()
    assert snapshot(srv.home) == before
