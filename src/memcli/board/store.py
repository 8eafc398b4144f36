"""BoardStore: the task board's two LanceDB tables, in the memories' database (same store, same connection).

``memcli_tasks`` holds one row per card, keyed ``pk = "<namespace>\\x1f<T-n>"`` (declared the unenforced primary
key, so concurrent ``merge_insert`` of one new key inserts it once: that is how ids are allocated safely).
``memcli_job_runs`` holds one row per job run; a run's status changes never touch the card's row, so a job
finishing never makes an agent's move of that card stale. Both are read straight through their lance
datasets (the connection has ``read_consistency_interval=0``: every read sees other processes' writes).
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from memcli.errors import StoreError
from memcli.memory import damage
from memcli.memory.reader import Reader, quote

log = logging.getLogger("memcli.board.service")

TASKS_TABLE = "memcli_tasks"
RUNS_TABLE = "memcli_job_runs"
COMPACT_FRAGMENTS = 32  # a board table with more fragments than this is compacted after a write
SEP = "\x1f"  # between namespace and task id in the key: a namespace can hold ':' but never a control char
# The table is created with its key already declared (the field metadata `set_unenforced_primary_key` writes):
# created first and declared after, a writer that opened the table in between inserted without the key, and
# two creators of the first card both got T-1 (seen here, 1 run in 4 of the concurrent-creators test).
PK_META = {b"lance-schema:unenforced-primary-key:position": b"1"}


def task_schema() -> Any:
    import pyarrow as pa

    return pa.schema([
        pa.field("pk", pa.string(), nullable=False, metadata=PK_META), pa.field("id", pa.string(), nullable=False),
        pa.field("num", pa.int64(), nullable=False), pa.field("namespace", pa.string(), nullable=False),
        pa.field("title", pa.string(), nullable=False), pa.field("description", pa.string()),
        pa.field("status", pa.string(), nullable=False), pa.field("assignee", pa.string()),
        pa.field("labels", pa.list_(pa.string())), pa.field("memory_ids", pa.list_(pa.string())),
        pa.field("created_by", pa.string()), pa.field("created_at", pa.int64(), nullable=False),
        pa.field("updated_at", pa.int64(), nullable=False), pa.field("version", pa.int64(), nullable=False),
    ])


def run_schema() -> Any:
    import pyarrow as pa

    return pa.schema([
        pa.field("run_id", pa.string(), nullable=False, metadata=PK_META),
        pa.field("namespace", pa.string(), nullable=False),
        pa.field("task_id", pa.string(), nullable=False), pa.field("job", pa.string(), nullable=False),
        pa.field("status", pa.string(), nullable=False), pa.field("exit_code", pa.int64()),
        pa.field("log_path", pa.string()), pa.field("command", pa.string()), pa.field("actor", pa.string()),
        pa.field("error", pa.string()), pa.field("started_at", pa.int64(), nullable=False),
        pa.field("ended_at", pa.int64()),
    ])


def task_key(namespace: str, task_id: str) -> str:
    return f"{namespace}{SEP}{task_id}"


def _retry(op: Callable[[], Any], what: str) -> Any:
    """One write; LanceDB retries commit conflicts itself, a still-busy store gets a few more tries here."""
    delay = 0.05
    for attempt in range(8):
        try:
            return op()
        except (OSError, RuntimeError, ValueError) as exc:
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if attempt == 7 or not any(m in text.lower() for m in ("conflict", "concurrent")):
                raise StoreError(f"{what} failed: {text}") from exc
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 2.0)
    return None  # pragma: no cover


class BoardStore:
    """The board's tables in one LanceDB database (``db``: a connection with read_consistency_interval=0)."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self._tables: dict[str, Any] = {}
        self._readers: dict[str, tuple[Reader, list[str]]] = {}

    def _table(self, name: str, schema: Callable[[], Any], key: str) -> Any:
        table = self._tables.get(name)
        if table is not None:
            return table
        table = None
        for attempt in range(20):
            try:
                table = self.db.open_table(name)
                break
            except (OSError, RuntimeError, ValueError) as exc:
                missing = isinstance(exc, FileNotFoundError) or "was not found" in str(exc)
                if not missing and "://" not in self.db.uri:  # a garbled manifest: damaged, never recreated
                    raise damage.damaged(self.db.uri, name, f"its latest version cannot be read ({exc})",
                                         label=f"the board table {name!r}") from exc
                if not missing:
                    raise
            damage.refuse_leftovers(self.db, self.db.uri, name, opens=lambda: damage.can_open(self.db, name),
                                    label=f"the board table {name!r}")
            try:
                table = self.db.create_table(name, schema=schema(), exist_ok=True)
                break
            except (ValueError, OSError, RuntimeError):  # another writer is creating it this very moment
                time.sleep(0.02 * (attempt + 1) * (0.5 + random.random()))
        if table is None:
            raise StoreError(f"cannot open or create the board table {name}: other writers kept creating it")
        if not (table.schema.field(key).metadata or {}).get(next(iter(PK_META))):  # a lance that ignored it
            _retry(lambda: table.set_unenforced_primary_key(key), f"declaring the key of {name}")
        self._tables[name] = table
        return table

    def tasks(self) -> Any:
        return self._table(TASKS_TABLE, task_schema, "pk")

    def runs(self) -> Any:
        return self._table(RUNS_TABLE, run_schema, "run_id")

    def _rows(self, table: Any, where: str | None) -> list[dict[str, Any]]:
        got = self._readers.get(table.name)
        if got is None:  # a lance dataset kept open, moved to the latest version per read (~8 ms less)
            got = self._readers[table.name] = (Reader(table.to_lance()), list(table.schema.names))
        reader, columns = got
        try:
            return reader.rows(where, columns)
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"reading the task board failed: {exc}. Run `memcli doctor`.") from exc

    def _wrote(self, table: Any) -> None:
        """Compact a board table once its fragments pile up (every write adds one; a short-lived CLI process
        checks too, so the count is read from the table, not kept in memory)."""
        try:
            got = self._readers.get(table.name)
            ds = got[0].snapshot() if got else table.to_lance()
            if len(ds.get_fragments()) > COMPACT_FRAGMENTS:
                table.optimize()
        except (OSError, RuntimeError, ValueError) as exc:  # another writer compacting: next time
            log.info("compacting %s skipped: %s", table.name, exc)

    # ---------------------------------------------------------------- tasks
    def task_rows(self, namespace: str, where: str | None = None) -> list[dict[str, Any]]:
        cond = f"namespace = {quote(namespace)}" + (f" AND ({where})" if where else "")
        return self._rows(self.tasks(), cond)

    def task_row(self, namespace: str, task_id: str) -> dict[str, Any] | None:
        rows = self._rows(self.tasks(), f"pk = {quote(task_key(namespace, task_id))}")
        return rows[0] if rows else None

    def max_num(self, namespace: str) -> int:
        rows = self.task_rows(namespace)
        return max((int(r["num"]) for r in rows), default=0)

    def insert_task(self, row: dict[str, Any]) -> bool:
        """Insert a card whose key is new; False when another writer took that key first."""
        import pyarrow as pa

        table = self.tasks()
        data = pa.Table.from_pylist([row], schema=table.schema)
        res = _retry(lambda: table.merge_insert("pk").when_not_matched_insert_all().execute(data),
                     "adding a task")
        self._wrote(table)
        return int(res.num_inserted_rows) == 1

    def replace_task(self, row: dict[str, Any], expected_version: int) -> bool:
        """Write the card's new row only if its stored version is still ``expected_version`` (checked inside
        the commit: of two writers with the same expected version exactly one succeeds)."""
        import pyarrow as pa

        table = self.tasks()
        data = pa.Table.from_pylist([row], schema=table.schema)
        res = _retry(lambda: table.merge_insert("pk").when_matched_update_all(
            where=f"target.version = {int(expected_version)}").execute(data), "updating a task")
        self._wrote(table)
        return int(res.num_updated_rows) == 1

    # ---------------------------------------------------------------- job runs
    def add_run(self, row: dict[str, Any]) -> None:
        import pyarrow as pa

        table = self.runs()
        data = pa.Table.from_pylist([row], schema=table.schema)
        _retry(lambda: table.add(data), "recording a job run")
        self._wrote(table)

    def finish_run(self, run_id: str, values: dict[str, Any]) -> None:
        """Set a run's final status (only its supervisor writes it, so no version check is needed)."""
        import pyarrow as pa

        table = self.runs()
        rows = self._rows(table, f"run_id = {quote(run_id)}")
        if not rows:
            raise StoreError(f"no job run {run_id}")
        row = {**rows[0], **values}
        data = pa.Table.from_pylist([row], schema=table.schema)
        _retry(lambda: table.merge_insert("run_id").when_matched_update_all().execute(data), "recording a job result")
        self._wrote(table)

    def run_rows(self, namespace: str, task_id: str | None = None) -> list[dict[str, Any]]:
        where = f"namespace = {quote(namespace)}" + (f" AND task_id = {quote(task_id)}" if task_id else "")
        rows = self._rows(self.runs(), where)
        rows.sort(key=lambda r: (r["started_at"], r["run_id"]))
        return rows


def command_text(argv: list[str]) -> str:
    """A job's argv as stored with its run (JSON: exact, not re-split)."""
    return json.dumps(argv, ensure_ascii=False)
