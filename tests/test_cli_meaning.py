"""Recall by meaning through the CLI, with the real bundled multilingual embedder (offline)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memcli.cli.app import app

runner = CliRunner()

DISTRACTORS = [
    "the frontend is written in TypeScript with React",
    "deploys go out every Tuesday after the standup",
    "Alice owns the on-call rota this month",
    "the CI pipeline caches pip downloads between runs",
    "Grafana dashboards show the p99 latency of every endpoint",
]


@pytest.fixture(autouse=True)
def real_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCLI_EMBEDDER", "local")


def run(*args: str) -> Any:
    res = runner.invoke(app, [*args, "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.stdout + res.stderr
    return json.loads(res.stdout)


@pytest.mark.slow
def test_recall_by_meaning_in_english(home: Path) -> None:
    for text in DISTRACTORS:
        run("remember", text)
    target = run("remember", "the billing service uses PostgreSQL 16", "--tag", "decision")["memory_id"]
    hits = run("recall", "which database do we use", "--top-k", "3")
    assert hits[0]["memory_id"] == target, [h["content"] for h in hits]
    # a paraphrase is flagged as a likely duplicate, an unrelated sentence is not
    assert run("check-duplicate", "The billing service runs on PostgreSQL 16.")["is_duplicate"] is True
    assert run("check-duplicate", "the office plants need watering on Mondays")["is_duplicate"] is False


@pytest.mark.slow
def test_recall_chinese_by_meaning_and_by_keyword(home: Path) -> None:
    for text in DISTRACTORS + ["前端团队每周五发布新版本", "张三负责本月的值班安排"]:
        run("remember", text)
    target = run("remember", "我们的数据库选型项目采用 PostgreSQL", "--tag", "决定")["memory_id"]
    by_meaning = run("recall", "我们用的是什么数据库", "--top-k", "3")
    assert by_meaning[0]["memory_id"] == target, [h["content"] for h in by_meaning]
    by_keyword = run("recall", "数据库", "--mode", "text")
    assert [h["memory_id"] for h in by_keyword] == [target]
    across_languages = run("recall", "which database did we choose", "--top-k", "3")
    assert target in [h["memory_id"] for h in across_languages]
    assert run("list", "--tag", "决定")[0]["memory_id"] == target
