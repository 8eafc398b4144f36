"""Namespaces are the isolation boundary for ids too (issue 26, items 9 and 10): with MEMCLI_NAMESPACE=project-y,
`get`, `update`, `forget` and `history` of a project-x id fail and change nothing (the installed CLI in-process
and through the home's warm server, both of its routes; the MCP tools over a real stdio session), and succeed
when the namespace is named (`--namespace`, `--all-namespaces`); a space token's board request and id routes
answer an id of another space exactly as an id nobody has (real `memcli serve`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from _memcli_server import MEMCLI, ServerProc, hash_env, start_server
from test_cli_server_writes import _env, _foreign, cli, ok
from test_mcp_clients import call, error, stdio_session

pytestmark = pytest.mark.slow

FACT = "project-x deploys from the release branch only"


def _fails_in_y(env_y: dict[str, str], *args: str) -> None:
    """The command fails in project-y as for an id nobody has: exit 1, not_found, a message naming the namespace."""
    p = cli(env_y, *args, "--json")
    assert p.returncode == 1, (args, p.stdout, p.stderr)
    err = json.loads(p.stdout)
    assert err == {"ok": False, "code": "not_found",
                   "error": f"no memory with id {args[1]} in namespace 'project-y'"}, (args, err)


def _isolation(env: dict[str, str], *, every_form: bool = True) -> None:
    """Remember in project-x; every id command of project-y fails on it and changes nothing; naming the
    namespace reaches it. ``every_form``: each command with each form of the id, and the reads of every
    namespace (else one form each: a CLI process that opens the store costs seconds)."""
    env_x, env_y = {**env, "MEMCLI_NAMESPACE": "project-x"}, {**env, "MEMCLI_NAMESPACE": "project-y"}
    mid = ok(env_x, "remember", FACT)["memory_id"]
    tried = [("get", mid[-8:]), ("update", mid, "--content", "project-y bent this"), ("forget", mid[-8:]),
             ("history", mid)]
    if every_form:
        ok(env_y, "remember", "project-y has a memory of its own")  # project-y is not an empty namespace
        tried += [("get", mid), ("get", mid[:13]), ("update", mid[-8:], "--importance", "0.1"), ("forget", mid)]
    for args in tried:
        _fails_in_y(env_y, *args)
    # nothing changed, nothing deleted
    got = ok(env_x, "get", mid)
    assert (got["content"], got["version"], got["importance"], got["namespace"]) == (FACT, 1, 0.5, "project-x")

    # the flag names the namespace (and wins over MEMCLI_NAMESPACE); --all-namespaces reads in every one
    assert ok(env_y, "get", mid[-8:], "--namespace", "project-x")["memory_id"] == mid
    if every_form:
        assert [e["action"] for e in ok(env_x, "history", mid)] == ["remember"]
        assert ok(env_y, "get", mid, "--all-namespaces")["content"] == FACT
        assert ok(env_y, "history", mid, "-A")[0]["memory_id"] == mid
    upd = ok(env_y, "update", mid, "-n", "project-x", "--importance", "0.9")
    assert (upd["memory_id"], upd["version"], upd["memory"]["importance"]) == (mid, 2, 0.9)
    assert ok(env_y, "forget", mid[-8:], "--namespace", "project-x") == {"ok": True, "forgotten": [mid]}
    if every_form:
        p = cli(env_x, "get", mid, "--json")
        assert p.returncode == 1 and json.loads(p.stdout)["code"] == "not_found"
        # a forgotten memory's history: by its full id, in its namespace (or every one) only
        _fails_in_y(env_y, "history", mid)
        assert [e["action"] for e in ok(env_x, "history", mid)] == ["remember", "update", "forget"]


def test_cli_in_process_keeps_ids_in_their_namespace(tmp_path: Path) -> None:
    _isolation(_env(tmp_path / "home", MEMCLI_NO_SERVER="1"), every_form=False)


def test_cli_through_the_warm_server_keeps_ids_in_their_namespace(tmp_path: Path) -> None:
    """Through the home's server: its default namespace is neither, so the caller's namespace must travel with
    every id request. The store cannot be opened by these commands (another embedder): the server answered."""
    srv = start_server(MEMCLI, _env(tmp_path / "home", HOME=str(tmp_path)), tmp_path / "home")
    try:
        _isolation(_foreign(srv.home))  # get and forget take the fast path (lean once the server is proven)
        _isolation({**_foreign(srv.home), "MEMCLI_FAST": "0"}, every_form=False)  # the typer app's client
    finally:
        srv.stop()


def test_mcp_tools_keep_ids_in_their_namespace(memcli_bin: str, subprocess_env: dict[str, str]) -> None:
    env = {**subprocess_env, "MEMCLI_NAMESPACE": "project-y"}

    async def main() -> None:
        async with stdio_session(memcli_bin, env) as s:
            mid = (await call(s, "remember", content=FACT, namespace="project-x"))["memory_id"]
            for tool, args in (("get", {}), ("update", {"content": "project-y bent this"}),
                               ("update", {"importance": 0.1}), ("forget", {})):
                for ref in (mid, mid[-8:]):
                    msg = await error(s, tool, memory_id=ref, **args)
                    assert msg.endswith(f": no memory with id {ref} in namespace 'project-y'"), (tool, msg)
            got = await call(s, "get", memory_id=mid, namespace="project-x")
            assert (got["content"], got["version"], got["importance"]) == (FACT, 1, 0.5)
            upd = await call(s, "update", memory_id=mid[-8:], namespace="project-x", importance=0.9)
            assert upd == {"ok": True, "memory_id": mid, "version": 2}
            assert await call(s, "forget", memory_id=mid, namespace="project-x") == {"ok": True, "memory_id": mid}
            assert "no memory with id" in await error(s, "get", memory_id=mid, namespace="project-x")

    anyio.run(main)


# ------------------------------------------------------------------------------------------ item 10: spaces
class Spaces:
    def __init__(self, srv: ServerProc, alpha: str, beta_ids: list[str]) -> None:
        self.srv, self.alpha, self.beta_ids = srv, alpha, beta_ids

    def as_alpha(self) -> httpx.Client:
        return httpx.Client(base_url=self.srv.url, timeout=60, headers={"Authorization": f"Bearer {self.alpha}"})


@pytest.fixture(scope="module")
def spaces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Spaces]:
    """A team server: space alpha (no memories) and space beta (three memories, written within a second, so
    their ids share their first hex digits: UUIDv7 begins with the time)."""
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("nsids")
    srv = start_server(MEMCLI, hash_env(tmp), tmp / "server-home")
    with srv.client(timeout=60) as admin:
        alpha = admin.post("/api/spaces", json={"name": "alpha", "agent": "ann"}).json()["api_token"]
        beta = admin.post("/api/spaces", json={"name": "beta", "agent": "ben"}).json()["api_token"]
    with httpx.Client(base_url=srv.url, timeout=60, headers={"Authorization": f"Bearer {beta}"}) as ben:
        r = ben.post("/api/memories/batch", json={"memories": [{"content": f"beta's secret plan number {i}"}
                                                                for i in range(3)]})
        assert r.status_code == 201, r.text
        beta_ids = [x["memory_id"] for x in r.json()["results"]]
    yield Spaces(srv, alpha, beta_ids)
    srv.stop()


def _answer(r: httpx.Response, ref: str) -> tuple[int, Any]:
    """The status and body, with the id the caller sent replaced (the only part allowed to differ)."""
    return r.status_code, json.loads(r.text.replace(ref, "<ref>"))


def _pairs(beta_ids: list[str]) -> list[tuple[str, str]]:
    """(an id or part of one that only another space holds, one of the same form that nobody holds)."""
    b = beta_ids[0]
    return [(b, "0190abcd-0000-7000-8000-00000000dead"),  # a full id
            (b[-8:], "0000dead"),  # the short form
            (b[:8], "ffffeeee"),  # a prefix every beta id shares: ambiguous over the whole store
            (b[:4], "fedc")]


def test_the_board_answers_another_spaces_ids_as_ids_nobody_has(spaces: Spaces) -> None:
    with spaces.as_alpha() as ann, spaces.srv.client(timeout=60) as admin:
        for elsewhere, nowhere in _pairs(spaces.beta_ids):
            for client, extra in ((ann, {}), (admin, {"namespace": "alpha"})):  # a space token; the owner in alpha
                answers = [_answer(client.post("/api/board/tasks", json={"title": "t", "memory_ids": [ref], **extra}),
                                   ref) for ref in (elsewhere, nowhere)]
                assert answers[0] == answers[1], (elsewhere, answers)
                status, body = answers[0]
                assert status == 404 and body["code"] == "not_found", answers
                assert "'alpha'" in body["error"]
                leaked = [i for i in spaces.beta_ids if re.search(i[:12].replace("-", "-?"), json.dumps(body))]
                assert not leaked, body
        # nothing was created on alpha's board
        assert ann.get("/api/board").json()["total"] == 0


def test_a_space_token_reaches_no_other_space_by_id(spaces: Spaces) -> None:
    with spaces.as_alpha() as ann:
        for elsewhere, nowhere in _pairs(spaces.beta_ids):
            for method, suffix, body, query in (
                    ("GET", "", None, {}), ("GET", "", None, {"all_namespaces": "true"}),
                    ("GET", "", None, {"namespace": "beta"}), ("GET", "/history", None, {"all_namespaces": "true"}),
                    ("PATCH", "", {"content": "alpha bent this"}, {"namespace": "beta"}),
                    ("DELETE", "", None, {"namespace": "beta"})):
                answers = [_answer(ann.request(method, f"/api/memories/{ref}{suffix}", json=body, params=query), ref)
                           for ref in (elsewhere, nowhere)]
                assert answers[0] == answers[1] and answers[0][0] == 404, (method, suffix, query, answers)
    with spaces.srv.client(timeout=60) as admin:  # beta's memories are as they were
        for mid in spaces.beta_ids:
            r = admin.get(f"/api/memories/{mid}", params={"namespace": "beta"})
            assert r.status_code == 200 and r.json()["version"] == 1 and "secret plan" in r.json()["content"]


def test_the_owner_names_the_namespace_of_an_id(spaces: Spaces) -> None:
    """The home's own token: an id route acts in the namespace named (else the server's default), and reads may
    look in every namespace; a change never does."""
    mid = spaces.beta_ids[1]
    with spaces.srv.client(timeout=60) as admin:
        for query in ({}, {"namespace": "alpha"}):
            r = admin.get(f"/api/memories/{mid}", params=query)
            assert r.status_code == 404 and r.json()["code"] == "not_found", r.text
            assert admin.patch(f"/api/memories/{mid}", json={"importance": 0.1}, params=query).status_code == 404
            assert admin.delete(f"/api/memories/{mid}", params=query).status_code == 404
        assert admin.get(f"/api/memories/{mid[-8:]}", params={"all_namespaces": "true"}).json()["memory_id"] == mid
        assert admin.get(f"/api/memories/{mid}/history", params={"all_namespaces": "1"}).json()[0]["memory_id"] == mid
        r = admin.patch(f"/api/memories/{mid}", json={"importance": 0.1}, params={"all_namespaces": "true"})
        assert r.status_code == 422 and "all_namespaces" in r.json()["error"]
        r = admin.get(f"/api/memories/{mid}", params={"namespace": "beta", "all_namespaces": "true"})
        assert r.status_code == 422
        assert admin.get(f"/api/memories/{mid}", params={"namespace": "beta"}).json()["version"] == 1


def test_an_ambiguous_part_names_only_the_callers_namespace(tmp_path: Path) -> None:
    """In-process: a prefix that all memories of two namespaces share is unique in the one holding a single
    memory, and the ambiguous-id error of the other names only its own ids."""
    from memcli.config import load_config
    from memcli.errors import AmbiguousIdError
    from memcli.memory.service import MemoryService

    svc = MemoryService.open(load_config(tmp_path / "home", namespace="project-y"))
    try:
        xs = [svc.remember(f"project-x fact {i}", namespace="project-x").memory_id for i in range(3)]
        y = svc.remember("project-y's only fact").memory_id
        prefix = y[:4]
        assert all(x.startswith(prefix) for x in xs)  # the same time high bits
        assert svc.get(prefix).id == y
        with pytest.raises(AmbiguousIdError) as exc:
            svc.get(prefix, namespace="project-x")
        assert y[:13] not in exc.value.message and all(x[:13] in exc.value.message for x in xs)
    finally:
        svc.close()
