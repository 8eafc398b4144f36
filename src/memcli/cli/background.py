"""Starting this home's ``memcli serve`` in the background, for the next command (and the hooks) to find warm.

The same start the hook client makes (:func:`memcli.hooks.client.start_server`): detached, output appended to
``<home>/logs/server.log``, on the configured port when it is free (else any free one: ``server.json`` says
which), exiting after ``[server] autostart_idle_timeout`` seconds without a request; and not at all when
another command or hook started one less than :data:`START_GRACE_S` seconds ago that still runs (the stamp and
pid files they share).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcli.config import Config

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
        cmd = [sys.executable, "-m", "memcli.cli", "--home", str(home), "serve", "--port", str(port),
               "--idle-timeout", f"{config.server.autostart_idle_timeout:g}"]
        env = {k: v for k, v in os.environ.items() if k not in ("MEMCLI_NO_SERVER", "MEMCLI_JSON")}
        with open(logs / "server.log", "ab") as out:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True, close_fds=True, cwd=str(home))
        home.joinpath(*PID_FILE).write_text(str(proc.pid), encoding="utf-8")
        return True
    except OSError:
        return False
