"""Real agent clients for the tests: Codex CLI, Gemini CLI, Claude Code and the MCP Inspector's CLI from npm, in
a cache folder reused across runs (Debian's Node 20 runs them all).

The cache is ``$MEMCLI_TEST_CLIENTS_CACHE`` or ``~/.cache/memcli-test-clients`` (≈ 600 MB); a version stamp marks
a complete install, and a lock keeps two test runs from installing at once. Without npm, or when the registry
does not answer, :func:`install` raises :class:`Unavailable` with the reason to skip with.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

# the versions checked here (/work/shared/CLIENTS.md); a newer release may rename a flag or a config key
PACKAGES = {"@openai/codex": "0.171.0", "@google/gemini-cli": "0.61.0", "@anthropic-ai/claude-code": "2.1.197",
            "@modelcontextprotocol/inspector-cli": "1.0.3"}
CACHE = Path(os.environ.get("MEMCLI_TEST_CLIENTS_CACHE") or Path.home() / ".cache" / "memcli-test-clients")


class Unavailable(Exception):
    """The clients cannot be installed here (no npm or node, the registry unreachable): the reason to skip."""


@dataclass(frozen=True)
class Clients:
    prefix: Path  # npm's --prefix: package.json and node_modules/ live here

    @property
    def bin(self) -> Path:
        return self.prefix / "node_modules" / ".bin"

    def exe(self, name: str) -> str:
        return str(self.bin / name)

    @property
    def inspector_cwd(self) -> Path:
        """Where to run the Inspector's CLI from: 1.0.3 fails ("Cannot find module …/package.json") unless the
        working directory's parent holds a package.json."""
        return self.prefix / "node_modules"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def install(cache: Path = CACHE) -> Clients:
    """The four clients in ``cache`` (installed on first use, then reused). Raises Unavailable."""
    clients = Clients(cache / "npm")
    names = ("codex", "gemini", "claude", "mcp-inspector-cli")
    stamp = cache / (".complete-" + "-".join(f"{p.rsplit('/', 1)[-1]}{v}" for p, v in PACKAGES.items()))
    with _locked(cache / ".lock"):
        if stamp.exists() and all((clients.bin / n).exists() for n in names):
            return clients
        npm, node = shutil.which("npm"), shutil.which("node")
        if not npm or not node:
            raise Unavailable("npm and node are needed for the real clients (apt-get install -y nodejs npm)")
        env = {**os.environ, "npm_config_audit": "false", "npm_config_fund": "false",
               "npm_config_update_notifier": "false"}
        ping = subprocess.run([npm, "ping"], env=env, capture_output=True, text=True, timeout=120)
        if ping.returncode != 0:
            raise Unavailable(f"the npm registry is unreachable: {(ping.stdout + ping.stderr).strip()[-400:]}")
        specs = [f"{p}@{v}" for p, v in PACKAGES.items()]
        p = subprocess.run([npm, "install", "--prefix", str(clients.prefix), *specs], env=env, capture_output=True,
                           text=True, timeout=1800, stdin=subprocess.DEVNULL)
        if p.returncode != 0:
            raise RuntimeError(f"npm install {' '.join(specs)} failed (exit {p.returncode}):\n"
                               f"{(p.stdout + p.stderr).strip()[-1500:]}")
        missing = [n for n in names if not (clients.bin / n).exists()]
        if missing:
            raise RuntimeError(f"npm installed no {', '.join(missing)} under {clients.bin}")
        stamp.write_text(time.strftime("%Y-%m-%dT%H:%M:%S"))
    return clients
