"""BoardService: the task board agents share (the seed's Kanban tools), a second small core service beside
:class:`memcli.memory.service.MemoryService`, on the same store and in the same namespaces.

Cards have short human ids per namespace (``T-1``, ``T-2``…), a status (one of the configured columns), an
assignee (an agent), labels, links to memories and a version (optimistic concurrency). Moves follow one rule
(:meth:`BoardService.check_transition`) and each is recorded as a memory in the mover's scope, so "why is
T-12 in review?" can be recalled like any other decision. Jobs run only by the name the user configured.
"""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.board.store import BoardStore, command_text, task_key
from memcli.errors import (
    ConflictError,
    MemcliError,
    NotFoundError,
    TransitionError,
    ValidationError,
    VersionConflictError,
)
from memcli.memory.reader import quote
from memcli.models import new_id, normalise_scope, now_ms, validate_tags

if TYPE_CHECKING:
    from memcli.config import Config, JobConfig
    from memcli.memory.service import MemoryService
    from memcli.models import Memory

log = logging.getLogger("memcli.board.service")

MAX_TITLE = 200
MAX_DESCRIPTION = 32_000
LOG_TAIL = 2_000  # characters of the latest run's log that get_task shows
BRIEF_DESCRIPTION = 280  # characters of a description shown on the board and in lists (get_task: all of it)
MAX_LINKS = 100
MAX_REASON = 2_000
ALLOC_TRIES = 64  # concurrent creators each take the next free number; a lost race tries the one after
_TASK_REF = re.compile(r"^\s*(?:[Tt]-?|#)?(\d{1,9})\s*$")


def task_ref(ref: Any) -> str:
    """``T-12``, ``t-12``, ``T12``, ``#12`` or ``12`` → ``T-12``."""
    m = _TASK_REF.match(ref) if isinstance(ref, str) else None
    if isinstance(ref, int) and not isinstance(ref, bool) and ref > 0:
        return f"T-{ref}"
    if not m or int(m.group(1)) == 0:
        raise ValidationError(f"invalid task id {ref!r}: use the card's id, like T-12")
    return f"T-{int(m.group(1))}"


def _agent_name(agent: Any) -> str:
    """An agent as the board shows it: ``codex`` (``agent:codex`` accepted)."""
    return normalise_scope(agent=agent).split(":", 1)[1]


def _text(value: Any, what: str, limit: int, *, required: bool) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string")
    text = value.strip()
    if "\x00" in text:
        raise ValidationError(f"{what} must not contain NUL characters")
    if required and not text:
        raise ValidationError(f"the {what} is empty")
    if len(text) > limit:
        raise ValidationError(f"the {what} is {len(text):,} characters; the limit is {limit:,}")
    return text or None


@dataclass
class JobRun:
    """One run of a configured job for a card."""

    run_id: str
    task_id: str
    job: str
    status: str  # running | succeeded | failed | timed-out
    exit_code: int | None
    log_path: str
    started_at: int
    ended_at: int | None = None
    error: str | None = None
    actor: str | None = None

    @classmethod
    def from_row(cls, r: dict[str, Any]) -> "JobRun":
        run = cls(run_id=r["run_id"], task_id=r["task_id"], job=r["job"], status=r["status"],
                  exit_code=r.get("exit_code"), log_path=r.get("log_path") or "", started_at=int(r["started_at"]),
                  ended_at=r.get("ended_at"), error=r.get("error"), actor=r.get("actor"))
        if run.status == "running":
            from memcli.board.jobs import supervisor_alive

            # its supervisor was killed (or the machine restarted) before it could record a result
            if supervisor_alive(run.log_path) is False:
                run.status, run.error = "failed", "lost: its supervisor stopped before recording a result"
        return run

    def item(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "task_id": self.task_id, "job": self.job, "status": self.status,
                "exit_code": self.exit_code, "log_path": self.log_path, "started_at": self.started_at,
                "ended_at": self.ended_at, "error": self.error, "actor": self.actor}


@dataclass
class Task:
    """One card of the board."""

    id: str
    namespace: str
    title: str
    status: str
    description: str | None = None
    assignee: str | None = None
    labels: list[str] = field(default_factory=list)
    memory_ids: list[str] = field(default_factory=list)
    created_by: str | None = None
    created_at: int = 0
    updated_at: int = 0
    version: int = 1
    job: JobRun | None = None  # the latest job run, if any

    @classmethod
    def from_row(cls, r: dict[str, Any]) -> "Task":
        return cls(id=r["id"], namespace=r["namespace"], title=r["title"], status=r["status"],
                   description=r.get("description"), assignee=r.get("assignee"), labels=list(r.get("labels") or []),
                   memory_ids=list(r.get("memory_ids") or []), created_by=r.get("created_by"),
                   created_at=int(r["created_at"]), updated_at=int(r["updated_at"]), version=int(r["version"]))

    @property
    def num(self) -> int:
        return int(self.id.split("-", 1)[1])

    def row(self) -> dict[str, Any]:
        return {"pk": task_key(self.namespace, self.id), "id": self.id, "num": self.num, "namespace": self.namespace,
                "title": self.title, "description": self.description, "status": self.status,
                "assignee": self.assignee, "labels": list(self.labels), "memory_ids": list(self.memory_ids),
                "created_by": self.created_by, "created_at": self.created_at, "updated_at": self.updated_at,
                "version": self.version}

    def item(self, *, brief: bool = False) -> dict[str, Any]:
        """The JSON shape every face prints; ``brief`` (the board, lists) clips a long description so that a
        whole board stays small enough for an agent's context."""
        desc = self.description
        if brief and desc and len(desc) > BRIEF_DESCRIPTION:
            desc = desc[: BRIEF_DESCRIPTION - 1] + "…"
        return {"task_id": self.id, "title": self.title, "description": desc, "status": self.status,
                "assignee": self.assignee, "labels": list(self.labels), "memory_ids": list(self.memory_ids),
                "namespace": self.namespace, "created_by": self.created_by, "created_at": self.created_at,
                "updated_at": self.updated_at, "version": self.version,
                "job": self.job.item() if self.job else None}


@dataclass
class MoveResult:
    """A move: the card after it, and the memory that records it."""

    task: Task
    from_status: str
    memory_id: str | None
    warning: str | None = None  # the move landed but its memory could not be written (the embedder failed…)

    def item(self) -> dict[str, Any]:
        out = {"ok": True, "task_id": self.task.id, "from": self.from_status, "to": self.task.status,
               "version": self.task.version, "memory_id": self.memory_id, "task": self.task.item()}
        if self.warning:
            out["warning"] = self.warning
        return out


class BoardService:
    """The board core, bound to a MemoryService (its store's database, its namespace, its agent)."""

    def __init__(self, memory: "MemoryService", *, columns: Sequence[str], jobs: "dict[str, JobConfig]",
                 home: Path, data_uri: str) -> None:
        self.memory = memory
        self.columns = list(columns)
        self.jobs = dict(jobs)
        self.home = Path(home)
        self.data_uri = data_uri
        self.store = BoardStore(memory.store.db)

    # ------------------------------------------------------------------ helpers
    def _ns(self, namespace: str | None) -> str:
        # the memory service decides: a team space's service answers its own space whatever the caller sent
        return self.memory._ns(namespace)

    def _status(self, status: Any) -> str:
        if not isinstance(status, str) or status.strip().lower() not in self.columns:
            raise ValidationError(f"unknown status {status!r}: the board's columns are {', '.join(self.columns)}")
        return status.strip().lower()

    def _actor(self, agent: str | None) -> str | None:
        """Who is acting: the agent named in the call, else the face's (team token's) actor, else the
        configured agent; None when nobody is known (a person at the shell)."""
        for who in (agent, self.memory.actor, self.memory.agent):
            if who:
                try:
                    return _agent_name(who)
                except ValidationError:
                    if who is agent:
                        raise
        return None

    def _memory_links(self, refs: Sequence[str] | None, namespace: str) -> list[str]:
        """Memory ids (or unique parts) → full ids of memories of the card's namespace: a card never links
        (and get_task never shows) a memory of another namespace."""
        if refs is None:
            return []
        if isinstance(refs, str) or not isinstance(refs, (list, tuple)):
            raise ValidationError("memory_ids must be a list of memory ids")
        if len(refs) > MAX_LINKS:
            raise ValidationError(f"at most {MAX_LINKS} linked memories per task")
        # resolved among the namespace's memories only: an id (or an ambiguous part) of another namespace is
        # answered as one nobody has, and no error names another namespace's ids
        resolved = [self.memory.store.resolve_id(r, namespace=namespace) for r in refs]
        ids = list(dict.fromkeys(resolved))
        found = {m.id for m in self.memory.store.get_many(ids) if m.namespace == namespace}
        gone = [r for r, mid in zip(refs, resolved) if mid not in found]  # forgotten since it was resolved
        if gone:
            raise NotFoundError(f"no memory with id {gone[0]} in namespace {namespace!r}")
        return ids

    def _load(self, ref: str, namespace: str | None) -> Task:
        ns = self._ns(namespace)
        tid = task_ref(ref)
        row = self.store.task_row(ns, tid)
        if row is None:
            raise NotFoundError(f"no task {tid} on the board of namespace {ns!r}")
        task = Task.from_row(row)
        runs = self.store.run_rows(ns, tid)
        task.job = JobRun.from_row(runs[-1]) if runs else None
        return task

    def _save(self, task: Task, old_version: int) -> Task:
        if not self.store.replace_task(task.row(), old_version):
            raise VersionConflictError(
                f"task {task.id} is no longer at version {old_version}: someone changed it since you read it. "
                "Read it again (get_task) and retry with the new version")
        return task

    # ------------------------------------------------------------------ rules
    def check_transition(self, current: str, target: str) -> None:
        """The move rule: forward one column at a time (no skipping: every card passes through each column,
        review included), or back to any earlier column (rework, or reopening a done card)."""
        if target == current:
            raise TransitionError(f"the card is already in {current}")
        i, j = self.columns.index(current), self.columns.index(target)
        if j > i + 1:
            raise TransitionError(
                f"cannot move from {current} to {target}: cards move forward one column at a time "
                f"({current} → {self.columns[i + 1]}), or back to any earlier column")

    # ------------------------------------------------------------------ cards
    def create_task(self, title: str, *, description: str | None = None, status: str | None = None,
                    assignee: str | None = None, labels: Sequence[str] | None = None,
                    memory_ids: Sequence[str] | None = None, namespace: str | None = None,
                    agent: str | None = None) -> Task:
        """Add a card (default column: the first). Its id is the namespace's next free ``T-n``."""
        ns = self._ns(namespace)
        now = now_ms()
        task = Task(id="T-0", namespace=ns, title=_text(title, "title", MAX_TITLE, required=True) or "",
                    status=self._status(status) if status is not None else self.columns[0],
                    description=_text(description, "description", MAX_DESCRIPTION, required=False),
                    assignee=_agent_name(assignee) if assignee else None, labels=validate_tags(labels),
                    memory_ids=self._memory_links(memory_ids, ns), created_by=self._actor(agent),
                    created_at=now, updated_at=now, version=1)
        num = self.store.max_num(ns) + 1
        for _ in range(ALLOC_TRIES):
            task.id = f"T-{num}"
            if self.store.insert_task(task.row()):
                return task
            num = max(num + 1, self.store.max_num(ns) + 1)  # someone took it: the next one that is free
        raise ConflictError("could not allocate a task id: too many tasks are being created at once; try again")

    def get_task(self, ref: str, *, namespace: str | None = None) -> Task:
        """One card, with its latest job run."""
        return self._load(ref, namespace)

    def task_detail(self, ref: str, *, namespace: str | None = None, limit: int = 50) -> dict[str, Any]:
        """A card with the memories linked to it (explicit links, then memories tagged with its id, newest
        first) and its job runs (oldest first)."""
        task = self._load(ref, namespace)
        linked: list[Memory] = [m for m in self.memory.store.get_many(task.memory_ids)
                                if m.namespace == task.namespace] if task.memory_ids else []
        order = {mid: i for i, mid in enumerate(task.memory_ids)}
        linked.sort(key=lambda m: order.get(m.id, 0))
        seen = {m.id for m in linked}
        tagged = [m for m in self.memory.list(namespace=task.namespace, tags=[task.id], limit=limit)
                  if m.id not in seen]
        runs = [JobRun.from_row(r).item() for r in self.store.run_rows(task.namespace, task.id)]
        if runs:  # an agent on another machine cannot open the log: the end of the latest one comes along
            runs[-1]["log_tail"] = self._log_tail(runs[-1]["log_path"])
        missing = [mid for mid in task.memory_ids if mid not in seen]
        return {**task.item(), "memories": [m.item() for m in [*linked, *tagged]], "missing_memory_ids": missing,
                "jobs": runs}

    def _log_tail(self, log_path: str) -> str | None:
        """The last LOG_TAIL characters of a run's log (only a file of this home's jobs directory)."""
        path = Path(log_path)
        if path.parent != self.home / "jobs":
            return None
        try:
            with open(path, "rb") as fh:
                fh.seek(max(0, path.stat().st_size - LOG_TAIL * 4))
                return fh.read().decode("utf-8", errors="replace")[-LOG_TAIL:]
        except OSError:
            return None

    def list_tasks(self, *, status: str | None = None, assignee: str | None = None, label: str | None = None,
                   namespace: str | None = None) -> list[Task]:
        """Cards of the namespace (optionally one column / assignee / label), in board order then by number."""
        ns = self._ns(namespace)
        conds = []
        if status is not None:
            conds.append(f"status = {quote(self._status(status))}")
        if assignee is not None:
            conds.append(f"assignee = {quote(_agent_name(assignee))}")
        rows = self.store.task_rows(ns, " AND ".join(conds) or None)
        tasks = [Task.from_row(r) for r in rows]
        if label is not None:
            tasks = [t for t in tasks if label in t.labels]
        latest: dict[str, JobRun] = {}
        for r in self.store.run_rows(ns):
            latest[r["task_id"]] = JobRun.from_row(r)
        for t in tasks:
            t.job = latest.get(t.id)
        rank = {c: i for i, c in enumerate(self.columns)}
        tasks.sort(key=lambda t: (rank.get(t.status, len(rank)), t.num))
        return tasks

    def board(self, *, namespace: str | None = None) -> dict[str, Any]:
        """The whole board: every column in order with its cards. Cards left in a column that is no longer
        configured are shown under ``other`` (move them to a configured column)."""
        ns = self._ns(namespace)
        tasks = self.list_tasks(namespace=ns)
        cols: list[dict[str, Any]] = [{"status": c, "tasks": [t.item(brief=True) for t in tasks if t.status == c]}
                                      for c in self.columns]
        other = [t.item(brief=True) for t in tasks if t.status not in self.columns]
        return {"namespace": ns, "columns": cols, "other": other, "total": len(tasks),
                "jobs": sorted(self.jobs)}

    def move(self, ref: str, to_status: str, *, reason: str | None = None, expected_version: int | None = None,
             agent: str | None = None, namespace: str | None = None, source: str = "cli") -> MoveResult:
        """Move a card to another column (:meth:`check_transition`), version + 1, and remember the move in
        the mover's scope ("codex moved T-12 doing → review: <reason>", tags board and T-12).

        With ``expected_version`` a card changed since then is a :class:`VersionConflictError`; without it
        a concurrent change makes this move re-read the card and check the rule again."""
        target = self._status(to_status)
        why = _text(reason, "reason", MAX_REASON, required=False)
        actor = self._actor(agent)
        if expected_version is not None and (isinstance(expected_version, bool) or
                                             not isinstance(expected_version, int)):
            raise ValidationError("expected_version must be an integer (the version you read)")
        for _ in range(5 if expected_version is None else 1):
            task = self._load(ref, namespace)
            if expected_version is not None and task.version != expected_version:
                raise VersionConflictError(
                    f"task {task.id} is at version {task.version}, not {expected_version}: it changed since you "
                    f"read it (it is now in {task.status}). Read it again and retry")
            if task.status in self.columns:  # (a card in a column since removed from the config may go anywhere)
                self.check_transition(task.status, target)
            before, old_version = task.status, task.version
            task.status, task.updated_at, task.version = target, now_ms(), old_version + 1
            if self.store.replace_task(task.row(), old_version):
                break
            if expected_version is not None:
                raise VersionConflictError(
                    f"task {task.id} was changed by someone else while you moved it (version {old_version} is "
                    "no longer current). Read it again (get_task) and retry with the new version")
        else:
            raise VersionConflictError(f"task {task_ref(ref)} kept changing while it was being moved; try again")
        try:
            memory_id, warning = self._record_move(task, before, actor, why, source), None
        except MemcliError as exc:
            # the move itself has landed: reporting it as failed would make the caller retry a done move
            log.warning("the memory of the move of %s could not be written: %s", task.id, exc.message)
            memory_id, warning = None, f"moved, but its memory could not be written: {exc.message}"
        return MoveResult(task=task, from_status=before, memory_id=memory_id, warning=warning)

    def _record_move(self, task: Task, before: str, actor: str | None, reason: str | None, source: str) -> str:
        who = actor or "the user"
        text = f"{who} moved {task.id} \"{task.title}\" {before} → {task.status}" + (f": {reason}" if reason else "")
        res = self.memory.remember(
            text, tags=["board", task.id], agent=actor, namespace=task.namespace, source=source,
            # a key per move: the same words for a later move (back and forth) are a new record, not a repeat
            key=f"board:{task.id}:v{task.version}",
            metadata={"task_id": task.id, "from": before, "to": task.status, "version": task.version})
        return res.memory_id

    def update(self, ref: str, *, title: str | None = None, description: str | None = None,
               assignee: str | None = None, labels: Sequence[str] | None = None,
               memory_ids: Sequence[str] | None = None, add_memory_ids: Sequence[str] | None = None,
               expected_version: int | None = None, namespace: str | None = None) -> Task:
        """Change a card's fields (not its column: that is :meth:`move`); version + 1. ``assignee=""``
        unassigns; ``memory_ids`` replaces the links, ``add_memory_ids`` adds to them."""
        task = self._load(ref, namespace)
        if expected_version is not None and task.version != expected_version:
            raise VersionConflictError(
                f"task {task.id} is at version {task.version}, not {expected_version}: it changed since you read it")
        changed = False
        if title is not None:
            task.title, changed = _text(title, "title", MAX_TITLE, required=True) or "", True
        if description is not None:
            task.description, changed = _text(description, "description", MAX_DESCRIPTION, required=False), True
        if assignee is not None:
            task.assignee, changed = (_agent_name(assignee) if assignee.strip() else None), True
        if labels is not None:
            task.labels, changed = validate_tags(labels), True
        if memory_ids is not None:
            task.memory_ids, changed = self._memory_links(memory_ids, task.namespace), True
        if add_memory_ids:
            task.memory_ids = list(dict.fromkeys([*task.memory_ids,
                                                  *self._memory_links(add_memory_ids, task.namespace)]))
            changed = True
        if not changed:
            raise ValidationError("nothing to change: give a title, description, assignee, labels or memory ids")
        if len(task.memory_ids) > MAX_LINKS:
            raise ValidationError(f"at most {MAX_LINKS} linked memories per task")
        old = task.version
        task.updated_at, task.version = now_ms(), old + 1
        return self._save(task, old)

    # ------------------------------------------------------------------ jobs
    def list_jobs(self) -> list[dict[str, Any]]:
        """The jobs the user configured (what trigger_job accepts)."""
        return configured_jobs(self.jobs)

    def trigger_job(self, ref: str, job: str, *, namespace: str | None = None, agent: str | None = None) -> JobRun:
        """Start the job the user configured under ``[jobs.<job>]`` for a card, in the background; its output
        goes to ``<home>/jobs/<task>-<job>-<ms>.log`` and its status to the card. Only a configured name is
        accepted: the command is the config file's, never the caller's."""
        from memcli.board.jobs import open_locked_log, spawn_supervisor

        if not isinstance(job, str) or job not in self.jobs:
            names = ", ".join(sorted(self.jobs)) or "none (add a [jobs.NAME] table with a command to config.toml)"
            raise NotFoundError(f"no job named {str(job)[:80]!r} is configured; configured jobs: {names}")
        spec = self.jobs[job]
        task = self._load(ref, namespace)
        running = [r for r in map(JobRun.from_row, self.store.run_rows(task.namespace, task.id))
                   if r.job == job and r.status == "running"]
        if running:
            raise ConflictError(f"job {job} is already running for {task.id} (run {running[-1].run_id}, log "
                                f"{running[-1].log_path})")
        cwd = Path(spec.cwd).expanduser() if spec.cwd else self.home
        cwd = cwd if cwd.is_absolute() else self.home / cwd
        if not cwd.is_dir():
            raise ValidationError(f"job {job}: its working directory {cwd} does not exist")
        log_dir = self.home / "jobs"
        log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        started = now_ms()
        log_path = log_dir / f"{task.id}-{job}-{started}.log"
        n = 1
        while log_path.exists():  # another namespace's T-n ran the same job in the same millisecond
            log_path, n = log_dir / f"{task.id}-{job}-{started}-{n}.log", n + 1
        run = JobRun(run_id=new_id(), task_id=task.id, job=job, status="running", exit_code=None,
                     log_path=str(log_path), started_at=started, actor=self._actor(agent))
        # The log is locked before the run is visible: from then on "running" and "its supervisor is
        # alive" mean the same thing (supervisor_alive), with no window in between.
        with open_locked_log(log_path) as log:
            self.store.add_run({**run.item(), "namespace": task.namespace, "command": command_text(spec.command)})
            try:
                spawn_supervisor({"data_uri": self.data_uri, "run_id": run.run_id, "task_id": task.id,
                                  "job": job, "argv": spec.command, "cwd": str(cwd), "timeout": spec.timeout,
                                  "log_path": str(log_path)}, _job_env(task, job, run.run_id), log)
            except OSError as exc:
                self.store.finish_run(run.run_id, {"status": "failed", "ended_at": now_ms(),
                                                   "error": f"could not start the job supervisor: {exc}"})
                raise ConflictError(f"could not start job {job}: {exc}") from exc
        return run


def configured_jobs(jobs: "dict[str, JobConfig]") -> list[dict[str, Any]]:
    """Configured jobs as JSON, by name."""
    return [{"name": j.name, "command": j.command, "cwd": j.cwd, "timeout": j.timeout}
            for j in sorted(jobs.values(), key=lambda j: j.name)]


def _job_env(task: Task, job: str, run_id: str) -> dict[str, str]:
    """The job's environment: the triggering process's, plus which card and run it is for."""
    import os

    env = dict(os.environ)  # passed through to the child unchanged; memcli reads nothing from it here
    env.update(MEMCLI_TASK_ID=task.id, MEMCLI_TASK_TITLE=task.title, MEMCLI_JOB=job, MEMCLI_JOB_RUN=run_id,
               MEMCLI_NAMESPACE=task.namespace)
    return env


_BOARDS: "weakref.WeakKeyDictionary[MemoryService, BoardService]" = weakref.WeakKeyDictionary()


def board_of(memory: "MemoryService", config: "Config") -> BoardService:
    """The BoardService of an open MemoryService (one per service, so a server keeps one)."""
    board = _BOARDS.get(memory)
    if board is None:
        board = BoardService(memory, columns=config.board.columns, jobs=config.jobs, home=config.home,
                             data_uri=config.data_uri)
        _BOARDS[memory] = board
    return board
