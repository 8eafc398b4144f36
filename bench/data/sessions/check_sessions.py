#!/usr/bin/env python3
"""Validate bench/data/sessions/ (standard library only).

Checks every transcript (sNN-*.jsonl) and labels.json:
- every line parses and has type, uuid, parentUuid, sessionId, timestamp (ISO-8601 UTC), cwd, isSidechain;
  user/assistant lines have a message with the right role; assistant content is a list of text, thinking
  and tool_use blocks; tool results are user lines of tool_result blocks answering an earlier tool_use;
- uuids are unique, parentUuid points to an earlier line, timestamps never go back, one sessionId per file
  (the one in labels.json), cwd matches;
- every real user prompt (a user line whose content is a string) is labelled, in order, and every labelled
  prompt_uuid is such a line; every turn ends with assistant text (what the Stop hook receives);
- labels and kinds are known, keep turns have a fact, skip turns use a skip kind;
- every question has a unique id, a known language, an answer_turn ("s03#4" or "s03-slug#4") that is a keep
  turn of a session that started and ended before `after`, and was asked in a later session (or "new");
- counts reach the minimums (32 sessions, 320 turns, 8-14 turns a session, 110 questions).

Prints the counts; exits 1 on any problem (warnings alone do not fail).

    python3 bench/data/sessions/check_sessions.py [dir]
"""
import json
import re
import sys
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

MIN_SESSIONS, MIN_TURNS, MIN_QUESTIONS = 32, 320, 110
TURNS_PER_SESSION = (8, 14)
KEEP_KINDS = {"decision", "cause", "fix", "convention", "config", "preference", "gotcha"}
SKIP_KINDS = {"greeting", "chatter", "command", "tool_noise", "question_nothing_new", "repeat", "superseded"}
LANGS = {"en", "zh-hans", "zh-hant", "mixed"}
LINE_TYPES = {"user", "assistant", "system"}
BLOCK_TYPES = {"text", "thinking", "tool_use"}
TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")
CJK_RE = re.compile(r"[\u3400-\u9fff]")
FILE_RE = re.compile(r"^(s\d{2})-[a-z0-9-]+\.jsonl$")

errors: list[str] = []
warnings: list[str] = []


def err(msg: str) -> None:
    errors.append(msg)


def ts(value: str) -> datetime | None:
    if not isinstance(value, str) or not TS_RE.match(value):
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc)


def check_transcript(path: Path, meta: dict) -> dict:
    """Returns {"prompts": [uuid...], "first": dt, "last": dt, "turn_has_reply": [bool...]}."""
    name = path.name
    seen: set[str] = set()
    tool_uses: set[str] = set()
    prompts: list[str] = []
    replies: list[bool] = []
    first = last = None
    session_ids = set()
    for i, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{name}:{i}"
        if not raw.strip():
            err(f"{where}: empty line")
            continue
        try:
            rec = json.loads(raw)
        except ValueError as exc:
            err(f"{where}: not JSON ({exc})")
            continue
        if not isinstance(rec, dict):
            err(f"{where}: not an object")
            continue
        for key in ("type", "uuid", "parentUuid", "sessionId", "timestamp", "cwd", "isSidechain"):
            if key not in rec:
                err(f"{where}: missing {key}")
        kind = rec.get("type")
        if kind not in LINE_TYPES:
            err(f"{where}: type {kind!r}")
        if rec.get("isSidechain") is not False:
            err(f"{where}: isSidechain must be false")
        uid = rec.get("uuid")
        if not isinstance(uid, str) or not uid:
            err(f"{where}: bad uuid")
        elif uid in seen:
            err(f"{where}: duplicate uuid {uid}")
        parent = rec.get("parentUuid")
        if i == 1 and parent is not None:
            err(f"{where}: first line must have parentUuid null")
        if i > 1 and parent not in seen:
            err(f"{where}: parentUuid {parent!r} is not an earlier line")
        seen.add(uid)
        session_ids.add(rec.get("sessionId"))
        if rec.get("cwd") != meta.get("cwd"):
            err(f"{where}: cwd {rec.get('cwd')!r} != labels cwd {meta.get('cwd')!r}")
        t = ts(rec.get("timestamp"))
        if t is None:
            err(f"{where}: timestamp {rec.get('timestamp')!r} is not ISO-8601 UTC")
        else:
            if last is not None and t < last:
                err(f"{where}: timestamp goes back")
            first = first or t
            last = t
        if kind == "system":
            if "message" not in rec and "content" not in rec:
                err(f"{where}: system line without content")
            continue
        msg = rec.get("message")
        if not isinstance(msg, dict) or msg.get("role") != kind:
            err(f"{where}: message.role must be {kind!r}")
            continue
        content = msg.get("content")
        if kind == "user":
            if isinstance(content, str):
                if not content.strip():
                    err(f"{where}: empty prompt")
                prompts.append(uid)
                replies.append(False)
            elif isinstance(content, list) and content and all(
                    isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
                for b in content:
                    if b.get("tool_use_id") not in tool_uses:
                        err(f"{where}: tool_result for unknown tool_use_id {b.get('tool_use_id')!r}")
                    if not isinstance(b.get("content"), (str, list)):
                        err(f"{where}: tool_result content must be a string or a list")
            else:
                err(f"{where}: user content must be a string (prompt) or a list of tool_result blocks")
        else:
            if not prompts:
                err(f"{where}: assistant line before the first prompt")
            if not str(msg.get("id", "")).startswith("msg_"):
                err(f"{where}: assistant message.id must start with msg_")
            if not str(msg.get("model", "")).startswith("claude-"):
                err(f"{where}: assistant message.model must start with claude-")
            if not isinstance(content, list) or not content:
                err(f"{where}: assistant content must be a non-empty list")
                continue
            for b in content:
                bt = b.get("type") if isinstance(b, dict) else None
                if bt not in BLOCK_TYPES:
                    err(f"{where}: block type {bt!r}")
                elif bt == "text":
                    if not isinstance(b.get("text"), str) or not b["text"].strip():
                        err(f"{where}: empty text block")
                    elif prompts:
                        replies[-1] = True
                elif bt == "thinking" and not isinstance(b.get("thinking"), str):
                    err(f"{where}: thinking block without text")
                elif bt == "tool_use":
                    if not str(b.get("id", "")).startswith("toolu_") or not b.get("name") or \
                            not isinstance(b.get("input"), dict):
                        err(f"{where}: tool_use needs id (toolu_…), name and input")
                    tool_uses.add(b.get("id"))
                    if prompts:
                        replies[-1] = False  # the turn must not end on a tool call
    if session_ids != {meta.get("session_id")}:
        err(f"{name}: sessionId {sorted(map(str, session_ids))} != labels session_id {meta.get('session_id')!r}")
    return {"prompts": prompts, "first": first, "last": last, "replies": replies}


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    labels_path = root / "labels.json"
    try:
        doc = json.loads(labels_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"ERROR: {labels_path}: {exc}")
        return 1
    for key in ("name", "version", "description", "sessions", "questions"):
        if key not in doc:
            err(f"labels.json: missing {key}")
    sessions = doc.get("sessions") or []
    questions = doc.get("questions") or []

    files_on_disk = {p.name for p in root.glob("s[0-9][0-9]-*.jsonl")}
    labelled_files = [s.get("file") for s in sessions]
    for f in sorted(files_on_disk - set(labelled_files)):
        err(f"{f}: transcript not in labels.json")
    if len(set(labelled_files)) != len(labelled_files):
        err("labels.json: a session file is listed twice")
    if len({s.get("session_id") for s in sessions}) != len(sessions):
        err("labels.json: duplicate session_id")

    by_stem: dict[str, dict] = {}
    turns_total = 0
    kinds: Counter = Counter()
    labels: Counter = Counter()
    turns_by_lang: Counter = Counter()
    sessions_by_lang: Counter = Counter()
    by_project: Counter = Counter()
    for s in sessions:
        fname = s.get("file", "?")
        m = FILE_RE.match(fname or "")
        if not m:
            err(f"{fname}: file name must look like sNN-slug.jsonl")
            continue
        for key in ("session_id", "project", "cwd", "lang", "started", "turns"):
            if key not in s:
                err(f"{fname}: labels entry missing {key}")
        if s.get("lang") not in LANGS:
            err(f"{fname}: lang {s.get('lang')!r}")
        path = root / fname
        if not path.exists():
            err(f"{fname}: listed in labels.json but missing")
            continue
        info = check_transcript(path, s)
        started = ts(s.get("started"))
        if started is None or info["first"] is None or started != info["first"]:
            err(f"{fname}: started {s.get('started')!r} is not the first line's timestamp")
        turns = s.get("turns") or []
        if not TURNS_PER_SESSION[0] <= len(turns) <= TURNS_PER_SESSION[1]:
            err(f"{fname}: {len(turns)} turns (want {TURNS_PER_SESSION[0]}-{TURNS_PER_SESSION[1]})")
        labelled = [t.get("prompt_uuid") for t in turns]
        if labelled != info["prompts"]:
            missing = [u for u in info["prompts"] if u not in labelled]
            extra = [u for u in labelled if u not in info["prompts"]]
            err(f"{fname}: labelled turns do not match the prompts in the file "
                f"(unlabelled prompts {missing[:3]}, labelled non-prompts {extra[:3]}, or out of order)")
        for idx, t in enumerate(turns, 1):
            where = f"{fname}#{t.get('n')}"
            if t.get("n") != idx:
                err(f"{where}: turn n must be {idx}")
            lab, kind = t.get("label"), t.get("kind")
            if lab == "keep":
                if kind not in KEEP_KINDS:
                    err(f"{where}: keep turn with kind {kind!r}")
                if not isinstance(t.get("fact"), str) or len(t["fact"].strip()) < 15:
                    err(f"{where}: keep turn needs a fact sentence")
            elif lab == "skip":
                if kind not in SKIP_KINDS:
                    err(f"{where}: skip turn with kind {kind!r}")
            else:
                err(f"{where}: label {lab!r}")
            if idx <= len(info["replies"]) and not info["replies"][idx - 1]:
                err(f"{where}: turn does not end with assistant text (nothing for last_assistant_message)")
            labels[lab] += 1
            kinds[(lab, kind)] += 1
        turns_total += len(turns)
        turns_by_lang[s.get("lang")] += len(turns)
        sessions_by_lang[s.get("lang")] += 1
        by_project[s.get("project")] += 1
        by_stem[m.group(1)] = by_stem[fname[:-6]] = {
            "file": fname, "started": started, "ended": info["last"],
            "turns": {t.get("n"): t for t in turns}}

    ids = [q.get("id") for q in questions]
    for dup in sorted(k for k, v in Counter(ids).items() if v > 1):
        err(f"question id {dup!r} is used twice")
    q_lang: Counter = Counter()
    q_style: Counter = Counter()
    answered_sessions: set[str] = set()
    for q in questions:
        qid = q.get("id", "?")
        for key in ("id", "asked_in", "after", "question", "answer_turn", "lang"):
            if key not in q:
                err(f"{qid}: missing {key}")
        text = q.get("question") or ""
        if len(text.strip()) < 8:
            err(f"{qid}: question too short")
        lang = q.get("lang")
        if lang not in LANGS:
            err(f"{qid}: lang {lang!r}")
        elif lang == "en" and CJK_RE.search(text):
            warnings.append(f"{qid}: lang en but the question has Chinese characters")
        elif lang != "en" and not CJK_RE.search(text):
            err(f"{qid}: lang {lang} but the question has no Chinese characters")
        q_lang[lang] += 1
        q_style[q.get("style", "-")] += 1
        after = ts(q.get("after"))
        if after is None:
            err(f"{qid}: after {q.get('after')!r} is not ISO-8601 UTC")
            continue
        ref = str(q.get("answer_turn", ""))
        stem, _, n = ref.partition("#")
        sess = by_stem.get(stem)
        if sess is None or not n.isdigit() or int(n) not in sess["turns"]:
            err(f"{qid}: answer_turn {ref!r} is not a labelled turn")
            continue
        turn = sess["turns"][int(n)]
        if turn.get("label") != "keep":
            err(f"{qid}: answer_turn {ref} is a skip turn")
        if not (sess["started"] and sess["started"] < after):
            err(f"{qid}: answer session {sess['file']} did not start before after={q.get('after')}")
        elif sess["ended"] and sess["ended"] >= after:
            err(f"{qid}: answer session {sess['file']} is still running at after={q.get('after')}")
        asked = q.get("asked_in")
        if asked != "new":
            asked_sess = by_stem.get(str(asked).removesuffix(".jsonl"))
            if asked_sess is None:
                err(f"{qid}: asked_in {asked!r} is neither 'new' nor a session file")
            elif asked_sess["file"] == sess["file"]:
                err(f"{qid}: asked in the session that answers it")
            elif asked_sess["started"] < after or asked_sess["started"] <= sess["ended"]:
                err(f"{qid}: asked_in {asked} starts before `after` or before the answer session ends")
        answered_sessions.add(sess["file"])

    # ---- counts
    n_sessions, n_questions = len(sessions), len(questions)
    if n_sessions < MIN_SESSIONS:
        err(f"{n_sessions} sessions < {MIN_SESSIONS}")
    if turns_total < MIN_TURNS:
        err(f"{turns_total} turns < {MIN_TURNS}")
    if n_questions < MIN_QUESTIONS:
        err(f"{n_questions} questions < {MIN_QUESTIONS}")
    keep_share = labels["keep"] / turns_total if turns_total else 0
    if not 0.40 <= keep_share <= 0.50:
        warnings.append(f"keep share {keep_share:.1%} is outside 40-50%")
    zh_q = sum(v for k, v in q_lang.items() if k != "en")
    if n_questions and not 0.25 <= zh_q / n_questions <= 0.45:
        warnings.append(f"Chinese questions {zh_q / n_questions:.0%}, want about a third")
    if n_sessions and len(answered_sessions) < 0.75 * n_sessions:
        warnings.append(f"questions answered from only {len(answered_sessions)} of {n_sessions} sessions")

    print(f"sessions: {n_sessions}  ({', '.join(f'{k} {v}' for k, v in sorted(sessions_by_lang.items()))})")
    print(f"  by project: {', '.join(f'{k} {v}' for k, v in sorted(by_project.items()))}")
    zh_turns = sum(v for k, v in turns_by_lang.items() if k != "en")
    print(f"turns: {turns_total}  ({', '.join(f'{k} {v}' for k, v in sorted(turns_by_lang.items()))}; "
          f"Chinese sessions {zh_turns / max(1, turns_total):.0%})")
    print(f"  keep {labels['keep']} ({keep_share:.1%}), skip {labels['skip']}")
    for lab in ("keep", "skip"):
        row = sorted(((k, v) for (l, k), v in kinds.items() if l == lab), key=lambda kv: -kv[1])
        print(f"  {lab} by kind: " + ", ".join(f"{k} {v}" for k, v in row))
    print(f"questions: {n_questions}  by lang: {', '.join(f'{k} {v}' for k, v in sorted(q_lang.items()))}; "
          f"by style: {', '.join(f'{k} {v}' for k, v in sorted(q_style.items()))}")
    print(f"  answered from {len(answered_sessions)} of {n_sessions} sessions; "
          f"{sum(1 for q in questions if q.get('asked_in') == 'new')} asked in a new session")
    for w in warnings:
        print(f"WARNING: {w}")
    for e in errors[:50]:
        print(f"ERROR: {e}")
    if len(errors) > 50:
        print(f"ERROR: … and {len(errors) - 50} more")
    print("OK" if not errors else f"FAILED: {len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
