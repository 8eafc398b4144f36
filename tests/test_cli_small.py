"""Small things a new user hit (issue 29), through the CLI: the start of a short id names a memory (``get``,
``history`` of a forgotten one too), ``recall --explain`` in a terminal is a readable table, not a raw dict,
and help texts keep their bracketed names (``[jobs.NAME]``: rich markup ate them)."""

from __future__ import annotations

import json
import re
from typing import Any

import click
import typer
from typer.testing import CliRunner

from memcli.cli.app import app

runner = CliRunner()


def run(*args: str, code: int = 0, env: dict[str, str] | None = None) -> Any:
    res = runner.invoke(app, list(args), catch_exceptions=False, env=env, terminal_width=160)
    assert res.exit_code == code, f"exit {res.exit_code}: {res.stdout}\n{res.stderr}"
    try:
        return json.loads(res.stdout)
    except json.JSONDecodeError:
        return res.stdout


def test_get_accepts_the_start_of_a_short_id() -> None:
    mid = run("remember", "the release train leaves on Tuesdays", "--json")["memory_id"]
    run("remember", "an unrelated memory about lunch", "--json")
    short = mid[-8:]  # what `list` and `recall` show
    for part in (short[:4], short[:6], short, short[-4:], mid):
        assert run("get", part, "--json")["memory_id"] == mid, part
    assert "no memory" in run("get", "ffff0000", "--json", code=1)["error"]


def test_history_of_a_forgotten_memory_by_its_short_id() -> None:
    mid = run("remember", "the cache TTL is 10 minutes", "--json")["memory_id"]
    run("update", mid[-8:], "--content", "the cache TTL is 15 minutes", "--json")
    run("forget", mid[-8:], "--json")
    for part in (mid[-8:], mid[-8:][:5], mid):
        events = run("history", part, "--json")
        assert [e["action"] for e in events] == ["remember", "update", "forget"], part
    assert "no memory" in run("history", "0123abcd", "--json", code=1)["error"]


def test_recall_explain_in_a_terminal_is_a_table() -> None:
    run("remember", "postgres 16 is the billing database", "--json")
    run("remember", "redis holds the session cache", "--json")
    text = run("recall", "billing database", "--explain", env={"MEMCLI_JSON": "0", "COLUMNS": "160"})
    assert "why these scores" in text
    assert re.search(r"cosine\s.*\d\.\d{3}", text)
    assert "{'" not in text and "': " not in text  # no Python dict printed
    hits = run("recall", "billing database", "--explain", "--json")
    assert isinstance(hits[0]["explain"], dict)  # JSON keeps the signals as data


def _commands(cmd: Any, path: list[str]) -> Any:
    yield path, cmd
    if hasattr(cmd, "list_commands"):
        ctx = click.Context(cmd)
        for name in cmd.list_commands(ctx):
            yield from _commands(cmd.get_command(ctx, name), path + [name])


def test_help_keeps_bracketed_names() -> None:
    checked = 0
    for path, cmd in _commands(typer.main.get_command(app), []):
        texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
        names = {n for t in texts for n in re.findall(r"\\?\[([A-Za-z_][\w.:-]*)\]", t)}
        if not names:
            continue
        shown = run(*path, "--help")
        for n in names:
            assert f"[{n}]" in shown, (path, n)
            checked += 1
    assert checked >= 3  # [jobs.NAME], [jobs.JOB], [server]
    assert "[jobs.NAME]" in run("board", "--help")
