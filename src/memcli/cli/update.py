"""`memcli update`: change a memory (content, tags, importance, scope, metadata, expiry)."""

from __future__ import annotations

from typing import List, Optional

import typer

from memcli.cli.context import read_text_arg, usage_error, use_json, with_namespace
from memcli.cli.output import emit, memory_detail, out


def register(app: typer.Typer) -> None:
    @app.command("update")
    def update(
        ctx: typer.Context,
        memory_id: str = typer.Argument(..., metavar="ID", help="The id, or a unique part of it (≥ 4 hex digits)."),
        content: Optional[str] = typer.Option(None, "--content", "-c", help="New text (re-embedded), or - for stdin."),
        tag: Optional[List[str]] = typer.Option(None, "--tag", "-t", help="New tags, replacing the old ones (repeatable)."),
        clear_tags: bool = typer.Option(False, "--clear-tags", help="Remove every tag."),
        importance: Optional[float] = typer.Option(None, "--importance", "-i", help="0.0 .. 1.0"),
        scope: Optional[str] = typer.Option(None, "--scope", help="'global' or 'agent:NAME'."),
        agent: Optional[str] = typer.Option(None, "--agent", help="Move to this agent's scope (agent:NAME)."),
        metadata: Optional[str] = typer.Option(None, "--metadata", help="A JSON object, replacing the old metadata."),
        ttl: Optional[str] = typer.Option(None, "--ttl", help="Expire after this long from now: 30m, 12h, 7d; 'never' keeps it for good."),
        expected_version: Optional[int] = typer.Option(None, "--expected-version",
                                                       help="Refuse the change unless the memory is still at this version."),
        keep_secrets: bool = typer.Option(
            False, "--keep-secrets", help="Store the text exactly as given (by default API keys, tokens, "
            "passwords and private keys are replaced by [REDACTED:kind]); noted in the audit log."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="The namespace the memory is in "
                                                "(default: MEMCLI_NAMESPACE, else the config's)."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Change a memory of your namespace; its version goes up by one.

        Example: memcli update 3f9a1c2e --tag decision --tag db --importance 0.9
        """
        st = use_json(ctx, json_)
        if tag and clear_tags:
            raise usage_error("give one of them, not both", "--tag / --clear-tags")
        tags = [] if clear_tags else (tag or None)
        if content is None and tags is None and importance is None and scope is None and agent is None \
                and metadata is None and ttl is None:
            raise usage_error(
                "nothing to change: give --content, --tag, --clear-tags, --importance, --scope, --agent, "
                "--metadata or --ttl")
        with_namespace(ctx, namespace)
        mem = st.client().update(
            memory_id, content=read_text_arg(content) if content is not None else None, tags=tags,
            importance=importance, scope=scope, agent=agent, metadata=metadata, ttl=ttl,
            expected_version=expected_version, **({"keep_secrets": True} if keep_secrets else {}))
        emit({"ok": True, "memory_id": mem.id, "version": mem.version, "memory": mem.item()}, st.json,
             lambda d: (out.print(f"[green]Updated[/green] {d['memory_id']} (version {d['version']})"),
                        memory_detail(d["memory"])))
