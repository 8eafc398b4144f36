"""Replay bench/data/sessions through the real Claude Code hooks and measure what capture keeps.

    python bench/sessions.py                     # bundled e5 embedder (what `memcli serve` uses by default)
    python bench/sessions.py --embedder hash     # the fast test embedder: capture figures only are meaningful
    python bench/sessions.py --no-questions      # capture only (junk rate, keep recall)
    python bench/sessions.py --judge-only        # no hooks, no store: the keep/skip verdict alone (seconds)
    python bench/sessions.py --json out.json --misses

Every session is replayed in `started` order against one fresh home and its warm `memcli serve`, as Claude Code
drives the plugin: `sh hooks/run.sh SessionStart`, then per turn `sh hooks/run.sh UserPromptSubmit` with the
prompt and `sh hooks/run.sh Stop` with the payload Claude Code sends (session_id, transcript_path pointing at
the transcript cut after that turn, cwd, hook_event_name, prompt, last_assistant_message, stop_hook_active
false), then SessionEnd. The Stop hook is asynchronous (the server stores the turn after answering); the replay
waits for the queue to empty before the next turn. Each Stop decision is read back from the home's capture
journal (`<home>/logs/capture.jsonl`: turn key, stored / duplicate / skipped, the memory id).

Figures (labels in bench/data/sessions/labels.json):
- junk rate: stored memories that come from *skip* turns / all stored memories (target <= 10%);
- keep recall: *keep* turns captured, stored or found a duplicate of a memory from another keep turn
  (target >= 90%), by kind;
- question hit: each later question goes, at the time it is asked (the store holds only the sessions that
  ended before it), through `run.sh UserPromptSubmit` in a session of its own; a hit when the memory captured
  from its answer turn is in the injected `additionalContext` (as full text or as an index line with its id;
  target >= 80%). Also: the same after the session's SessionStart digest (what the model holds in all), and
  recall@5 through the server (`/api/search`), to tell "never captured" from "captured but not injected".
Everything is reported for all sessions, the odd ones and the even ones (tuned on the odd, held out: the even).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "sessions"
sys.path.insert(0, str(ROOT / "src"))


# ------------------------------------------------------------------------------------------------ the data
@dataclass
class Turn:
    session: "Session"
    n: int
    label: str
    kind: str
    fact: str | None
    prompt: str
    reply: str
    last_line: int  # index of the turn's last transcript line

    @property
    def ref(self) -> str:
        return f"{self.session.tag}#{self.n}"


@dataclass
class Session:
    file: str
    session_id: str
    cwd: str
    lang: str
    started: str
    lines: list[str]
    turns: list[Turn] = field(default_factory=list)

    @property
    def tag(self) -> str:
        return self.file[:3]

    @property
    def odd(self) -> bool:
        return int(self.tag[1:]) % 2 == 1


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


def load(data: Path = DATA) -> tuple[list[Session], list[dict[str, Any]]]:
    """The sessions in `started` order, each with its labelled turns, and the questions."""
    labels = json.loads((data / "labels.json").read_text(encoding="utf-8"))
    sessions = []
    for meta in sorted(labels["sessions"], key=lambda s: s["started"]):
        lines = (data / meta["file"]).read_text(encoding="utf-8").splitlines()
        s = Session(meta["file"], meta["session_id"], meta["cwd"], meta["lang"], meta["started"], lines)
        starts = []
        for i, raw in enumerate(lines):
            rec = json.loads(raw)
            if rec["type"] == "user" and isinstance(rec["message"]["content"], str):
                starts.append((i, rec["uuid"], rec["message"]["content"]))
        for k, lab in enumerate(meta["turns"]):
            i, uuid, prompt = starts[k]
            assert uuid == lab["prompt_uuid"], (meta["file"], lab["n"])
            end = (starts[k + 1][0] if k + 1 < len(starts) else len(lines)) - 1
            reply = _text(json.loads(lines[end])["message"]["content"])
            s.turns.append(Turn(s, lab["n"], lab["label"], lab["kind"], lab.get("fact"), prompt, reply, end))
        sessions.append(s)
    return sessions, labels["questions"]


# ------------------------------------------------------------------------------------------------ processes
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(home: Path, port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    import httpx

    cli = Path(sys.executable).parent / "memcli"
    cmd = [str(cli)] if cli.exists() else [sys.executable, "-m", "memcli.cli"]
    log = open(home.parent / "serve.log", "wb")  # noqa: SIM115 - the server's whole life
    proc = subprocess.Popen([*cmd, "serve", "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"memcli serve exited: see {home.parent / 'serve.log'}")
        try:
            token = json.loads((home / "auth.json").read_text())["token"]
            r = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2, headers={"Authorization": f"Bearer {token}"})
            if r.status_code == 200 and r.json().get("ready"):
                return proc
        except (httpx.HTTPError, OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("memcli serve did not become ready in 180 s")


class Hooks:
    """`sh hooks/run.sh EVENT` with a JSON payload on stdin, as hooks.json runs it."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.cmd = ["sh", str(ROOT / "hooks" / "run.sh")]
        self.times: dict[str, list[float]] = defaultdict(list)

    def __call__(self, event: str, payload: dict[str, Any]) -> str:
        """The additionalContext the hook injected ("" for none)."""
        t0 = time.perf_counter()
        p = subprocess.run([*self.cmd, event], input=json.dumps(payload).encode(), env=self.env,
                           capture_output=True, timeout=120)
        self.times[event].append((time.perf_counter() - t0) * 1000)
        if p.returncode != 0 or p.stderr:
            raise SystemExit(f"run.sh {event} exited {p.returncode}: {p.stderr.decode()}")
        out = p.stdout.decode()
        if not out.strip():
            return ""
        return str(json.loads(out).get("hookSpecificOutput", {}).get("additionalContext", ""))


# ------------------------------------------------------------------------------------------------ the replay
class Replay:
    def __init__(self, work: Path, embedder: str, deadline_ms: int | None, src: Path | None = None) -> None:
        self.work = work
        self.home = work / "home"
        self.home.mkdir(parents=True)
        (self.home / "config.toml").write_text(f'[embedder]\nprovider = "{embedder}"\n')
        self.port = free_port()
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")},
                    "MEMCLI_HOME": str(self.home), "MEMCLI_PORT": str(self.port), "MEMCLI_EMBEDDER": embedder,
                    "MEMCLI_PYTHON": sys.executable, "CLAUDE_PLUGIN_DATA": str(work / "plugin-data"),
                    "HOME": str(work / "user-home")}
        if deadline_ms:
            self.env["MEMCLI_HOOK_DEADLINE_MS"] = str(deadline_ms)
        if src:  # the server and the hooks run this source tree's memcli (its `src/`) instead of the installed one
            self.env["PYTHONPATH"] = str(src / "src")
        self.hooks = Hooks(self.env)
        self.proc: subprocess.Popen[bytes] | None = None
        self.journal_pos = 0
        self.decisions: dict[str, dict[str, Any]] = {}  # turn ref -> the capture journal's record
        self.questions: dict[str, dict[str, Any]] = {}

    def __enter__(self) -> "Replay":
        self.proc = start_server(self.home, self.port, self.env)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    # the server's token, for the REST reads of the figures
    def _client(self) -> Any:
        import httpx

        token = json.loads((self.home / "auth.json").read_text())["token"]
        return httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=60,
                            headers={"Authorization": f"Bearer {token}"})

    def _journal(self) -> list[dict[str, Any]]:
        path = self.home / "logs" / "capture.jsonl"
        try:
            with open(path, "rb") as fh:
                fh.seek(self.journal_pos)
                data = fh.read()
        except FileNotFoundError:
            return []
        complete = data[: data.rfind(b"\n") + 1]
        self.journal_pos += len(complete)
        return [json.loads(line) for line in complete.decode("utf-8").splitlines() if line.strip()]

    def _wait_captured(self, key: str, timeout: float = 120.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for rec in self._journal():
                if rec.get("turn_key") == key:
                    return rec
            spool = self.home / "spool"
            if not (self.home / "logs" / "capture.jsonl").exists() and not any(
                    n.endswith(".json") for n in (os.listdir(spool) if spool.exists() else [])):
                return self._without_journal(key)
            time.sleep(0.03)
        return {"status": "lost", "reason": f"no capture decision within {timeout:.0f} s"}

    def _without_journal(self, key: str) -> dict[str, Any]:
        """A memcli without the capture journal (--src of an older version): the queue is empty, so the turn
        was handled; stored if a memory carries its turn key (a duplicate cannot be told from a skip)."""
        time.sleep(0.2)  # the queue file goes before the row is visible to another reader
        with self._client() as c:
            r = c.get("/api/memories", params={"tags": "turn", "limit": 1000})
            r.raise_for_status()
        for m in r.json():
            if (m.get("metadata") or {}).get("turn_key") == key:
                return {"status": "stored", "memory_id": m["memory_id"], "turn_key": key}
        return {"status": "skipped", "reason": "no memory (no journal to say why)", "turn_key": key}

    def session(self, s: Session) -> None:
        from memcli.hooks.capture import turn_key

        try:
            from memcli.redact import redact as _redact
        except ImportError:  # an older source tree (--src): payloads were not redacted before the turn key
            def _redact(text: str) -> str:
                return text

        tdir = self.work / "transcripts"
        tdir.mkdir(exist_ok=True)
        base = {"session_id": s.session_id, "cwd": s.cwd}
        self.hooks("SessionStart", {**base, "transcript_path": str(tdir / f"{s.tag}-0.jsonl"),
                                    "hook_event_name": "SessionStart", "source": "startup"})
        for t in s.turns:
            path = tdir / f"{s.tag}-{t.n}.jsonl"
            path.write_text("\n".join(s.lines[: t.last_line + 1]) + "\n", encoding="utf-8")
            self.hooks("UserPromptSubmit", {**base, "transcript_path": str(path),
                                            "hook_event_name": "UserPromptSubmit", "prompt": t.prompt})
            self.hooks("Stop", {**base, "transcript_path": str(path), "hook_event_name": "Stop", "prompt": t.prompt,
                                "last_assistant_message": t.reply, "stop_hook_active": False})
            # the hooks see the payload with its secrets redacted (memcli.redact), and key the turn on that
            self.decisions[t.ref] = self._wait_captured(turn_key(s.session_id, _redact(t.prompt), _redact(t.reply)))
        self.hooks("SessionEnd", {**base, "transcript_path": str(tdir / f"{s.tag}-{s.turns[-1].n}.jsonl"),
                                  "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})

    def ask(self, q: dict[str, Any], cwd: str) -> None:
        """One later question: through UserPromptSubmit alone, and after a SessionStart digest."""
        from memcli.models import short_id

        answer = self.decisions.get(q["answer_turn"], {})
        mid = answer.get("memory_id") if answer.get("status") in ("stored", "duplicate") else None
        base = {"cwd": cwd, "transcript_path": str(self.work / "transcripts" / "none.jsonl")}
        ctx = self.hooks("UserPromptSubmit", {**base, "session_id": f"q-{q['id']}",
                                              "hook_event_name": "UserPromptSubmit", "prompt": q["question"]})
        digest = self.hooks("SessionStart", {**base, "session_id": f"qs-{q['id']}", "hook_event_name": "SessionStart",
                                             "source": "startup"})
        ctx2 = self.hooks("UserPromptSubmit", {**base, "session_id": f"qs-{q['id']}",
                                               "hook_event_name": "UserPromptSubmit", "prompt": q["question"]})
        rank = None
        if mid:
            with self._client() as c:
                r = c.get("/api/search", params={"q": q["question"], "top_k": 5,
                                                 "project": Path(cwd).name, "project_only": "false"})
                r.raise_for_status()
                ids = [h["memory_id"] for h in r.json()]
            rank = ids.index(mid) + 1 if mid in ids else None

        def holds(text: str) -> bool:
            return bool(mid) and (f"[{short_id(mid)}]" in text or mid in text)

        self.questions[q["id"]] = {"captured": bool(mid), "hit": holds(ctx), "hit_with_digest": holds(digest + ctx2),
                                   "rank": rank, "injected": ctx.count("\n- [")}

    def contents(self) -> dict[str, str]:
        with self._client() as c:
            r = c.get("/api/memories", params={"tags": "turn", "limit": 1000})
            r.raise_for_status()
            return {m["memory_id"]: m["content"] for m in r.json()}


# ------------------------------------------------------------------------------------------------ figures
def pct(n: int, d: int) -> str:
    return f"{n}/{d} = {100 * n / d:.1f}%" if d else "n/a"


def capture_figures(turns: list[Turn], decided: dict[str, str], owner: dict[str, Turn]) -> dict[str, Any]:
    """Junk rate and keep recall for ``turns``; ``decided``: ref -> stored|duplicate:<ref>|skipped."""
    stored = [t for t in turns if decided[t.ref] == "stored"]
    junk = [t for t in stored if t.label == "skip"]
    keep = [t for t in turns if t.label == "keep"]

    def captured(t: Turn) -> bool:
        d = decided[t.ref]
        return d == "stored" or (d.startswith("duplicate:") and owner.get(d[10:]) is not None
                                 and owner[d[10:]].label == "keep")
    kept = [t for t in keep if captured(t)]
    return {"stored": len(stored), "junk": len(junk), "junk_rate": len(junk) / max(1, len(stored)),
            "keep": len(keep), "kept": len(kept), "keep_recall": len(kept) / max(1, len(keep)),
            "junk_by_kind": dict(Counter(t.kind for t in junk)),
            "skip_by_kind": dict(Counter(t.kind for t in turns if t.label == "skip")),
            "missed_by_kind": dict(Counter(t.kind for t in keep if not captured(t))),
            "keep_by_kind": dict(Counter(t.kind for t in keep))}


def print_capture(name: str, f: dict[str, Any]) -> None:
    print(f"  {name:6} junk {pct(f['junk'], f['stored']):22} keep recall {pct(f['kept'], f['keep'])}")


def question_figures(qs: list[dict[str, Any]], res: dict[str, dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for group, key in (("all", None), ("lang", "lang"), ("style", "style")):
        buckets: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for q in qs:
            buckets["all" if key is None else q[key]].append(q)
        for name, items in sorted(buckets.items()):
            rs = [res[q["id"]] for q in items]
            out[f"{group}:{name}" if key else "all"] = {
                "n": len(rs), "captured": sum(r["captured"] for r in rs), "hit": sum(r["hit"] for r in rs),
                "hit_with_digest": sum(r["hit_with_digest"] for r in rs),
                "recall@5": sum(r["rank"] is not None for r in rs)}
    return out


def judge_only(sessions: list[Session]) -> dict[str, str]:
    """The keep/skip verdict alone (memcli.hooks.keep), no store: stored | skipped per turn."""
    from memcli.hooks.capture import judge_turn

    return {t.ref: ("stored" if judge_turn(t.prompt, t.reply).keep else "skipped") for s in sessions
            for t in s.turns}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedder", default="local", choices=["local", "hash"],
                    help="local: the bundled e5 (default, needed for the questions); hash: the test embedder")
    ap.add_argument("--no-questions", action="store_true", help="capture figures only")
    ap.add_argument("--judge-only", action="store_true", help="no hooks, no store: the keep/skip verdict alone")
    ap.add_argument("--deadline-ms", type=int, default=None,
                    help="MEMCLI_HOOK_DEADLINE_MS of the hooks (default: memcli's own, 1500 ms)")
    ap.add_argument("--misses", action="store_true", help="list every junk memory, missed keep turn and question")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--keep-work", action="store_true", help="keep the temporary home (printed)")
    ap.add_argument("--src", type=Path, help="run the server and the hooks from this source tree (e.g. `git archive "
                    "main | tar -x -C DIR`) to compare versions in one run")
    args = ap.parse_args()

    sessions, questions = load()
    turns = [t for s in sessions for t in s.turns]
    owner = {t.ref: t for t in turns}
    t0 = time.perf_counter()
    results: dict[str, Any] = {"embedder": "hash" if args.judge_only else args.embedder}
    contents: dict[str, str] = {}
    qres: dict[str, dict[str, Any]] = {}
    if args.judge_only:
        decided = judge_only(sessions)
        hooks_times: dict[str, list[float]] = {}
    else:
        work = Path(tempfile.mkdtemp(prefix="memcli-bench-sessions-"))
        try:
            with Replay(work, args.embedder, args.deadline_ms, args.src) as rp:
                by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
                for q in questions:
                    by_session[q["asked_in"]].append(q)
                cwd_of = {s.tag: s.cwd for s in sessions}
                for i, s in enumerate(sessions):
                    if not args.no_questions:
                        for q in by_session.get(s.file, []):
                            rp.ask(q, s.cwd)
                    rp.session(s)
                    print(f"  [{time.perf_counter() - t0:6.0f}s] {s.tag} replayed ({i + 1}/{len(sessions)})",
                          file=sys.stderr, flush=True)
                if not args.no_questions:
                    for q in by_session.get("new", []):
                        rp.ask(q, cwd_of[q["answer_turn"].split("#")[0][:3]])
                contents = rp.contents()
                qres = rp.questions
                hooks_times = dict(rp.hooks.times)
                ref_of = {d.get("memory_id"): ref for ref, d in rp.decisions.items() if d.get("status") == "stored"}
                decided = {}
                for ref, d in rp.decisions.items():
                    if d.get("status") == "duplicate" and d.get("memory_id") in ref_of:
                        decided[ref] = "duplicate:" + ref_of[d["memory_id"]]
                    else:
                        decided[ref] = str(d.get("status"))
                results["decisions"] = rp.decisions
        finally:
            if args.keep_work:
                print(f"work dir kept: {work}", file=sys.stderr)
            else:
                shutil.rmtree(work, ignore_errors=True)

    print(f"\nsessions replay: {len(sessions)} sessions, {len(turns)} turns, embedder "
          f"{'none (--judge-only)' if args.judge_only else results['embedder']}, "
          f"{time.perf_counter() - t0:.0f} s")
    print("capture (junk: stored memories from skip turns; keep recall: keep turns captured)")
    for name, pick in (("all", lambda s: True), ("odd", lambda s: s.odd), ("even", lambda s: not s.odd)):
        f = capture_figures([t for s in sessions if pick(s) for t in s.turns], decided, owner)
        results[f"capture_{name}"] = f
        print_capture(name, f)
    fa = results["capture_all"]
    print("  junk by skip kind:    " + ", ".join(f"{k} {fa['junk_by_kind'].get(k, 0)}/{v}"
                                                   for k, v in sorted(fa["skip_by_kind"].items())))
    print("  keep missed by kind:  " + ", ".join(f"{k} {fa['missed_by_kind'].get(k, 0)}/{v}"
                                                   for k, v in sorted(fa["keep_by_kind"].items())))
    other = Counter(v for v in decided.values() if v not in ("stored", "skipped") and not v.startswith("duplicate:"))
    if other:
        print(f"  other outcomes: {dict(other)}")
    if qres:
        print("later questions (hit: the answer turn's memory is in UserPromptSubmit's additionalContext)")
        for split, pick in (("all", lambda q: True),
                            ("odd", lambda q: int(q["answer_turn"][1:3]) % 2 == 1),
                            ("even", lambda q: int(q["answer_turn"][1:3]) % 2 == 0)):
            qf = question_figures([q for q in questions if pick(q)], qres)
            results[f"questions_{split}"] = qf
            rows = qf.items() if split == "all" else [("all", qf["all"])]
            for name, r in rows:
                label = name if split == "all" else f"answer in {split} sessions"
                print(f"  {label:28} n={r['n']:3}  hit {pct(r['hit'], r['n']):18} with digest "
                      f"{pct(r['hit_with_digest'], r['n']):18} recall@5 {pct(r['recall@5'], r['n']):18} "
                      f"captured {r['captured']}")
    if hooks_times:
        print("hook processes (run.sh, whole process): " + ", ".join(
            f"{e} p50 {statistics.median(v):.0f} / p95 {sorted(v)[int(0.95 * (len(v) - 1))]:.0f} ms (n={len(v)})"
            for e, v in sorted(hooks_times.items())))
        deadline = args.deadline_ms or 1500
        late = sum(ms > deadline for ms in hooks_times.get("UserPromptSubmit", []))
        print(f"  UserPromptSubmit processes longer than the {deadline} ms deadline (they inject nothing): {late}")
        results["hook_p50_ms"] = {e: round(statistics.median(v), 1) for e, v in hooks_times.items()}
        results["prompt_hooks_past_deadline"] = late
    if args.misses:
        print("\njunk (stored skip turns):")
        for t in turns:
            if t.label == "skip" and decided[t.ref] == "stored":
                print(f"  {t.ref:7} {t.kind:20} {t.prompt[:70]!r}")
        print("missed keep turns:")
        for t in turns:
            if t.label == "keep" and decided[t.ref] != "stored" and not decided[t.ref].startswith("duplicate:"):
                print(f"  {t.ref:7} {t.kind:12} {decided[t.ref]:9} {t.prompt[:70]!r}")
        if qres:
            print("questions not hit:")
            for q in questions:
                r = qres[q["id"]]
                if not r["hit"]:
                    why = "never captured" if not r["captured"] else (
                        f"rank {r['rank']}" if r["rank"] else "not in recall's top 5")
                    print(f"  {q['id']} {q['answer_turn']:7} {q['lang']:7} {q['style']:5} {why:22} "
                          f"{q['question'][:60]!r}")
    results["contents"] = contents
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
