"""The HTTP embedders (`openai`, `jina`) against a fake embeddings server on 127.0.0.1 (no real network)."""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from memcli.config import EmbedderConfig
from memcli.embedders import CachedEmbedder, make_embedder
from memcli.embedders._http import endpoint_url, retry_after_seconds
from memcli.embedders.jina import JinaEmbedder
from memcli.embedders.openai import OpenAIEmbedder
from memcli.errors import ConfigError, EmbedderError

API_KEY = "sk-test-SECRET-0123456789"

# A scripted response: (status, headers, body) where body is bytes or a JSON-able object; or a callable
# taking the request body and returning such a tuple (or None for the default embeddings answer).
Reply = tuple[int, dict[str, str], Any]
Script = Callable[[dict[str, Any]], "Reply | None"]


def fake_vector(text: str, dim: int) -> list[float]:
    """A deterministic, non-zero vector for a text (so the test can check which text got which vector)."""
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    rng = np.random.default_rng(seed)
    return [float(x) for x in rng.standard_normal(dim) + 0.01]


def normed(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


class FakeAPI:
    """State of the fake server: recorded requests and a queue of scripted replies."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: list[Script] = []
        self.always: Script | None = None
        self.default_dim = 12
        self.shuffle = True
        self.lock = threading.Lock()
        self.url = ""

    def embeddings(self, body: dict[str, Any]) -> Reply:
        dim = int(body.get("dimensions") or self.default_dim)
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        items = [{"object": "embedding", "index": i, "embedding": fake_vector(t, dim)} for i, t in enumerate(inputs)]
        if self.shuffle:
            random.Random(len(self.requests)).shuffle(items)
        return 200, {}, {"object": "list", "data": items, "model": body.get("model"),
                         "usage": {"prompt_tokens": 1, "total_tokens": 1}}

    def reply(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            step = self.script.pop(0) if self.script else self.always
        out = step(body) if step else None
        return out if out is not None else self.embeddings(body)


def make_handler(api: FakeAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.loads(raw)
            with api.lock:
                api.requests.append({"path": self.path, "headers": dict(self.headers.items()), "body": body})
            status, headers, payload = api.reply(body)
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                pass

    return Handler


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    state = FakeAPI()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def cfg_for(api: FakeAPI, provider: str = "openai", **kw: Any) -> EmbedderConfig:
    values: dict[str, Any] = {"provider": provider, "base_url": api.url, "model": "test-embed",
                              "api_key": API_KEY, "max_retries": 2, "backoff_base": 0.001, "timeout": 5.0}
    values.update(kw)
    return EmbedderConfig(**values)


def error_reply(status: int, message: str, headers: dict[str, str] | None = None) -> Script:
    return lambda body: (status, headers or {}, {"error": {"message": message, "type": "test_error"}})


# ------------------------------------------------------------------------------------------ openai


def test_openai_request_shape(api: FakeAPI) -> None:
    emb = OpenAIEmbedder(cfg_for(api, dims=8))
    vecs = emb.embed_passages(["hello", "world"])
    assert vecs.shape == (2, 8) and vecs.dtype == np.float32
    np.testing.assert_allclose(vecs[0], normed(fake_vector("hello", 8)), rtol=1e-5)
    np.testing.assert_allclose(vecs[1], normed(fake_vector("world", 8)), rtol=1e-5)
    (req,) = api.requests
    assert req["path"] == "/v1/embeddings"
    assert req["body"] == {"model": "test-embed", "input": ["hello", "world"], "encoding_format": "float",
                           "dimensions": 8}
    assert req["headers"]["Authorization"] == f"Bearer {API_KEY}"
    assert emb.identity() == {"provider": "openai", "model": "test-embed", "dim": 8}
    q = emb.embed_query("a question")
    assert q.shape == (8,)
    assert api.requests[1]["body"]["input"] == ["a question"]
    emb.close()


def test_openai_defaults_and_no_dimensions_when_unset(api: FakeAPI) -> None:
    emb = OpenAIEmbedder(EmbedderConfig(provider="openai", base_url=api.url))
    assert emb.model == "text-embedding-3-small"
    emb.embed_passages(["x"])
    (req,) = api.requests
    assert "dimensions" not in req["body"]
    assert "Authorization" not in req["headers"]  # local servers (Ollama, LM Studio) need no key
    assert OpenAIEmbedder(EmbedderConfig(provider="openai")).url == "https://api.openai.com/v1/embeddings"


def test_dims_probed_when_not_configured(api: FakeAPI) -> None:
    emb = OpenAIEmbedder(cfg_for(api))
    assert api.requests == []  # building an embedder never touches the network
    assert emb.dim == 12
    (probe,) = api.requests
    assert len(probe["body"]["input"]) == 1 and "dimensions" not in probe["body"]
    assert emb.identity() == {"provider": "openai", "model": "test-embed", "dim": 12}
    assert len(api.requests) == 1  # probed once


def test_dims_learned_from_first_response_without_probe(api: FakeAPI) -> None:
    emb = OpenAIEmbedder(cfg_for(api))
    emb.embed_passages(["one", "two"])
    assert emb.dim == 12 and emb.identity()["dim"] == 12
    assert len(api.requests) == 1


def test_batching_and_order_preserved(api: FakeAPI) -> None:
    texts = [f"memory number {i}" for i in range(150)]
    emb = OpenAIEmbedder(cfg_for(api, batch_size=64))
    vecs = emb.embed_passages(texts)
    assert [len(r["body"]["input"]) for r in api.requests] == [64, 64, 22]
    assert [t for r in api.requests for t in r["body"]["input"]] == texts
    expected = np.stack([normed(fake_vector(t, 12)) for t in texts])
    np.testing.assert_allclose(vecs, expected, rtol=1e-5, atol=1e-6)


def test_items_without_index_are_taken_in_order(api: FakeAPI) -> None:
    def no_index(body: dict[str, Any]) -> Reply:
        return 200, {}, {"data": [{"embedding": fake_vector(t, 4)} for t in body["input"]]}

    api.always = no_index
    vecs = OpenAIEmbedder(cfg_for(api)).embed_passages(["a", "b"])
    np.testing.assert_allclose(vecs[1], normed(fake_vector("b", 4)), rtol=1e-5)


def test_retry_on_429_then_success(api: FakeAPI) -> None:
    api.script = [error_reply(429, "rate limited", {"Retry-After": "0"})]
    emb = OpenAIEmbedder(cfg_for(api, backoff_base=5.0))  # a long backoff: only Retry-After: 0 keeps this fast
    start = time.monotonic()
    vecs = emb.embed_passages(["retry me"])
    assert time.monotonic() - start < 2.0
    assert vecs.shape == (1, 12)
    assert len(api.requests) == 2


def test_5xx_exhausts_retries_without_leaking_the_key(api: FakeAPI) -> None:
    api.always = error_reply(503, f"overloaded, your key {API_KEY} is fine")
    emb = OpenAIEmbedder(cfg_for(api, max_retries=2))
    with pytest.raises(EmbedderError) as exc_info:
        emb.embed_passages(["x"])
    msg = exc_info.value.message
    assert "503" in msg and "overloaded" in msg and "3 attempts" in msg
    assert API_KEY not in msg and API_KEY not in str(exc_info.value)
    assert len(api.requests) == 3


def test_4xx_is_not_retried(api: FakeAPI) -> None:
    api.always = error_reply(401, f"Incorrect API key provided: {API_KEY}")
    emb = OpenAIEmbedder(cfg_for(api))
    with pytest.raises(EmbedderError) as exc_info:
        emb.embed_query("x")
    msg = exc_info.value.message
    assert "401" in msg and "Incorrect API key" in msg and API_KEY not in msg
    assert len(api.requests) == 1


def test_timeout_raises_embedder_error(api: FakeAPI) -> None:
    def slow(body: dict[str, Any]) -> None:
        time.sleep(0.6)

    api.always = slow
    emb = OpenAIEmbedder(cfg_for(api, timeout=0.15, max_retries=1))
    with pytest.raises(EmbedderError, match="timed out"):
        emb.embed_passages(["slow"])
    assert len(api.requests) == 2  # timeouts are retried


def test_connection_refused_raises_embedder_error() -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    emb = OpenAIEmbedder(EmbedderConfig(provider="openai", base_url=f"http://127.0.0.1:{port}", model="m",
                                        max_retries=1, backoff_base=0.001))
    with pytest.raises(EmbedderError, match="cannot be reached"):
        emb.embed_query("x")


def test_malformed_json_raises_embedder_error(api: FakeAPI) -> None:
    api.always = lambda body: (200, {}, b"{not json")
    with pytest.raises(EmbedderError, match="not JSON"):
        OpenAIEmbedder(cfg_for(api)).embed_passages(["x"])
    assert len(api.requests) == 1


@pytest.mark.parametrize("payload", [
    {"object": "list"},
    {"data": []},
    {"data": [{"index": 0, "embedding": "not base64 !!"}]},
    {"data": [{"index": 0, "embedding": ["a", "b"]}]},
    {"data": [{"index": 5, "embedding": [1.0, 2.0]}]},
    [1, 2, 3],
])
def test_unusable_response_raises_embedder_error(api: FakeAPI, payload: Any) -> None:
    api.always = lambda body: (200, {}, payload)
    with pytest.raises(EmbedderError):
        OpenAIEmbedder(cfg_for(api)).embed_passages(["x"])


def test_zero_vector_raises_embedder_error(api: FakeAPI) -> None:
    api.always = lambda body: (200, {}, {"data": [
        {"index": 0, "embedding": [0.1, 0.2, 0.3]}, {"index": 1, "embedding": [0.0, 0.0, 0.0]}]})
    with pytest.raises(EmbedderError, match="empty or non-finite"):
        OpenAIEmbedder(cfg_for(api)).embed_passages(["a", "b"])


def test_wrong_dimension_raises_embedder_error(api: FakeAPI) -> None:
    api.always = lambda body: (200, {}, {"data": [{"index": 0, "embedding": fake_vector("x", 16)}]})
    with pytest.raises(EmbedderError) as exc_info:
        OpenAIEmbedder(cfg_for(api, dims=8)).embed_passages(["x"])
    assert "16" in exc_info.value.message and "8" in exc_info.value.message


def test_base64_embeddings_are_decoded(api: FakeAPI) -> None:
    import base64

    vec = np.asarray(fake_vector("b64", 6), dtype="<f4")
    api.always = lambda body: (200, {}, {"data": [{"index": 0, "embedding": base64.b64encode(vec.tobytes()).decode()}]})
    out = OpenAIEmbedder(cfg_for(api)).embed_passages(["b64"])
    np.testing.assert_allclose(out[0], vec / np.linalg.norm(vec), rtol=1e-5)


def test_close_then_reuse(api: FakeAPI) -> None:
    emb = OpenAIEmbedder(cfg_for(api))
    emb.embed_query("one")
    emb.close()
    emb.close()  # idempotent
    emb.embed_query("two")  # a new client is opened lazily
    assert len(api.requests) == 2


# ------------------------------------------------------------------------------------------ jina


def test_jina_request_shape_and_tasks(api: FakeAPI) -> None:
    emb = JinaEmbedder(cfg_for(api, provider="jina", model=None, dims=32))
    assert emb.model == "jina-embeddings-v3"
    emb.embed_passages(["a passage"])
    emb.embed_query("a query")
    passage, query = (r["body"] for r in api.requests)
    assert passage["task"] == "retrieval.passage" and query["task"] == "retrieval.query"
    assert passage["model"] == "jina-embeddings-v3" and passage["input"] == ["a passage"]
    assert passage["embedding_type"] == "float" and passage["dimensions"] == 32
    assert api.requests[0]["path"] == "/v1/embeddings"
    assert api.requests[0]["headers"]["Authorization"] == f"Bearer {API_KEY}"
    assert emb.identity() == {"provider": "jina", "model": "jina-embeddings-v3", "dim": 32}
    assert JinaEmbedder(EmbedderConfig(provider="jina")).url == "https://api.jina.ai/v1/embeddings"


def test_jina_batching_retry_and_error_detail(api: FakeAPI) -> None:
    api.script = [lambda body: (500, {}, {"detail": "temporary failure"})]
    emb = JinaEmbedder(cfg_for(api, provider="jina", batch_size=2))
    vecs = emb.embed_passages(["a", "b", "c"])
    assert vecs.shape == (3, 12)
    assert [r["body"]["input"] for r in api.requests] == [["a", "b"], ["a", "b"], ["c"]]
    api.always = lambda body: (422, {}, {"detail": [{"msg": "dimensions must be <= 1024"}]})
    with pytest.raises(EmbedderError, match=r"422.*dimensions must be <= 1024"):
        emb.embed_query("q")
    assert emb.dim == 12  # known from the first response: no probe


def test_jina_v2_models_get_no_task(api: FakeAPI) -> None:
    JinaEmbedder(cfg_for(api, provider="jina", model="jina-embeddings-v2-base-en")).embed_query("q")
    assert "task" not in api.requests[0]["body"]


# ------------------------------------------------------------------------------------------ helpers


@pytest.mark.parametrize(("base", "url"), [
    ("https://api.openai.com/v1", "https://api.openai.com/v1/embeddings"),
    ("https://api.openai.com/v1/", "https://api.openai.com/v1/embeddings"),
    ("http://localhost:11434", "http://localhost:11434/v1/embeddings"),
    ("http://localhost:11434/", "http://localhost:11434/v1/embeddings"),
    ("http://localhost:1234/v1/embeddings", "http://localhost:1234/v1/embeddings"),
    ("https://example.com/openai/v1beta?api-version=2", "https://example.com/openai/v1beta/embeddings?api-version=2"),
])
def test_endpoint_url(base: str, url: str) -> None:
    assert endpoint_url(base) == url


def test_bad_base_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        OpenAIEmbedder(EmbedderConfig(provider="openai", base_url="localhost:11434"))


def test_retry_after_parsing() -> None:
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert retry_after_seconds({"retry-after": "0"}) == 0.0
    assert retry_after_seconds({"retry-after": "2.5"}) == 2.5
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"retry-after": "99999"}) == 60.0  # capped
    assert retry_after_seconds({"retry-after": format_datetime(now + timedelta(seconds=3), usegmt=True)},
                               now=now) == 3.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


# ------------------------------------------------------------------------------------------ integration


def test_make_embedder_openai(api: FakeAPI) -> None:
    emb = make_embedder(EmbedderConfig(provider="openai", base_url=api.url, model="test-embed", api_key=API_KEY))
    assert isinstance(emb, CachedEmbedder) and isinstance(emb.inner, OpenAIEmbedder)
    assert api.requests == []  # no probe at construction
    v1 = emb.embed_query("cached question")
    v2 = emb.embed_query("cached question")
    np.testing.assert_array_equal(v1, v2)
    assert len(api.requests) == 1  # the second call came from the cache
    assert emb.identity() == {"provider": "openai", "model": "test-embed", "dim": 12}
    assert emb.dim == 12
    emb.close()


def test_service_remember_and_recall_with_openai_embedder(api: FakeAPI, tmp_path: Any) -> None:
    """End to end: config (env) -> make_embedder -> the probed identity opens the store -> remember/recall."""
    from memcli.config import load_config
    from memcli.memory.service import MemoryService

    env = {"MEMCLI_EMBEDDER": "openai", "MEMCLI_EMBED_BASE_URL": api.url, "MEMCLI_EMBED_MODEL": "test-embed",
           "MEMCLI_EMBED_API_KEY": API_KEY}
    svc = MemoryService.open(load_config(tmp_path / "home", env=env))
    try:
        assert svc.store.stored_identity == {"provider": "openai", "model": "test-embed", "dim": 12}
        texts = ["the database is postgres", "deploys go out on fridays", "the api key lives in vault"]
        ids = [svc.remember(t, source="api").memory_id for t in texts]
        hits = svc.recall("deploys go out on fridays", top_k=3)
        # the fake server embeds queries and passages alike, so the same text is the nearest neighbour
        assert hits and hits[0].memory.id == ids[1]
        assert all(r["headers"]["Authorization"] == f"Bearer {API_KEY}" for r in api.requests)
    finally:
        svc.close()
