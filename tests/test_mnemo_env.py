"""Seed 002's (mem9 / mnemo) environment names: ``MNEMO_API_URL`` + ``MNEMO_API_TOKEN`` point every face at the
team server (a ``mnemo remember`` used to answer ok and write into a new local store, split from the team),
``MNEMO_EMBED_*`` configure the embedder (a key or URL alone selects the OpenAI-compatible one), and the
``MEMCLI_*`` twin wins when both are set.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from _memcli_server import MEMCLI, ServerProc, hash_env, start_server

from memcli.config import load_config
from memcli.hooks.transport import resolve_settings

MNEMO = str(Path(MEMCLI).parent / "mnemo")


def test_mnemo_names_fill_the_memcli_settings(tmp_path: Path) -> None:
    cfg = load_config(tmp_path, env={"MNEMO_API_URL": "http://team.example:8080", "MNEMO_API_TOKEN": "mnemo_abc",
                                     "MNEMO_EMBED_MODEL": "nomic-embed-text", "MNEMO_EMBED_DIMS": "768"})
    assert (cfg.api_url, cfg.api_token) == ("http://team.example:8080", "mnemo_abc")
    assert (cfg.embedder.model, cfg.embedder.dims) == ("nomic-embed-text", 768)
    assert cfg.embedder.provider == "local"  # a model name alone turns nothing on


@pytest.mark.parametrize("var", ["MNEMO_EMBED_API_KEY", "MNEMO_EMBED_BASE_URL"])
def test_an_embedding_key_or_url_alone_selects_the_openai_compatible_embedder(tmp_path: Path, var: str) -> None:
    value = "sk-test" if var.endswith("KEY") else "http://localhost:11434/v1"
    cfg = load_config(tmp_path, env={var: value})
    assert cfg.embedder.provider == "openai"
    assert (cfg.embedder.api_key if var.endswith("KEY") else cfg.embedder.base_url) == value
    # a provider chosen by memcli's own settings stays chosen
    assert load_config(tmp_path, env={var: value, "MEMCLI_EMBEDDER": "jina"}).embedder.provider == "jina"
    (tmp_path / "config.toml").write_text('[embedder]\nprovider = "local"\n')
    assert load_config(tmp_path, env={var: value}).embedder.provider == "local"


def test_memcli_names_win_over_mnemo_names(tmp_path: Path) -> None:
    cfg = load_config(tmp_path, env={"MNEMO_API_URL": "http://mnemo:1", "MEMCLI_API_URL": "http://memcli:2",
                                     "MNEMO_API_TOKEN": "mnemo_old", "MEMCLI_API_TOKEN": "mnemo_new",
                                     "MNEMO_EMBED_MODEL": "a", "MEMCLI_EMBED_MODEL": "b"})
    assert (cfg.api_url, cfg.api_token, cfg.embedder.model) == ("http://memcli:2", "mnemo_new", "b")
    hook = resolve_settings({"MEMCLI_HOME": str(tmp_path), "MNEMO_API_URL": "http://mnemo:1",
                             "MEMCLI_API_URL": "http://memcli:2", "MNEMO_API_TOKEN": "mnemo_old"})
    assert (hook.api_url, hook.api_token) == ("http://memcli:2", "mnemo_old")


def test_a_bad_mnemo_value_is_named_in_the_error(tmp_path: Path) -> None:
    from memcli.errors import ConfigError

    with pytest.raises(ConfigError, match="MNEMO_EMBED_DIMS"):
        load_config(tmp_path, env={"MNEMO_EMBED_DIMS": "many"})


def test_the_hook_client_follows_mnemo_names(tmp_path: Path) -> None:
    s = resolve_settings({"MEMCLI_HOME": str(tmp_path), "MNEMO_API_URL": "https://team.example",
                          "MNEMO_API_TOKEN": "mnemo_abc"})
    assert (s.api_url, s.api_token) == ("https://team.example", "mnemo_abc")


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProc, str, Path]]:
    if not Path(MNEMO).exists():
        pytest.skip("memcli (and its mnemo alias) is not installed in this environment")
    tmp = tmp_path_factory.mktemp("mnemo")
    srv = start_server(MEMCLI, hash_env(tmp), tmp / "server-home")
    with srv.client(timeout=30) as admin:
        token = admin.post("/api/spaces", json={"name": "crew", "agent": "sj-claude"}).json()["api_token"]
    yield srv, token, tmp
    srv.stop()


def test_mnemo_remember_with_mnemo_names_lands_in_the_team_space(team: tuple[ServerProc, str, Path]) -> None:
    srv, token, tmp = team
    env = hash_env(tmp)
    env.update(MEMCLI_HOME=str(tmp / "laptop"), MNEMO_API_URL=srv.url, MNEMO_API_TOKEN=token)

    def mnemo(*args: str) -> dict:
        p = subprocess.run([MNEMO, *args, "--json"], env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    made = mnemo("remember", "the staging database moved to db-2.internal")
    with srv.client(timeout=30) as admin:
        stored = admin.get(f"/api/memories/{made['memory_id']}", params={"namespace": "crew"})
    assert stored.status_code == 200, stored.text
    assert stored.json()["scope"] == "agent:sj-claude"  # the token's agent wrote it, into its space
    assert mnemo("get", made["memory_id"])["namespace"] == "crew"
    assert not (tmp / "laptop" / "data").exists()  # nothing written to a local store


def test_a_claude_code_hook_with_mnemo_names_injects_from_the_team_space(team: tuple[ServerProc, str, Path]) -> None:
    """Seed 002's Claude Code users keep MNEMO_API_URL + MNEMO_API_TOKEN in settings.json's env: the hook (a real
    hook process) asks the team server, and starts no local one."""
    import sys

    import httpx

    srv, token, tmp = team
    with httpx.Client(base_url=srv.url, timeout=30, headers={"Authorization": f"Bearer {token}"}) as api:
        api.post("/api/memories", json={"content": "crew decision: the mnemo hook reads feature flags from "
                                                   "LaunchDarkly"})
    env = hash_env(tmp)
    env.update(MEMCLI_HOME=str(tmp / "hook-home"), MNEMO_API_URL=srv.url, MNEMO_API_TOKEN=token)
    payload = {"session_id": "mnemo-s1", "prompt": "where do feature flags live? LaunchDarkly?", "cwd": str(tmp),
               "hook_event_name": "UserPromptSubmit"}
    p = subprocess.run([sys.executable, "-m", "memcli.hooks", "UserPromptSubmit"], input=json.dumps(payload).encode(),
                       env=env, capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stderr == b""
    assert "LaunchDarkly" in json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
    assert not (tmp / "hook-home" / "server.json").exists()
