"""Optional LLM summaries of captured turns, against a local fake OpenAI-compatible / Anthropic server."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from test_hooks_e2e import kill_spawned, serve
from test_hooks_units import SECRETS, _secret_text

from memcli.config import load_config
from memcli.hooks import llm
from memcli.hooks.capture import capture_turn
from memcli.hooks.state import HookState
from memcli.memory.service import MemoryService

ROOT = Path(__file__).resolve().parents[1]


class FakeLLM:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.answer = "The ledger export timed out after 30 s; the timeout is now 120 s (jobs/reconcile.py)."
        self.status = 200
        self.answers: dict[str, str] = {}  # a word in the turn sent -> the answer for that turn

    def answer_for(self, body: dict[str, Any]) -> str:
        sent = json.dumps(body, ensure_ascii=False)
        return next((a for word, a in self.answers.items() if word in sent), self.answer)


@pytest.fixture
def fake_llm() -> Iterator[tuple[FakeLLM, str]]:
    state = FakeLLM()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            state.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            answer = state.answer_for(body)
            if self.path.endswith("/chat/completions"):
                out = {"choices": [{"message": {"role": "assistant", "content": answer}}],
                       "usage": {"prompt_tokens": 300, "completion_tokens": 40, "total_tokens": 340}}
            else:
                out = {"content": [{"type": "text", "text": answer}],
                       "usage": {"input_tokens": 280, "output_tokens": 30}}
            data = json.dumps(out).encode()
            self.send_response(state.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield state, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def _capture(home: Path, provider: str, url: str, reply: str, budget: int = 100_000) -> Any:
    cfg = load_config(home)
    cfg.hooks.llm_provider = provider
    cfg.hooks.llm_base_url = url + ("/v1" if provider == "openai" else "")
    cfg.hooks.llm_model = "test-model"
    cfg.hooks.llm_api_key = "test-key-123"
    cfg.hooks.llm_daily_token_budget = budget
    svc = MemoryService.open(cfg)
    try:
        payload = {"session_id": "s", "cwd": str(home), "stop_hook_active": False,
                   "prompt": "why does the reconciliation job crash?", "last_assistant_message": reply}
        return capture_turn(svc, payload, cfg.hooks, HookState(home), home), svc.list(tags=["turn"])
    finally:
        svc.close()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_llm_summary_is_stored_and_never_sees_secrets(home: Path, fake_llm: tuple[FakeLLM, str],
                                                      provider: str) -> None:
    fake, url = fake_llm
    reply = "It crashed because the ledger export timed out. " + _secret_text()
    res, mems = _capture(home, provider, url, reply)
    assert res.status == "stored"
    assert [m.content for m in mems] == [fake.answer]
    ((path, headers, body),) = fake.requests
    sent = json.dumps(body)
    for value in SECRETS.values():
        for piece in value.replace("Bearer ", "").split("\n"):
            if len(piece) > 8:
                assert piece not in sent
    if provider == "openai":
        assert path == "/v1/chat/completions" and headers["authorization"] == "Bearer test-key-123"
        assert body["model"] == "test-model" and body["messages"][0]["role"] == "system"
    else:
        assert path == "/v1/messages" and headers["x-api-key"] == "test-key-123"
        assert headers["anthropic-version"] and body["system"]
    usage = json.loads((home / "hooks-state" / "llm-usage.json").read_text())
    assert usage["tokens"] == (340 if provider == "openai" else 310) and usage["calls"] == 1


def test_llm_skip_answer_stores_nothing(home: Path, fake_llm: tuple[FakeLLM, str]) -> None:
    fake, url = fake_llm
    fake.answer = "SKIP"
    res, mems = _capture(home, "openai", url, "A long enough reply about nothing in particular, really. " * 5)
    assert res.status == "skipped" and mems == []


def test_llm_failure_or_spent_budget_falls_back_to_extractive(home: Path, fake_llm: tuple[FakeLLM, str]) -> None:
    fake, url = fake_llm
    fake.status = 500
    res, mems = _capture(home, "openai", url, "It crashed because the ledger export timed out after 30 seconds.")
    assert res.status == "stored" and mems[0].content.startswith("User: why does the reconciliation job crash?")
    assert "hooks.log" in str(list((home / "logs").iterdir()))
    fake.status = 200
    n = len(fake.requests)
    res, mems = _capture(home, "anthropic", url, "Another cause: the export query had no index on ledger.date, so it "
                         "timed out; I added the index.", budget=10)
    assert len(fake.requests) == n  # the budget is spent: no call at all
    assert res.status == "stored" and any("index on ledger.date" in m.content for m in mems)


def test_budget_resets_daily(tmp_path: Path) -> None:
    b = llm.Budget(tmp_path / "u.json", 1000)
    b.spend(600)
    assert b.remaining() == 400
    (tmp_path / "u.json").write_text(json.dumps({"date": "2000-01-01", "tokens": 999}))
    assert b.remaining() == 1000


# --------------------------------------------------------------------------- through the plugin
def _stop_via_launcher(env: dict[str, str], home: Path, session: str, prompt: str, reply: str) -> dict[str, Any]:
    """`sh hooks/run.sh Stop` as Claude Code runs it; the capture decision from <home>/logs/capture.jsonl."""
    payload = {"session_id": session, "cwd": str(home), "hook_event_name": "Stop", "transcript_path": "",
               "prompt": prompt, "last_assistant_message": reply, "stop_hook_active": False}
    p = subprocess.run(["sh", str(ROOT / "hooks" / "run.sh"), "Stop"], input=json.dumps(payload).encode(), env=env,
                       capture_output=True, timeout=60)
    assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")
    journal = home / "logs" / "capture.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        lines = journal.read_text().splitlines() if journal.exists() else []
        found = [json.loads(x) for x in lines if json.loads(x)["session_id"] == session]
        if found:
            return found[-1]
        time.sleep(0.05)
    raise AssertionError(f"no capture decision for {session}")


def test_with_an_llm_the_model_may_say_a_turn_holds_nothing_worth_keeping(home: Path, tmp_path: Path,
                                                                         fake_llm: tuple[FakeLLM, str]) -> None:
    """A real `memcli serve` with `[hooks] llm_provider`, the turns sent through the plugin's launcher."""
    fake, url = fake_llm
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f'[hooks]\nllm_provider = "openai"\nllm_base_url = "{url}/v1"\n'
                                      'llm_model = "test-model"\nllm_api_key = "test-key-123"\n')
    fake.answers = {
        "02:30": "The nightly export runs at 02:30 UTC, after invoice generation (dags/export.py).",
        "tutorial": "SKIP",
        "CRM exports": "The nightly job loads the CRM exports into the warehouse, then rebuilds the reporting views.",
    }
    srv = serve(home)
    env = {**srv.env, "CLAUDE_PLUGIN_DATA": str(tmp_path / "plugin-data"), "MEMCLI_PYTHON": sys.executable}
    try:
        # the rules keep it; the model writes the memory
        d = _stop_via_launcher(env, home, "a", "why does the nightly export fail?",
                               "Because it ran before the invoices were generated; it now runs at 02:30 UTC "
                               "(dags/export.py).")
        assert d["status"] == "stored" and d["reason"].startswith("kept: ") and "cause" in d["reason"]
        # the rules would keep it, the model says there is nothing to keep: nothing is stored
        d = _stop_via_launcher(env, home, "b", "which port does the demo app of the framework tutorial use?",
                               "The tutorial's demo app listens on port 3000 by default (set PORT to change it).")
        assert (d["status"], d["reason"]) == ("skipped", "the LLM found nothing worth keeping")
        # the rules are unsure (no cue either way): the model is asked, and keeps it
        d = _stop_via_launcher(env, home, "c", "remind me how the nightly job works",
                               "It loads the CRM exports into the warehouse and rebuilds the reporting views.")
        assert (d["status"], d["reason"]) == ("stored", "kept by the LLM (the rules were unsure)")
        calls = len(fake.requests)
        # sure chatter never costs a call
        for i, (prompt, reply) in enumerate([("thanks!", "You're welcome!"), ("run the tests", "All 212 passed."),
                                             ("commit it", "Committed as `3f2a1b9`.")]):
            d = _stop_via_launcher(env, home, f"d{i}", prompt, reply)
            assert d["status"] == "skipped" and "LLM" not in d["reason"], d
        assert len(fake.requests) == calls == 3
    finally:
        srv.stop()
        kill_spawned(home)
    svc = MemoryService.open(load_config(home))
    try:
        contents = sorted(m.content for m in svc.list(tags=["turn"]))
    finally:
        svc.close()
    assert contents == sorted([fake.answers["02:30"], fake.answers["CRM exports"]])
    usage = json.loads((home / "hooks-state" / "llm-usage.json").read_text())
    assert usage["calls"] == 3 and usage["tokens"] == 3 * 340
