"""A team server that a space token cannot bend (issue 26, items 1, 8 and 11), through a real `memcli serve` on
127.0.0.1 with spaces and their tokens, real hook clients (this home's own, and the team client as the plugin's
launcher runs it) and a real full disk:

- a space token names a transcript of the server's machine (the admin's), a FIFO, `/dev/zero`, or a `cwd`
  the server would resolve (`/proc/self/cwd`): the server opens none of them, and nobody's turn waits;
- the team hook client reads its transcript on its own machine (a private mount the server cannot see) and
  sends the turn's text and the project's name, never a path (what a stand-in server receives);
- the spool reads only its own bounded regular files and sets a failing entry aside after five attempts,
  counted across restarts, without holding up the others;
- a Stop turn the server cannot queue (its spool on a full tmpfs) is refused (507), logged, and kept by the
  team client until the disk has room again — never acknowledged and lost;
- a space called `acme/bob` and space `acme`'s agent `bob` never share a session's state.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from _util import (
    HERE,
    MEMCLI,
    PYTHON,
    Reaper,
    Server,
    all_rows,
    make_env,
    run_hook,
    start_server,
    wait_for,
)

LAUNCHER = HERE.parents[1] / "hooks" / "run.sh"
SPACES = {"alpha": "ann", "beta": "ben", "acme": "bob", "acme/bob": "ann"}


@dataclass
class Team:
    srv: Server
    tokens: dict[str, str]  # space -> its agent's token
    tmp: Path

    def as_(self, space: str) -> httpx.Client:
        return httpx.Client(base_url=self.srv.url, timeout=60,
                            headers={"Authorization": f"Bearer {self.tokens[space]}"})

    def memories(self, space: str) -> list[dict[str, Any]]:
        with self.as_(space) as c:
            return c.get("/api/memories", params={"limit": 500}).json()

    def stored(self, space: str, marker: str, timeout: float = 30) -> dict[str, Any]:
        """The space's memory holding ``marker``, once the spool has stored it."""
        return wait_for(lambda: next((m for m in self.memories(space) if marker in m["content"]), None), timeout,
                        0.1, f"{marker} stored in {space}")

    def client_env(self, space: str, home: str) -> dict[str, str]:
        """A team hook client's environment, as the plugin runs it on a teammate's machine."""
        env = make_env(self.tmp / home, MEMCLI_API_URL=self.srv.url, MEMCLI_API_TOKEN=self.tokens[space],
                       MEMCLI_PYTHON=PYTHON, CLAUDE_PLUGIN_DATA=str(self.tmp / f"{home}-plugin-data"))
        env.pop("MEMCLI_TOKEN")
        return env


def start_team(reaper: Reaper, tmp: Path, spaces: dict[str, str]) -> Team:
    srv = start_server(reaper, tmp / "server-home")
    tokens = {}
    with srv.client() as admin:
        for space, agent in spaces.items():
            r = admin.post("/api/spaces", json={"name": space, "agent": agent})
            assert r.status_code == 201, r.text
            tokens[space] = r.json()["api_token"]
    return Team(srv, tokens, tmp)


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment (pip install -e .)")
    reaper = Reaper()
    try:
        yield start_team(reaper, tmp_path_factory.mktemp("attacks"), SPACES)
    finally:
        reaper.reap()


def write_transcript(path: Path, prompt: str, reply: str) -> Path:
    """A Claude Code transcript (JSONL) whose last turn is ``prompt`` → ``reply``."""
    recs = [{"type": "user", "message": {"role": "user", "content": "an older question"}},
            {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "old"}]}},
            {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": prompt}]}},
            {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": reply}]}}]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


def turn(session: str, marker: str, **extra: Any) -> dict[str, Any]:
    """A Stop payload whose turn is worth keeping; ``marker`` finds it in the store."""
    return {"session_id": session, "hook_event_name": "Stop", "stop_hook_active": False,
            "prompt": f"why did the {marker} nightly export fail last week?",
            "last_assistant_message": f"{marker}: the nightly export failed because the warehouse credentials "
                                      "rotated at midnight; the job now reads them from the vault at start.",
            **extra}


# ------------------------------------------------------------------------ item 1: paths named by a space token
def test_a_space_token_cannot_make_the_server_read_the_admins_transcript(team: Team) -> None:
    admins = write_transcript(team.srv.home / "admin-transcript.jsonl",
                              "why does the payroll export fail on the first of the month?",
                              "ADMIN-ONLY-7731: the payroll export fails because the HR database rotates its "
                              "password at midnight; the new one is kept in the vault under payroll/export.")
    with team.as_("alpha") as ann:
        ann.post("/hooks/UserPromptSubmit", json={"session_id": "steal-1", "prompt": "payroll export?",
                                                  "transcript_path": str(admins)})
        r = ann.post("/hooks/Stop", json={"session_id": "steal-1", "hook_event_name": "Stop",
                                          "stop_hook_active": False, "transcript_path": str(admins)})
        assert r.status_code == 202
        # a turn of alpha's own queued after it: once it is stored, the one before it was handled
        assert ann.post("/hooks/Stop", json=turn("steal-2", "ALPHA-AFTER-STEAL")).status_code == 202
    team.stored("alpha", "ALPHA-AFTER-STEAL")
    assert not [r for r in all_rows(team.srv.home) if "ADMIN-ONLY-7731" in r["content"]]


def test_a_space_token_cannot_make_the_server_resolve_a_directory(team: Team) -> None:
    with team.as_("alpha") as ann:
        assert ann.post("/hooks/Stop", json=turn("cwd-1", "ALPHA-CWD-1", cwd="/proc/self/cwd")).status_code == 202
        assert ann.post("/hooks/Stop", json=turn("cwd-2", "ALPHA-CWD-2", cwd=str(team.srv.home),
                                                 project="billing-api")).status_code == 202
    first, second = team.stored("alpha", "ALPHA-CWD-1"), team.stored("alpha", "ALPHA-CWD-2")
    assert first["project"] is None  # not the name of the server's own working directory
    assert second["project"] == "billing-api"  # the name the client gave, not a directory of the server
    assert "cwd" not in (first.get("metadata") or {}) and "cwd" not in (second.get("metadata") or {})


def test_a_fifo_or_dev_zero_as_a_transcript_holds_up_no_one(tmp_path: Path, reaper: Reaper) -> None:
    team = start_team(reaper, tmp_path, {"alpha": "ann", "beta": "ben"})
    fifo = tmp_path / "transcript.fifo"
    os.mkfifo(fifo)
    work = tmp_path / "work" / "payroll"
    (work / ".git").mkdir(parents=True)
    # (the FIFO first, each in a later millisecond: without the fix the drainer blocks on it for good and never
    # gets to read /dev/zero to the end of memory; the reaper SIGKILLs the server)
    with team.as_("alpha") as ann:  # a space token names them: never opened
        for n, path in enumerate((fifo, "/dev/zero")):
            r = ann.post("/hooks/Stop", json={"session_id": f"poison-{n}", "stop_hook_active": False,
                                              "transcript_path": str(path)})
            assert r.status_code == 202
            time.sleep(0.01)
    for n, path in enumerate((fifo, "/dev/zero")):  # this home's own client names them: refused unread
        h = run_hook("Stop", json.dumps({"session_id": f"local-{n}", "hook_event_name": "Stop", "cwd": str(work),
                                         "stop_hook_active": False, "transcript_path": str(path)}).encode(),
                     team.srv.hook_env())
        assert (h.rc, h.out, h.err) == (0, b"", b"")
    # everyone's next turns are stored at once: the space's, another space's, the home's own
    with team.as_("beta") as ben:
        assert ben.post("/hooks/Stop", json=turn("b-1", "BETA-AFTER-POISON")).status_code == 202
    h = run_hook("Stop", json.dumps(turn("own-1", "HOME-AFTER-POISON", cwd=str(work))).encode(), team.srv.hook_env())
    assert (h.rc, h.out, h.err) == (0, b"", b"")
    team.stored("beta", "BETA-AFTER-POISON", timeout=20)
    wait_for(lambda: [r for r in all_rows(team.srv.home, ("content", "namespace", "project"))
                      if "HOME-AFTER-POISON" in r["content"] and r["namespace"] == "default"
                      and r["project"] == "payroll"], 20, 0.2, "the home's own turn stored")
    assert team.srv.proc.poll() is None  # alive (no /dev/zero read to the end of memory)
    spool = team.srv.home / "spool"
    wait_for(lambda: not list(spool.glob("*.json")), 20, 0.1, "an empty spool: nothing poisoned stays queued")


def test_the_team_client_reads_its_transcript_on_its_own_machine(team: Team, tmp_path: Path) -> None:
    """The client's files are on a mount of its own (a private mount namespace): the server cannot see them,
    as it could not on another machine. The turn still arrives whole, with its project's name."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a private mount namespace needs root and unshare(1)")
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    staged = write_transcript(tmp_path / "staged.jsonl", "LAPTOP-PROMPT-9: why did the invoice PDFs come out blank?",
                              "LAPTOP-REPLY-9: the invoice PDFs were blank because the renderer could not find "
                              "its fonts; the fix installs them in the container image.")
    script = ('mount -t tmpfs -o size=1m tmpfs "$1" || exit 97\n'
              'mkdir -p "$1/billing-api/.git" "$1/billing-api/src" && cp "$2" "$1/t.jsonl" && exec sh "$3" Stop')
    payload = {"session_id": "laptop-1", "hook_event_name": "Stop", "stop_hook_active": False,
               "transcript_path": str(laptop / "t.jsonl"), "cwd": str(laptop / "billing-api" / "src")}
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(laptop),
                        str(staged), str(LAUNCHER)], input=json.dumps(payload).encode(),
                       env=team.client_env("alpha", "laptop-home"), capture_output=True, timeout=60)
    if p.returncode == 97 or p.stderr.startswith(b"unshare:"):
        pytest.skip(f"no private mount here: {p.stderr.decode(errors='replace').strip()}")
    assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")
    assert not (laptop / "t.jsonl").exists()  # the server's side of the mount: nothing there
    mem = team.stored("alpha", "LAPTOP-REPLY-9")
    assert "LAPTOP-PROMPT-9" in mem["content"] and mem["project"] == "billing-api"
    assert not (team.tmp / "laptop-home" / "spool-team").exists()  # taken by the server, not queued


class Recorder:
    """A stand-in team server on 127.0.0.1 that answers every hook 202 and keeps the bodies it got."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        bodies = self.bodies = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                bodies.append((self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"])))))
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_the_team_client_sends_text_and_a_project_name_never_a_path(team: Team, tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "t.jsonl", "REC-PROMPT-3: why is the CSV import so slow?",
                                  "REC-REPLY-3: the CSV import was slow because it committed every row; it now "
                                  "commits every thousand rows.")
    cwd = tmp_path / "ledger" / "src"
    (tmp_path / "ledger" / ".git").mkdir(parents=True)
    cwd.mkdir()
    rec = Recorder()
    try:
        env = {**team.client_env("alpha", "recorded-home"), "MEMCLI_API_URL": rec.url}
        base = {"session_id": "rec-1", "transcript_path": str(transcript), "cwd": str(cwd)}
        for event, extra in (("SessionStart", {"source": "startup"}), ("UserPromptSubmit", {"prompt": "CSV import?"}),
                             ("Stop", {"stop_hook_active": False})):
            h = run_hook(event, json.dumps({**base, "hook_event_name": event, **extra}).encode(), env)
            assert (h.rc, h.out, h.err) == (0, b"", b""), event
    finally:
        rec.close()
    assert [path for path, _ in rec.bodies] == ["/hooks/SessionStart", "/hooks/UserPromptSubmit", "/hooks/Stop"]
    for _, body in rec.bodies:
        assert "transcript_path" not in body and "cwd" not in body and body["project"] == "ledger", body
    stop = rec.bodies[-1][1]
    assert stop["last_assistant_message"].startswith("REC-REPLY-3") and stop["transcript_prompt"].startswith("REC-PROMPT-3")


# ------------------------------------------------------------------------ item 1: the spool's own entries
def _drain(home: Path, process: Any, timeout: float = 10.0) -> tuple[int | None, list[str]]:
    """One drain of ``<home>/spool`` by a new Spool (as a server starting), in a thread that may not hang."""
    from memcli.hooks.spool import Spool

    lines: list[str] = []
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(Spool(home).drain(process, lines.append)), daemon=True)
    t.start()
    t.join(timeout)
    return (result[0] if result else None), lines


def test_the_spool_reads_only_its_own_bounded_regular_files(tmp_path: Path) -> None:
    home = tmp_path / "home"
    spool = home / "spool"
    spool.mkdir(parents=True)
    os.mkfifo(spool / "100-fifo.json")
    secret = tmp_path / "elsewhere.json"  # a valid payload outside the spool, reached through a link
    secret.write_text(json.dumps({"session_id": "link", "prompt": "LINKED-7"}))
    (spool / "101-link.json").symlink_to(secret)
    (spool / "102-dev.json").symlink_to("/dev/zero")
    with open(spool / "103-huge.json", "wb") as fh:  # sparse: 100 MB that take no room
        fh.truncate(100 << 20)
    (spool / "104-good.json").write_text(json.dumps({"session_id": "good", "prompt": "GOOD-1"}))
    seen: list[dict[str, Any]] = []
    try:
        done, lines = _drain(home, seen.append)
        assert done == 1 and [p["prompt"] for p in seen] == ["GOOD-1"], (done, seen, lines)
        aside = sorted(p.name for p in (spool / "failed").iterdir())
        assert aside == ["100-fifo.json", "101-link.json", "102-dev.json", "103-huge.json"]
        assert len([line for line in lines if "moved to spool/failed" in line]) == 4
        assert not list(spool.glob("*.json")) and secret.exists()
    finally:
        # without the fix the drain thread is blocked in open() of the FIFO: it must not go on to read /dev/zero
        # once the FIFO is let go
        with contextlib.suppress(OSError):
            (spool / "102-dev.json").unlink()
        with contextlib.suppress(OSError):
            os.close(os.open(spool / "100-fifo.json", os.O_WRONLY | os.O_NONBLOCK))


def test_a_failing_entry_is_set_aside_after_five_starts_and_holds_up_no_other(tmp_path: Path) -> None:
    home = tmp_path / "home"
    spool = home / "spool"
    spool.mkdir(parents=True)
    (spool / "100-bad.json").write_text(json.dumps({"n": "bad"}))
    (spool / "101-good.json").write_text(json.dumps({"n": "good"}))
    stored: list[str] = []

    def process(payload: dict[str, Any]) -> None:
        if payload["n"] == "bad":
            raise RuntimeError("this payload trips a bug")
        stored.append(payload["n"])

    done, _ = _drain(home, process)
    assert (done, stored) == (1, ["good"])  # the good turn did not wait behind the bad one
    for start in range(2, 6):  # each drain by a new Spool: a restarted server
        (spool / f"{start}00-later.json").write_text(json.dumps({"n": f"later-{start}"}))
        done, _ = _drain(home, process)
        assert done == 1 and stored[-1] == f"later-{start}"
    assert [p.name for p in (spool / "failed").iterdir()] == ["100-bad.try5.json"]
    assert not list(spool.glob("*.json"))

    # an entry that kills the server while it is stored (here: an interrupt out of the capture) is counted too
    (spool / "600-killer.json").write_text(json.dumps({"n": "killer"}))

    def killed(payload: dict[str, Any]) -> None:
        raise KeyboardInterrupt

    from memcli.hooks.spool import Spool

    for _ in range(5):
        with pytest.raises(KeyboardInterrupt):
            Spool(home).drain(killed, lambda line: None)
    done, lines = _drain(home, killed)
    assert done == 0 and any("tried 5 times" in line for line in lines)
    assert (spool / "failed" / "600-killer.try5.json").exists() and not list(spool.glob("*.json"))


# ------------------------------------------------------------------------ item 8: a full disk
@contextlib.contextmanager
def full_tmpfs(path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs at ``path``, filled to the last byte; yields the filler (delete it to make room)."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("a full disk needs a small tmpfs, which only root can mount here")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)], capture_output=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {p.stderr.decode(errors='replace').strip()}")
    try:
        filler = path / "filler.bin"
        with open(filler, "wb", buffering=0) as fh:
            for chunk in (1 << 12, 1):
                with contextlib.suppress(OSError):
                    while True:
                        fh.write(b"\0" * chunk)
        assert shutil.disk_usage(path).free < 4096
        yield filler
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def test_a_stop_turn_the_server_cannot_queue_is_refused_and_kept_by_the_client(tmp_path: Path,
                                                                             reaper: Reaper) -> None:
    team = start_team(reaper, tmp_path, {"alpha": "ann"})
    home = team.srv.home
    hooks_log = home / "logs" / "hooks.log"
    with full_tmpfs(home / "spool") as filler:
        with team.srv.client() as admin, team.as_("alpha") as ann:
            for who, c in (("admin", admin), ("alpha", ann)):
                r = c.post("/hooks/Stop", json=turn(f"full-{who}", f"FULL-{who.upper()}"))
                assert r.status_code == 507 and r.json()["code"] == "insufficient_storage", (who, r.text)
        assert hooks_log.read_text().count("could not be queued") == 2
        assert not [p for p in (home / "spool").iterdir() if p.name != "filler.bin"]  # no half-written file

        # the team hook client, refused, keeps the turn; the next hook sends it once the disk has room
        env = team.client_env("alpha", "teammate")
        h = run_hook("Stop", json.dumps(turn("mate-1", "MATE-FULL-1")).encode(), env)
        assert (h.rc, h.out, h.err) == (0, b"", b"")
        queued = tmp_path / "teammate" / "spool-team"
        assert len(list(queued.glob("*.json"))) == 1
        filler.unlink()
        h = run_hook("SessionStart", json.dumps({"session_id": "mate-2", "source": "startup"}).encode(), env)
        assert h.rc == 0 and h.err == b""
        assert not list(queued.glob("*.json"))
        team.stored("alpha", "MATE-FULL-1")
        with team.srv.client() as admin:
            assert admin.post("/hooks/Stop", json=turn("full-again", "FULL-AGAIN")).status_code == 202
        wait_for(lambda: [r for r in all_rows(home) if "FULL-AGAIN" in r["content"]], 30, 0.2, "stored")


# ------------------------------------------------------------------------ item 11: session state per space
def test_a_space_named_with_a_slash_keeps_its_session_state_to_itself(team: Team) -> None:
    pending = "ACME-BOB-PENDING-55: why do release builds fail verification after the signing keys rotate?"
    with team.as_("acme/bob") as victim, team.as_("acme") as attacker:
        r = victim.post("/hooks/UserPromptSubmit", json={"session_id": "s1", "prompt": pending,
                                                         "hook_event_name": "UserPromptSubmit"})
        assert r.status_code in (200, 204)
        # space acme's agent "bob" names the session that spelled the same key: "acme" / "bob" / "ann/s1"
        r = attacker.post("/hooks/Stop", json={
            "session_id": "ann/s1", "hook_event_name": "Stop", "stop_hook_active": False,
            "last_assistant_message": "ACME-REPLY-56: the release signing keys rotate every ninety days through "
                                      "the vault's transit engine; the old key is kept to verify old builds."})
        assert r.status_code == 202
        r = victim.post("/hooks/Stop", json={
            "session_id": "s1", "hook_event_name": "Stop", "stop_hook_active": False,
            "last_assistant_message": "ACME-BOB-REPLY-57: release builds failed verification because the old "
                                      "signing key was deleted at rotation; the fix keeps it for ninety days."})
        assert r.status_code == 202
    mine = team.stored("acme/bob", "ACME-BOB-REPLY-57")
    assert "ACME-BOB-PENDING-55" in mine["content"]  # the prompt stayed with its own session's turn
    assert not [m for m in team.memories("acme") if "ACME-BOB-PENDING-55" in m["content"]]
