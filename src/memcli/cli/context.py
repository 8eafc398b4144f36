"""Per-invocation state shared by commands: the home dir, the config, the (lazily opened) service, and the
route to the home's warm server that the memory commands take when one runs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from memcli.cli.client import Client

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.memory.service import MemoryService
    from memcli.team.remote import RemoteService


@dataclass
class State:
    """Global options and lazily built objects for one CLI invocation."""

    home: Path | None = None
    json: bool = False
    no_server: bool = False  # --no-server / MEMCLI_NO_SERVER: everything in this process, no server started
    overrides: dict[str, Any] = field(default_factory=dict)
    _config: "Config | None" = None
    _service: "MemoryService | None" = None
    _client: "Client | None" = None
    _start_server: bool = False  # no server of this home ran: start one for the next command (on close)

    def config(self) -> "Config":
        if self._config is None:
            from memcli.config import load_config

            self._config = load_config(self.home, **self.overrides)
        return self._config

    def team(self) -> "RemoteService | None":
        """Team mode (MEMCLI_API_URL set): the server's client, which every command then uses instead of the
        local store; None otherwise."""
        if not self.config().api_url:
            return None
        from memcli.project import detect_project
        from memcli.team.remote import RemoteService

        return RemoteService.for_team(self.config(), project=detect_project(Path.cwd()))

    def service(self, *, allow_mismatch: bool = False) -> "MemoryService":
        """The store opened in this process (team mode: the team server's client)."""
        if self._service is None:
            remote = self.team()
            if remote is not None:
                self._service = remote  # type: ignore[assignment]  (the same methods, answered by the server)
                return self._service  # type: ignore[return-value]
            from memcli.memory.service import MemoryService
            from memcli.project import detect_project

            self._service = MemoryService.open(self.config(), project=detect_project(Path.cwd()),
                                               allow_mismatch=allow_mismatch)
        return self._service

    def client(self) -> "Client":
        """For the memory commands (reads and writes): this home's warm server when one runs, else (or when it
        cannot answer) the store opened here. With none running, the command works here and starts one in the
        background for the next command (``[server] autostart``; never with --no-server)."""
        if self._client is None:
            from memcli.project import detect_project
            from memcli.team.remote import RemoteService

            team = self.team()
            if team is not None:  # no fallback: the team's memory is on the server only
                self._client = Client(None, lambda: team)  # type: ignore[arg-type,return-value]
                return self._client
            remote = None
            if not self.no_server:
                from memcli.home import running_server

                remote = RemoteService.for_home(self.config(), project=detect_project(Path.cwd()))
                self._start_server = (remote is None and self.config().server.autostart
                                      and running_server(self.config().home) is None)
            self._client = Client(remote, self.service)
        return self._client

    def home_server(self) -> "RemoteService | None":
        """The home's warm server for a command that asks it directly (the board), or None (none runs, team
        mode, --no-server). Unavailable errors are the caller's to handle (fall back to :meth:`service`)."""
        return self.client().remote if self.team() is None else None

    def close(self) -> None:
        if self._service is not None:
            self._service.close()
            client = self._client
            started_here = client is not None and client.remote is None and (
                self._start_server or (client.server_gone and self.config().server.autostart))
            self._service = None
            if started_here:  # after the answer: the next command finds it warm
                start_home_server(self.config())


# ------------------------------------------------------------------ starting this home's server for the next command
# The same start the hook client makes (memcli.hooks.client.start_server): detached, output appended to
# <home>/logs/server.log, on the configured port when it is free (else any free one: server.json says which),
# exiting after [server] autostart_idle_timeout seconds without a request; and not at all when another command
# or hook started one less than START_GRACE_S seconds ago that still runs (the stamp and pid files they share).
START_GRACE_S = 20.0
STAMP = ("hooks-state", "server-start.stamp")
PID_FILE = ("hooks-state", "server.pid")  # the process the last start made (the hooks write it too)


def _starting(stamp: Path, pid_file: Path) -> bool:
    """Did a command or hook start this home's server less than START_GRACE_S ago, and does that process
    still run (a server that died at once, or was killed, is started again)?"""
    try:
        if time.time() - stamp.stat().st_mtime >= START_GRACE_S:
            return False
        pid = int(pid_file.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return False
    from memcli.home import process_alive

    return process_alive(pid)


def _port_free(port: int) -> bool:
    """Nothing listens on 127.0.0.1:port (a bare connect: nothing is sent)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def start_home_server(config: "Config") -> bool:
    """Start ``memcli serve`` for ``config.home`` unless one was started a moment ago (and still runs). A
    start the file system refuses is no error (the next command works in-process again). True when started."""
    home = config.home
    stamp = home.joinpath(*STAMP)
    if _starting(stamp, home.joinpath(*PID_FILE)):
        return False
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        stamp.write_text(str(time.time()), encoding="utf-8")
        logs = config.log_dir
        logs.mkdir(parents=True, exist_ok=True, mode=0o700)
        port = config.server.port if _port_free(config.server.port) else 0
        # this machine only, whatever [server] host says: a server nobody asked for is never on the network
        cmd = [sys.executable, "-m", "memcli.cli", "--home", str(home), "serve", "--host", "127.0.0.1", "--port",
               str(port), "--idle-timeout", f"{config.server.autostart_idle_timeout:g}"]
        env = {k: v for k, v in os.environ.items() if k not in ("MEMCLI_NO_SERVER", "MEMCLI_JSON")}
        with open(logs / "server.log", "ab") as out:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True, close_fds=True, cwd=str(home))
        home.joinpath(*PID_FILE).write_text(str(proc.pid), encoding="utf-8")
        return True
    except OSError:
        return False


def state(ctx: typer.Context) -> State:
    """The State of this invocation (created by the app callback)."""
    root = ctx.find_root()
    if not isinstance(root.obj, State):
        root.obj = State()
    return root.obj


def use_json(ctx: typer.Context, flag: bool) -> State:
    """Record whether this command prints JSON: `--json`, or stdout is not a terminal.

    `MEMCLI_JSON=1` forces JSON; `MEMCLI_JSON=0` forces human output even when piped (e.g. into `less`).
    """
    from memcli.cli.lean import json_wanted

    st = state(ctx)
    st.json = json_wanted(flag)
    return st


def read_text_arg(text: str, what: str = "stdin") -> str:
    """A text argument, or the whole of stdin when it is `-` (strict UTF-8: invalid bytes are refused)."""
    if text != "-":
        return text
    from memcli.errors import ValidationError

    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{what} is not valid UTF-8 (byte {exc.start}); nothing was changed") from None


def with_namespace(ctx: typer.Context, namespace: str | None) -> State:
    """A command's --namespace flag overrides the configured namespace."""
    st = state(ctx)
    if namespace is not None:
        st.overrides["namespace"] = namespace
        st._config = None
        st._client = None
    return st


def usage_error(message: str, hint: str | None = None) -> Exception:
    """A usage error (exit 2) for flag combinations typer cannot express: ``raise usage_error(...)``."""
    return typer.BadParameter(message, param_hint=hint)
