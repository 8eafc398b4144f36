"""Two memcli homes (the same thing as two users) side by side, with real `memcli serve` processes and real
hook client processes: each home's hooks see only its own memories and store only into its own store, even
when both share a MEMCLI_TOKEN and the hooks are pointed at the other home's port; a hook whose home is
unusable stays silent and reaches no server; a cold SessionStart waits for the server it starts."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_hooks_e2e import (
    Served,
    free_port,
    kill_spawned,
    payload,
    project_dir,
    run_hook,
    serve,
    wait_for,
)

from memcli.config import load_config
from memcli.hooks.state import HookState
from memcli.memory.service import MemoryService

pytestmark = pytest.mark.slow

SHARED = "one-token-shared-by-two-homes"
A_MARK, B_MARK = "ALPHAHOME-7731", "BETAHOME-4412"


def _seed(home: Path, marker: str, db: str) -> None:
    svc = MemoryService.open(load_config(home, env={"MEMCLI_EMBEDDER": "hash"}))
    try:
        svc.remember(f"{marker}: the billing service database is {db}", tags=["decision"], importance=0.9,
                     project="shop")
        svc.remember(f"{marker}: deploys of the billing service go through the release pipeline", project="shop")
    finally:
        svc.close()


def _turns(home: Path) -> list[Any]:
    svc = MemoryService.open(load_config(home, env={"MEMCLI_EMBEDDER": "hash"}))
    try:
        return svc.list(tags=["turn"], limit=100)
    finally:
        svc.close()


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path, Path]]:
    """Home A served on its own port with the shared token; home B seeded, with no server yet."""
    tmp = tmp_path_factory.mktemp("two-homes")
    a, b = tmp / "home-a", tmp / "home-b"
    _seed(a, A_MARK, "PostgreSQL 16")
    _seed(b, B_MARK, "MySQL 8")
    srv = serve(a, {"MEMCLI_TOKEN": SHARED, "MEMCLI_EMBEDDER": "hash"})
    try:
        yield srv, a, b
    finally:
        srv.stop()
        kill_spawned(a)
        kill_spawned(b)


def _env(home: Path | str, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    return {**env, "MEMCLI_HOME": str(home), "MEMCLI_PORT": str(port), "MEMCLI_TOKEN": SHARED,
            "MEMCLI_EMBEDDER": "hash", "MEMCLI_HOOK_IDLE_TIMEOUT": "60", "MEMCLI_AUTOSTART": "0", **extra}


def test_two_homes_never_cross(homes: tuple[Served, Path, Path], tmp_path: Path) -> None:
    srv, a, b = homes
    cwd = project_dir(tmp_path, "shop")
    # B's hooks are pointed at A's port (the issue: A's server holds the default port) and share A's token.
    b_env = _env(b, srv.port)
    h = run_hook("SessionStart", payload("SessionStart", "b1", cwd, source="startup"), b_env)
    assert h.rc == 0 and h.err == ""
    # ...B's own server was started (another port, recorded in B's server.json) and answered the digest
    assert B_MARK in h.context and A_MARK not in h.context, h.out
    b_info = json.loads((b / "server.json").read_text())
    assert b_info["port"] != srv.port
    assert HookState(a).load("b1") == {}  # A's server never saw B's session

    prompt = "which database does the billing service use?"
    h = run_hook("UserPromptSubmit", payload("UserPromptSubmit", "b2", cwd, prompt=prompt), b_env)
    assert h.rc == 0 and B_MARK in h.context and A_MARK not in h.context
    h = run_hook("Stop", payload("Stop", "b2", cwd, stop_hook_active=False, prompt="why MySQL for billing?",
                                 last_assistant_message="BETATURN-0001: billing stays on MySQL 8 because the "
                                                        "reporting jobs depend on its binlog format."), b_env)
    assert h.rc == 0 and h.out == ""
    (turn,) = wait_for(lambda: _turns(b))
    assert "BETATURN-0001" in turn.content

    # A's hooks, on the same port, with the same token: A's memories only
    a_env = _env(a, srv.port)
    h = run_hook("UserPromptSubmit", payload("UserPromptSubmit", "a1", cwd, prompt=prompt), a_env)
    assert A_MARK in h.context and B_MARK not in h.context
    time.sleep(1.0)  # a misdirected Stop would have been stored by now
    assert _turns(a) == [] and HookState(a).load("b2") == {}


def test_wrong_home_is_refused_by_the_server(homes: tuple[Served, Path, Path]) -> None:
    """The server side of it: the right token with another home's id reads and writes nothing."""
    import httpx

    srv, a, _ = homes
    other = {"Authorization": f"Bearer {SHARED}", "X-Memcli-Home": "0000111122223333"}
    base = f"http://127.0.0.1:{srv.port}"
    for method, path, body in (("GET", "/api/memories", None), ("GET", "/api/search?q=billing", None),
                               ("POST", "/api/memories", {"content": "written into the wrong home"}),
                               ("POST", "/hooks/UserPromptSubmit", {"session_id": "x", "prompt": "billing db?"}),
                               ("POST", "/mcp", {}), ("GET", "/health", None)):
        r = httpx.request(method, base + path, json=body, headers=other, timeout=30)
        assert r.status_code == 421 and r.json()["code"] == "wrong_home", (path, r.text)
        assert A_MARK not in r.text
    mine = {"Authorization": f"Bearer {SHARED}", "X-Memcli-Home": json.loads((a / "auth.json").read_text())["home_id"]}
    listed = httpx.get(base + "/api/memories", headers=mine, timeout=30).json()
    assert len(listed) == 2 and all(A_MARK in m["content"] for m in listed)  # nothing was written
    assert HookState(a).load("x") == {}


def test_a_home_that_is_a_file_fails_open_and_reaches_no_server(homes: tuple[Served, Path, Path],
                                                                tmp_path: Path) -> None:
    srv, a, _ = homes
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("MEMCLI_HOME points here by mistake\n")
    env = _env(not_a_dir, srv.port)
    cwd = project_dir(tmp_path, "shop")
    for event, extra in (("SessionStart", {"source": "startup"}),
                         ("UserPromptSubmit", {"prompt": "which database does the billing service use?"}),
                         ("Stop", {"stop_hook_active": False, "prompt": "which database?",
                                   "last_assistant_message": "FILEHOME-TURN: billing runs on PostgreSQL 16 here."})):
        h = run_hook(event, payload(event, "f1", cwd, **extra), env)
        assert (h.rc, h.out, h.err) == (0, "", ""), (event, h)
        assert h.seconds < 5, (event, h.seconds)
    time.sleep(1.0)
    assert _turns(a) == [] and HookState(a).load("f1") == {}
    assert not_a_dir.read_text() == "MEMCLI_HOME points here by mistake\n"


def test_session_start_waits_for_the_server_it_starts(home: Path, tmp_path: Path) -> None:
    """No server running: the first SessionStart starts one and still injects the digest (a cold start takes
    a few seconds; the hook may use most of its 10 s)."""
    _seed(home, B_MARK, "MySQL 8")
    env = {**_env(home, free_port()), "MEMCLI_TOKEN": ""}
    env.pop("MEMCLI_TOKEN")
    try:
        h = run_hook("SessionStart", payload("SessionStart", "cold", project_dir(tmp_path, "shop"),
                                             source="startup"), env)
        assert h.rc == 0 and h.err == ""
        assert B_MARK in h.context, (h.seconds, (home / "logs" / "hooks.log").read_text())
        assert h.seconds < 9.5
    finally:
        kill_spawned(home)
