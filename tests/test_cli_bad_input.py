"""Bad input through the CLI: a clear message, exit 1 or 2, and the store unchanged."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memcli.cli.app import app
from memcli.config import load_config
from memcli.memory.service import MemoryService

runner = CliRunner()
INJECTION = "x' OR '1'='1"


def invoke(*args: str, input: Any = None) -> Any:
    return runner.invoke(app, list(args), input=input, catch_exceptions=False)


def snapshot(home: Path) -> list[dict[str, Any]]:
    """Every row (all fields), to show that nothing changed."""
    s = MemoryService.open(load_config(home))
    try:
        return sorted((m.record() for m in s.export()), key=lambda r: r["id"])
    finally:
        s.close()


@pytest.fixture
def seeded(home: Path) -> tuple[Path, str, list[dict[str, Any]]]:
    res = invoke("remember", "the seed memory", "--tag", "seed", "--json")
    assert res.exit_code == 0
    mid = json.loads(res.stdout)["memory_id"]
    return home, mid, snapshot(home)


def assert_refused(res: Any, *needles: str) -> None:
    """Exit 1 with a JSON error object naming the problem, or exit 2 (usage) with a message on stderr."""
    assert res.exit_code in (1, 2), f"exit {res.exit_code}: {res.stdout}"
    if res.exit_code == 1:
        err = json.loads(res.stdout)
        assert err["ok"] is False and err["error"] and err["code"]
        text = err["error"]
    else:
        text = res.stderr
        assert text.strip()
    for needle in needles:
        assert needle.lower() in text.lower(), f"{needle!r} not in {text!r}"
    assert "Traceback" not in res.stdout + res.stderr


REMEMBER_CASES = [
    (["remember", ""], ["empty"]),
    (["remember", "   \n\t "], ["empty"]),
    (["remember", "x" * 32_001], ["32,000"]),
    (["remember", "ok text", "--importance", "1.5"], ["importance"]),
    (["remember", "ok text", "--importance", "-0.1"], ["importance"]),
    (["remember", "ok text", "--importance", "nan"], ["importance"]),
    (["remember", "ok text", "--importance", "high"], ["importance"]),
    (["remember", "ok text", "--metadata", "{bad json"], ["metadata"]),
    (["remember", "ok text", "--metadata", "[1, 2]"], ["metadata", "object"]),
    (["remember", "ok text", "--scope", "team:x"], ["scope", "team:x"]),
    (["remember", "ok text", "--scope", "agent:"], ["scope"]),
    (["remember", "ok text", "--agent", INJECTION], ["scope"]),
    (["remember", "ok text", "--agent", "a", "--scope", "global"], ["either"]),
    (["remember", "ok text", "--tag", ""], ["tag"]),
    (["remember", "ok text", "--tag", "bad\ttag"], ["tag"]),
    (["remember", "ok text", "--ttl", "soon"], ["duration"]),
    (["remember", "ok text", "--ttl", "0s"], ["positive"]),
    (["remember", "ok text", "--ttl", "99999999999999999999y"], ["1000 years"]),
    (["remember", "ok text", "--namespace", "bad namespace"], ["namespace"]),
    (["remember", "ok text", "--key", "   "], ["key"]),
    (["remember", "nul\x00byte"], ["NUL"]),
    (["remember"], []),
    # issue 26: nothing visible is empty; NaN/Infinity, 5,000 digits and deep nesting never reach the store
    (["remember", "\u200b\u200d\u2060\ufeff\u200e\u202e\u2066\u00ad"], ["empty"]),
    (["remember", "ok text", "--metadata", '{"ratio": NaN}'], ["metadata", "NaN"]),
    (["remember", "ok text", "--metadata", '{"max": [Infinity]}'], ["metadata", "Infinity"]),
    (["remember", "ok text", "--metadata", '{"n": ' + "7" * 5000 + "}"], ["metadata", "5,000"]),
    (["remember", "ok text", "--metadata", '{"a": ' * 500 + "1" + "}" * 500], ["metadata", "nested"]),
]


@pytest.mark.parametrize("args,needles", REMEMBER_CASES, ids=lambda v: repr(v)[:40] if isinstance(v, list) else "")
def test_bad_remember_is_refused_and_changes_nothing(seeded: Any, args: list[str], needles: list[str]) -> None:
    home, _, before = seeded
    assert_refused(invoke(*args, "--json"), *needles)
    assert snapshot(home) == before


def test_invalid_utf8_on_stdin_is_refused(seeded: Any) -> None:
    home, mid, before = seeded
    assert_refused(invoke("remember", "-", "--json", input=b"caf\xe9 \xff\xfe"), "UTF-8")
    assert_refused(invoke("update", mid, "--content", "-", "--json", input=b"\xc3\x28"), "UTF-8")
    assert_refused(invoke("check-duplicate", "-", "--json", input=b"\x80abc"), "UTF-8")
    assert_refused(invoke("import", "-", "--json", input=b'{"content": "caf\xe9"}'), "UTF-8")
    assert snapshot(home) == before


def test_invalid_utf8_as_a_process_argument_and_stdin(home: Path, memcli_bin: str,
                                                      subprocess_env: dict[str, str]) -> None:
    """The real process: invalid bytes in argv (surrogate-escaped by Python) and on stdin are refused."""
    arg = subprocess.run([memcli_bin.encode(), b"remember", b"bad \xff\xfe bytes", b"--json"],
                         env=subprocess_env, capture_output=True, timeout=60)
    assert arg.returncode == 1, arg.stderr
    assert "not valid unicode" in json.loads(arg.stdout)["error"].lower()
    stdin = subprocess.run([memcli_bin, "remember", "-"], input=b"\xff\xfe\xfd", env=subprocess_env,
                           capture_output=True, timeout=60)
    assert stdin.returncode == 1 and b"UTF-8" in stdin.stdout + stdin.stderr
    assert b"Traceback" not in stdin.stderr + arg.stderr
    s = MemoryService.open(load_config(home))
    assert s.store.count() == 0
    s.close()


def test_bad_update_is_refused_and_changes_nothing(seeded: Any) -> None:
    home, mid, before = seeded
    for args, needles in [
        (["--content", "  "], ["empty"]),
        (["--content", "y" * 32_001], ["32,000"]),
        (["--importance", "2"], ["importance"]),
        (["--metadata", "not json"], ["metadata"]),
        (["--scope", "team:x"], ["scope"]),
        (["--agent", INJECTION], ["scope"]),
        (["--tag", ""], ["tag"]),
        (["--ttl", "later"], ["duration"]),
        (["--expected-version", "7", "--tag", "a"], ["version"]),
        (["--expected-version", "one", "--tag", "a"], []),
        ([], ["nothing to change"]),
    ]:
        assert_refused(invoke("update", mid, *args, "--json"), *needles)
    assert snapshot(home) == before


def test_quotes_in_filters_are_data_not_sql(seeded: Any) -> None:
    home, _, before = seeded
    for cmd in (["list"], ["recall", "seed"], ["export"]):
        res = invoke(*cmd, "--tag", INJECTION, "--json")
        assert res.exit_code == 0, res.stdout
        if cmd[0] == "export":
            assert len(res.stdout.strip().splitlines()) == 1  # the header only
        else:
            assert json.loads(res.stdout) == []
    for cmd in (["list"], ["recall", "seed"]):
        assert_refused(invoke(*cmd, "--agent", INJECTION, "--json"), "scope")
        assert_refused(invoke(*cmd, "--scope", INJECTION, "--json"), "scope")
    assert_refused(invoke("list", "--namespace", INJECTION, "--json"), "namespace")
    res = invoke("list", "--project", INJECTION, "--source", INJECTION, "--json")
    assert res.exit_code == 0 and json.loads(res.stdout) == []
    res = invoke("check-duplicate", INJECTION, "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["is_duplicate"] is False
    assert_refused(invoke("get", INJECTION, "--json"), "invalid memory id")
    assert_refused(invoke("forget", "abcd' OR '1'='1", "--json"), "invalid memory id")
    assert snapshot(home) == before


def test_a_tag_with_quotes_is_stored_and_matched_exactly(seeded: Any) -> None:
    home, seed_id, _ = seeded
    res = invoke("remember", "tagged with quotes", "--tag", INJECTION, "--json")
    mid = json.loads(res.stdout)["memory_id"]
    listed = json.loads(invoke("list", "--tag", INJECTION, "--json").stdout)
    assert [it["memory_id"] for it in listed] == [mid] and listed[0]["tags"] == [INJECTION]
    assert [it["memory_id"] for it in json.loads(invoke("list", "--tag", "x", "--json").stdout)] == []
    assert len(json.loads(invoke("list", "--json").stdout)) == 2


def test_bad_recall_list_and_other_commands(seeded: Any, tmp_path: Path) -> None:
    home, mid, before = seeded
    cases = [
        (["recall", "  "], ["query"]),
        (["recall", "x", "--top-k", "0"], ["top_k"]),
        (["recall", "x", "--since", "last tuesday"], ["time"]),
        (["recall", "x", "--mode", "fuzzy"], ["mode"]),
        (["list", "--limit", "0"], ["limit"]),
        (["list", "--offset", "-1"], ["offset"]),
        (["list", "--until", "not-a-date"], ["time"]),
        (["list", "--since", "99999999999999999999"], ["year 9999"]),
        (["recall", "x", "--since", "99999999999999999999y"], ["1000 years"]),
        (["update", mid, "--ttl", "99999999999999999999d"], ["1000 years"]),
        (["list", "-n", "x", "--all-namespaces"], ["not both"]),
        (["get", "ab"], ["invalid memory id"]),
        (["forget"], []),
        (["check-duplicate", ""], ["empty"]),
        (["check-duplicate", "x", "--threshold", "-1"], ["threshold"]),
        (["export", "--format", "xml"], ["format"]),
        (["export", "--scope", "team:x"], ["scope"]),
        (["import", str(tmp_path / "missing.jsonl")], ["no such file"]),
        (["import", str(tmp_path)], ["directory"]),
    ]
    for args, needles in cases:
        assert_refused(invoke(*args, "--json"), *needles)
    assert snapshot(home) == before


def test_bad_import_files_import_nothing(seeded: Any, tmp_path: Path) -> None:
    home, _, before = seeded
    good = json.dumps({"content": "a good record", "tags": ["ok"]})
    cases = {
        "empty.jsonl": ("", ["empty"]),
        "badline.jsonl": (good + "\n{not json\n", ["line 2"]),
        "emptycontent.jsonl": (good + "\n" + json.dumps({"content": "  "}) + "\n", ["record 2", "empty"]),
        "badscope.jsonl": (json.dumps({"content": "x", "scope": "team:x"}) + "\n" + good, ["record 1", "scope"]),
        "scalar.json": ("42", ["JSON objects"]),
        "notobject.jsonl": (good + "\n[1, 2]\n", ["record 2"]),
        "newer.jsonl": (json.dumps({"memcli_export": 99}) + "\n" + good, ["newer memcli"]),
        "badmemories.json": (json.dumps({"memcli_export": 1, "memories": {"a": 1}}), ["memories"]),
        "badimportance.json": (json.dumps([{"content": "x", "importance": 7}]), ["importance"]),
        "badcreated.json": (json.dumps([{"content": "x", "created_at": "yesterday"}]), ["created_at"]),
        "badexpires.json": (json.dumps([{"content": "x", "expires_at": "never"}]), ["expires_at"]),
        "boolversion.json": (json.dumps([{"content": "x", "version": True}]), ["version"]),
        "badproject.json": (json.dumps([{"content": "x", "project": 5}]), ["project"]),
    }
    for name, (text, needles) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert_refused(invoke("import", str(path), "--json"), *needles)
    assert snapshot(home) == before


def test_bad_global_options(seeded: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    home, _, before = seeded
    assert invoke("no-such-command").exit_code == 2
    assert invoke("list", "--no-such-flag").exit_code == 2
    monkeypatch.setenv("MEMCLI_EMBEDDER", "word2vec")
    assert_refused(invoke("list", "--json"), "unknown embedder")
    monkeypatch.setenv("MEMCLI_EMBEDDER", "hash")
    monkeypatch.setenv("MEMCLI_NAMESPACE", "has space")
    assert_refused(invoke("list", "--json"), "namespace")
    monkeypatch.delenv("MEMCLI_NAMESPACE")
    (home / "config.toml").write_text("namespace = [broken", encoding="utf-8")
    assert_refused(invoke("list", "--json"), "TOML")
    (home / "config.toml").unlink()
    assert snapshot(home) == before


def test_errors_go_to_stderr_in_human_mode(seeded: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCLI_JSON", "0")
    res = invoke("remember", "ok", "--importance", "3")
    assert res.exit_code == 1 and res.stdout == "" and "Error:" in res.stderr and "importance" in res.stderr


def test_unwritable_export_target_is_a_clear_error(seeded: Any, tmp_path: Path) -> None:
    assert_refused(invoke("export", "-o", str(tmp_path / "no" / "such" / "dir.jsonl"), "--json"), "does not exist")
    assert_refused(invoke("export", "-o", str(tmp_path), "--json"), "is a directory")
    assert list(tmp_path.glob(".*.tmp")) == []


def test_distill_deletes_nothing_when_the_archive_cannot_be_written(home: Path) -> None:
    res = invoke("remember", "expires at once", "--ttl", "1ms", "--json")
    mid = json.loads(res.stdout)["memory_id"]
    home.joinpath("archive").write_text("a file where the archive directory should be")
    assert_refused(invoke("distill", "--apply", "--json"), "archive", "nothing was changed")
    s = MemoryService.open(load_config(home))
    assert s.get(mid).id == mid
    s.close()
