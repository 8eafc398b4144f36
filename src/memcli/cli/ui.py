"""`memcli ui`: open the web view of this home's server in the browser, signed in by a one-time link.

Like Jupyter's: the link carries a login code (2 minutes, single use) that the page trades for a browser
session; the home's token itself never goes into a URL or the browser (see :mod:`memcli.web.sessions`).
The server is the one the CLI and the hooks use (``<home>/server.json``); when none runs, it is started the
way the hooks start it (detached, idle exit after 30 minutes without requests).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

import typer

from memcli.cli.context import use_json
from memcli.cli.output import emit
from memcli.errors import MemcliError

if TYPE_CHECKING:
    from memcli.config import Config

START_WAIT_S = 60.0  # a cold server opens the store and loads the model first


class UiError(MemcliError):
    """The web view could not be opened (no server of this home came up, or it refused)."""

    code = "ui_unavailable"


def _own_server_port(config: "Config") -> int | None:
    """The port of this home's running server when it answers as this home's, else None."""
    from memcli.team.remote import RemoteService, Unavailable

    remote = RemoteService.for_home(config)
    if remote is None:
        return None
    try:
        remote.health()
    except Unavailable:
        return None
    return remote.endpoint.port


def ensure_server(config: "Config", wait_s: float = START_WAIT_S) -> int:
    """This home's server's port, starting it the way the hooks do when none answers."""
    port = _own_server_port(config)
    if port is not None:
        return port
    import os

    from memcli.home import load_or_create_auth
    from memcli.hooks import client, transport

    # The server inherits this environment: it must open this home (`--home` too) with this token.
    os.environ["MEMCLI_HOME"] = str(config.home)
    if config.server.token:
        os.environ["MEMCLI_TOKEN"] = config.server.token
    load_or_create_auth(config.home)  # the server would create it too; the client needs it to recognise it
    s = transport.resolve_settings(os.environ)
    wanted = config.server.port
    client.start_server(s, 0 if client.port_taken(wanted) else wanted)
    port = client.wait_own_server(s, time.monotonic() + wait_s)
    if port is None:
        raise UiError(f"no memcli server of this home answered within {wait_s:.0f}s; see "
                      f"{config.home / 'logs' / 'server.log'} (or start one: memcli serve)")
    return port


def mint_login_url(config: "Config", port: int) -> dict[str, Any]:
    """Ask the server (with the home's token) for a one-time login code; the link and when it expires."""
    from memcli.home import read_auth
    from memcli.team.remote import Endpoint, RemoteService, Unavailable

    auth = read_auth(config.home)
    if auth is None:
        raise UiError(f"{config.home / 'auth.json'} is missing: start the server once (memcli serve)")
    remote = RemoteService(Endpoint(port=port, token=config.server.token or auth.token, home_id=auth.home_id),
                           namespace=config.namespace)
    try:
        d = remote._request("POST", "/api/ui/codes", body={})
    except Unavailable as exc:
        raise UiError(f"the server on port {port} did not give a login code ({exc}); is it an older memcli? "
                      "Restart it: memcli serve") from None
    url = f"http://127.0.0.1:{port}/?code={d['code']}"
    return {"ok": True, "url": url, "port": port, "expires_at": d["expires_at"]}


def register(app: typer.Typer) -> None:
    @app.command("ui")
    def ui(
        ctx: typer.Context,
        no_browser: bool = typer.Option(False, "--no-browser", help="Print the sign-in link instead of opening "
                                        "a browser (it works once, for 2 minutes)."),
        json_: bool = typer.Option(False, "--json", help="Print JSON ({ok, url, port, expires_at})."),
    ) -> None:
        """Open the web view (browse, search, edit and forget memories; the distill plan) in your browser.

        Starts this home's server when none runs. The one-time link signs the browser in; no token in URLs.

        Example: memcli ui          memcli ui --no-browser
        """
        st = use_json(ctx, json_)
        config = st.config()
        info = mint_login_url(config, ensure_server(config))
        opened = False
        if not no_browser:
            import webbrowser

            try:
                opened = webbrowser.open(info["url"])
            except webbrowser.Error:
                opened = False
        info["opened"] = opened
        if st.json:
            emit(info, True)
            return
        if opened:
            print(f"opened the memcli web view: {info['url']}", file=sys.stderr)
            print("(the link signs in once, within 2 minutes; run memcli ui again for a new one)", file=sys.stderr)
        else:
            print(info["url"])
            print("open this link in a browser on this machine: it signs in once, within 2 minutes",
                  file=sys.stderr)

