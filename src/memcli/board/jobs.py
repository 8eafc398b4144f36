"""Board jobs: run a job the user configured (``[jobs.NAME]``) in the background, and record how it ended.

:func:`spawn_supervisor` starts ``python -m memcli.board.jobs SPEC`` in its own session, so a job outlives the
process that triggered it (a one-shot ``memcli board run`` exits at once; a server may restart). The
supervisor runs the job's argv without a shell, in a new process group, with its output appended to the run's
log; past the timeout it kills the whole group (SIGTERM, then SIGKILL) and marks the run ``timed-out``; then
it writes the final status (``succeeded``, ``failed``, ``timed-out``) and exit code to the run's row.
The command always comes from the user's config file, never from whoever triggered the run.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

KILL_GRACE = 3.0  # seconds between SIGTERM and SIGKILL of a job's process group
FINAL = ("succeeded", "failed", "timed-out")


def open_locked_log(log_path: Path) -> IO[bytes]:
    """A run's log, opened for appending and locked (flock). The lock belongs to the open file, which the
    supervisor inherits as its stdout/stderr: it is held exactly as long as the supervisor lives, whatever
    kills it (see :func:`supervisor_alive`)."""
    log = open(log_path, "ab")
    fcntl.flock(log.fileno(), fcntl.LOCK_EX)
    return log


def spawn_supervisor(spec: dict[str, Any], env: dict[str, str], log: IO[bytes]) -> int:
    """Start the supervisor of one run (detached, its own session); returns its pid. ``spec``: data_uri,
    run_id, argv, cwd, timeout, log_path; ``env``: the job's environment; ``log``: the run's locked log
    (:func:`open_locked_log`), which becomes the supervisor's stdout/stderr (its own errors land there)."""
    proc = subprocess.Popen([sys.executable, "-m", "memcli.board.jobs", json.dumps(spec)], stdin=subprocess.DEVNULL,
                            stdout=log, stderr=log, env=env, start_new_session=True, close_fds=True)
    # reap it when it ends, or a long-running server collects zombies
    threading.Thread(target=proc.wait, name=f"memcli-job-{spec['run_id'][-8:]}", daemon=True).start()
    return proc.pid


def supervisor_alive(log_path: str) -> bool | None:
    """Is the supervisor of the run logging to ``log_path`` still alive? None when that cannot be told here
    (no such file on this machine)."""
    try:
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)  # (releases the lock, if this took it)
    return False


def _kill_group(proc: subprocess.Popen[bytes], log: IO[bytes]) -> None:
    """SIGTERM the job's process group, SIGKILL whatever is left of it after a grace period."""

    def gone() -> bool:
        proc.poll()  # reap the leader: a zombie still counts as a member of its group
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return True
        return False

    for sig, wait in ((signal.SIGTERM, KILL_GRACE), (signal.SIGKILL, 1.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if gone():
                return
            time.sleep(0.05)
        if sig == signal.SIGTERM:
            log.write(b"[memcli] the job's process group did not stop on SIGTERM: sending SIGKILL\n")


def supervise(spec: dict[str, Any]) -> dict[str, Any]:
    """Run the job, enforce its timeout, append its output to the log; the run's final values."""
    argv: list[str] = spec["argv"]
    timeout = float(spec["timeout"])
    started = time.monotonic()
    with open(spec["log_path"], "ab", buffering=0) as log:
        log.write(f"[memcli] job {spec['job']} for {spec['task_id']}: {json.dumps(argv)} in {spec['cwd']} "
                  f"(timeout {timeout:g} s)\n".encode())
        stopping = threading.Event()
        running: list[subprocess.Popen[bytes]] = []

        def on_term(signum: int, frame: Any) -> None:  # the supervisor is being stopped: so is its job
            stopping.set()
            if running:
                _kill_group(running[0], log)

        signal.signal(signal.SIGTERM, on_term)  # before the job starts: no moment where it would be orphaned
        try:
            proc = subprocess.Popen(argv, cwd=spec["cwd"], stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
        except OSError as exc:
            msg = f"could not start {argv[0]!r}: {exc.strerror or exc}"
            log.write(f"[memcli] {msg}\n".encode())
            return {"status": "failed", "exit_code": None, "error": msg}
        running.append(proc)
        if stopping.is_set():  # SIGTERM arrived while it was being started
            _kill_group(proc, log)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc, log)
            code = proc.wait()
            msg = f"killed after its {timeout:g} s timeout"
            log.write(f"[memcli] {msg} (exit code {code})\n".encode())
            return {"status": "timed-out", "exit_code": code, "error": msg}
        took = time.monotonic() - started
        if stopping.is_set():
            log.write(b"[memcli] stopped: the supervisor got SIGTERM\n")
            return {"status": "failed", "exit_code": code, "error": "stopped before it finished"}
        log.write(f"[memcli] exit code {code} after {took:.2f} s\n".encode())
        if code == 0:
            return {"status": "succeeded", "exit_code": 0, "error": None}
        return {"status": "failed", "exit_code": code, "error": f"exit code {code}"}


class RunRecorder:
    """Writes a run's result to the ``memcli_job_runs`` table through pylance itself: ~0.2 s to import where
    LanceDB takes ~1 s, and the supervisor needs nothing else of it. The table is LanceDB's
    ``<data_uri>/<name>.lance`` dataset; object-store credentials come from the environment, as for LanceDB."""

    def __init__(self, data_uri: str) -> None:
        import lance

        from memcli.board.store import RUNS_TABLE

        self.lance = lance
        self.uri = f"{data_uri.rstrip('/')}/{RUNS_TABLE}.lance"

    def finish(self, run_id: str, values: dict[str, Any]) -> None:
        import pyarrow as pa

        from memcli.memory.reader import quote

        ds = self.lance.dataset(self.uri)
        rows = ds.to_table(filter=f"run_id = {quote(run_id)}").to_pylist()
        if not rows:
            raise RuntimeError(f"no job run {run_id} in {self.uri}")
        data = pa.Table.from_pylist([{**rows[0], **values}], schema=ds.schema)
        for attempt in range(8):  # another writer committed first: retried (lance also retries by itself)
            try:
                ds.merge_insert("run_id").when_matched_update_all().execute(data)
                return
            except (OSError, RuntimeError, ValueError):
                if attempt == 7:
                    raise
                time.sleep(0.1 * (attempt + 1))
                ds = self.lance.dataset(self.uri)


def main(argv: list[str]) -> int:
    """``python -m memcli.board.jobs SPEC``: supervise one run and record its result on the board."""
    from memcli.models import now_ms

    spec = json.loads(argv[1])
    recorder: list[RunRecorder] = []

    def connect() -> None:  # the imports take a moment: done while the job runs, not after it
        recorder.append(RunRecorder(spec["data_uri"]))

    opener = threading.Thread(target=connect, name="memcli-job-store", daemon=True)
    opener.start()
    result = supervise(spec)
    ended = now_ms()
    opener.join()
    if not recorder:  # it failed in the thread: once more here, with its error on stderr (the run's log)
        connect()
    recorder[0].finish(spec["run_id"], {**result, "ended_at": ended})
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a detached process
    sys.exit(main(sys.argv))
