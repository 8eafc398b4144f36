"""A damaged store is named, never read as an empty one (issue 26 item 12).

Real stores damaged on purpose, checked through the installed `memcli` as a subprocess (and a real `memcli
serve` over REST and MCP): a memories table whose ``_versions`` manifests are gone, a garbled manifest, a
settings table that lost its versions, truncated full-text and vector index files. Every face names the
damage and the way out, writes nothing over the old files, and quotes no Rust source location.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest

from memcli.config import load_config
from memcli.errors import DamagedStoreError, StoreError, clean_message, public_message
from memcli.memory.service import MemoryService, NewMemory

FACTS = ["The billing service stores invoices in PostgreSQL 16",
         "Deploys run from the ops-runner host every Tuesday",
         "The search cluster uses OpenSearch with three shards"]
RUST_MARKS = (".rs:", "/.cargo/", "Location {", "/rustc/")


def _seed(home: Path, facts: list[str] = FACTS) -> list[str]:
    svc = MemoryService.open(load_config(home))
    try:
        return [r.memory_id for r in svc.remember_many([NewMemory(content=f) for f in facts])]
    finally:
        svc.close()


def _table(home: Path, name: str = "memories") -> Path:
    return home / "data" / f"{name}.lance"


def _files(root: Path) -> dict[str, str]:
    """Every file under ``root`` → its sha256: what a write over the table would change."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


class Cli:
    """The installed `memcli` with this test's home; every output is kept to check for source paths."""

    def __init__(self, exe: str, env: dict[str, str]) -> None:
        self.exe, self.env = exe, env
        self.seen: list[str] = []

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = dict(self.env, MEMCLI_NO_SERVER="1")
        if args[-1] == "--human":  # what a terminal gets: MEMCLI_JSON=0
            args, env["MEMCLI_JSON"] = args[:-1], "0"
        p = subprocess.run([self.exe, *args], env=env, capture_output=True, text=True, timeout=120)
        self.seen += [p.stdout, p.stderr]
        return p

    def many(self, *commands: tuple[str, ...]) -> list[subprocess.CompletedProcess[str]]:
        """Read-only commands side by side (two cores: half the wait)."""
        with ThreadPoolExecutor(2) as pool:
            return list(pool.map(lambda args: self(*args), commands))

    def error(self, *args: str, ran: subprocess.CompletedProcess[str] | None = None) -> dict[str, Any]:
        """A command that must fail (``args``, or the run ``ran``): exit 1 and a JSON error object on stdout,
        no traceback anywhere."""
        p = ran if ran is not None else self(*args, "--json")
        assert p.returncode == 1, (p.args, p.returncode, p.stdout, p.stderr)
        assert "Traceback" not in p.stdout + p.stderr, p.stderr
        body = json.loads(p.stdout)
        assert body["ok"] is False and body["code"], body
        return body

    def no_source_paths(self) -> None:
        for text in self.seen:
            for mark in RUST_MARKS:
                assert mark not in text, (mark, text)


@pytest.fixture
def cli(memcli_bin: str, subprocess_env: dict[str, str]) -> Cli:
    return Cli(memcli_bin, subprocess_env)


def _doctor(cli: Cli, ran: subprocess.CompletedProcess[str] | None = None) -> tuple[int, dict[str, dict[str, Any]]]:
    p = ran if ran is not None else cli("doctor", "--json")
    assert "Traceback" not in p.stdout + p.stderr, p.stderr
    return p.returncode, {c["name"]: c for c in json.loads(p.stdout)["checks"]}


# ---------------------------------------------------------------------------------------------- (a) no versions
def test_a_table_without_versions_is_named_and_never_written_over(home: Path, cli: Cli) -> None:
    """Its manifests deleted, lance reports the table as missing: it is not, and nothing is created over it."""
    _seed(home)
    table = _table(home)
    shutil.rmtree(table / "_versions")
    before = _files(table)

    listed, recalled, doctor = cli.many(("list", "--json"), ("recall", "PostgreSQL invoices", "--json"),
                                        ("doctor", "--json"))
    for ran in (listed, recalled):
        body = cli.error(ran=ran)
        assert body["code"] == "store_error", body
        msg = body["error"]
        assert str(table) in msg and "damaged" in msg and "no readable version" in msg, msg
        assert "restore" in msg and f"mv {table} {table}.damaged" in msg, msg  # the way out

    code, checks = _doctor(cli, doctor)
    assert code == 1
    store = checks["store"]
    assert store["status"] == "fail" and str(table) in store["detail"] and "_versions" in store["detail"], store
    assert "restore" in store["fix"] and ".damaged" in store["fix"], store

    batch = home.parent / "batch.jsonl"
    batch.write_text(json.dumps({"content": "an imported fact, not over the damaged table"}) + "\n")
    remembered, imported = cli.many(("remember", "a new fact that must not start a new table", "--json"),
                                    ("import", str(batch), "--json"))  # a bulk write too
    for ran in (remembered, imported):
        assert "damaged" in cli.error(ran=ran)["error"]
    assert _files(table) == before  # the old data files untouched, no new version made over them
    assert not (table / "_versions").exists()
    cli.no_source_paths()

    # the way out works: the directory moved aside, the store starts empty and the old files are kept
    table.rename(table.with_name("memories.lance.damaged"))
    assert cli("remember", "after moving it aside", "--json").returncode == 0
    assert _files(table.with_name("memories.lance.damaged")) == before


def test_the_settings_table_without_versions_is_named(home: Path, cli: Cli) -> None:
    _seed(home)
    meta = _table(home, "memcli_meta")
    shutil.rmtree(meta / "_versions")
    before = _files(home / "data")
    listed, doctor = cli.many(("list", "--json"), ("doctor", "--json"))
    body = cli.error(ran=listed)
    assert "settings table" in body["error"] and str(meta) in body["error"], body
    assert cli.error("remember", "not over the old settings")["code"] == "store_error"
    assert _files(home / "data") == before
    code, checks = _doctor(cli, doctor)
    assert code == 1 and checks["store"]["status"] == "fail" and "settings table" in checks["store"]["detail"]
    cli.no_source_paths()


def test_lost_settings_beside_a_reindexed_table_are_named(home: Path) -> None:
    """The settings named the active table (a reindex made `memories_<ms>`); without them a new empty
    `memories` table would hide every memory."""
    _seed(home)
    _table(home).rename(_table(home, "memories_1700000000000"))
    shutil.rmtree(_table(home, "memcli_meta"))
    with pytest.raises(DamagedStoreError) as err:
        MemoryService.open(load_config(home))
    assert "memories_1700000000000" in err.value.message and "settings" in err.value.message
    assert not _table(home).exists()


# ---------------------------------------------------------------------------------------------- (b) garbage
def test_a_garbled_manifest_is_a_clear_error_on_every_output(home: Path, cli: Cli) -> None:
    _seed(home)
    table = _table(home)
    for manifest in (table / "_versions").glob("*.manifest"):
        manifest.write_bytes(b"garbage\n")
    before = _files(table)

    listed, doctor = cli.many(("list", "--json"), ("doctor", "--json"))
    body = cli.error(ran=listed)
    assert body["code"] == "store_error" and "damaged" in body["error"] and str(table) in body["error"], body
    assert "latest version cannot be read" in body["error"], body
    remembered, human = cli.many(("remember", "not over a garbled table", "--json"),
                                 ("list", "--human"))  # people get one red line on stderr, no traceback
    assert "damaged" in cli.error(ran=remembered)["error"]
    assert human.returncode == 1 and "Traceback" not in human.stdout + human.stderr, human.stderr
    assert "Error:" in human.stderr and "damaged" in human.stderr, human.stderr
    code, checks = _doctor(cli, doctor)
    assert code == 1 and checks["store"]["status"] == "fail" and "damaged" in checks["store"]["detail"]
    assert _files(table) == before
    cli.no_source_paths()


# ---------------------------------------------------------------------------------------------- (c) indexes
def _truncate_index_files(table: Path) -> int:
    n = 0
    for f in (table / "_indices").rglob("*"):
        if f.is_file():
            with open(f, "r+b") as fh:
                fh.truncate(10)
            n += 1
    return n


def test_truncated_keyword_index_degrades_to_meaning_and_compact_rebuilds_it(home: Path, cli: Cli) -> None:
    ids = _seed(home)
    assert _truncate_index_files(_table(home)) > 0

    doctor, p, text = cli.many(("doctor", "--json"), ("recall", "PostgreSQL invoices", "--json"),
                               ("recall", "PostgreSQL", "--mode", "text", "--json"))
    code, checks = _doctor(cli, doctor)
    assert code == 1
    fts = checks["full-text index"]
    assert fts["status"] == "fail" and "damaged" in fts["detail"] and "keyword recall" in fts["detail"], fts
    assert "memcli compact" in fts["fix"] and "rebuilds" in fts["fix"], fts

    # hybrid: meaning alone, and it says so
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert json.loads(p.stdout)[0]["memory_id"] == ids[0]
    assert "full-text index" in p.stderr and "memcli compact" in p.stderr, p.stderr
    body = cli.error(ran=text)  # keyword only: nothing to fall back to
    assert "full-text index" in body["error"] and "memcli compact" in body["error"], body

    p = cli("compact", "--json")
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert json.loads(p.stdout)["rebuilt_indexes"] == ["search_text_v2_idx"], p.stdout
    doctor, p = cli.many(("doctor", "--json"), ("recall", "PostgreSQL", "--mode", "text", "--json"))
    code, checks = _doctor(cli, doctor)
    assert code == 0 and checks["full-text index"]["status"] == "ok", checks
    assert p.returncode == 0 and json.loads(p.stdout)[0]["memory_id"] == ids[0], (p.stdout, p.stderr)
    assert p.stderr.strip() == "", p.stderr
    cli.no_source_paths()


def test_truncated_vector_index_is_named_and_rebuilt(home: Path, cli: Cli) -> None:
    facts = [f"note {i}: the {w} service runs on host h{i}" for i, w in
             zip(range(300), ["billing", "search", "deploy", "auth", "mail"] * 60)]
    svc = MemoryService.open(load_config(home))
    try:
        svc.remember_many([NewMemory(content=f) for f in facts])
        assert svc.store.ensure_vector_index(force=True)
    finally:
        svc.close()
    (vec,) = [d for d in (_table(home) / "_indices").iterdir() if (d / "index.idx").exists()]
    with open(vec / "index.idx", "r+b") as fh:
        fh.truncate(10)

    doctor, vector = cli.many(("doctor", "--json"), ("recall", "billing service host", "--mode", "vector", "--json"))
    code, checks = _doctor(cli, doctor)
    assert code == 1 and checks["vector index"]["status"] == "fail", checks
    assert "memcli compact" in checks["vector index"]["fix"]
    body = cli.error(ran=vector)
    assert "memcli doctor" in body["error"], body
    p = cli("compact", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["rebuilt_indexes"] == ["vector_idx"], (p.stdout, p.stderr)
    p = cli("recall", "billing service host", "--mode", "vector", "--json")
    assert p.returncode == 0 and json.loads(p.stdout), (p.stdout, p.stderr)
    cli.no_source_paths()


# ---------------------------------------------------------------------------------------------- (d) the server
def test_a_server_on_a_damaged_store_answers_a_clear_error_without_paths(home: Path, memcli_bin: str,
                                                                         tmp_path: Path) -> None:
    from _memcli_server import hash_env, start_server

    _seed(home)
    table = _table(home)
    shutil.rmtree(table / "_versions")
    before = _files(table)
    srv = start_server(memcli_bin, hash_env(tmp_path), home, ready=False)
    try:
        with srv.client(timeout=60) as http:
            answers = [http.get("/api/search", params={"q": "PostgreSQL"}),
                       http.post("/api/memories", json={"content": "not over the damaged table"})]
        for r in answers:
            body = r.json()
            assert r.status_code == 503 and body["code"] == "store_error", (r.status_code, body)
            assert "damaged" in body["error"] and "no readable version" in body["error"], body
            assert str(home) not in body["error"] and all(m not in body["error"] for m in RUST_MARKS), body
        text = anyio.run(_mcp_recall, srv)
        assert "damaged" in text and str(home) not in text and all(m not in text for m in RUST_MARKS), text
    finally:
        srv.stop()
    assert _files(table) == before
    assert "Traceback" not in srv.log.read_text()


async def _mcp_recall(srv: Any) -> str:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=srv.headers) as client, \
            streamable_http_client(srv.url + "/mcp", http_client=client) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        res = await session.call_tool("recall", {"query": "PostgreSQL"})
    assert res.is_error
    return res.content[0].text


# ---------------------------------------------------------------------------------------------- messages
def test_engine_source_locations_never_reach_a_message() -> None:
    raw = ('lance error: LanceError(IO): does not have sufficient data, len: 8, bytes: b"garbage", '
           "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/lance-io-13.0.0/src/utils.rs:224:20")
    assert StoreError(f"reading failed: {raw}").message == \
        'reading failed: lance error: LanceError(IO): does not have sufficient data, len: 8, bytes: b"garbage"'
    located = ("Retryable commit conflict for version 7: a concurrent writer, location: Location { file: "
               '"/home/runner/work/lance/lance/rust/lance/src/io/commit.rs", line: 653, column: 26 }, retry')
    assert clean_message(located) == "Retryable commit conflict for version 7: a concurrent writer, retry"
    toolchain = "Invalid range 0..2281, /rustc/2d8144b7/library/core/src/ops/function.rs:250:5"
    assert public_message(toolchain, 500) == "Invalid range 0..2281"
    assert clean_message("relative lance-table/src/io/commit.rs:653:26 too") == "relative too"
    assert clean_message("a path of the user's: /home/me/notes.txt") == "a path of the user's: /home/me/notes.txt"


def test_a_garbled_data_file_is_named_without_engine_paths(home: Path, cli: Cli) -> None:
    """A data file of the table replaced by garbage: every read of it fails inside the engine, and says so
    in memcli's words (doctor: which check, what to do)."""
    _seed(home)
    for f in (_table(home) / "data").iterdir():
        f.write_bytes(os.urandom(64))
    *runs, doctor = cli.many(("list", "--json"), ("export", "--json"), ("doctor", "--json"))
    for p in runs:
        assert cli.error(ran=p)["code"] == "store_error"
    code, checks = _doctor(cli, doctor)
    assert code == 1 and checks["store data"]["status"] == "fail", checks
    assert "restore" in checks["store data"]["fix"]
    cli.no_source_paths()


def test_an_engine_error_no_core_call_names_is_an_error_message_not_a_traceback(home: Path, cli: Cli) -> None:
    """The CLI's error boundary: whatever the engine raises reaches the user as one message (a JSON error
    object with --json), never a traceback. Here: the team spaces table's manifest garbled."""
    p = cli("space", "create", "acme", "--agent", "alice", "--json")
    assert p.returncode == 0, (p.stdout, p.stderr)
    for manifest in (_table(home, "memcli_spaces") / "_versions").glob("*.manifest"):
        manifest.write_bytes(b"garbage\n")
    machine, human = cli.many(("space", "list", "--json"), ("space", "list", "--human"))
    body = cli.error(ran=machine)
    assert body["code"] in ("internal_error", "store_error") and "sufficient data" in body["error"], body
    assert human.returncode == 1 and "Traceback" not in human.stderr and "Error:" in human.stderr, human.stderr
    cli.no_source_paths()


def test_a_damaged_board_table_is_named_and_never_written_over(home: Path, cli: Cli) -> None:
    p = cli("board", "add", "Fix the flaky upload test", "--json")
    assert p.returncode == 0, (p.stdout, p.stderr)
    tasks = _table(home, "memcli_tasks")
    shutil.rmtree(tasks / "_versions")
    before = _files(tasks)
    listed, added = cli.many(("board", "list", "--json"), ("board", "add", "a new card", "--json"))
    for ran in (listed, added):
        body = cli.error(ran=ran)
        assert "board table" in body["error"] and "damaged" in body["error"] and "restore" in body["error"], body
    assert _files(tasks) == before
    cli.no_source_paths()


def test_a_spaces_table_without_versions_is_named_and_never_recreated(home: Path, cli: Cli) -> None:
    """Recreating the team spaces table over its rows would revoke every space token in silence."""
    p = cli("space", "create", "acme", "--agent", "alice", "--json")
    assert p.returncode == 0, (p.stdout, p.stderr)
    spaces = _table(home, "memcli_spaces")
    shutil.rmtree(spaces / "_versions")
    before = _files(spaces)
    listed, created = cli.many(("space", "list", "--json"), ("space", "create", "beta", "--agent", "bob", "--json"))
    for ran in (listed, created):
        body = cli.error(ran=ran)
        assert "spaces table" in body["error"] and "damaged" in body["error"] and "restore" in body["error"], body
    assert _files(spaces) == before
    cli.no_source_paths()
