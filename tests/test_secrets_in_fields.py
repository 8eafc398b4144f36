"""A secret outside `content` never reaches the store nor `memcli history` (issue 26, item 3).

Tags, the upsert `key`, `project`, `thread`, metadata keys (and a string under a key that names a secret,
``db_password``) go through the same redaction as content on every write path, as a user launches it: the
installed CLI (remember, the key's upsert, update, import; the project from the working directory), REST
(one, the key's upsert, PATCH, import; the admin and a space token) and a stdio MCP session (remember, the
upsert, update). None of the values may then be found in `memcli export`, the raw bytes of the LanceDB
directory, or any memory's history (the upsert's note names the key; updates record the old and new tags and
metadata). Labels that only sound like secrets (`password-reset`, `api-key:stripe`, `db-password-policy`)
are stored exactly as given, and `keep_secrets` stores a secret tag as given (the positive control that the
byte search sees tags).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from _memcli_server import MEMCLI, hash_env, start_server
from test_secrets_everywhere import exported, stdio_mcp, tool, tree_bytes

pytestmark = pytest.mark.slow

# one fake secret per field (each only ever written in that field), so a leak names its field
SECRETS = {
    "tag": "ghp_Qm7RtZ2xWv9KpL4nB8cYd3Hs6Ja1Fe5Ug0Ti",
    "tag-upsert": "xoxb-7731904426-5520198834-Tk3Wq9Zr2Lm8Xv4Np6Bs1Hd",
    "tag-update": "sk-ant-api03-Vb8Nm2Qx7Kt4Lr9Wz3Pc6Hy1Jd5Fs0Ga",
    "key": "Rk9Wq2Zt7Lm4Xv8P",  # key "deploy/token=…"
    "project": "AKIAQ7RT2ZXW9KPL4NB8",  # the working directory "billing-AKIA…"
    "thread": "glpat-Zt7Lm4Xv8PRk9Wq2Ys3D",
    "metadata-key": "sk-proj-Lm4Xv8PRk9Wq2Zt7Ys3DgH5jK",
    "metadata-named": "Pc6Hy1Jd5Fs0Ga8Nm2Qx",  # {"db_password": …}
    "metadata-zero-width": "ghp_Hd4Lr8Wz" + "\u200b" + "2Qx6Kt1Vb9Nm3Pc7Jy5Fs0GaUeZi",  # a key (tags refuse it)
}
ORDINARY_TAGS = ["password-reset", "api-key:stripe", "token:rotation"]
ORDINARY_KEY = "db-password-policy"
CONTROL_TAG = "ghp_KEEPCONTROLx7Q2x7Q2x7Q2x7Q2x7Q2x7Q2"  # kept on purpose: the byte search must see it


def leaks(data: bytes) -> list[str]:
    """The fields whose secret occurs in ``data`` (also without its invisible characters)."""
    return [f for f, s in SECRETS.items() if s.encode() in data or s.replace("\u200b", "").encode() in data]


def metadata(tag: str) -> dict[str, Any]:
    return {SECRETS["metadata-key"]: "the bot's key", "db_password": SECRETS["metadata-named"],
            SECRETS["metadata-zero-width"]: "pasted from the wiki", "password_hint": "ask ops", "write": tag}


def record(i: int, namespace: str = "default") -> dict[str, Any]:
    """An export record (as another memcli wrote it) with a secret in every field but its content."""
    return {"id": f"0e0e{i:04x}-0000-7000-8000-{i:012x}", "content": f"imported note {i} about the billing deploy",
            "namespace": namespace, "scope": "global", "tags": [SECRETS["tag"], *ORDINARY_TAGS],
            "key": f"deploy/token={SECRETS['key']}", "project": f"billing-{SECRETS['project']}",
            "thread": f"session {SECRETS['thread']}", "metadata": metadata("import")}


def cli(home: Path, *args: str, cwd: Path | None = None) -> Any:
    """The installed `memcli` binary, --json."""
    p = subprocess.run([MEMCLI, *args, "--json"], env={**hash_env(home.parent), "MEMCLI_HOME": str(home)},
                       capture_output=True, text=True, timeout=180, cwd=cwd)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return json.loads(p.stdout)


def check_ordinary(mem: dict[str, Any], redacted: bool = True) -> None:
    """What only sounds like a secret is stored exactly as given; what is one, as a marker."""
    assert all(t in mem["tags"] for t in ORDINARY_TAGS), mem["tags"]
    assert any(t.startswith("[REDACTED:") for t in mem["tags"]) is redacted, mem["tags"]
    if mem.get("metadata"):
        assert mem["metadata"]["password_hint"] == "ask ops" and mem["metadata"]["db_password"] == "[REDACTED:secret]"


def test_the_cli_and_stdio_mcp_keep_no_secret_in_any_field_nor_in_history(tmp_path: Path) -> None:
    home = tmp_path / "laptop"
    work = tmp_path / f"billing-{SECRETS['project']}"  # the project is the working directory's name
    work.mkdir()
    key = f"deploy/token={SECRETS['key']}"
    ordinary = [a for t in ORDINARY_TAGS for a in ("--tag", t)]
    tags = ["--tag", SECRETS["tag"], *ordinary]
    first = cli(home, "remember", "the billing deploy runs from the ops runner", *tags, "--key", key,
                "--metadata", json.dumps(metadata("cli")), cwd=work)["memory_id"]
    again = cli(home, "remember", "the billing deploy runs from the ops runner, on Fridays", "--tag",
                SECRETS["tag-upsert"], *tags, "--key", key, cwd=work)  # the same key: an upsert
    assert again["memory_id"] == first  # the redacted key still finds its memory
    cli(home, "update", first, "--tag", SECRETS["tag-update"], *tags, "--metadata", json.dumps(metadata("update")))
    plain = cli(home, "remember", "the password reset flow sends one mail", "--key", ORDINARY_KEY, *ordinary,
                cwd=work)["memory_id"]
    (tmp_path / "in.jsonl").write_text(json.dumps(record(1)) + "\n")
    assert cli(home, "import", str(tmp_path / "in.jsonl"))["added"] == 1
    kept = cli(home, "remember", "the control tag is kept on purpose", "--tag", CONTROL_TAG,
               "--keep-secrets")["memory_id"]

    async def mcp() -> list[str]:
        async with stdio_mcp(home) as s:
            mcp_key = f"mcp/token={SECRETS['key']}"
            m = await tool(s, "remember", content="over MCP: the billing runner rotates weekly",
                           tags=[SECRETS["tag"], *ORDINARY_TAGS], key=mcp_key, metadata=metadata("mcp"))
            again = await tool(s, "remember", content="over MCP: the billing runner rotates every Monday",
                               tags=[SECRETS["tag-upsert"], *ORDINARY_TAGS], key=mcp_key)
            assert again["memory_id"] == m["memory_id"]
            await tool(s, "update", memory_id=m["memory_id"], tags=[SECRETS["tag-update"], *ORDINARY_TAGS])
            return [m["memory_id"]]
    ids = [first, plain, *anyio.run(mcp)]  # the imported one has no changes to record, only its import

    export, raw = exported(home, tmp_path), tree_bytes(home / "data")
    history = json.dumps([cli(home, "history", i) for i in ids], ensure_ascii=False).encode()
    assert (leaks(export), leaks(raw), leaks(history)) == ([], [], [])
    assert CONTROL_TAG.encode() in export and CONTROL_TAG.encode() in raw  # the byte search sees tags
    stored = {r["id"]: r for r in map(json.loads, export.splitlines()) if "id" in r}  # after the header
    assert stored[kept]["tags"] == [CONTROL_TAG] and len(stored) == 5
    for i, mem in stored.items():
        if i != kept:
            check_ordinary(mem, redacted=i != plain)
    assert stored[plain]["key"] == ORDINARY_KEY and stored[plain]["project"] == "billing-[REDACTED:aws-key-id]"
    assert stored["0e0e0001-0000-7000-8000-000000000001"]["thread"] == "session [REDACTED:gitlab-token]"
    assert b"deploy/token=[REDACTED:secret]" in history  # the upsert's note names the key, redacted
    assert b"update" in history and b"[REDACTED:" in history


def test_rest_keeps_no_secret_in_any_field_nor_in_history_for_the_admin_or_a_space(tmp_path: Path) -> None:
    srv = start_server(MEMCLI, hash_env(tmp_path), tmp_path / "server")
    key = f"deploy/token={SECRETS['key']}"
    try:
        with srv.client(timeout=60) as admin:
            space = admin.post("/api/spaces", json={"name": "crew", "agent": "bob"}).json()["api_token"]
            with httpx.Client(base_url=srv.url, timeout=60, headers={"Authorization": f"Bearer {space}"}) as bob:
                events = []
                for api, who in ((admin, "admin"), (bob, "space")):
                    body = {"content": f"{who}: the billing deploy runs from the ops runner", "key": key,
                            "tags": [SECRETS["tag"], *ORDINARY_TAGS], "project": f"billing-{SECRETS['project']}",
                            "metadata": metadata(who)}
                    r = api.post("/api/memories", json=body)
                    assert r.status_code == 201, r.text
                    mid = r.json()["memory_id"]
                    r = api.post("/api/memories", json={**body, "content": f"{who}: it runs on Fridays now",
                                                        "tags": [SECRETS["tag-upsert"], *ORDINARY_TAGS]})
                    assert r.status_code == 200 and r.json()["memory_id"] == mid, r.text  # updated: 200
                    r = api.patch(f"/api/memories/{mid}", json={"tags": [SECRETS["tag-update"], *ORDINARY_TAGS],
                                                                 "metadata": metadata(f"{who} patch")})
                    assert r.status_code == 200, r.text
                    r = api.post("/api/import", json={"records": [record(2 if who == "admin" else 3)]})
                    assert r.status_code == 200 and r.json()["added"] == 1, r.text
                    imported = api.get("/api/memories", params={"limit": 50}).json()
                    ids = [mid, *(m["memory_id"] for m in imported if m["content"].startswith("imported note"))]
                    assert len(ids) == 2
                    for i in ids:
                        check_ordinary(api.get(f"/api/memories/{i}").json())
                        events.append(api.get(f"/api/memories/{i}/history").json())
                    r = api.post("/api/memories", json={"content": f"{who} control", "tags": [CONTROL_TAG],
                                                        "keep_secrets": True})
                    assert r.status_code == 201
            history = json.dumps(events, ensure_ascii=False).encode()
            assert leaks(history) == [] and b"[REDACTED:" in history and history.count(b'"update"') >= 4
    finally:
        srv.stop()
    export, raw = exported(srv.home, tmp_path), tree_bytes(srv.home / "data")
    assert (leaks(export), leaks(raw)) == ([], [])
    assert CONTROL_TAG.encode() in export and CONTROL_TAG.encode() in raw
