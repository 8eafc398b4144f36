"""memcli distill on a real store: plan (changes nothing), apply (tagged, one commit, audited), undo, idempotence,
a crash mid-apply, the old-store migration, LLM condensation through a local fake endpoint, the schedule; and
the rule that superseded and archived memories are never returned unless asked, on every face (CLI, REST, MCP,
hooks). Hash embedder: the near-duplicates below differ in punctuation and case (cosine ≥ 0.95), the other
memories share no words with them (cosine < 0.1)."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _memcli_server import ServerProc, start_server
from test_cli_commands import run
from test_hooks_e2e import payload, project_dir, run_hook
from test_mcp_clients import call, http_session

from memcli.config import load_config
from memcli.distill.condense import LlmSettings
from memcli.distill.distiller import Distiller, DistillOptions
from memcli.distill.service import DistillService
from memcli.errors import NotFoundError, VersionConflictError
from memcli.memory.rows import STATUS_COLUMNS
from memcli.memory.service import MemoryService
from memcli.models import short_id
from memcli.setup.schedule import MARKER, apply_schedule

BIN = Path(sys.executable).parent
FACT = ["the billing service uses postgresql 16, for jsonb support",
        "The billing service uses PostgreSQL 16 for JSONB support!",
        "The billing service uses PostgreSQL 16 for JSONB support."]  # the last: the best-written (kept)
IMPORTANT = "Releases are cut from the main branch every Tuesday"
OTHER = "Always answer in British English"


def seed(svc: MemoryService) -> dict[str, str]:
    """Three agents' copies of one fact, an important agent memory, an expired one, an unrelated one."""
    ids = {
        "a": svc.remember(FACT[0], agent="codex", tags=["decision"]).memory_id,
        "b": svc.remember(FACT[1], agent="claude-code").memory_id,
        "c": svc.remember(FACT[2], agent="claude-code", tags=["db"], importance=0.6).memory_id,
        "important": svc.remember(IMPORTANT, agent="codex", importance=0.9).memory_id,
        "expired": svc.remember("a temporary note about the flaky login test", ttl="1ms").memory_id,
        "other": svc.remember(OTHER).memory_id,
    }
    time.sleep(0.01)
    return ids


def state(svc: MemoryService) -> dict[str, tuple[Any, ...]]:
    """Every memory's id → (version, status, scope, content, tags, importance, merged_from)."""
    mems = svc.list(all_namespaces=True, include_expired=True, include_archived=True, limit=1000)
    return {m.id: (m.version, m.status, m.scope, m.content, tuple(m.tags), m.importance, tuple(m.merged_from))
            for m in mems}


def facts(svc: MemoryService) -> dict[str, tuple[Any, ...]]:
    """:func:`state` without the versions: an undo puts the values back as a new version (+1)."""
    return {k: v[1:] for k, v in state(svc).items()}


def check_applied(svc: MemoryService, ids: dict[str, str]) -> None:
    """The state after one distill of :func:`seed`: c keeps the fact (the most important copy)."""
    c = svc.get(ids["c"])
    assert c.status == "active" and c.scope == "global" and c.content == FACT[2]
    assert set(c.merged_from) == {ids["a"], ids["b"]} and set(c.tags) == {"db", "decision"} and c.importance == 0.6
    for k in ("a", "b"):
        m = svc.get(ids[k])
        assert m.status == "superseded" and m.superseded_by == ids["c"] and m.content  # kept, not deleted
    assert svc.get(ids["important"]).scope == "global"
    assert svc.get(ids["expired"]).status == "archived"
    assert svc.get(ids["other"]).status == "active" and svc.get(ids["other"]).version == 1


# ------------------------------------------------------------------------------------------ core
def test_plan_apply_history_idempotence_and_undo(service: MemoryService) -> None:
    ids = seed(service)
    before, version = state(service), service.store.table.version
    stamps = {r["id"]: (r["version"], r["updated_at"]) for r in service.store.read_rows(None, ["id", "version",
                                                                                          "updated_at"])}
    plan = DistillService(service).plan()
    data = plan.to_dict()
    assert data["counts"] == {"scanned": 6, "archive": 1, "merge": 1, "supersede": 2, "promote": 2, "conflict": 0}
    step = data["plan"]["merge"][0]
    assert step["keep"] == ids["c"] and set(step["merge"]) == {ids["a"], ids["b"]}
    assert step["content"] == FACT[2] and step["namespace"] == "default" and step["scope"] == "global"
    assert data["plan"]["archive"] == [ids["expired"]] and set(data["plan"]["promote"]) == {ids["c"], ids["important"]}
    assert data["plan"]["reasons"][ids["c"]] == "held by 2 agents"
    assert state(service) == before and service.store.table.version == version  # the plan changed nothing

    res = DistillService(service).apply()
    assert res["ok"] and res["tag"].startswith("distill-") and res["counts"] == data["counts"]
    check_applied(service, ids)
    hits = [h.memory.id for h in service.recall("billing service PostgreSQL JSONB", top_k=10)]
    assert ids["c"] in hits and ids["a"] not in hits and ids["b"] not in hits
    assert {m.id for m in service.list(limit=100)} == {ids["c"], ids["important"], ids["other"]}
    assert ids["a"] in {h.memory.id for h in service.recall("billing PostgreSQL", top_k=10, include_archived=True)}
    dup = service.check_duplicate(FACT[0])
    assert dup.is_duplicate and [h.memory.id for h in dup.similar] == [ids["c"]]
    assert list(service.export()) and ids["a"] not in {m.id for m in service.export()}
    assert ids["a"] in {m.id for m in service.export(include_archived=True)}
    # the same fact remembered again is the memory it was merged into
    again = service.remember(FACT[0], agent="codex")
    assert again.memory_id == ids["c"] and not again.created

    merge = [e for e in service.history(ids["c"]) if e.action == "merge"]
    assert len(merge) == 1 and ids["a"] in merge[0].note and set(merge[0].changes["merged_from"][1]) == {ids["a"], ids["b"]}
    assert [e.action for e in service.history(ids["c"])].count("promote") == 1
    sup = service.history(ids["a"])[-1]
    assert sup.action == "supersede" and sup.actor == "distill" and sup.changes["superseded_by"] == [None, ids["c"]]
    assert service.history(ids["expired"])[-1].action == "archive"

    # idempotent: a second run plans nothing and tags nothing
    assert DistillService(service).plan().empty
    assert DistillService(service).apply()["tag"] is None
    assert [t["tag"] for t in DistillService(service).tags()] == [res["tag"]]

    preview = DistillService(service).undo(dry_run=True)
    assert preview["dry_run"] and preview["changed"] == 5 and facts(service) != {k: v[1:] for k, v in before.items()}
    undone = DistillService(service).undo()
    assert undone["ok"] and undone["restored"] == res["tag"] and undone["changed"] == 5
    assert undone["kept"] == [] and undone["gone"] == []
    assert {c["memory_id"] for c in undone["changes"]} == {ids["a"], ids["b"], ids["c"], ids["important"], ids["expired"]}
    assert facts(service) == {k: v[1:] for k, v in before.items()}
    # issue 28: nothing was written since the run, so every row is back exactly: version and updated_at too
    assert state(service) == before
    rows = {r["id"]: r for r in service.store.read_rows(None, ["id", "version", "updated_at"])}
    assert {i: (r["version"], r["updated_at"]) for i, r in rows.items()} == stamps
    assert DistillService(service).tags() == []  # an undone run cannot be undone twice
    assert service.history(ids["a"])[-1].action == "restore"
    with pytest.raises(NotFoundError, match="no distill tag"):
        DistillService(service).undo("distill-19990101T000000Z")


def test_later_runs_compare_only_what_changed_and_still_merge_new_copies(service: MemoryService) -> None:
    ids = seed(service)
    DistillService(service).apply()
    d = Distiller(service.store, service.embedder)
    assert d._watermark() is not None  # the next run compares only pairs with a new or changed memory
    late = service.remember("The billing service uses PostgreSQL 16 for JSONB support...", agent="gemini").memory_id
    service.remember("the on-call rota is in the wiki", agent="gemini")
    plan = d.plan()
    assert [(m.keep, m.merge) for m in plan.merge] == [(ids["c"], [late])]
    full = Distiller(service.store, service.embedder, DistillOptions(full=True)).plan()
    assert [(m.keep, m.merge) for m in full.merge] == [(ids["c"], [late])]
    assert Distiller(service.store, service.embedder, DistillOptions(threshold=0.95))._watermark() is None  # another threshold: all pairs
    DistillService(service).apply()
    assert set(service.get(ids["c"]).merged_from) == {ids["a"], ids["b"], late}
    DistillService(service).undo()
    assert d._watermark() is None  # after an undo everything is compared again


def test_a_memory_changed_meanwhile_rolls_the_whole_apply_back(service: MemoryService) -> None:
    ids = seed(service)
    d = Distiller(service.store, service.embedder)
    plan = d.plan()
    service.update(ids["b"], importance=0.7)  # another agent edits one member after the plan was made
    after_edit = state(service)
    with pytest.raises(VersionConflictError, match="nothing was changed"):
        d.apply(plan)
    assert state(service) == after_edit
    # a write that lands after the rows were read, before the commit: the commit's own version check rolls
    # the whole apply back (the archive export runs in that window)
    plan = d.plan()

    def meanwhile(mems: list[Any]) -> None:
        service.update(ids["a"], tags=["edited"])

    with pytest.raises(VersionConflictError, match="nothing was changed"):
        d.apply(plan, archive=meanwhile)
    edited = state(service)
    assert DistillService(service).tags() == []  # no distill happened: no tag to undo
    assert edited[ids["a"]][4] == ("edited",) and {v[1] for v in edited.values()} == {"active"}
    assert state(service) == edited
    assert DistillService(service).apply()["ok"]  # a new run merges the edited memory
    assert service.get(ids["a"]).status == "superseded"


def test_crash_mid_apply_leaves_the_old_or_the_new_state(home: Path, memcli_bin: str,
                                                          subprocess_env: dict[str, str]) -> None:
    svc = MemoryService.open(load_config(home))
    ids = seed(svc)
    before = state(svc)
    svc.close()
    cmd = [memcli_bin, "distill", "--apply", "--json"]
    crashed = subprocess.run(cmd, env={**subprocess_env, "MEMCLI_DISTILL_FAULT": "after-tag"}, capture_output=True)
    assert crashed.returncode == 70
    svc = MemoryService.open(load_config(home))
    assert state(svc) == before and DistillService(svc).plan().counts()["supersede"] == 2
    svc.close()
    crashed = subprocess.run(cmd, env={**subprocess_env, "MEMCLI_DISTILL_FAULT": "after-commit"}, capture_output=True)
    assert crashed.returncode == 70
    svc = MemoryService.open(load_config(home))
    try:
        check_applied(svc, ids)  # all of it
        assert DistillService(svc).plan().empty
    finally:
        svc.close()
    out = subprocess.run([memcli_bin, "distill", "--undo", "--json"], env=subprocess_env, capture_output=True)
    assert out.returncode == 0, out.stderr
    svc = MemoryService.open(load_config(home))
    assert facts(svc) == {k: v[1:] for k, v in before.items()}
    svc.close()


def test_a_store_made_before_statuses_opens_and_works(home: Path) -> None:
    svc = MemoryService.open(load_config(home))
    ids = seed(svc)
    svc.store.table.drop_columns(list(STATUS_COLUMNS))  # what an older memcli left behind
    assert "status" not in svc.store.table.schema.names
    svc.close()
    svc = MemoryService.open(load_config(home))
    try:
        assert set(STATUS_COLUMNS) <= set(svc.store.table.schema.names)
        assert {m.status for m in svc.list(limit=100)} == {"active"} and len(svc.list(limit=100)) == 5
        assert svc.recall("billing PostgreSQL", top_k=3)[0].memory.id in {ids["a"], ids["b"], ids["c"]}
        assert DistillService(svc).apply()["counts"]["supersede"] == 2
    finally:
        svc.close()


# ------------------------------------------------------------------------------------------ LLM
class FakeLlm(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible and Anthropic endpoint answering one condensed statement."""

    requests: list[dict[str, Any]] = []
    answer = "Billing runs on PostgreSQL 16 (chosen for JSONB) — condensed"

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        FakeLlm.requests.append({"path": self.path, "body": body})
        if self.path.endswith("/messages"):
            data = {"content": [{"type": "text", "text": self.answer}], "usage": {"input_tokens": 90, "output_tokens": 20}}
        else:
            data = {"choices": [{"message": {"content": self.answer}}], "usage": {"total_tokens": 110}}
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def fake_llm() -> Iterator[str]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeLlm)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    FakeLlm.requests = []
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_llm_condensation_within_its_budget(service: MemoryService, fake_llm: str, provider: str) -> None:
    ids = seed(service)
    base = fake_llm + "/v1"
    starved = DistillOptions(llm=LlmSettings(provider=provider, base_url=base, token_budget=50))
    assert DistillService(service).plan(starved).merge[0].condense  # the plan says so, and costs nothing
    assert FakeLlm.requests == []
    options = DistillOptions(llm=LlmSettings(provider=provider, base_url=base, model="m", api_key="k",
                                             token_budget=5000))
    res = DistillService(service).apply(options)
    assert res["condensed"] == 1 and len(FakeLlm.requests) == 1
    sent = FakeLlm.requests[0]
    assert sent["path"] == ("/v1/messages" if provider == "anthropic" else "/v1/chat/completions")
    prompt = json.dumps(sent["body"])
    assert all(f.replace('"', '\\"') in prompt for f in FACT) and sent["body"]["model"] == "m"
    keep = service.get(ids["c"])
    assert keep.content == FakeLlm.answer and keep.status == "active"
    assert service.recall("condensed", top_k=1)[0].memory.id == ids["c"]  # re-embedded and re-indexed
    assert "condensed by the LLM" in [e for e in service.history(ids["c"]) if e.action == "merge"][0].note
    # a budget too small for the request: no call, extractive
    DistillService(service).undo()
    FakeLlm.requests = []
    assert DistillService(service).apply(starved)["condensed"] == 0 and FakeLlm.requests == []
    assert service.get(ids["c"]).content == FACT[2]


def test_an_llm_may_confirm_what_the_rules_are_unsure_of_never_what_they_veto(service: MemoryService,
                                                                             fake_llm: str) -> None:
    # two wordings the rules cannot call the same fact on their own (different words on both sides)
    owns = service.remember("Release notes are written by the docs team before each launch.", agent="codex").memory_id
    belong = service.remember("Before a launch, technical writers prepare the release notes.",
                              agent="gemini").memory_id
    always = service.remember("Always run database migrations during business hours", agent="codex").memory_id
    never = service.remember("Never run database migrations during business hours", agent="gemini").memory_id
    llm = LlmSettings(provider="openai", base_url=fake_llm + "/v1", token_budget=5000)
    FakeLlm.answer = "DIFFERENT"
    try:
        plan = DistillService(service).plan(DistillOptions(threshold=0.01, llm=llm))
        assert plan.merge == [] and FakeLlm.requests  # asked, and the model did not confirm: no merge
        asked = json.dumps([r["body"] for r in FakeLlm.requests])
        assert "release notes" in asked and "migrations" not in asked  # a vetoed pair is never asked
        assert {tuple(c["ids"]) for c in plan.conflicts} == {(never, always)}
        FakeLlm.answer, FakeLlm.requests = "SAME", []
        plan = DistillService(service).plan(DistillOptions(threshold=0.01, llm=llm))
        assert [(m.keep, m.merge) for m in plan.merge] in ([(owns, [belong])], [(belong, [owns])])
        assert "confirmed by the LLM" in next(iter(plan.merge[0].why.values()))
        assert "migrations" not in json.dumps([r["body"] for r in FakeLlm.requests])
        assert DistillService(service).plan(DistillOptions(threshold=0.01)).merge == []  # no LLM: the rules alone
    finally:
        FakeLlm.answer = "Billing runs on PostgreSQL 16 (chosen for JSONB) — condensed"


# ------------------------------------------------------------------------------------------ CLI
def test_cli_plan_apply_tags_undo_and_include_archived(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    svc = MemoryService.open(load_config(home))
    ids = seed(svc)
    svc.close()
    plan = run("distill", "--json")
    assert plan["counts"]["supersede"] == 2 and plan["plan"]["merge"][0]["keep"] == ids["c"]
    monkeypatch.setenv("MEMCLI_JSON", "0")  # the rich table
    table = run("distill", "--threshold", "0.9")
    assert "distill plan" in table and "held by 2 agents" in table and "1 merges (2 superseded)" in table
    monkeypatch.delenv("MEMCLI_JSON")
    applied = run("distill", "--apply", "--json")
    assert applied["tag"].startswith("distill-") and applied["archive"]
    assert ids["a"] not in {m["memory_id"] for m in run("list", "--json")}
    listed = {m["memory_id"]: m for m in run("list", "--include-archived", "--json")}
    assert listed[ids["a"]]["status"] == "superseded" and listed[ids["expired"]]["status"] == "archived"
    assert ids["a"] not in {h["memory_id"] for h in run("recall", "billing PostgreSQL", "-k", "10", "--json")}
    assert ids["a"] in {h["memory_id"] for h in run("recall", "billing PostgreSQL", "-k", "10", "--include-archived",
                                                    "--json")}
    got = run("get", ids["a"], "--json")
    assert got["status"] == "superseded" and got["superseded_by"] == ids["c"]
    assert set(run("get", ids["c"], "--json")["merged_from"]) == {ids["a"], ids["b"]}
    assert [e["action"] for e in run("history", ids["a"], "--json")][-1] == "supersede"
    assert ids["a"] not in {h["memory_id"] for h in run("check-duplicate", FACT[0], "--json")["similar"]}
    assert run("distill", "--apply", "--json")["tag"] is None
    assert [t["tag"] for t in run("distill", "--tags", "--json")["tags"]] == [applied["tag"]]
    # a full backup keeps the statuses: export --include-archived, import elsewhere
    backup, other = home.parent / "backup.jsonl", home.parent / "other-home"
    run("export", "-o", str(backup), "--json")
    exported = [json.loads(line) for line in backup.read_text().splitlines()]
    assert ids["a"] not in {r.get("id") for r in exported}
    run("export", "--include-archived", "-o", str(backup), "--json")
    run("--home", str(other), "import", str(backup), "--json")
    copy = MemoryService.open(load_config(other))
    try:
        assert copy.get(ids["a"]).superseded_by == ids["c"] and copy.get(ids["expired"]).status == "archived"
        assert {m.id for m in copy.list(limit=100)} == {ids["c"], ids["important"], ids["other"]}
    finally:
        copy.close()
    assert run("distill", "--undo", "distill-20000101T000000Z", "--json", code=1)["code"] == "not_found"
    run("distill", "--apply", "--undo", code=2)
    assert run("distill", "--undo", applied["tag"], "--json")["restored"] == applied["tag"]
    assert ids["a"] in {m["memory_id"] for m in run("list", "--json")}
    assert run("distill", "--threshold", "1.5", "--json", code=1)["code"] == "invalid_input"
    err = run("distill", "--llm", "--json", code=1)  # no LLM endpoint configured
    assert err["code"] == "invalid_input" and "llm_provider" in err["error"]


# ------------------------------------------------------------------------------------------ server faces
@pytest.fixture(scope="module")
def distilled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProc, dict[str, str], dict[str, Any]]]:
    """One real `memcli serve` whose memories were seeded and distilled through REST."""
    if not (BIN / "memcli").exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("distill")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env.update(MEMCLI_EMBEDDER="hash", HOME=str(tmp / "user-home"), MEMCLI_AUTOSTART="0")
    srv = start_server(str(BIN / "memcli"), env, tmp / "home")
    try:
        with srv.client(timeout=60) as api:
            def post(content: str, **kw: Any) -> str:
                r = api.post("/api/memories", json={"content": content, **kw})
                assert r.status_code == 201, r.text
                return r.json()["memory_id"]

            ids = {"a": post(FACT[0], agent="codex", tags=["decision"]), "b": post(FACT[1], agent="claude-code"),
                   "c": post(FACT[2], agent="claude-code", tags=["db"], importance=0.6),
                   "important": post(IMPORTANT, agent="codex", importance=0.9),
                   "expired": post("a temporary note about the flaky login test", ttl="1ms"), "other": post(OTHER)}
            time.sleep(0.01)
            plan = api.get("/api/distill/plan").json()
            applied = api.post("/api/distill/apply").json()
        yield srv, ids, {"plan": plan, "applied": applied}
    finally:
        srv.stop()


def test_rest_contract(distilled: tuple[ServerProc, dict[str, str], dict[str, Any]]) -> None:
    srv, ids, seen = distilled
    plan, applied = seen["plan"], seen["applied"]
    assert set(plan) == {"plan", "counts"} and plan["counts"]["supersede"] == 2 and plan["counts"]["archive"] == 1
    step = plan["plan"]["merge"][0]
    assert {"keep", "merge", "content", "namespace"} <= set(step) and step["keep"] == ids["c"]
    assert plan["plan"]["archive"] == [ids["expired"]] and ids["important"] in plan["plan"]["promote"]
    assert plan["plan"]["memories"][ids["a"]]["content"] == FACT[0]
    assert applied["ok"] is True and applied["tag"].startswith("distill-") and applied["counts"] == plan["counts"]
    with srv.client(timeout=60) as api:
        tags = api.get("/api/distill/tags").json()["tags"]
        assert tags[0]["tag"] == applied["tag"] and isinstance(tags[0]["version"], int) and tags[0]["created_at"] > 0
        assert api.get("/api/distill/plan").json()["counts"]["merge"] == 0  # idempotent
        assert api.post("/api/distill/apply", json={}).json()["tag"] is None
        for body, status, code in [({"tag": "distill-nope"}, 404, "not_found"), ({"tag": 5}, 422, "invalid_input"),
                                   ({"bogus": 1}, 422, "invalid_input")]:
            r = api.post("/api/distill/undo", json=body)
            assert (r.status_code, r.json()["code"]) == (status, code), r.text
        r = api.post("/api/distill/apply", json={"threshold": "high"})
        assert r.status_code == 422 and "threshold" in r.json()["error"]
        assert api.get("/api/distill/plan", params={"threshold": "2"}).status_code == 422
        assert api.get("/api/distill/plan", params={"llm": "true"}).status_code == 422  # no endpoint configured
        assert api.post("/api/distill/apply", content=b"{not json").status_code == 400
    assert httpx.get(srv.url + "/api/distill/plan").status_code == 401
    assert httpx.post(srv.url + "/api/distill/undo", json={}).status_code == 401


def test_superseded_and_archived_are_never_returned_unless_asked(
        distilled: tuple[ServerProc, dict[str, str], dict[str, Any]], tmp_path: Path) -> None:
    srv, ids, _ = distilled
    hidden = {ids["a"], ids["b"], ids["expired"]}
    with srv.client(timeout=60) as api:  # REST
        listed = {m["memory_id"] for m in api.get("/api/memories").json()}
        assert listed == {ids["c"], ids["important"], ids["other"]}
        everything = {m["memory_id"]: m for m in api.get("/api/memories", params={"include_archived": "true"}).json()}
        assert hidden <= set(everything) and everything[ids["a"]]["status"] == "superseded"
        q = {"q": "billing service PostgreSQL JSONB", "top_k": 10}
        assert not hidden & {h["memory_id"] for h in api.get("/api/search", params=q).json()}
        assert ids["a"] in {h["memory_id"] for h in api.get("/api/search", params={**q, "include_archived": "1"}).json()}
        assert api.get(f"/api/memories/{ids['a']}").json()["superseded_by"] == ids["c"]
        dup = api.post("/api/check-duplicate", json={"content": FACT[0]}).json()
        assert [h["memory_id"] for h in dup["similar"]] == [ids["c"]]

    async def mcp() -> None:  # MCP (Streamable HTTP)
        async with http_session(srv.url + "/mcp", srv.headers) as s:
            recalled = {h["memory_id"] for h in await call(s, "recall", query="billing PostgreSQL JSONB", top_k=10)}
            assert ids["c"] in recalled and not hidden & recalled
            wide = await call(s, "recall", query="billing PostgreSQL JSONB", top_k=10, include_archived=True)
            assert ids["a"] in {h["memory_id"] for h in wide}
            assert not hidden & {m["memory_id"] for m in await call(s, "list_facts", limit=100)}
            assert hidden <= {m["memory_id"] for m in await call(s, "list_facts", limit=100, include_archived=True)}
            assert (await call(s, "get", memory_id=ids["b"]))["status"] == "superseded"

    asyncio.run(mcp())

    env = {**os.environ, "MEMCLI_HOME": str(srv.home), "MEMCLI_PORT": str(srv.port), "MEMCLI_EMBEDDER": "hash"}
    cwd = project_dir(tmp_path, "billing")  # hooks (real hook processes against the server)
    h = run_hook("UserPromptSubmit", payload("UserPromptSubmit", "s1", cwd,
                                             prompt="which database does the billing service use, PostgreSQL?"), env)
    assert h.rc == 0 and short_id(ids["c"]) in h.context
    assert not any(short_id(i) in h.context for i in hidden)
    start = run_hook("SessionStart", payload("SessionStart", "s2", cwd, source="startup"), env)
    assert start.rc == 0 and short_id(ids["c"]) in start.context
    assert not any(short_id(i) in start.context for i in hidden)

    def cli(*args: str) -> Any:  # the CLI, answered by this warm server (RemoteService)
        p = subprocess.run([str(BIN / "memcli"), *args, "--json"], env=env, capture_output=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    assert not hidden & {m["memory_id"] for m in cli("list")}
    assert hidden <= {m["memory_id"] for m in cli("list", "--include-archived")}
    assert not hidden & {m["memory_id"] for m in cli("recall", "billing PostgreSQL", "-k", "10")}
    assert cli("get", ids["a"])["status"] == "superseded"


def test_rest_undo_restores_the_tag(distilled: tuple[ServerProc, dict[str, str], dict[str, Any]]) -> None:
    srv, ids, seen = distilled
    with srv.client(timeout=60) as api:
        r = api.post("/api/distill/undo", json={"tag": seen["applied"]["tag"]})
        assert r.status_code == 200 and r.json()["ok"] is True and r.json()["restored"] == seen["applied"]["tag"]
        listed = {m["memory_id"]: m for m in api.get("/api/memories", params={"include_expired": "1"}).json()}
        assert {ids["a"], ids["b"], ids["expired"]} <= set(listed) and listed[ids["a"]]["scope"] == "agent:codex"
        assert api.get("/api/distill/plan").json()["counts"]["supersede"] == 2


# ------------------------------------------------------------------------------------------ schedule
FAKE_CRONTAB = """#!/bin/sh
# a fake crontab(1): the table lives in $FAKE_CRONTAB_FILE
if [ "$1" = "-l" ]; then
  if [ -f "$FAKE_CRONTAB_FILE" ]; then cat "$FAKE_CRONTAB_FILE"; else echo "no crontab for $USER" >&2; exit 1; fi
elif [ "$1" = "-" ]; then
  cat > "$FAKE_CRONTAB_FILE"
else
  exit 2
fi
"""


def test_schedule_installs_a_crontab_line_once_and_removes_it(home: Path, tmp_path: Path, memcli_bin: str,
                                                              subprocess_env: dict[str, str]) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "crontab").write_text(FAKE_CRONTAB)
    (fake / "crontab").chmod(0o755)
    table = tmp_path / "crontab.txt"
    env = {**subprocess_env, "PATH": f"{fake}:{os.environ['PATH']}", "FAKE_CRONTAB_FILE": str(table)}

    def setup(*args: str) -> str:
        p = subprocess.run([memcli_bin, "setup", *args], env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout

    assert "installed" in setup("--schedule", "hourly")
    lines = table.read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith("17 * * * * ")
    assert f"--home {home.resolve()} distill --apply" in lines[0] and lines[0].endswith(MARKER + str(home.resolve()))
    table.write_text("0 5 * * * /usr/bin/backup\n" + table.read_text())  # the user's own line
    assert "already" in setup("--schedule", "hourly")
    assert table.read_text().count("distill --apply") == 1
    assert "installed" in setup("--schedule", "daily")
    assert table.read_text().count("distill --apply") == 1 and "17 3 * * *" in table.read_text()
    assert "removed" in setup("--schedule", "off")
    assert table.read_text() == "0 5 * * * /usr/bin/backup\n"
    p = subprocess.run([memcli_bin, "setup", "--schedule", "weekly"], env=env, capture_output=True, text=True)
    assert p.returncode == 1 and "hourly, daily or off" in p.stderr
    # the command line cron runs works (it is this environment's memcli)
    cmd = lines[0][len("17 * * * * "):].split(" >> ")[0]
    p = subprocess.run(cmd, shell=True, env=subprocess_env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and json.loads(p.stdout)["ok"] is True


def test_schedule_on_macos_writes_a_launchd_agent(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import plistlib

    fake = tmp_path / "bin"
    fake.mkdir()
    calls = tmp_path / "launchctl.log"
    (fake / "launchctl").write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    (fake / "launchctl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    res = apply_schedule("hourly", home, platform="darwin")
    plist = Path(res.where)
    assert res.changed and plist.parent == Path(os.environ["HOME"]) / "Library" / "LaunchAgents"
    data = plistlib.loads(plist.read_bytes())
    assert data["StartInterval"] == 3600 and data["ProgramArguments"][-3:] == ["distill", "--apply", "--json"]
    assert not apply_schedule("hourly", home, platform="darwin").changed
    assert apply_schedule("off", home, platform="darwin").changed and not plist.exists()
    assert calls.read_text().splitlines() == [f"load -w {plist}", f"unload -w {plist}"]


# ------------------------------------------------------------------------------------------ trust (issue 16)
def test_undo_reverses_only_the_run_and_keeps_every_later_write(service: MemoryService) -> None:
    ids = seed(service)
    applied = DistillService(service).apply()
    # after the run: a new memory in another namespace, one in this one, and an edit of a memory the run merged
    other_ns = service.remember("the staging VPN profile is in 1Password", namespace="team-b").memory_id
    here = service.remember("the on-call rota is in the wiki").memory_id
    service.update(ids["c"], content="The billing service uses PostgreSQL 16 (JSONB, partitioning).",
                   tags=["db", "postgres"])  # tags: a field the run changed too (the union of the cluster's)
    edited_version = service.get(ids["c"]).version
    preview = DistillService(service).undo(dry_run=True)
    assert preview["dry_run"] and preview["kept"] == [{"memory_id": ids["c"], "fields": ["tags"],
                                                        "version": edited_version}]
    assert service.get(ids["a"]).status == "superseded"  # a dry run changes nothing
    undone = DistillService(service).undo()
    assert undone["restored"] == applied["tag"] and undone["gone"] == []
    # every later write is there, the edited memory at its later content and version + 1 (its tags, scope and
    # merged_from back as they were)
    assert service.get(other_ns, namespace="team-b").content == "the staging VPN profile is in 1Password"
    assert service.get(here).status == "active"
    c = service.get(ids["c"])
    assert c.content == "The billing service uses PostgreSQL 16 (JSONB, partitioning)."
    assert c.version == edited_version + 1 and c.scope == "agent:claude-code" and c.merged_from == []
    assert set(c.tags) == {"db", "postgres"}  # the later write's tags stay, and undo said so
    assert undone["kept"] == preview["kept"]
    for k in ("a", "b", "expired"):
        assert service.get(ids[k]).status == "active"
    assert service.get(ids["important"]).scope == "agent:codex"
    assert service.history(other_ns, namespace="team-b")[-1].action == "remember"  # untouched: no restore record


def test_a_contradiction_is_a_conflict_not_a_merge_and_recall_returns_both(real_service: MemoryService) -> None:
    svc = real_service
    old = svc.remember("Always run database migrations during business hours", agent="codex").memory_id
    new = svc.remember("Never run database migrations during business hours", agent="claude-code").memory_id
    svc.remember("the request timeout is 30 seconds", agent="codex")
    svc.remember("the request timeout is 30 minutes", agent="claude-code")
    plan = DistillService(svc).plan().to_dict()
    assert plan["counts"]["merge"] == 0 and plan["counts"]["promote"] == 0
    conflict = next(c for c in plan["plan"]["conflicts"] if old in c["ids"])
    assert conflict["ids"] == [new, old] and conflict["authors"] == ["agent:claude-code", "agent:codex"]
    assert plan["counts"]["conflict"] == 2
    DistillService(svc).apply()
    hits = {h.memory.id for h in svc.recall("can we run database migrations during business hours", top_k=5)}
    assert {old, new} <= hits and svc.get(old).status == svc.get(new).status == "active"
    why = DistillService(svc).explain(old, new)
    assert why["would_merge"] is False and why["relation"] == "conflict" and "negation" in why["explanation"]
