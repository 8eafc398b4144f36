"""`memcli hook <event>`: run a Claude Code hook by hand, for debugging."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import typer

from memcli.cli.context import state
from memcli.cli.output import print_json
from memcli.errors import ValidationError

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")


def _event(name: str) -> str:
    for e in EVENTS:
        if e.lower() == name.lower().replace("-", "").replace("_", ""):
            return e
    raise typer.BadParameter(f"use one of {', '.join(EVENTS)}", param_hint="EVENT")


def register(app: typer.Typer) -> None:
    @app.command("hook")
    def hook(
        ctx: typer.Context,
        event: str = typer.Argument(..., help="SessionStart, UserPromptSubmit, Stop or SessionEnd."),
        prompt: str = typer.Option(None, "--prompt", help="Build a payload with this prompt instead of reading "
                                   "JSON from stdin (UserPromptSubmit; Stop with --reply)."),
        reply: str = typer.Option(None, "--reply", help="The assistant's reply (Stop, with --prompt)."),
        session: str = typer.Option("memcli-debug", "--session", help="session_id of a built payload."),
        client: bool = typer.Option(False, "--client", help="Go through the real hook client and the warm "
                                    "server (`python -m memcli.hooks EVENT`), as Claude Code does."),
    ) -> None:
        """Run one hook with a payload (JSON on stdin, as Claude Code sends it) and show what it does.

        By default the hook logic runs in this process (no server needed) and the result is printed with
        timings; --client runs the real hook command instead and prints exactly what Claude Code would get.

        Example: memcli hook UserPromptSubmit --prompt "which database does billing use?"
        """
        name = _event(event)
        if prompt is not None or reply is not None:
            payload: dict[str, Any] = {"session_id": session, "cwd": os.getcwd(), "hook_event_name": name,
                                       "transcript_path": ""}
            if prompt is not None:
                payload["prompt"] = prompt
            if reply is not None:
                payload.update(last_assistant_message=reply, stop_hook_active=False)
            if name == "SessionStart":
                payload["source"] = "startup"
            raw = json.dumps(payload, ensure_ascii=False)
        elif sys.stdin.isatty():
            raw = json.dumps({"session_id": session, "cwd": os.getcwd(), "hook_event_name": name,
                              "source": "startup", "transcript_path": ""})
        else:
            raw = sys.stdin.read()
        st = state(ctx)
        if client or st.config().api_url:  # team mode: the hook logic runs on the team server, not here
            env = dict(os.environ)
            if st.home is not None:
                env["MEMCLI_HOME"] = str(st.home)
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "memcli.hooks", name], input=raw.encode("utf-8"),
                                  capture_output=True, env=env)
            ms = (time.perf_counter() - t0) * 1000
            sys.stdout.write(proc.stdout.decode("utf-8", "replace"))
            typer.echo(f"[hook client: exit {proc.returncode}, {ms:.0f} ms]", err=True)
            return
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise ValidationError(f"stdin is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ValidationError("the payload must be a JSON object")
        from memcli.hooks.runtime import HookRuntime

        config = st.config()
        rt = HookRuntime(st.service, config)
        t0 = time.perf_counter()
        out = rt.handle(name, data)
        if name == "Stop":
            rt.drain()
        ms = (time.perf_counter() - t0) * 1000
        report: dict[str, Any] = {"event": name, "ms": round(ms, 1), "output": out}
        for k in ("project", "injected", "skipped", "error"):
            if k in rt.last:
                report[k] = rt.last[k]
        if "captures" in rt.last:
            report["captures"] = [{"status": c.status, "reason": c.reason, "memory_id": c.memory_id,
                                   "content": c.content} for c in rt.last["captures"]]
        print_json(report)
