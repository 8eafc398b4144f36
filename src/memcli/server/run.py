"""Running ``memcli serve``: uvicorn, the ``<home>/server.json`` discovery file, idle exit, clean SIGTERM."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcli.config import Config

log = logging.getLogger("memcli.server")
SERVER_FILE = "server.json"
GRACEFUL_SECONDS = 5.0  # open MCP streams are cut after this; writes in flight always finish (ServiceHolder)


def server_file(home: Path) -> Path:
    return home / SERVER_FILE


def read_server_file(home: Path) -> dict[str, Any] | None:
    """What a running server wrote about itself (pid, port, host, started_at), or None."""
    try:
        data = json.loads(server_file(home).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_server_file(home: Path, info: dict[str, Any]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    path = server_file(home)
    tmp = path.with_name(f".{SERVER_FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(info), encoding="utf-8")
    os.replace(tmp, path)


def _remove_server_file(home: Path) -> None:
    """Remove server.json only if it is ours (a second server may have replaced it)."""
    info = read_server_file(home)
    if info is not None and info.get("pid") == os.getpid():
        try:
            server_file(home).unlink()
        except OSError:
            pass


def serve(config: "Config", *, host: str | None = None, port: int | None = None,
          idle_timeout: float | None = None, allowed_origins: list[str] | None = None,
          log_level: str = "info") -> int:
    """Serve until SIGTERM/SIGINT (or the idle timeout). Returns the exit code."""
    import uvicorn

    from memcli.server.app import LOOPBACK_HOSTS, create_app

    host = host or config.server.host
    port = config.server.port if port is None else port
    idle = config.server.idle_timeout if idle_timeout is None else idle_timeout
    if host not in LOOPBACK_HOSTS and not config.server.token:
        log.warning("serving on %s without a token: anyone who can reach this port can read and write every "
                    "memory. Set MEMCLI_TOKEN (or [server] token) for team use.", host)

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.should_exit or not self.servers:
                return
            bound = self.servers[0].sockets[0].getsockname()[1]
            _write_server_file(config.home, {"pid": os.getpid(), "port": bound, "host": host,
                                             "started_at": int(time.time() * 1000)})
            log.info("memcli serve: http://%s:%d (pid %d, store %s)", host, bound, os.getpid(), config.data_uri)

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # Here, not only in `finally`: uvicorn re-raises a caught SIGTERM once it has shut down.
            _remove_server_file(config.home)
            await super().shutdown(sockets)

    server: Server

    def stop() -> None:
        server.should_exit = True

    app = create_app(config, host=host, idle_timeout=idle or None, on_idle=stop, allowed_origins=allowed_origins)
    uv_config = uvicorn.Config(app, host=host, port=port, log_config=None, log_level=log_level, access_log=False,
                               timeout_graceful_shutdown=GRACEFUL_SECONDS, lifespan="on")
    server = Server(uv_config)
    try:
        server.run()
    except SystemExit:  # uvicorn exits (code 3) when it cannot bind
        if server.started:
            raise
    finally:
        _remove_server_file(config.home)
    if not server.started:
        other = read_server_file(config.home)
        hint = f" (memcli serve pid {other['pid']} is on port {other.get('port')})" if other else ""
        log.error("could not listen on %s:%s%s", host, port, hint)
        return 1
    return 0
