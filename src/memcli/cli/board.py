"""`memcli board`: the shared task board (columns view; add, move, show, list, assign, link, run, jobs)."""

from __future__ import annotations

import shlex
import time
from typing import TYPE_CHECKING, Any, List, Optional
from urllib.parse import quote

import typer

from memcli.cli.context import State, use_json, with_namespace
from memcli.cli.output import emit, esc, out, plain

if TYPE_CHECKING:
    from collections.abc import Callable

    from memcli.board.service import BoardService

JSON_HELP = "Print JSON."
NS_HELP = "The board of this namespace (default: the configured one)."
STATUS_STYLE = {"succeeded": "green", "failed": "red", "timed-out": "red", "running": "yellow"}


def _board(ctx: typer.Context, json_: bool, namespace: str | None) -> "tuple[State, BoardService]":
    from memcli.board.service import board_of

    with_namespace(ctx, namespace)
    # `memcli board --json -n NS add …`: the group's flags hold for its subcommand too
    st = use_json(ctx, json_ or bool(ctx.meta.get("memcli_board_json")))
    return st, board_of(st.service(), st.config())


def _read(ctx: typer.Context, json_: bool, namespace: str | None, path: str, query: list[tuple[str, Any]],
          local: "Callable[[BoardService], Any]") -> tuple[State, Any]:
    """A read, answered by this home's warm server when one runs (no LanceDB import: ~0.2 s instead of
    ~1.5 s), else by the store opened here; the same JSON either way."""
    from memcli.team.remote import Unavailable

    with_namespace(ctx, namespace)
    st = use_json(ctx, json_ or bool(ctx.meta.get("memcli_board_json")))
    remote = st.home_server()
    if remote is not None:
        try:
            return st, remote.get_json(path, [("namespace", st.config().namespace), *query])
        except Unavailable:
            st.client().remote = None
    from memcli.board.service import board_of

    return st, local(board_of(st.service(), st.config()))


def _write(ctx: typer.Context, json_: bool, namespace: str | None, method: str, path: str, body: dict[str, Any],
           local: "Callable[[BoardService], Any]") -> tuple[State, Any]:
    """A change, made by this home's warm server when one runs, else by the store opened here; the same JSON
    either way. ``body`` gets the namespace and the configured agent (who adds or moves a card), so the
    server, whatever its own settings, makes the same change. A change the server may have received before
    the connection dropped is not made a second time here."""
    from memcli.errors import UnreachableError
    from memcli.team.remote import Unavailable

    with_namespace(ctx, namespace)
    st = use_json(ctx, json_ or bool(ctx.meta.get("memcli_board_json")))
    remote = st.home_server()
    if remote is not None:
        if "agent" in body and body["agent"] is None:
            body["agent"] = st.config().agent
        body = {k: v for k, v in body.items() if v is not None}
        try:
            return st, remote.request(method, f"{path}?namespace={quote(st.config().namespace)}", body)
        except Unavailable as exc:
            if exc.sent:
                raise UnreachableError(f"this home's server stopped answering ({exc}); the change may or may not "
                                       "have been made: check with `memcli board show`") from None
            st.client().remote = None
    from memcli.board.service import board_of

    return st, local(board_of(st.service(), st.config()))


def _task_result(d: dict[str, Any]) -> dict[str, Any]:
    """What add, assign and link print: the card, from the server's answer (the card) or the store's."""
    return {"ok": True, "task_id": d["task_id"], "task": d}


# ---------------------------------------------------------------------------------------------- rendering
def _card(t: dict[str, Any]) -> Any:
    from rich.text import Text

    text = Text()
    text.append(t["task_id"], style="bold cyan")
    text.append(f" v{t['version']}\n", style="dim")
    text.append(t["title"])
    if t.get("assignee"):
        text.append(f"\n@{t['assignee']}", style="green")
    if t.get("labels"):
        text.append("\n" + " ".join(f"#{x}" for x in t["labels"]), style="magenta")
    job = t.get("job")
    if job:
        text.append(f"\n⚙ {job['job']}: {job['status']}", style=STATUS_STYLE.get(job["status"], ""))
    return text


def _board_view(data: dict[str, Any]) -> None:
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table

    cols = list(data["columns"]) + ([{"status": "other", "tasks": data["other"]}] if data["other"] else [])
    t = Table(title=f"board · namespace {data['namespace']} · {data['total']} task(s)", expand=True,
              show_lines=False, header_style="bold")
    for c in cols:
        t.add_column(f"{c['status']} ({len(c['tasks'])})", ratio=1, overflow="fold")
    t.add_row(*[Group(*[Panel(_card(x), padding=(0, 1)) for x in c["tasks"]]) if c["tasks"] else plain("—")
                for c in cols])
    out.print(t)
    if not data["total"]:
        out.print("[dim]No tasks yet: memcli board add \"title\"[/dim]")


def _task_table(items: list[dict[str, Any]]) -> None:
    from rich.table import Table

    if not items:
        out.print("[dim]No tasks.[/dim]")
        return
    t = Table(header_style="bold")
    for col in ("id", "status", "title", "assignee", "labels", "job", "version"):
        t.add_column(col, overflow="fold", ratio=1 if col == "title" else None)
    for it in items:
        job = it.get("job")
        t.add_row(plain(it["task_id"]), plain(it["status"]), plain(it["title"]), plain(it.get("assignee") or "—"),
                  plain(", ".join(it["labels"]) or "—"), plain(f"{job['job']}: {job['status']}" if job else "—"),
                  str(it["version"]))
    out.print(t)


def _task_detail(d: dict[str, Any]) -> None:
    from memcli.cli.output import age, fmt_time, key_values, memories_table

    shown = {k: d[k] for k in ("status", "title", "description", "assignee", "labels", "memory_ids", "created_by",
                               "version")}
    shown["labels"] = ", ".join(d["labels"])
    shown["memory_ids"] = ", ".join(d["memory_ids"])
    shown["created"] = f"{fmt_time(d['created_at'])} ({age(d['created_at'])} ago)"
    shown["updated"] = f"{fmt_time(d['updated_at'])} ({age(d['updated_at'])} ago)"
    key_values({k: ("—" if v in (None, "") else v) for k, v in shown.items()}, title=f"{d['task_id']}")
    for run in d.get("jobs", []):
        style = STATUS_STYLE.get(run["status"], "")
        code = "" if run["exit_code"] is None else f" (exit {run['exit_code']})"
        out.print(f"⚙ {esc(run['job'])} [{style}]{run['status']}[/]{code} · {fmt_time(run['started_at'])} · "
                  f"log {esc(run['log_path'])}")
        if run.get("log_tail"):
            out.print(plain("\n".join(run["log_tail"].rstrip().splitlines()[-10:])), style="dim")
    memories_table(d.get("memories", []), title=f"memories of {d['task_id']}")


def _done(verb: str) -> Any:
    def show(d: dict[str, Any]) -> None:
        out.print(f"[green]{verb}[/green] {d['task_id']} (version {d['task']['version']}, {d['task']['status']})")
    return show


# ---------------------------------------------------------------------------------------------- commands
def register(app: typer.Typer) -> None:
    from memcli.cli.app import MemcliGroup

    board_app = typer.Typer(cls=MemcliGroup, invoke_without_command=True, no_args_is_help=False)
    app.add_typer(board_app, name="board")

    @board_app.callback()
    def board(
        ctx: typer.Context,
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help=NS_HELP),
        json_: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """The task board your agents share: cards in columns (backlog → todo → doing → review → done), each
        move remembered, jobs run by the name configured in config.toml. Alone: show the board.

        Example: memcli board add "Fix the flaky upload test" -l bug; memcli board move T-1 todo
        """
        if ctx.invoked_subcommand is not None:
            with_namespace(ctx, namespace)
            ctx.meta["memcli_board_json"] = json_
            return
        st, data = _read(ctx, json_, namespace, "/api/board", [], lambda b: b.board())
        emit(data, st.json, _board_view)

    @board_app.command("add")
    def add(
        ctx: typer.Context,
        title: str = typer.Argument(..., help="What is to be done (one line)."),
        description: Optional[str] = typer.Option(None, "--description", "-d", help="Details."),
        status: Optional[str] = typer.Option(None, "--status", "-s", help="Column (default: the first)."),
        assignee: Optional[str] = typer.Option(None, "--assignee", "-a", help="The agent who does it."),
        label: Optional[List[str]] = typer.Option(None, "--label", "-l", help="A label (repeatable)."),
        memory: Optional[List[str]] = typer.Option(None, "--memory", "-m", help="Link a memory id (repeatable)."),
        agent: Optional[str] = typer.Option(None, "--agent", help="Who is adding it (default: the configured agent)."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help=NS_HELP),
        json_: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Add a card; it gets the next id of the board (T-1, T-2, …).

        Example: memcli board add "Fix the flaky upload test" -l bug -a codex
        """
        body = {"title": title, "description": description, "status": status, "assignee": assignee,
                "labels": label, "memory_ids": memory, "agent": agent}
        st, d = _write(ctx, json_, namespace, "POST", "/api/board/tasks", body, lambda b: {
            "ok": True, "task": b.create_task(title, description=description, status=status, assignee=assignee,
                                              labels=label, memory_ids=memory, agent=agent).item()})
        emit(_task_result(d["task"]), st.json, _done("Added"))

    @board_app.command("move")
    def move(
        ctx: typer.Context,
        task_id: str = typer.Argument(..., metavar="TASK", help="The card, like T-12."),
        status: str = typer.Argument(..., metavar="STATUS", help="The column to move it to."),
        reason: Optional[str] = typer.Option(None, "--reason", "-r", help="Why (kept in the move's memory)."),
        expected_version: Optional[int] = typer.Option(None, "--expected-version",
                                                       help="Refuse unless the card is still at this version."),
        agent: Optional[str] = typer.Option(None, "--agent", help="Who is moving it (default: the configured agent)."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help=NS_HELP),
        json_: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Move a card: forward one column, or back to any earlier one. The move is remembered.

        Example: memcli board move T-12 review -r "tests pass"
        """
        body = {"to_status": status, "reason": reason, "expected_version": expected_version, "agent": agent}
        st, res = _write(ctx, json_, namespace, "POST", f"/api/board/tasks/{quote(task_id, safe='')}/move", body,
                         lambda b: b.move(task_id, status, reason=reason, expected_version=expected_version,
                                          agent=agent).item())
        emit(res, st.json, lambda d: out.print(
            f"[green]Moved[/green] {d['task_id']} {d['from']} → {d['to']} (version {d['version']})"))

    @board_app.command("show")
    def show(
        ctx: typer.Context,
        task_id: str = typer.Argument(..., metavar="TASK", help="The card, like T-12."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help=NS_HELP),
        json_: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Show a card with its linked memories (links and memories tagged with its id) and job runs.

        Example: memcli board show T-12
        """
        st, data = _read(ctx, json_, namespace, f"/api/board/tasks/{quote(task_id, safe='')}", [],
                         lambda b: b.task_detail(task_id))
        emit(data, st.json, _task_detail)

    @board_app.command("list")
    def list_(
        ctx: typer.Context,
        status: Optional[str] = typer.Option(None, "--status", "-s", help="Only this column."),
        assignee: Optional[str] = typer.Option(None, "--assignee", "-a", help="Only this agent's cards."),
        label: Optional[str] = typer.Option(None, "--label", "-l", help="Only cards with this label."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help=NS_HELP),
        json_: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """List cards in board order (optionally one column, agent or label).

        Example: memcli board list --status doing --json
        """
        st, data = _read(ctx, json_, namespace, "/api/board/tasks",
                         [("status", status), ("assignee", assignee), ("label", label)],
                         lambda b: [t.item() for t in b.list_tasks(status=status, assignee=assignee, label=label)])
        emit(data, st.json, _task_table)

    @board_app.command("assign")
    def assign(
        ctx: typer.Context,
        task_id: str = typer.Argument(..., metavar="TASK", help="The card, like T-12."),
        assignee: str = typer.Argument(..., metavar="AGENT", help="The agent; '' to unassign."),
        expected_version: Optional[int] = typer.Option(None, "--expected-version",
                                                       help="Refuse unless the card is still at this version."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help=NS_HELP),
        json_: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Give a card to an agent.

        Example: memcli board assign T-12 codex
        """
        st, d = _write(ctx, json_, namespace, "PATCH", f"/api/board/tasks/{quote(task_id, safe='')}",
                       {"assignee": assignee, "expected_version": expected_version},
                       lambda b: b.update(task_id, assignee=assignee, expected_version=expected_version).item())
        emit(_task_result(d), st.json, _done("Assigned"))

    @board_app.command("link")
    def link(
        ctx: typer.Context,
        task_id: str = typer.Argument(..., metavar="TASK", help="The card, like T-12."),
        memory_ids: List[str] = typer.Argument(..., metavar="MEMORY...", help="Memory ids (or unique parts)."),
        expected_version: Optional[int] = typer.Option(None, "--expected-version",
                                                       help="Refuse unless the card is still at this version."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help=NS_HELP),
        json_: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Link memories to a card (`show` lists them).

        Example: memcli board link T-12 3f9a1c2e
        """
        st, d = _write(ctx, json_, namespace, "PATCH", f"/api/board/tasks/{quote(task_id, safe='')}",
                       {"add_memory_ids": memory_ids, "expected_version": expected_version},
                       lambda b: b.update(task_id, add_memory_ids=memory_ids,
                                          expected_version=expected_version).item())
        emit(_task_result(d), st.json, _done("Linked"))

    @board_app.command("run")
    def run(
        ctx: typer.Context,
        job: str = typer.Argument(..., metavar="JOB", help="A job configured as \\[jobs.JOB] in config.toml."),
        task_id: str = typer.Option(..., "--task", "-t", help="The card the run is for, like T-12."),
        wait: bool = typer.Option(False, "--wait", help="Wait until the job ends; exit 1 when it failed."),
        namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help=NS_HELP),
        json_: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Run a configured job for a card, in the background (output: <home>/jobs/<task>-<job>-<ms>.log).

        Example: memcli board run test --task T-12 --wait
        """
        st, b = _board(ctx, json_, namespace)
        r = b.trigger_job(task_id, job).item()
        while wait and r["status"] == "running":
            time.sleep(0.25)
            r = next(x for x in b.task_detail(task_id)["jobs"] if x["run_id"] == r["run_id"])
        emit({"ok": r["status"] in ("running", "succeeded"), "run": r}, st.json, lambda d: out.print(
            f"⚙ {esc(d['run']['job'])} for {d['run']['task_id']}: [{STATUS_STYLE.get(d['run']['status'], '')}]"
            f"{d['run']['status']}[/] · log {esc(d['run']['log_path'])}"))
        if wait and r["status"] != "succeeded":
            raise typer.Exit(1)

    @board_app.command("jobs")
    def jobs(
        ctx: typer.Context,
        json_: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """List the jobs configured in config.toml (\\[jobs.NAME]): the only ones `run` accepts."""
        from memcli.board.service import configured_jobs

        st = use_json(ctx, json_ or bool(ctx.meta.get("memcli_board_json")))
        emit(configured_jobs(st.config().jobs), st.json, lambda items: out.print(
            "\n".join(f"{esc(j['name'])}: {esc(shlex.join(j['command']))} (cwd {esc(j['cwd'] or 'the home')}, "
                      f"timeout {j['timeout']:g} s)" for j in items) or "[dim]No jobs configured: add [jobs.NAME] with a command to config.toml[/dim]"))
