"""`memcli setup`: connect this machine's agents to memcli (interactive, or scripted with --yes)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

from memcli.cli.context import state


def register(app: typer.Typer) -> None:
    @app.command("setup")
    def setup(
        ctx: typer.Context,
        yes: bool = typer.Option(False, "--yes", "-y", help="No prompts: use the flags and defaults, apply at once."),
        home: Optional[Path] = typer.Option(None, "--home", help="memcli's home (config + data)."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Default namespace to write."),
        embedder: Optional[str] = typer.Option(None, "--embedder", help="local (default, bundled), openai "
                                               "(any OpenAI-compatible API) or jina."),
        embed_base_url: Optional[str] = typer.Option(None, "--embed-base-url", help="Embeddings API base URL."),
        embed_model: Optional[str] = typer.Option(None, "--embed-model", help="Embeddings model name."),
        embed_dims: Optional[int] = typer.Option(None, "--embed-dims", help="Embedding dimensions to request."),
        embed_api_key: Optional[str] = typer.Option(None, "--embed-api-key", envvar="MEMCLI_EMBED_API_KEY",
                                                    help="API key (stored in the config file, mode 600)."),
        no_embed_test: bool = typer.Option(False, "--no-embed-test", help="Do not test a remote embedder now."),
        agents: Optional[str] = typer.Option(None, "--agents", help="Comma-separated: claude-code, codex, gemini, "
                                             "antigravity, claude-desktop, openclaw, or all (default: the ones "
                                             "found on this machine)."),
        claude_hooks: str = typer.Option("auto", "--claude-hooks", help="Claude Code hooks: auto (settings.json "
                                         "unless the memcli plugin is installed), settings, plugin (print the "
                                         "install lines) or none."),
        no_cli: bool = typer.Option(False, "--no-cli", help="Edit config files even when `claude`/`openclaw` "
                                    "CLIs are on PATH."),
        print_: bool = typer.Option(False, "--print", help="Print each agent's config snippet; change nothing."),
        http: bool = typer.Option(False, "--http", help="With --print: the MCP-over-HTTP entries for a running "
                                  "`memcli serve` instead, with this home's bearer token."),
        uninstall: bool = typer.Option(False, "--uninstall", help="Remove exactly what setup added."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Show what would change; change nothing."),
        schedule: Optional[str] = typer.Option(None, "--schedule", help="Only schedule `memcli distill --apply`: "
                                               "hourly, daily, or off (crontab on Linux, launchd on macOS)."),
        server: Optional[str] = typer.Option(None, "--server", help="Team mode: the memcli server every face "
                                             "(CLI, hooks, MCP) of this machine uses, e.g. https://memory.acme.dev"),
        token: Optional[str] = typer.Option(None, "--token", help="With --server: this agent's space token "
                                            "(`memcli space token add`); stored in the config file, mode 600."),
    ) -> None:
        """Connect your agents to memcli: MCP for every agent, hooks for Claude Code. Shows each change first;
        a second run changes nothing; --uninstall removes exactly what it added.

        Examples: memcli setup    |    memcli setup --yes --agents claude-code,codex    |    memcli setup --print
        """
        from rich.console import Console

        from memcli.config import default_home, load_config
        from memcli.setup.agents import AGENTS, Machine, resolve_agent_ids
        from memcli.setup.core import SetupOptions, plan_install, plan_uninstall
        from memcli.setup.snippets import snippets

        con = Console(highlight=False)
        st = state(ctx)
        home_dir = (home or st.home or load_config(None).home).expanduser().resolve()
        machine = Machine.current(home_dir, default_home())
        interactive = not yes and sys.stdin.isatty() and not print_ and not dry_run
        if claude_hooks not in ("auto", "settings", "plugin", "none"):
            raise typer.BadParameter("use auto, settings, plugin or none", param_hint="--claude-hooks")

        if schedule is not None:
            from memcli.setup.schedule import apply_schedule

            res = apply_schedule(schedule.strip().lower(), home_dir)
            verb = ("removed" if res.schedule == "off" else "installed") if res.changed else "already as asked"
            con.print(f"memcli distill schedule [bold]{res.schedule}[/bold]: {verb} ({res.where})")
            return

        if uninstall:
            plan = plan_uninstall(machine, use_cli=not no_cli)
            _show(con, plan, title="memcli setup --uninstall")
            _confirm_and_apply(con, plan, yes=yes, interactive=interactive, dry_run=dry_run)
            return

        found = {a: AGENTS[a].detect(machine) for a in AGENTS}
        chosen = resolve_agent_ids(agents.split(",")) if agents else None
        if http and not print_:
            raise typer.BadParameter("only with --print (setup writes the stdio entry)", param_hint="--http")
        if (server is None) != (token is None):
            raise typer.BadParameter("give both --server URL and --token TOKEN", param_hint="--server/--token")
        if server is not None and token is not None:
            server = _check_server(con, server, token, check=not (print_ or dry_run))
        if print_:
            ids = chosen or [a for a in AGENTS if found[a][0]] or list(AGENTS)
            if http:
                from memcli.home import load_or_create_auth
                from memcli.setup.snippets import http_snippets

                cfg = load_config(home_dir)
                if server is None and cfg.api_url and cfg.api_token:  # this home is in team mode already
                    server, token = cfg.api_url.rstrip("/"), cfg.api_token
                if server is not None and token is not None:  # the agents talk to the team server directly
                    texts = http_snippets(machine, ids, url=f"{server}/mcp", token=token)
                else:
                    from memcli.home import running_server

                    local = cfg.server.token or load_or_create_auth(home_dir).token
                    # the port the home's server runs on (server.json), else the one it would start on
                    port = (running_server(home_dir) or (cfg.server.port,))[0]
                    texts = http_snippets(machine, ids, url=f"http://127.0.0.1:{port}/mcp", token=local)
            else:
                texts = snippets(machine, ids, claude_hooks="none" if claude_hooks == "none" else "settings")
            for agent, text in texts.items():
                con.rule(f"[bold]{AGENTS[agent].name}")
                con.print(text, markup=False, soft_wrap=True)  # copied as is: never wrapped
            return

        emb = _embedder_values(embedder, embed_base_url, embed_model, embed_dims, embed_api_key)
        if interactive:
            from rich.prompt import Confirm, Prompt

            con.print("[bold]memcli setup[/bold]: one memory for all of your agents\n")
            if home is None:
                home_dir = Path(Prompt.ask("memcli home (config and memories)", default=str(home_dir)))
                home_dir = home_dir.expanduser().resolve()
                machine = Machine.current(home_dir, default_home())
        current = load_config(home_dir, env={})
        if interactive:
            namespace = Prompt.ask("Namespace (the shared pool every agent reads and writes)",
                                   default=namespace or current.namespace)
            provider = Prompt.ask("Embedder", choices=["local", "openai", "jina"],
                                  default=embedder or (current.embedder.provider if current.embedder.provider in
                                                       ("local", "openai", "jina") else "local"))
            if provider != "local":
                same = current.embedder.provider == provider
                emb = _embedder_values(
                    provider,
                    Prompt.ask("API base URL", default=embed_base_url or (current.embedder.base_url if same else None)
                               or ("https://api.openai.com/v1" if provider == "openai" else "https://api.jina.ai/v1")),
                    Prompt.ask("Model", default=embed_model or (current.embedder.model if same else None)
                               or ("text-embedding-3-small" if provider == "openai" else "jina-embeddings-v3")),
                    embed_dims or (current.embedder.dims if same else None),
                    Prompt.ask("API key (empty for none)", password=True,
                               default=embed_api_key or (current.embedder.api_key if same else None) or "",
                               show_default=False) or None)
            elif provider != current.embedder.provider:
                emb = {"provider": "local"}
            if emb and emb["provider"] != "local" and not no_embed_test:
                if not _test_embedder(con, emb) and not Confirm.ask("Use it anyway?", default=False):
                    raise typer.Exit(1)
            table = _agents_table(found)
            con.print(table)
            chosen = chosen or [a for a in AGENTS if found[a][0] and
                                Confirm.ask(f"Connect {AGENTS[a].name}?", default=True)]
        else:
            if emb and emb["provider"] not in ("local", "hash") and not no_embed_test and not dry_run:
                if not _test_embedder(con, emb):
                    raise typer.Exit(1)
            if chosen is None:
                chosen = [a for a in AGENTS if found[a][0]]
        if namespace == current.namespace:
            namespace = None  # unchanged: nothing to write
        opts = SetupOptions(agents=chosen, namespace=namespace, embedder=emb, claude_hooks=claude_hooks,
                            use_cli=not no_cli, api_url=server, api_token=token)
        plan = plan_install(machine, opts)
        if not chosen:
            plan.note("memcli", "no agent found on this machine: name them with --agents (see memcli setup --print)")
        if emb and (home_dir / "data").exists() and emb.get("provider") != current.embedder.provider:
            plan.note("memcli", "the embedder changed: run `memcli reindex` to re-embed the memories already stored")
        if machine.server_env and load_config(None).home.expanduser().resolve() != home_dir:
            plan.note("memcli", f"the agents get MEMCLI_HOME={home_dir}; for your shell: export MEMCLI_HOME={home_dir}")
        _show(con, plan, title="memcli setup")
        _confirm_and_apply(con, plan, yes=yes, interactive=interactive, dry_run=dry_run)


def _check_server(con: Any, server: str, token: str, *, check: bool) -> str:
    """The server URL, normalised; with ``check``, proven to accept this token (else exit 1)."""
    from memcli.errors import MemcliError
    from memcli.team.remote import Endpoint, RemoteService

    try:
        ep = Endpoint.from_url(server, token)
    except MemcliError as exc:
        raise typer.BadParameter(exc.message, param_hint="--server") from None
    if check:
        try:
            health = RemoteService(ep, namespace="default", strict=True).request("GET", "/health")
        except MemcliError as exc:
            con.print(f"[red]✗[/red] {exc.message}")
            raise typer.Exit(1) from None
        if not isinstance(health, dict) or not (health.get("space_id") or health.get("home_id")):
            con.print(f"[red]✗[/red] the memcli server at {ep.url} did not accept this token")
            raise typer.Exit(1)
        where = f"space {health['space_id']} as {health.get('agent')}" if health.get("space_id") else "admin"
        con.print(f"[green]✓[/green] {ep.url} answers ({where})")
    return ep.url


def _embedder_values(provider: str | None, base_url: str | None, model: str | None, dims: int | None,
                     api_key: str | None) -> dict[str, Any] | None:
    if provider is None:
        return None
    if provider not in ("local", "openai", "jina", "hash"):
        raise typer.BadParameter("use local, openai or jina", param_hint="--embedder")
    if provider == "local":
        return {"provider": "local"}
    return {"provider": provider, "base_url": base_url, "model": model, "dims": dims, "api_key": api_key}


def _test_embedder(con: Any, values: dict[str, Any]) -> bool:
    from memcli.errors import MemcliError
    from memcli.setup.core import check_embedder

    with con.status("Testing the embedder…"):
        try:
            con.print(f"[green]✓[/green] {check_embedder(values)}")
            return True
        except MemcliError as exc:
            con.print(f"[red]✗ the embedder did not answer:[/red] {exc.message}")
            return False


def _agents_table(found: dict[str, tuple[bool, str]]) -> Any:
    from rich.table import Table

    from memcli.setup.agents import AGENTS

    t = Table(title="Agents on this machine", header_style="bold")
    t.add_column("agent")
    t.add_column("found")
    t.add_column("where")
    for a, (ok, where) in found.items():
        t.add_row(AGENTS[a].name, "[green]yes[/green]" if ok else "[dim]no[/dim]", where)
    return t


def _show(con: Any, plan: Any, *, title: str) -> None:
    from rich.markup import escape
    from rich.syntax import Syntax

    from memcli.setup.agents import AGENTS

    con.rule(f"[bold]{title}")
    names = {**{a: AGENTS[a].name for a in AGENTS}, "memcli": "memcli"}
    for agent in sorted(set(plan.notes) | set(plan.errors), key=lambda a: list(names).index(a) if a in names else 99):
        for line in plan.notes.get(agent, []):
            con.print(f"[cyan]{names.get(agent, agent)}[/cyan]: {escape(line)}")
        if agent in plan.errors:
            con.print(f"[yellow]{names.get(agent, agent)}: skipped[/yellow] — {escape(plan.errors[agent])}")
    for ch in plan.files + plan.late_files:  # late files: put back after the commands rewrote them
        con.print(f"\n[bold]{ch.action}[/bold] {escape(str(ch.path))}")
        diff = ch.diff()
        if diff:
            con.print(Syntax(diff, "diff", theme="ansi_dark", word_wrap=True))
    for step in plan.commands:
        con.print(f"\n[bold]run[/bold] {escape(step.shell())}")
    if plan.empty:
        con.print("\n[green]Nothing to change.[/green]" + (" (setup state updated)" if plan.state else ""))


def _confirm_and_apply(con: Any, plan: Any, *, yes: bool, interactive: bool, dry_run: bool) -> None:
    from memcli.setup.core import apply_plan

    if dry_run:
        con.print("\n[dim]Dry run: nothing was written.[/dim]")
        return
    if plan.empty and plan.state is None:
        return
    if not plan.empty and not yes:
        if not interactive:
            con.print("\n[yellow]Nothing written:[/yellow] no terminal to confirm on; re-run with --yes to apply.")
            raise typer.Exit(1)
        from rich.prompt import Confirm

        if not Confirm.ask("\nApply these changes?", default=True):
            con.print("Nothing written.")
            raise typer.Exit(1)
    from rich.markup import escape

    result = apply_plan(plan)
    for path in result.written:
        con.print(f"[green]✓[/green] {'wrote' if path.exists() else 'removed'} {escape(str(path))}")
    if result.backups:
        con.print(f"[dim]backups of the changed files: {_common_dir(result.backups)}[/dim]")
    for cmd, code, out in result.commands:
        mark = "[green]✓[/green]" if code == 0 else f"[red]✗ (exit {code})[/red]"
        con.print(f"{mark} {escape(cmd)}" + (f"\n  {escape(out)}" if out and code else ""))
    if not result.ok:
        raise typer.Exit(1)
    if plan.files or plan.commands:
        con.print("\nDone. Restart the agents whose config changed so they pick it up.")


def _common_dir(paths: list[Path]) -> Path:
    import os

    return Path(os.path.commonpath([str(p.parent) for p in paths]))
