"""`memcli serve`: one warm process serving REST (/api), MCP over Streamable HTTP (/mcp) and the hooks."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, List, Optional

import typer

from memcli.cli.context import state, with_namespace

if TYPE_CHECKING:
    from memcli.config import Config


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        ctx: typer.Context,
        host: Optional[str] = typer.Option(None, "--host", help="Address to bind (default 127.0.0.1: this machine "
                                           "only). Clients always need the token: MEMCLI_TOKEN when set, else "
                                           "the home's (<home>/auth.json)."),
        port: Optional[int] = typer.Option(None, "--port", "-p", help="Port (default from config, 8765; "
                                           "env MEMCLI_PORT). 0 picks a free one (see <home>/server.json)."),
        idle_timeout: Optional[float] = typer.Option(None, "--idle-timeout", help="Exit after this many seconds "
                                                     "without a request (0 = never)."),
        allow_origin: Optional[List[str]] = typer.Option(None, "--allow-origin", help="Also accept requests from "
                                                         "this browser Origin (repeatable); loopback origins "
                                                         "are always accepted."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Default namespace."),
        log_level: str = typer.Option("info", "--log-level", help="debug, info, warning or error."),
        ssl_certfile: Optional[str] = typer.Option(None, "--ssl-certfile", help="Serve HTTPS with this certificate "
                                                   "(PEM; a team server without a TLS proxy in front)."),
        ssl_keyfile: Optional[str] = typer.Option(None, "--ssl-keyfile", help="The certificate's private key (PEM)."),
        single_writer: Optional[bool] = typer.Option(None, "--single-writer", help="On object storage: skip the "
                                                     "conditional-PUT check, knowing that this is the only "
                                                     "process writing to the store (config: \\[server] "
                                                     "single_writer)."),
    ) -> None:
        """Serve the memory over HTTP: REST under /api, MCP at /mcp, GET /health; every route but /health needs
        Authorization: Bearer <token>.

        Example: memcli serve --port 8765   (then `memcli setup --print --http` prints each agent's entry)
        """
        from memcli.server.holder import setup_file_logging
        from memcli.server.run import serve as run_server

        st = state(ctx)
        with_namespace(ctx, namespace)
        config = st.config()
        level = getattr(logging, log_level.upper(), None)
        if not isinstance(level, int):
            raise typer.BadParameter("use debug, info, warning or error", param_hint="--log-level")
        setup_file_logging(config, "server", level=level, stderr_level=level)
        if (ssl_certfile is None) != (ssl_keyfile is None):
            raise typer.BadParameter("give both --ssl-certfile and --ssl-keyfile", param_hint="--ssl-certfile")
        if "://" in config.data_uri:
            _check_object_store(config, single_writer)
        code = run_server(config, host=host, port=port, idle_timeout=idle_timeout, allowed_origins=allow_origin,
                          log_level=log_level.lower(), ssl=(ssl_certfile, ssl_keyfile) if ssl_certfile else None)
        if code:
            raise typer.Exit(code)


def _check_object_store(config: "Config", single_writer: Optional[bool]) -> None:
    """Several replicas may share an object-store dataset only if the store refuses to overwrite a commit
    (objectstore.py): check it once at startup, and refuse to serve when it does not."""
    from memcli.errors import MemcliError
    from memcli.memory.objectstore import check_conditional_put

    log = logging.getLogger("memcli.server")
    if single_writer or (single_writer is None and config.server.single_writer):
        log.warning("--single-writer: conditional PUT not checked on %s; run no other writer on this store",
                    config.data_uri)
        return
    try:
        log.info("object store: %s", check_conditional_put(config.data_uri, config.storage_options))
    except MemcliError as exc:
        log.error("memcli serve refuses to start: %s", exc.message)
        raise typer.Exit(1) from None
