"""Shared fixtures: every test gets its own home dir (config + LanceDB store) under tmp_path.

The default embedder in tests is the small deterministic `hash` embedder (fast; it knows words, not
meaning). Tests where meaning matters use ``real_service`` / ``MEMCLI_EMBEDDER=local`` (the bundled e5).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memcli.config import load_config
from memcli.memory.service import MemoryService

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point MEMCLI_HOME and HOME at tmp dirs; default to the fast hash embedder."""
    home = tmp_path / "memcli-home"
    monkeypatch.setenv("MEMCLI_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    (tmp_path / "user-home").mkdir()
    monkeypatch.setenv("MEMCLI_EMBEDDER", "hash")
    # a memory command with no server running starts one for the next command: not in tests, where every
    # home is a new tmp dir (tests of that start clear it)
    monkeypatch.setenv("MEMCLI_AUTOSTART", "0")
    for var in ("MEMCLI_NAMESPACE", "MEMCLI_AGENT", "MEMCLI_EMBED_BASE_URL", "MEMCLI_EMBED_MODEL",
                "MEMCLI_EMBED_DIMS", "MEMCLI_EMBED_API_KEY", "MEMCLI_STORAGE_URI", "MEMCLI_STORE_URI", "MEMCLI_SINGLE_WRITER", "MEMCLI_PORT", "MEMCLI_TOKEN",
                "MEMCLI_JSON", "XDG_DATA_HOME", "MNEMO_API_URL", "MNEMO_API_TOKEN", "MNEMO_EMBED_API_KEY",
                "MNEMO_EMBED_BASE_URL", "MNEMO_EMBED_MODEL", "MNEMO_EMBED_DIMS"):  # seed 002's names count too
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def home(isolated_home: Path) -> Path:
    return isolated_home


@pytest.fixture
def service(isolated_home: Path) -> Iterator[MemoryService]:
    """A service on a fresh store with the hash embedder."""
    svc = MemoryService.open(load_config(isolated_home))
    yield svc
    svc.close()


@pytest.fixture
def real_service(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryService]:
    """A service on a fresh store with the real bundled multilingual embedder."""
    monkeypatch.setenv("MEMCLI_EMBEDDER", "local")
    svc = MemoryService.open(load_config(isolated_home))
    yield svc
    svc.close()


@pytest.fixture
def memcli_bin() -> str:
    """The installed `memcli` console script of this interpreter's environment."""
    exe = BIN / "memcli"
    if not exe.exists():
        pytest.skip("memcli is not installed in this environment (pip install -e .)")
    return str(exe)


@pytest.fixture
def subprocess_env(isolated_home: Path) -> dict[str, str]:
    """Environment for memcli subprocesses: the isolated home, the hash embedder."""
    env = dict(os.environ)
    env["MEMCLI_HOME"] = str(isolated_home)
    return env
