"""The task board's core (BoardService) on a real LanceDB store: ids under concurrent creators, the move rule,
optimistic concurrency, the audit memory of each move, and configured jobs run as real processes (success,
failure, timeout with the process group killed, output captured, unknown names refused)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memcli.board.service import BoardService, board_of, task_ref
from memcli.config import load_config
from memcli.errors import (
    ConfigError,
    ConflictError,
    NotFoundError,
    TransitionError,
    ValidationError,
    VersionConflictError,
)
from memcli.memory.service import MemoryService

JOBS = """
agent = "codex"

[jobs.ok]
command = ["sh", "-c", "echo building $MEMCLI_TASK_ID; echo oops >&2"]

[jobs.fail]
command = "sh -c 'echo about to fail; exit 3'"

[jobs.hang]
command = ["sh", "-c", "sleep 60 & echo $! > child.pid; wait"]
timeout = 2

[jobs.literal]
command = "echo $HOME; touch pwned"

[jobs.long]
command = ["sleep", "31.5"]
timeout = 120
"""


def _open(home: Path) -> tuple[MemoryService, BoardService]:
    cfg = load_config(home)
    svc = MemoryService.open(cfg)
    return svc, board_of(svc, cfg)


@pytest.fixture
def board(home: Path) -> Iterator[BoardService]:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(JOBS)
    svc, b = _open(home)
    yield b
    svc.close()


def _wait_run(b: BoardService, task: str, run_id: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = next(r for r in b.task_detail(task)["jobs"] if r["run_id"] == run_id)
        if run["status"] != "running":
            return run
        time.sleep(0.1)
    raise AssertionError(f"job run {run_id} still running after {timeout}s")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_task_ids_are_unique_under_concurrent_creators(board: BoardService, home: Path) -> None:
    """Four creators, each with its own connection, adding at once: every card gets its own T-n, none lost."""
    services = [_open(home) for _ in range(4)]
    made: list[str] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def creator(b: BoardService, w: int) -> None:
        barrier.wait()
        try:
            for i in range(4):
                made.append(b.create_task(f"task {w}.{i}").id)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=creator, args=(b, w)) for w, (_, b) in enumerate(services)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for svc, _ in services:
        svc.close()
    assert not errors, errors
    assert len(made) == 16 and len(set(made)) == 16
    listed = board.list_tasks()
    assert sorted(t.num for t in listed) == list(range(1, 17))
    assert board.create_task("one more").id == "T-17"
    # another namespace has its own numbering
    assert board.create_task("elsewhere", namespace="team-b").id == "T-1"
    assert [t.title for t in board.list_tasks(namespace="team-b")] == ["elsewhere"]


def test_transitions_follow_the_rule(board: BoardService) -> None:
    t = board.create_task("Fix the login bug", labels=["bug"])
    assert t.status == "backlog" and t.version == 1 and task_ref("t12") == "T-12" and task_ref("#3") == "T-3"
    with pytest.raises(TransitionError, match="one column at a time"):
        board.move(t.id, "done")  # no skipping to done
    with pytest.raises(TransitionError, match="one column at a time"):
        board.move(t.id, "doing")
    with pytest.raises(TransitionError, match="already in backlog"):
        board.move(t.id, "backlog")
    with pytest.raises(ValidationError, match="columns are backlog, todo, doing, review, done"):
        board.move(t.id, "shipped")
    for status in ("todo", "doing", "review", "done"):
        assert board.move(t.id, status, reason=f"to {status}").task.status == status
    res = board.move(t.id, "doing", reason="regression found: reopened")  # done can be reopened, back any number
    assert (res.from_status, res.task.status, res.task.version) == ("done", "doing", 6)
    assert board.get_task(t.id).status == "doing"
    with pytest.raises(NotFoundError, match="no task T-99"):
        board.move("T-99", "todo")
    with pytest.raises(ValidationError, match="invalid task id"):
        board.get_task("x; DROP")
    long = board.create_task("Long one", description="details " * 1000)
    card = next(c for c in board.board()["columns"][0]["tasks"] if c["task_id"] == long.id)
    assert len(card["description"]) == 280 and card["description"].endswith("…")  # the board stays small
    assert board.task_detail(long.id)["description"] == ("details " * 1000).strip()


def test_configured_columns(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[board]\ncolumns = ["open", "wip", "closed"]\n')
    svc, b = _open(home)
    try:
        t = b.create_task("custom")
        assert t.status == "open" and [c["status"] for c in b.board()["columns"]] == ["open", "wip", "closed"]
        with pytest.raises(TransitionError):
            b.move(t.id, "closed")
        b.move(t.id, "wip")
        assert b.move(t.id, "closed").task.status == "closed"
    finally:
        svc.close()
    (home / "config.toml").write_text('[board]\ncolumns = ["only"]\n')
    with pytest.raises(ConfigError, match="2..12 distinct"):
        load_config(home)


def test_stale_versions_are_refused(board: BoardService) -> None:
    t = board.create_task("Ship it")
    board.move(t.id, "todo", expected_version=1)
    with pytest.raises(VersionConflictError, match="version 2, not 1"):
        board.move(t.id, "doing", expected_version=1)
    with pytest.raises(VersionConflictError):
        board.update(t.id, title="Ship it now", expected_version=1)
    up = board.update(t.id, assignee="agent:claude-code", labels=["release"], expected_version=2)
    assert (up.assignee, up.labels, up.version) == ("claude-code", ["release"], 3)
    assert board.get_task(t.id).status == "todo"  # the refused move changed nothing


def test_moves_are_remembered_and_linked_memories_shown(board: BoardService) -> None:
    mem = board.memory
    note = mem.remember("The login bug comes from a stale session cookie", tags=["bug"]).memory_id
    t = board.create_task("Fix the login bug", memory_ids=[note[-8:]])  # a short id is resolved
    assert t.memory_ids == [note]
    board.move(t.id, "todo")
    res = board.move(t.id, "doing", reason="cookie rotation patch started", agent="claude")
    audit = mem.get(res.memory_id)
    assert audit.content == f'claude moved {t.id} "Fix the login bug" todo → doing: cookie rotation patch started'
    assert audit.scope == "agent:claude" and set(audit.tags) == {"board", t.id}
    # the configured agent (codex) when the call names nobody
    assert mem.get(board.move(t.id, "todo").memory_id).scope == "agent:codex"
    hits = mem.recall("cookie rotation patch started", top_k=3)
    assert hits[0].memory.id == res.memory_id
    detail = board.task_detail(t.id)
    ids = [m["memory_id"] for m in detail["memories"]]
    assert ids[0] == note and res.memory_id in ids and len(ids) == 4  # the link, then 3 move records
    with pytest.raises(NotFoundError):
        board.create_task("bad link", memory_ids=["ffffffffffff"])
    other = mem.remember("a secret of another namespace", namespace="team-b").memory_id
    with pytest.raises(NotFoundError, match="in namespace 'default'"):  # a card only links its own namespace's
        board.update(t.id, add_memory_ids=[other])


def test_jobs_succeed_fail_and_time_out(board: BoardService, home: Path) -> None:
    t = board.create_task("Run the jobs")
    runs = {name: board.trigger_job(t.id, name) for name in ("ok", "fail", "hang")}
    assert all(r.status == "running" for r in runs.values())
    assert board.get_task(t.id).job is not None
    with pytest.raises(ConflictError, match="already running"):
        board.trigger_job(t.id, "hang")
    ok, fail, hang = (_wait_run(board, t.id, runs[n].run_id) for n in ("ok", "fail", "hang"))

    assert (ok["status"], ok["exit_code"]) == ("succeeded", 0)
    log = Path(ok["log_path"])
    assert log.parent == home / "jobs" and log.name.startswith(f"{t.id}-ok-")
    assert "building T-1" in log.read_text() and "oops" in log.read_text()  # stdout and stderr captured

    assert (fail["status"], fail["exit_code"]) == ("failed", 3) and "about to fail" in Path(fail["log_path"]).read_text()

    assert hang["status"] == "timed-out" and "timeout" in hang["error"]
    assert "killed after its 2 s timeout" in Path(hang["log_path"]).read_text()
    child = int((home / "child.pid").read_text())  # the job's own child was in its process group: killed too
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)
    assert board.get_task(t.id).version == 1  # job results never make an agent's next move stale


def test_only_configured_jobs_run_and_never_through_a_shell(board: BoardService, home: Path) -> None:
    t = board.create_task("Security")
    for name in ("rm -rf /tmp/x", "echo hi", "OK", "missing"):
        with pytest.raises(NotFoundError, match="no job named .* configured jobs: fail, hang, literal, long, ok"):
            board.trigger_job(t.id, name)
    assert board.task_detail(t.id)["jobs"] == []
    run = _wait_run(board, t.id, board.trigger_job(t.id, "literal").run_id)
    # a string command is split into words, never given to a shell: `;` and `$HOME` are plain arguments
    assert run["status"] == "succeeded"
    assert "$HOME; touch pwned" in Path(run["log_path"]).read_text()
    assert not (home / "pwned").exists()


def test_bad_job_config_is_a_clear_error(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    for body, message in (('[jobs.x]\ncwd = "/tmp"\n', "command must be"),
                          ('[jobs.x]\ncommand = "true"\ntimeout = -1\n', "timeout must be"),
                          ('[jobs.x]\ncommand = "true"\nshell = true\n', "unknown setting"),
                          ('[jobs.x]\ncommand = "echo \'unclosed"\n', "cannot be split")):
        (home / "config.toml").write_text(body)
        with pytest.raises(ConfigError, match=message):
            load_config(home)


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids += [int(x) for x in (task / "children").read_text().split()]
    return kids


def _supervisor_with_job(run_id: str, timeout: float = 20) -> tuple[int, list[int]]:
    """The pid of the supervisor of a run (its command line names the run) once its job has started, and
    the job's pids."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in Path("/proc").iterdir():
            try:
                if p.name.isdigit() and run_id in (p / "cmdline").read_text(errors="replace"):
                    kids = _children(int(p.name))
                    if kids:
                        return int(p.name), kids
            except OSError:
                continue
        time.sleep(0.05)
    raise AssertionError(f"no supervisor with a running job for run {run_id}")


def test_a_run_whose_supervisor_died_is_reported_failed(board: BoardService) -> None:
    """A supervisor killed with SIGKILL (or a reboot) can record nothing: the card must not say "running"
    for ever, nor refuse to run the job again."""
    import signal

    t = board.create_task("Lost run")
    run = board.trigger_job(t.id, "long")
    sup, jobs = _supervisor_with_job(run.run_id)
    os.kill(sup, signal.SIGKILL)
    for pid in jobs:  # the orphaned job itself is not the board's to clean up any more; the test's
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        got = board.get_task(t.id).job
        if got is not None and got.status != "running":
            break
        time.sleep(0.2)
    assert got is not None and got.status == "failed" and "supervisor stopped" in (got.error or "")
    again = board.trigger_job(t.id, "long")  # not "already running"
    assert again.status == "running"
    sup, jobs = _supervisor_with_job(again.run_id)
    os.kill(sup, signal.SIGTERM)  # a supervisor told to stop stops its job, and records it
    stopped = _wait_run(board, t.id, again.run_id)
    assert stopped["status"] == "failed" and stopped["error"] == "stopped before it finished"
    assert not any(_alive(pid) for pid in jobs)


def test_a_move_whose_memory_cannot_be_written_still_reports_the_move(board: BoardService,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedder (a remote API in many setups) fails after the card moved: the caller learns the move
    landed (so it does not retry a done move) and why there is no memory of it."""
    from memcli.errors import EmbedderError

    def down(texts: list[str]) -> list[list[float]]:
        raise EmbedderError("the embedding API is unreachable")

    t = board.create_task("Embedder down")
    monkeypatch.setattr(board.memory.embedder, "embed_passages", down)
    res = board.move(t.id, "todo", reason="still moves")
    assert res.task.status == "todo" and res.memory_id is None
    assert "could not be written: the embedding API is unreachable" in res.item()["warning"]
    assert board.get_task(t.id).version == 2
