"""The agents' hot path: ``memcli recall|get|remember|forget`` with plain flags and JSON output, answered by
this home's warm server without importing typer or rich.

A shell tool, a skill or a script calls ``memcli`` many times a minute and reads JSON (its stdout is a pipe).
typer alone costs ~70 ms of imports per process, more than the server takes to answer; this path parses the
few flags of these commands itself and sends the same call through the same client
(:class:`memcli.cli.client.Client` over :class:`memcli.team.remote.RemoteService`), so results, errors and exit
codes are the typer app's. Whenever it is not sure, it steps aside and the typer app runs the command:
help, a flag or form it does not know, a value it cannot convert, human output, ``--no-server``, team mode,
no server running, a server that cannot answer before anything was sent. tests/test_cli_fast.py runs the
same command lines both ways and compares them; ``MEMCLI_FAST=0`` turns this path off.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing and dataclasses cost ~20 ms of a process that lives ~60 ms
if TYPE_CHECKING:
    from typing import Any

FLAG, VALUE, MULTI = "flag", "value", "multi"  # an option's kind: --json; --agent X; --tag X --tag Y


class Spec:
    """The part of a typer command the fast path understands: its options (every name → (destination,
    kind, converter)), how many positional arguments it takes (1, or "1+") and the options' defaults."""

    def __init__(self, options: dict[str, tuple[str, str, Any]], positional: str = "1",
                 defaults: dict[str, Any] | None = None) -> None:
        self.options, self.positional, self.defaults = options, positional, defaults or {}


def _opts(*rows: tuple[str, str, str, Any]) -> dict[str, tuple[str, str, Any]]:
    """Rows of (names separated by '|', destination, kind, converter) → the options table."""
    out: dict[str, tuple[str, str, Any]] = {}
    for names, dest, kind, conv in rows:
        for name in names.split("|"):
            out[name] = (dest, kind, conv)
    return out


def _int(value: str) -> int:
    """memcli.cli.coerce's int for the plain cases ("7", " +7 ", "1_000"); anything else ("3.0", non-ASCII
    digits) raises, and the typer app converts it (or refuses it) itself."""
    if not value.isascii() or "." in value:
        raise ValueError(value)
    return int(value)


def _float(value: str) -> float:
    """memcli.cli.coerce's float: ASCII only."""
    if not value.isascii():
        raise ValueError(value)
    return float(value.strip())


_JSON = ("--json", "json_", FLAG, None)
_NS = ("--namespace|-n", "namespace", VALUE, str)
SPECS: dict[str, Spec] = {
    "recall": Spec(_opts(
        ("--top-k|-k", "top_k", VALUE, _int), ("--agent", "agent", VALUE, str), ("--scope", "scope", VALUE, str),
        ("--tag|-t", "tag", MULTI, str), ("--since", "since", VALUE, str), ("--until", "until", VALUE, str),
        ("--as-of", "as_of", VALUE, str),
        ("--project", "project", VALUE, str), ("--include-expired", "include_expired", FLAG, None),
        ("--include-archived", "include_archived", FLAG, None), ("--mode", "mode", VALUE, str),
        ("--min-score", "min_score", VALUE, _float), ("--explain", "explain", FLAG, None), _NS, _JSON),
        defaults={"top_k": 5, "mode": "hybrid", "min_score": 0.0}),
    "get": Spec(_opts(_NS, ("--all-namespaces|-A", "all_namespaces", FLAG, None), _JSON)),
    "remember": Spec(_opts(
        ("--tag|-t", "tag", MULTI, str), ("--agent", "agent", VALUE, str), ("--scope", "scope", VALUE, str),
        ("--importance|-i", "importance", VALUE, _float), ("--key", "key", VALUE, str), ("--ttl", "ttl", VALUE, str),
        ("--metadata", "metadata", VALUE, str), _NS, ("--keep-secrets", "keep_secrets", FLAG, None), _JSON),
        defaults={"importance": 0.5}),
    "forget": Spec(_opts(_NS, _JSON), positional="1+"),
}


class _StepAside(Exception):
    """The typer app runs this command instead (nothing was sent to the server)."""


def parse(argv: list[str], specs: dict[str, Spec] | None = None
          ) -> tuple[str | None, str, dict[str, Any], list[str]] | None:
    """``[--home H] COMMAND ARGS…`` → (home, command, options, positionals), or None when this path does not
    take the command line exactly as click would. ``specs``: the commands it knows (default: SPECS)."""
    specs = SPECS if specs is None else specs
    home: str | None = None
    i = 0
    while i < len(argv) and argv[i].startswith("-"):  # global options
        if argv[i] == "--home" and i + 1 < len(argv):
            home, i = argv[i + 1], i + 2
        elif argv[i].startswith("--home="):
            home, i = argv[i][len("--home="):], i + 1
        else:
            return None  # --no-server, --version, --help, anything else
    if i >= len(argv) or argv[i] not in specs:
        return None
    command, spec = argv[i], specs[argv[i]]
    opts: dict[str, Any] = dict(spec.defaults)
    args: list[str] = []
    rest = argv[i + 1:]
    j = 0
    while j < len(rest):
        token = rest[j]
        j += 1
        if token == "-" or not token.startswith("-"):
            args.append(token)
            continue
        name, eq, attached = token.partition("=")
        if name not in spec.options or (eq and not name.startswith("--")):
            return None  # -h/--help, --, -k5, combined short flags, a flag this path does not know
        dest, kind, conv = spec.options[name]
        if kind == FLAG:
            if eq:
                return None
            opts[dest] = True
            continue
        if eq:
            value = attached
        elif j < len(rest):
            value, j = rest[j], j + 1
        else:
            return None  # a missing value: click's usage error
        if value.startswith("-") and value != "-" and not _negative_number(value):
            return None  # click would take it as the value; so rare that the typer app may decide
        try:
            converted = conv(value)
        except ValueError:
            return None  # click's "not a valid integer" and the like
        if kind == MULTI:
            opts.setdefault(dest, []).append(converted)
        else:
            opts[dest] = converted
    if spec.positional == "0":
        return (home, command, opts, args) if not args else None
    if not args or (spec.positional == "1" and len(args) != 1) or "-" in args:
        return None  # a missing or extra argument; "-" reads stdin, which a step aside could not read again
    return home, command, opts, args


def parse_mcp(argv: list[str]) -> tuple[str | None, dict[str, Any], str | None] | None:
    """``[--home H] mcp [--namespace N] [--agent A]`` → (home, config overrides, agent); None for any other
    command line (the typer app then runs it, ``--help`` included)."""
    parsed = parse(argv, {"mcp": Spec(_opts(_NS, ("--agent", "agent", VALUE, str)), positional="0")})
    if parsed is None:
        return None
    home, _, opts, _ = parsed
    namespace = opts.get("namespace")
    return home, ({"namespace": namespace} if namespace is not None else {}), opts.get("agent")


def _negative_number(value: str) -> bool:
    from memcli.cli import lean

    return lean.converts(float, value)


def _call(client: Any, command: str, o: dict[str, Any], args: list[str]) -> Any:
    """The typer command's core call, with the same arguments (see memcli/cli/<command>.py)."""
    if command == "recall":
        from memcli.models import parse_time_ms

        since, until = o.get("since"), o.get("until")
        hits = client.recall(
            args[0], top_k=o["top_k"], agent=o.get("agent"), scope=o.get("scope"), tags=o.get("tag"),
            since=parse_time_ms(since) if since else None, until=parse_time_ms(until) if until else None,
            project=o.get("project"), project_only=o.get("project") is not None,
            include_expired=o.get("include_expired", False), explain=o.get("explain", False), mode=o["mode"],
            min_score=o["min_score"], include_archived=o.get("include_archived", False),
            **({"as_of": parse_time_ms(o["as_of"])} if o.get("as_of") else {}))
        return [h.item() for h in hits]
    if command == "get":
        if o.get("all_namespaces") and o.get("namespace") is not None:
            raise _StepAside  # the typer app's usage error
        return client.get(args[0], **({"all_namespaces": True} if o.get("all_namespaces") else {})).item()
    if command == "remember":
        res = client.remember(
            args[0], tags=o.get("tag"), agent=o.get("agent"), scope=o.get("scope"), importance=o["importance"],
            key=o.get("key"), ttl=o.get("ttl"), metadata=o.get("metadata"), source="cli",
            **({"keep_secrets": True} if o.get("keep_secrets") else {}))
        return res.item()
    ids = client.forget(args)
    return {"ok": True, "forgotten": ids}


def _local() -> Any:
    raise _StepAside


def run(argv: list[str]) -> int | None:
    """Run the command line here when this path can, and return its exit code; None: run the typer app."""
    if os.environ.get("MEMCLI_FAST") == "0":
        return None
    if argv == ["--version"]:
        from memcli import __version__

        sys.stdout.write(f"memcli {__version__}\n")
        return 0
    mcp = parse_mcp(argv)
    if mcp is not None:  # an MCP client waits ~1 s for the handshake: memcli.mcp.front answers it at once
        from memcli.mcp.front import serve

        serve(*mcp)
        return 0
    if os.environ.get("MEMCLI_NO_SERVER"):
        return None
    parsed = parse(argv)
    if parsed is None:
        return None
    home, command, opts, args = parsed
    from memcli.cli import lean

    if not lean.json_wanted(opts.get("json_", False)):
        return None  # rich tables: the typer app's rendering layer

    r = lean.route(home, opts.get("namespace"))
    if r is not None:
        try:
            answer = lean.call(r, command, opts, args)
        except lean.Failed as exc:
            _print({"ok": False, "error": exc.message, "code": exc.code})
            return 1  # every MemcliError's exit code
        if answer is not None:
            _print(answer)
            return 0
    from memcli.cli.output import error, print_json
    from memcli.errors import MemcliError

    try:
        from pathlib import Path

        from memcli.cli.client import Client
        from memcli.config import load_config
        from memcli.project import detect_project
        from memcli.team.remote import RemoteService

        try:
            config = load_config(home, namespace=opts.get("namespace"))
        except MemcliError:
            return None  # the typer app says it, in its words
        _note_config(config.home)
        if config.api_url:
            return None  # team mode: no store here and its own errors
        remote = RemoteService.for_home(config, project=detect_project(Path.cwd()))
        if remote is None:
            return None  # none runs: the typer app works in-process and starts one
        result = _call(Client(remote, _local), command, opts, args)
    except _StepAside:
        return None
    except MemcliError as exc:
        error(exc.message, True, exc.code)
        return exc.exit_code
    print_json(result)
    return 0


def _print(data: Any) -> None:
    """memcli.cli.output.print_json, without its imports."""
    import json

    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def _note_config(home: Any) -> None:
    """Leave :mod:`memcli.cli.lean` a note of config.toml as validated here, so that the next command can
    take the lean route without reading it again (nothing to note without a file)."""
    from memcli.cli import lean
    from memcli.config import config_path, load_config
    from memcli.errors import MemcliError

    path = config_path(home)
    fingerprint = lean.config_fingerprint(str(path))
    if fingerprint is None or lean.current_note(str(home), fingerprint) is not None:
        return  # no file, or noted as it is: not read a second time
    try:
        own = load_config(home, env={})  # the file's values alone: the lean route applies the environment
    except MemcliError:  # only a note: the command itself read the file with the environment's values
        return
    lean.note_config(str(home), fingerprint, own.namespace, own.agent, own.server.token or None,
                     plain=not own.api_url)


def main() -> None:
    """Console-script entry point (`memcli`, `mnemo`): this path when it can, else the typer app."""
    os.umask(0o077)  # whatever this process creates in the home is the user's alone (as the typer app does)
    code = run(sys.argv[1:])
    if code is None:
        from memcli.cli.app import main as typer_main

        typer_main()
        return
    sys.exit(code)
