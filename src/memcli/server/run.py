"""Running ``memcli serve``: uvicorn, the ``<home>/server.json`` discovery file, idle exit, clean SIGTERM.

A stop on request (the idle timeout, SIGTERM, SIGINT) exits 0 once the writes in flight are done and the
server's own threads are joined (:meth:`ServiceHolder.shutdown`); when one of them cannot be joined in time
(stuck in a store that does not answer), the process ends without finalizing the interpreter under it
(:func:`memcli.server.workers.end_process`): finalizing under a thread inside native code aborts the process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.home import SERVER_FILE, read_server_file
from memcli.server.holder import SHUTDOWN_WAIT
from memcli.server.workers import end_process

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.server.holder import ServiceHolder

log = logging.getLogger("memcli.server")
MIN_NETWORK_TOKEN = 16  # characters of an admin token that a non-loopback bind accepts
GRACEFUL_SECONDS = 5.0  # open MCP streams are cut after this; writes in flight always finish (ServiceHolder)


def server_file(home: Path) -> Path:
    return home / SERVER_FILE


def _write_server_file(home: Path, info: dict[str, Any]) -> None:
    from memcli.home import PRIVATE_FILE, private_dir

    private_dir(home)
    path = server_file(home)
    tmp = path.with_name(f".{SERVER_FILE}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(info))
    os.chmod(tmp, PRIVATE_FILE)  # O_CREAT's mode does not apply to a leftover temp file
    os.replace(tmp, path)


def _remove_server_file(home: Path) -> None:
    """Remove server.json only if it is ours (a second server may have replaced it)."""
    info = read_server_file(home)
    if info is not None and info.get("pid") == os.getpid():
        try:
            server_file(home).unlink()
        except OSError:
            pass


def _end_threads(holder: "ServiceHolder", *, forced: bool, code: int) -> None:
    """Stop and join the server's threads (done already by the app's shutdown, unless uvicorn skipped it: a
    second Ctrl-C, a port it could not bind); one still running ends the process here, with ``code``."""
    stuck = holder.shutdown(timeout=0.0 if forced else SHUTDOWN_WAIT)
    if stuck:
        log.warning("exiting with %s still running (not joined in time): the process ends without waiting",
                    ", ".join(stuck))
        end_process(code)


def serve(config: "Config", *, host: str | None = None, port: int | None = None,
          idle_timeout: float | None = None, allowed_origins: list[str] | None = None,
          log_level: str = "info", ssl: tuple[str, str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT (or the idle timeout). Returns the exit code."""
    import uvicorn

    from memcli.home import auth_path, load_or_create_auth, secure_home
    from memcli.server.app import LOOPBACK_HOSTS, create_app

    host = host or config.server.host
    port = config.server.port if port is None else port
    idle = config.server.idle_timeout if idle_timeout is None else idle_timeout
    secure_home(config.home)
    auth = load_or_create_auth(config.home)
    token = config.server.token or auth.token
    if host not in LOOPBACK_HOSTS and len(token or "") < MIN_NETWORK_TOKEN:
        # beyond this machine the admin token is all that stands between the network and every memory
        log.error("refusing to listen on %s: the admin token (MEMCLI_TOKEN / [server] token) is empty or shorter "
                  "than %d characters; unset it to use the home's generated one", host, MIN_NETWORK_TOKEN)
        return 2
    if host not in LOOPBACK_HOSTS and ssl is None:
        # The token is always required; beyond this machine it also travels the network in clear text.
        where = "MEMCLI_TOKEN / [server] token" if config.server.token else f"{auth_path(config.home)}"
        log.warning("serving on %s: clients need the bearer token (%s); plain HTTP carries it unencrypted, so "
                    "put a TLS proxy in front of this server beyond a trusted network.", host, where)

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.should_exit or not self.servers:
                return
            bound = self.servers[0].sockets[0].getsockname()[1]
            _write_server_file(config.home, {"pid": os.getpid(), "port": bound, "host": host,
                                             "started_at": int(time.time() * 1000)})
            log.info("memcli serve: http://%s:%d (pid %d, store %s)", host, bound, os.getpid(), config.data_uri)

        def handle_exit(self, sig: int, frame: Any) -> None:
            app.state.holder.begin_close()  # writes waiting for an opening store answer now, not at the cancel
            super().handle_exit(sig, frame)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                try:
                    yield
                finally:
                    # uvicorn raises a caught SIGTERM/SIGINT again once it has shut down: the process would die
                    # of it (exit -15, a KeyboardInterrupt). A stop asked for and carried out is a success: 0.
                    getattr(self, "_captured_signals", []).clear()

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # Here, not only in `finally`: uvicorn re-raises a caught SIGTERM once it has shut down.
            _remove_server_file(config.home)
            await super().shutdown(sockets)

    server: Server

    def stop() -> None:
        app.state.holder.begin_close()
        server.should_exit = True

    app = create_app(config, host=host, idle_timeout=idle or None, on_idle=stop, allowed_origins=allowed_origins,
                     auth=auth)
    uv_config = uvicorn.Config(app, host=host, port=port, log_config=None, log_level=log_level, access_log=False,
                               timeout_graceful_shutdown=GRACEFUL_SECONDS, lifespan="on",
                               **({"ssl_certfile": ssl[0], "ssl_keyfile": ssl[1]} if ssl else {}))
    server = Server(uv_config)
    try:
        server.run()
    except SystemExit:  # uvicorn exits (code 3) when it cannot bind
        if server.started:
            _remove_server_file(config.home)
            _end_threads(app.state.holder, forced=True, code=1)
            raise
    finally:
        _remove_server_file(config.home)
    if not server.started:
        other = read_server_file(config.home)
        hint = f" (memcli serve pid {other['pid']} is on port {other.get('port')})" if other else ""
        log.error("could not listen on %s:%s%s", host, port, hint)
        _end_threads(app.state.holder, forced=False, code=1)  # the store was being opened meanwhile
        return 1
    _end_threads(app.state.holder, forced=server.force_exit, code=0)
    return 0
