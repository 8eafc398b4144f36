"""The one rendering layer: JSON for machines, rich tables for people, errors on stderr.

rich is imported only when something is rendered for people (~40 ms): a `memcli recall --json` answered by
the warm server never pays for it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


class _LazyConsole:
    """A rich Console created (and rich imported) on first use."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: "Console | None" = None

    def get(self) -> "Console":
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)


def real_console(console: Any) -> "Console":
    """The rich Console behind ``out``/``err`` (for rich APIs that take one)."""
    return console.get() if isinstance(console, _LazyConsole) else console


out: "Console" = _LazyConsole(soft_wrap=True)  # type: ignore[assignment]
err: "Console" = _LazyConsole(stderr=True, soft_wrap=True)  # type: ignore[assignment]


def plain(value: Any) -> "Text":
    """User data for a table cell: never interpreted as rich markup (a memory may contain `[/]`)."""
    from rich.text import Text

    return Text(value if isinstance(value, str) else str(value))


def esc(value: Any) -> str:
    """User data inside a markup string (paths, names)."""
    from rich.markup import escape

    return escape(str(value))


def print_json(data: Any) -> None:
    """Machine output: one JSON document on stdout."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def emit(data: Any, json_mode: bool, human: Callable[[Any], None] | None = None) -> None:
    """Print ``data`` as JSON, or with ``human`` (defaults to a pretty JSON dump)."""
    if json_mode or human is None:
        print_json(data)
    else:
        human(data)


def age(ms: int | None, now_ms: int | None = None) -> str:
    """A short age: 5s, 12m, 3h, 4d, 2mo, 1y."""
    if not ms:
        return ""
    now = now_ms if now_ms is not None else int(datetime.now(timezone.utc).timestamp() * 1000)
    s = max(0, (now - int(ms)) // 1000)
    for unit, size in (("y", 31_536_000), ("mo", 2_592_000), ("d", 86_400), ("h", 3_600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"


def memories_table(items: Sequence[dict[str, Any]], *, title: str | None = None, score: bool = False) -> None:
    """A rich table of memory items (the JSON item shape)."""
    from rich.table import Table

    from memcli.models import short_id

    if not items:
        out.print("[dim]No memories.[/dim]")
        return
    t = Table(title=title, show_lines=False, header_style="bold")
    t.add_column("id", style="cyan", no_wrap=True)
    if score:
        t.add_column("score", justify="right")
    t.add_column("content", overflow="fold", ratio=1)
    t.add_column("tags", style="magenta")
    t.add_column("scope", style="green")
    many_ns = len({it.get("namespace") for it in items}) > 1
    if many_ns:
        t.add_column("namespace", style="blue")
    statuses = any(it.get("status", "active") != "active" for it in items)  # --include-archived
    if statuses:
        t.add_column("status", style="yellow")
    t.add_column("age", justify="right", style="dim")
    for it in items:
        row: list[Any] = [short_id(it["memory_id"])]
        if score:
            row.append(f"{it.get('score', 0):.2f}")
        content = it["content"] if len(it["content"]) <= 300 else it["content"][:297] + "…"
        if it.get("outdated_by"):  # a later memory changed this fact: say which, before the text
            content = f"(outdated by {short_id(it['outdated_by'])}) {content}"
        row += [plain(content), plain(", ".join(it.get("tags") or [])), plain(it.get("scope", ""))]
        if many_ns:
            row.append(plain(it.get("namespace", "")))
        if statuses:
            row.append(plain(it.get("status", "active")))
        row.append(age(it.get("created_at")))
        t.add_row(*row)
    out.print(t)


def key_values(data: dict[str, Any], *, title: str | None = None) -> None:
    """A two-column table of a mapping (nested values as compact JSON)."""
    from rich.table import Table

    t = Table(title=title, show_header=False)
    t.add_column("key", style="bold")
    t.add_column("value", overflow="fold")
    for k, v in data.items():
        t.add_row(str(k), plain(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)))
    out.print(t)


def memory_detail(item: dict[str, Any]) -> None:
    """One memory (the JSON item shape) in full, for `get` and `update`."""
    from memcli.models import short_id

    shown = dict(item)
    for k in ("created_at", "updated_at", "expires_at"):
        if shown.get(k):
            shown[k] = f"{fmt_time(shown[k])} ({age(shown[k])} ago)" if k != "expires_at" else fmt_time(shown[k])
    shown["tags"] = ", ".join(item.get("tags") or [])
    shown = {k: ("—" if v is None else v) for k, v in shown.items()}
    key_values(shown, title=f"memory {short_id(item['memory_id'])}")


def fmt_time(ms: int | None) -> str:
    """Epoch ms as a local ISO date-time (minutes)."""
    if not ms:
        return ""
    return datetime.fromtimestamp(int(ms) / 1000).astimezone().strftime("%Y-%m-%d %H:%M")


@contextmanager
def progress(description: str) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on stderr when stderr is a terminal; yields the core's ``progress(done, total)``
    callback, or None (no bar) when stderr is redirected."""
    # a piped command imports no rich: its lazy console is not even created
    if (isinstance(err, _LazyConsole) and not sys.stderr.isatty()) or not err.is_terminal:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=real_console(err), transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def error(message: str, json_mode: bool, code: str = "error") -> None:
    """An error: a JSON object on stdout with --json, else a red line on stderr."""
    if json_mode:
        print_json({"ok": False, "error": message, "code": code})
    else:
        err.print(f"[bold red]Error:[/bold red] {esc(message)}", markup=True, highlight=False)


def describe_relation(r: dict[str, Any]) -> str:
    """A relation item ({"relation", "reason", "differences"}) in one line: why it is not the same fact."""
    diffs = "; ".join(f"{a or '—'} ≠ {b or '—'}" for a, b in (r.get("differences") or []))
    return f"{r.get('reason', '')}" + (f" ({diffs})" if diffs else "")
