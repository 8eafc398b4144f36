"""Issue 28: distill keeps the right words. A merge keeps the best-written member and leaves every name of the
merged memories findable by keyword; a contradiction stays listed after an apply (plan, CLI) until it is
settled; an outdated value is never promoted. The bundled e5 embedder: similarity is what users get."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from _memcli_server import start_server
from test_cli_commands import run

from memcli.distill.distiller import DistillOptions
from memcli.distill.service import DistillService
from memcli.memory.service import MemoryService

pytestmark = pytest.mark.slow


def texts_found(svc: MemoryService, query: str) -> set[str]:
    return {h.memory.id for h in svc.recall(query, mode="text", top_k=10)}


def test_a_merge_keeps_the_clean_text_and_every_name(real_service: MemoryService) -> None:
    svc = real_service
    clean = svc.remember("Service dashboards live in Grafana under the Lumen folder.", agent="claude-code").memory_id
    time.sleep(0.01)
    typo = svc.remember("Service dashboards live in Grafna under the Lumen folder.", agent="openclaw").memory_id
    time.sleep(0.01)
    lower = svc.remember("service dashboards live in grafana under the lumen folder", agent="codex").memory_id
    for other in ("Metric exports go to Grafana Cloud nightly.", "Terraform changes need a plan in the PR."):
        svc.remember(other, agent="codex")  # the store writes Grafana: Grafna is the slip
    plan = DistillService(svc).plan()
    [step] = plan.merge
    # the newest copy (misspelt) and the lower-cased one lose to the clean full sentence
    assert step.keep == clean and set(step.merge) == {typo, lower}
    assert step.content == "Service dashboards live in Grafana under the Lumen folder."
    DistillService(svc).apply()
    kept = svc.get(clean)
    assert kept.content == step.content and kept.status == "active" and kept.scope == "global"
    assert svc.get(typo).status == "superseded"
    # every name of the merged memories still finds the merged memory by keyword, the slip included
    for name in ("Grafana", "Lumen", "Grafna"):
        assert clean in texts_found(svc, name), name
    # undo takes the aliases back out of the keyword index with the rest
    DistillService(svc).undo()
    assert clean not in texts_found(svc, "Grafna") and typo in texts_found(svc, "Grafna")


def test_conflicts_stay_listed_after_an_apply_until_settled(real_service: MemoryService) -> None:
    svc = real_service
    on = svc.remember("Two-factor login is enabled for the admin panel.", agent="claude-code").memory_id
    time.sleep(0.01)
    off = svc.remember("Two-factor login is disabled for the admin panel.", agent="codex").memory_id
    zh_on = svc.remember("商品页允许匿名评论。", agent="openclaw").memory_id
    zh_off = svc.remember("商品页不允许匿名评论。", agent="codex").memory_id
    svc.remember("Releases are cut from main every Tuesday.", agent="codex")
    svc.remember("releases are cut from main every tuesday", agent="claude-code")  # something to apply

    def listed(plan_conflicts: list[dict]) -> set[frozenset[str]]:
        return {frozenset(c["ids"]) for c in plan_conflicts}

    expected = {frozenset((on, off)), frozenset((zh_on, zh_off))}
    assert listed(DistillService(svc).plan().conflicts) == expected  # polarity pairs, English and Chinese
    assert DistillService(svc).apply()["tag"]
    # the next plan compares only what changed since: the conflicts are still listed, in the plan and the CLI
    again = DistillService(svc).plan()
    assert again.merge == [] and listed(again.conflicts) == expected
    cli = run("distill", "--json")
    assert listed(cli["plan"]["conflicts"]) == expected and cli["counts"]["conflict"] == 2
    # settled: one side forgotten, or corrected to agree
    svc.forget(off)
    svc.update(zh_off, content="商品页允许匿名评论，需要先登录。")
    assert listed(DistillService(svc).plan().conflicts) == set()
    assert listed(run("distill", "--json")["plan"]["conflicts"]) == set()


def test_distill_never_promotes_an_outdated_value(real_service: MemoryService) -> None:
    svc = real_service
    old = [svc.remember("The gateway timeout is 30 seconds.", agent="codex").memory_id]
    time.sleep(0.01)
    old.append(svc.remember("the gateway timeout is 30 seconds", agent="claude-code").memory_id)
    time.sleep(0.01)
    new = svc.remember("The gateway timeout is now 60 seconds.", agent="openclaw", importance=0.9).memory_id
    plan = DistillService(svc).plan(DistillOptions())
    # the two agents' copies of the old value are one fact (merged), but a later memory changed it
    [step] = plan.merge
    assert {step.keep, *step.merge} == set(old)
    assert step.scope == "agent:codex" and step.keep not in plan.promote and plan.outdated[step.keep] == new
    assert new in plan.promote  # the current value, important, is promoted
    assert any(set(c["ids"]) == {new, step.keep} or set(c["ids"]) == {new, *step.merge} for c in plan.conflicts)
    DistillService(svc).apply()
    assert svc.get(step.keep).scope == "agent:codex" and svc.get(new).scope == "global"


def test_restatements_are_not_listed_as_conflicts(real_service: MemoryService) -> None:
    svc = real_service
    a = svc.remember("The API is deployed to three regions: us-east-1, eu-west-1 and ap-southeast-1.",
                     agent="codex").memory_id
    b = svc.remember("The API is deployed to 3 regions: us-east-1, eu-west-1 and ap-southeast-1.",
                     agent="openclaw").memory_id
    c = svc.remember("The checkout page supports three payment methods: cards, PayPal and bank transfer.",
                     agent="claude-code").memory_id
    d = svc.remember("The checkout page supports payment methods, e.g. cards, PayPal and bank transfer.",
                     agent="codex").memory_id
    plan = DistillService(svc).plan()
    assert plan.conflicts == []
    assert {frozenset([s.keep, *s.merge]) for s in plan.merge} == {frozenset((a, b)), frozenset((c, d))}


def test_distill_merges_the_same_fact_written_in_english_and_in_chinese(real_service: MemoryService) -> None:
    svc = real_service
    en = svc.remember("Feature flags are managed in LaunchDarkly.", agent="codex").memory_id
    zh = svc.remember("功能开关在 LaunchDarkly 里管理。", agent="openclaw").memory_id
    other = svc.remember("图片服务的限流是每秒 500 个请求。", agent="openclaw").memory_id
    svc.remember("The gateway rate limit is 500 requests per second.", agent="codex")
    plan = DistillService(svc).plan()
    # similarity alone (cosine ≈ 0.85 with e5) never proposed this pair; the two look-alikes stay apart
    assert [(s.keep, s.merge) for s in plan.merge] == [(en, [zh])]
    DistillService(svc).apply()
    assert svc.get(zh).superseded_by == en and svc.get(other).status == "active"
    assert en in texts_found(svc, "功能开关")  # the Chinese words find the kept English memory by keyword


def test_the_web_panels_plan_still_lists_conflicts_after_an_apply(tmp_path: Path) -> None:
    """The web view's distill panel reads GET /api/distill/plan: a real server, applied through REST."""
    memcli = Path(sys.executable).parent / "memcli"
    if not memcli.exists():
        pytest.skip("memcli is not installed in this environment")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env.update(MEMCLI_EMBEDDER="local", HOME=str(tmp_path / "user-home"), MEMCLI_AUTOSTART="0")
    srv = start_server(str(memcli), env, tmp_path / "home")
    try:
        with srv.client(timeout=120) as api:
            def post(content: str, agent: str) -> str:
                r = api.post("/api/memories", json={"content": content, "agent": agent})
                assert r.status_code == 201, r.text
                return r.json()["memory_id"]

            allowed = post("Force-pushing to main is allowed.", "openclaw")
            time.sleep(0.01)
            forbidden = post("Force-pushing to main is not allowed.", "claude-code")
            post("Image builds are pushed to the registry ghcr.io/lumen/api.", "codex")
            post("image builds are pushed to the registry ghcr.io/lumen/api", "openclaw")
            before = api.get("/api/distill/plan").json()
            assert [c["ids"] for c in before["plan"]["conflicts"]] == [[forbidden, allowed]]
            assert before["plan"]["outdated"] == {allowed: forbidden}
            assert api.post("/api/distill/apply").json()["counts"]["merge"] == 1
            after = api.get("/api/distill/plan").json()
            assert after["counts"]["merge"] == 0 and [c["ids"] for c in after["plan"]["conflicts"]] == [[forbidden, allowed]]
            assert after["plan"]["memories"][allowed]["content"] == "Force-pushing to main is allowed."
    finally:
        srv.stop()
