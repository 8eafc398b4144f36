"""Per-invocation state shared by commands: the home dir, the config and the (lazily opened) service."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.service import MemoryService


@dataclass
class State:
    """Global options and lazily built objects for one CLI invocation."""

    home: Path | None = None
    json: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)
    _config: "Config | None" = None
    _service: "MemoryService | None" = None

    def config(self) -> "Config":
        if self._config is None:
            from memcli.config import load_config

            self._config = load_config(self.home, **self.overrides)
        return self._config

    def service(self, *, allow_mismatch: bool = False) -> "MemoryService":
        if self._service is None:
            from memcli.project import detect_project
            from memcli.service import MemoryService

            self._service = MemoryService.open(self.config(), project=detect_project(Path.cwd()),
                                               allow_mismatch=allow_mismatch)
        return self._service

    def close(self) -> None:
        if self._service is not None:
            self._service.close()
            self._service = None


def state(ctx: typer.Context) -> State:
    """The State of this invocation (created by the app callback)."""
    root = ctx.find_root()
    if not isinstance(root.obj, State):
        root.obj = State()
    return root.obj


def use_json(ctx: typer.Context, flag: bool) -> State:
    """Record whether this command prints JSON: `--json`, or stdout is not a terminal."""
    st = state(ctx)
    st.json = bool(flag) or not sys.stdout.isatty() or os.environ.get("MEMCLI_JSON") == "1"
    return st


def with_namespace(ctx: typer.Context, namespace: str | None) -> State:
    """A command's --namespace flag overrides the configured namespace."""
    st = state(ctx)
    if namespace is not None:
        st.overrides["namespace"] = namespace
        st._config = None
    return st
