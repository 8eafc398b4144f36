"""The reliability suite (`pytest -m reliability`): real processes, real LanceDB directories, real HTTP on
127.0.0.1, SIGKILL, read-only and full disks. Each case asserts that nothing acknowledged is lost or
duplicated. Helpers: ``_util.py``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _util import MEMCLI, Reaper

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).resolve().parent == HERE:
            item.add_marker(pytest.mark.reliability)
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def reaper() -> Iterator[Reaper]:
    """Kills every process the test started (servers, writers, hook-started servers) at teardown."""
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment (pip install -e .)")
    r = Reaper()
    try:
        yield r
    finally:
        r.reap()
