"""Optional LLM summaries of captured turns, against a local fake OpenAI-compatible / Anthropic server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memcli.config import load_config
from memcli.hooks import llm
from memcli.hooks.capture import capture_turn
from memcli.hooks.state import HookState
from memcli.service import MemoryService

from test_hooks_units import SECRETS, _secret_text


class FakeLLM:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.answer = "The ledger export timed out after 30 s; the timeout is now 120 s (jobs/reconcile.py)."
        self.status = 200


@pytest.fixture
def fake_llm() -> Iterator[tuple[FakeLLM, str]]:
    state = FakeLLM()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            state.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            if self.path.endswith("/chat/completions"):
                out = {"choices": [{"message": {"role": "assistant", "content": state.answer}}],
                       "usage": {"prompt_tokens": 300, "completion_tokens": 40, "total_tokens": 340}}
            else:
                out = {"content": [{"type": "text", "text": state.answer}],
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
