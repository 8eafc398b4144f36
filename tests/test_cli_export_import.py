"""Export → import through the CLI: full fidelity into an empty home, idempotent, vectors reused."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memcli.cli.app import app
from memcli.config import load_config
from memcli.memory.service import MemoryService

runner = CliRunner()


def run(*args: str, input: Any = None, code: int = 0) -> str:
    res = runner.invoke(app, list(args), input=input, catch_exceptions=False)
    assert res.exit_code == code, f"exit {res.exit_code}: {res.stdout}\n{res.stderr}"
    return res.stdout


def records(home: Path, *, with_vectors: bool = False) -> dict[str, dict[str, Any]]:
    s = MemoryService.open(load_config(home))
    try:
        return {m.id: m.record(with_vector=with_vectors) for m in s.export(with_vectors=with_vectors)}
    finally:
        s.close()


@pytest.fixture
def populated(home: Path) -> dict[str, dict[str, Any]]:
    """A store with every kind of field: namespaces, scopes, tags, metadata, keys, expiry, versions, CJK."""
    s = MemoryService.open(load_config(home), project="memcli")
    old = int(time.time() * 1000) - 90 * 86_400_000
    s.remember("the billing service uses PostgreSQL 16", tags=["decision", "db"], importance=0.9,
               metadata={"ticket": "OPS-12", "nested": {"a": [1, 2]}}, created_at=old)
    s.remember("我们的数据库选型项目采用 PostgreSQL", tags=["决定"], agent="codex")
    s.remember("deploys need the VPN", scope="agent:claude-code", key="deploy-vpn", ttl="30d")
    s.remember("team-wide: code freeze on Fridays", namespace="team", tags=["process"])
    s.remember("this one already expired", ttl="1ms", project="other")
    s.remember("imported from elsewhere", source="api", namespace="team")
    mid = s.remember("the cache TTL is 60 seconds").memory_id
    s.update(mid, content="the cache TTL is 300 seconds", tags=["perf"])
    s.close()
    time.sleep(0.01)
    recs = records(home)
    assert len(recs) == 7
    return recs


def test_export_jsonl_then_import_into_an_empty_home_reproduces_everything(
        populated: dict[str, dict[str, Any]], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "export.jsonl"
    summary = json.loads(run("export", "--format", "jsonl", "-o", str(out), "--json"))
    assert summary == {"ok": True, "exported": 7, "format": "jsonl", "path": str(out)}
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    header, body = lines[0], lines[1:]
    assert header["memcli_export"] == 1 and header["embedder"]["provider"] == "hash"
    assert isinstance(header["exported_at"], int) and header["exported_at"] > 1_600_000_000_000
    assert {r["id"] for r in body} == set(populated) and all("vector" not in r for r in body)
    assert "我们的数据库选型项目采用 PostgreSQL" in out.read_text(encoding="utf-8")  # UTF-8, not \u escapes
    assert not list(tmp_path.glob(".export.jsonl.*"))  # no temp file left behind

    other = tmp_path / "other-home"
    monkeypatch.setenv("MEMCLI_HOME", str(other))
    res = json.loads(run("import", str(out), "--json"))
    assert res == {"ok": True, "read": 7, "added": 7, "skipped": 0}
    assert records(other) == populated  # ids, content, tags, scope, namespace, timestamps, versions, metadata...
    again = json.loads(run("import", str(out), "--json"))
    assert again == {"ok": True, "read": 7, "added": 0, "skipped": 7}
    assert records(other) == populated
    # the imported memories are found by recall, by meaning and by keyword, in every namespace
    hits = json.loads(run("recall", "PostgreSQL", "--json"))
    assert {h["content"] for h in hits} >= {"the billing service uses PostgreSQL 16"}
    assert json.loads(run("recall", "数据库", "--json"))[0]["content"].startswith("我们的数据库")
    assert json.loads(run("list", "-n", "team", "--json"))[0]["namespace"] == "team"


def test_export_json_and_stdin_import(populated: dict[str, dict[str, Any]], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    doc = json.loads(run("export", "--format", "json"))
    assert doc["memcli_export"] == 1 and doc["embedder"]["provider"] == "hash" and len(doc["memories"]) == 7
    monkeypatch.setenv("MEMCLI_HOME", str(tmp_path / "json-home"))
    res = json.loads(run("import", "-", "--json", input=json.dumps(doc)))
    assert res["added"] == 7
    assert records(tmp_path / "json-home") == populated
    # JSONL through a pipe too (stdin)
    monkeypatch.setenv("MEMCLI_HOME", str(tmp_path / "pipe-home"))
    jsonl = json.dumps({"memcli_export": 1}) + "\n" + "\n".join(json.dumps(r) for r in populated.values()) + "\n"
    assert json.loads(run("import", "-", "--json", input=jsonl))["added"] == 7
    assert records(tmp_path / "pipe-home") == populated


def test_list_output_can_be_imported(populated: dict[str, dict[str, Any]], tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    listed = run("list", "--all-namespaces", "--json")
    monkeypatch.setenv("MEMCLI_HOME", str(tmp_path / "from-list"))
    res = json.loads(run("import", "-", "--json", input=listed))
    assert res["added"] == 6  # list hides the expired one
    got = records(tmp_path / "from-list")
    for mid, rec in got.items():
        assert {k: rec[k] for k in ("content", "namespace", "scope", "tags", "created_at", "metadata")} == {
            k: populated[mid][k] for k in ("content", "namespace", "scope", "tags", "created_at", "metadata")}


def test_export_filters(populated: dict[str, dict[str, Any]]) -> None:
    def exported(*args: str) -> set[str]:
        lines = run("export", *args).splitlines()
        assert json.loads(lines[0])["memcli_export"] == 1
        return {json.loads(line)["content"] for line in lines[1:]}

    assert exported("--namespace", "team") == {"team-wide: code freeze on Fridays", "imported from elsewhere"}
    assert exported("--scope", "agent:codex") == {"我们的数据库选型项目采用 PostgreSQL"}
    assert exported("--tag", "decision") == {"the billing service uses PostgreSQL 16"}
    assert exported("--tag", "decision", "--tag", "db", "-n", "default") == {"the billing service uses PostgreSQL 16"}
    assert exported("--tag", "nothing") == set()
    assert len(exported()) == 7  # expired included


def test_vectors_are_reused_when_the_embedder_matches(home: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    run("remember", "vectors travel with the export", "--json")
    out = tmp_path / "v.jsonl"
    run("export", "--with-vectors", "-o", str(out), "--json")
    header, rec = (json.loads(line) for line in out.read_text().splitlines())
    assert len(rec["vector"]) == header["embedder"]["dim"] == 64
    # a different (still valid) vector in the file: reused as-is when the embedder matches...
    rec["vector"] = [0.0] * 63 + [1.0]
    out.write_text(json.dumps(header) + "\n" + json.dumps(rec) + "\n")
    monkeypatch.setenv("MEMCLI_HOME", str(tmp_path / "same"))
    run("import", str(out), "--json")
    assert records(tmp_path / "same", with_vectors=True)[rec["id"]]["vector"] == rec["vector"]
    # ...and re-embedded when the file says it came from another embedder
    header["embedder"] = {"provider": "openai", "model": "text-embedding-3-small", "dim": 64}
    out.write_text(json.dumps(header) + "\n" + json.dumps(rec) + "\n")
    monkeypatch.setenv("MEMCLI_HOME", str(tmp_path / "other"))
    run("import", str(out), "--json")
    stored = records(tmp_path / "other", with_vectors=True)[rec["id"]]["vector"]
    assert stored != rec["vector"]
    assert stored == pytest.approx(records(home, with_vectors=True)[rec["id"]]["vector"], abs=1e-6)


def test_markdown_export(populated: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    md = run("export", "--format", "md")
    assert md.startswith("# memcli export")
    assert "## Namespace `default` (5)" in md and "## Namespace `team` (2)" in md
    assert md.index("## Namespace `default`") < md.index("## Namespace `team`")
    for rec in populated.values():
        assert rec["content"] in md and rec["id"] in md
    assert "`decision`" in md and '"ticket": "OPS-12"' in md and "key `deploy-vpn`" in md
    out = tmp_path / "m.md"
    assert json.loads(run("export", "-f", "md", "-o", str(out), "--json"))["exported"] == 7
    assert out.read_text(encoding="utf-8") .split("\n", 3)[3] == md.split("\n", 3)[3]  # same but the timestamp line


def test_empty_store_exports_a_header_only(home: Path) -> None:
    lines = run("export").splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["memcli_export"] == 1
    assert json.loads(run("export", "-f", "json"))["memories"] == []


def test_import_and_reindex_show_a_progress_bar_on_a_terminal(populated: dict[str, dict[str, Any]], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.console import Console

    from memcli.cli import output

    out = tmp_path / "p.jsonl"
    run("export", "-o", str(out), "--json")
    buf = io.StringIO()
    monkeypatch.setattr(output, "err", Console(file=buf, force_terminal=True, width=100))
    monkeypatch.setenv("MEMCLI_HOME", str(tmp_path / "progress-home"))
    res = json.loads(run("import", str(out), "--json"))
    assert res["added"] == 7
    assert "Importing" in buf.getvalue() and "7/7" in buf.getvalue()
    buf.truncate(0)
    assert json.loads(run("reindex", "--json"))["reindexed"] == 7
    assert "Re-embedding" in buf.getvalue()


def test_broken_vectors_in_a_file_are_re_embedded_never_stored(home: Path, tmp_path: Path) -> None:
    import numpy as np

    header = {"memcli_export": 1, "embedder": {"provider": "hash", "model": "hash-v1", "dim": 64}}
    recs = [{"id": f"01a22bfa-618e-72a4-bfd6-eff863b5d9a{i}", "content": f"broken vector {i}", "vector": v}
            for i, v in enumerate([[0.0] * 64, [float("nan")] * 64, "x" * 64, [1.0] * 3, [True] * 64])]
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [header, *recs]) + "\n")
    assert json.loads(run("import", str(path), "--json"))["added"] == 5
    for rec in records(home, with_vectors=True).values():
        vec = np.asarray(rec["vector"])
        assert np.all(np.isfinite(vec)) and abs(np.linalg.norm(vec) - 1.0) < 1e-3
