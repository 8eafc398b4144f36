"""Shared plumbing for the HTTP embedders (`openai`, `jina`): endpoint URLs, batching, retries, parsing.

Behaviour common to every HTTP embedder:

- **Endpoint.** ``base_url`` is normalised by :func:`endpoint_url`: a bare host (``http://localhost:11434``)
  gets ``/v1/embeddings``; a base with any path (``https://api.openai.com/v1``, ``http://host:8000/v1/``,
  ``https://example.com/openai``) gets ``/embeddings`` appended; a URL already ending in ``/embeddings`` is
  used as is. A query string (e.g. ``?api-version=...``) is kept.
- **Batching.** Texts go out in requests of at most ``batch_size`` inputs (and at most ~250k estimated
  tokens, below OpenAI's 300k-per-request limit). Results are put back in input order by their ``index``.
- **Retries.** 408, 409, 429, 5xx, timeouts and connection errors are retried up to ``max_retries`` times
  (so ``max_retries + 1`` attempts) with exponential backoff ``backoff_base * 2**attempt`` (capped at 30 s)
  and jitter; a ``Retry-After`` / ``retry-after-ms`` header from the server is honoured (capped at 60 s).
  Other 4xx responses fail at once.
- **Errors.** Every failure raises :class:`memcli.errors.EmbedderError` with the provider, the endpoint, the
  HTTP status and the API's own error message. The API key never appears in a message.
- **Dimension.** ``dim`` is ``cfg.dims`` when configured. Otherwise it is learned from the first response;
  reading ``dim`` (or ``identity()``, which the store needs at open time) before any embedding sends one
  short probe text to the API.
- The ``httpx.Client`` is created lazily on the first request (so building an embedder costs nothing and
  never touches the network) and released by ``close()``. Instances are safe to share between threads.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import threading
import time
from abc import abstractmethod
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from memcli import __version__
from memcli.embedders.base import Embedder
from memcli.errors import ConfigError, EmbedderError

if TYPE_CHECKING:
    import httpx

    from memcli.config import EmbedderConfig

RETRY_STATUSES = frozenset({408, 409, 429})
MAX_BACKOFF = 30.0  # seconds, cap of one computed backoff delay
MAX_RETRY_AFTER = 60.0  # seconds, cap of a server-requested delay
MAX_BATCH_TOKENS = 250_000  # estimated tokens per request (OpenAI allows 300k)
PROBE_TEXT = "dimension probe"
_ERROR_EXCERPT = 300


def endpoint_url(base_url: str, endpoint: str = "embeddings") -> str:
    """The full endpoint URL for a base URL given with or without ``/v1`` (see the module docstring)."""
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"embedder base_url {base_url!r} is not an http(s) URL (e.g. https://api.openai.com/v1 "
            "or http://localhost:11434/v1)"
        )
    path = parts.path.rstrip("/")
    if not path:
        path = f"/v1/{endpoint}"
    elif not path.endswith(f"/{endpoint}"):
        path = f"{path}/{endpoint}"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def display_url(url: str) -> str:
    """The URL without user info or query string, for messages."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def estimate_tokens(text: str) -> float:
    """A cheap, deliberately pessimistic token estimate (no tokenizer): ~4 ASCII chars or ~1 CJK char a token."""
    ascii_chars = sum(1 for c in text if c < "\x80")
    cjk_chars = sum(1 for c in text if c >= "\u2e80")
    return 0.3 * ascii_chars + 1.5 * cjk_chars + 0.7 * (len(text) - ascii_chars - cjk_chars)


def clip_to_tokens(text: str, max_tokens: float) -> str:
    """Cut the tail of a text whose estimated token count exceeds ``max_tokens``."""
    if len(text) * 0.3 <= max_tokens or estimate_tokens(text) <= max_tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix within the budget
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def retry_after_seconds(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The delay a ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date) header asks for, if any."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return min(MAX_RETRY_AFTER, max(0.0, float(ms) / 1000.0))
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return min(MAX_RETRY_AFTER, max(0.0, float(value)))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    delta = (when - (now or datetime.now(timezone.utc))).total_seconds()
    return min(MAX_RETRY_AFTER, max(0.0, delta))


def api_error_message(resp: "httpx.Response") -> str:
    """The API's own error message from an error response (OpenAI, Jina/FastAPI or plain-text shapes)."""
    try:
        body = resp.json()
    except ValueError:
        text = resp.text.strip()
        return text[:_ERROR_EXCERPT] if text else (resp.reason_phrase or "no error message")
    msg: Any = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            msg = err.get("message") or err.get("msg")
        elif isinstance(err, str):
            msg = err
        if not msg:
            detail = body.get("detail")
            if isinstance(detail, list):
                msg = "; ".join(str(d.get("msg", d)) if isinstance(d, dict) else str(d) for d in detail)
            elif detail:
                msg = detail
        if not msg:
            msg = body.get("message")
    text = str(msg) if msg else json.dumps(body, ensure_ascii=False)
    return text[:_ERROR_EXCERPT]


def _vector(item: Any, pos: int) -> np.ndarray:
    """One embedding from a response item: a list of floats, or base64 little-endian float32."""
    emb = item.get("embedding") if isinstance(item, dict) else None
    if isinstance(emb, str):
        try:
            raw = base64.b64decode(emb, validate=True)
        except (binascii.Error, ValueError):
            raise EmbedderError(f"item {pos} of the response has an undecodable base64 embedding") from None
        if not raw or len(raw) % 4:
            raise EmbedderError(f"item {pos} of the response has a malformed base64 embedding")
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if not isinstance(emb, list) or not emb:
        raise EmbedderError(f"item {pos} of the response has no 'embedding' list")
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in emb):
        raise EmbedderError(f"item {pos} of the response has non-numeric values in its embedding")
    return np.asarray(emb, dtype=np.float32)


def parse_embeddings(body: Any, expected: int) -> np.ndarray:
    """An (expected, d) array from an OpenAI-shaped body ``{"data": [{"index", "embedding"}, ...]}``.

    Items are re-ordered by ``index``; a server that omits every ``index`` is taken in list order.
    """
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise EmbedderError("the response has no 'data' list of embeddings")
    if len(data) != expected:
        raise EmbedderError(f"the response has {len(data)} embeddings for {expected} texts")
    indices = [item.get("index") if isinstance(item, dict) else None for item in data]
    if all(i is None for i in indices):
        order = list(range(expected))
    elif all(isinstance(i, int) and not isinstance(i, bool) for i in indices) and sorted(
        indices) == list(range(expected)):  # type: ignore[type-var]
        order = [int(i) for i in indices]  # type: ignore[arg-type]
    else:
        raise EmbedderError(f"the response's 'index' fields {indices[:10]} are not a permutation of 0..{expected - 1}")
    vecs: list[np.ndarray | None] = [None] * expected
    for pos, (slot, item) in enumerate(zip(order, data)):
        vecs[slot] = _vector(item, pos)
    dims = {v.shape[0] for v in vecs if v is not None}
    if len(dims) != 1:
        raise EmbedderError(f"the response mixes embeddings of {sorted(dims)} dimensions")
    return np.stack([v for v in vecs if v is not None])


class HTTPEmbedder(Embedder):
    """Base of the HTTP embedders: subclasses set the defaults and build the request body in ``_payload``."""

    provider = "http"
    default_base_url = ""
    default_model = ""
    #: clip each input to this many estimated tokens (None: the API truncates by itself)
    max_input_tokens: float | None = None

    def __init__(self, cfg: "EmbedderConfig") -> None:
        self.model = cfg.model or self.default_model
        if not self.model:
            raise ConfigError(f"the {self.provider} embedder needs a model name (embedder.model)")
        self.url = endpoint_url(cfg.base_url or self.default_base_url)
        self.dims_requested: int | None = int(cfg.dims) if cfg.dims else None
        if self.dims_requested is not None and self.dims_requested < 1:
            raise ConfigError(f"embedder.dims must be a positive number, got {cfg.dims}")
        self._dim: int | None = self.dims_requested
        self._api_key = cfg.api_key or None
        self.timeout = float(cfg.timeout)
        self.batch_size = max(1, int(cfg.batch_size))
        self.max_retries = max(0, int(cfg.max_retries))
        self.backoff_base = max(0.0, float(getattr(cfg, "backoff_base", 0.5)))
        self._client: httpx.Client | None = None
        self._lock = threading.RLock()

    # ---------------------------------------------------------------- dimension
    @property  # type: ignore[override]
    def dim(self) -> int:
        """The vector dimension; probes the API with one short text when neither configured nor seen yet."""
        if self._dim is None:
            with self._lock:
                if self._dim is None:
                    self._embed([PROBE_TEXT], query=False)
        assert self._dim is not None
        return self._dim

    @dim.setter
    def dim(self, value: int) -> None:
        self._dim = int(value) if value else None

    # ---------------------------------------------------------------- subclass hook
    @abstractmethod
    def _payload(self, texts: list[str], *, query: bool) -> dict[str, Any]:
        """The JSON request body for one batch."""

    # ---------------------------------------------------------------- embedding
    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        if self.max_input_tokens is not None:
            texts = [clip_to_tokens(t, self.max_input_tokens) for t in texts]
        parts = []
        for batch in self._batches(texts):
            body = self._post(self._payload(batch, query=query))
            try:
                vecs = parse_embeddings(body, len(batch))
            except EmbedderError as exc:
                raise self._error(f"returned an unusable response: {exc.message}") from None
            self._check_dim(vecs.shape[1])
            parts.append(vecs)
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _batches(self, texts: list[str]) -> Iterator[list[str]]:
        batch: list[str] = []
        tokens = 0.0
        for text in texts:
            cost = estimate_tokens(text)
            if batch and (len(batch) >= self.batch_size or tokens + cost > MAX_BATCH_TOKENS):
                yield batch
                batch, tokens = [], 0.0
            batch.append(text)
            tokens += cost
        if batch:
            yield batch

    def _check_dim(self, got: int) -> None:
        with self._lock:
            if self._dim is None:
                self._dim = got
                return
        if got != self._dim:
            how = "configured (embedder.dims)" if self.dims_requested else "returned earlier"
            raise self._error(f"returned {got}-dimensional embeddings, but {self._dim} dimensions were {how}")

    # ---------------------------------------------------------------- HTTP
    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": f"memcli/{__version__}"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _get_client(self) -> "httpx.Client":
        with self._lock:
            if self._client is None:
                import httpx

                self._client = httpx.Client(timeout=httpx.Timeout(self.timeout), headers=self._headers())
            return self._client

    def _redact(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return text

    def _error(self, what: str) -> EmbedderError:
        msg = f"the {self.provider} embedder ({self.model} at {display_url(self.url)}) {what}"
        return EmbedderError(self._redact(msg))

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after
        delay = min(MAX_BACKOFF, self.backoff_base * (2 ** attempt))
        return delay * random.uniform(0.5, 1.0)

    def _post(self, payload: dict[str, Any]) -> Any:
        """POST with retries; the decoded JSON body of a 2xx response."""
        import httpx

        client = self._get_client()
        attempts = self.max_retries + 1
        last = "failed"
        for attempt in range(attempts):
            retry_after: float | None = None
            try:
                resp = client.post(self.url, json=payload)
            except httpx.TimeoutException:
                last = f"timed out after {self.timeout:g} s"
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
                raise self._error(f"cannot be reached: {exc}") from None
            except httpx.TransportError as exc:
                last = f"cannot be reached ({type(exc).__name__}: {exc})"
            else:
                status = resp.status_code
                if 200 <= status < 300:
                    try:
                        return resp.json()
                    except ValueError:
                        excerpt = resp.text[:120].replace("\n", " ")
                        raise self._error(f"returned a response that is not JSON (HTTP {status}): {excerpt!r}") from None
                last = f"failed with HTTP {status}: {api_error_message(resp)}"
                if status in (401, 403):
                    hint = "check the API key" if self._api_key else "no API key is configured"
                    last += f" ({hint}: embedder.api_key / MEMCLI_EMBED_API_KEY)"
                if status not in RETRY_STATUSES and status < 500:
                    raise self._error(last)
                retry_after = retry_after_seconds(resp.headers)
            if attempt + 1 < attempts:
                time.sleep(self._backoff(attempt, retry_after))
        suffix = f" (after {attempts} attempts)" if attempts > 1 else ""
        raise self._error(last + suffix)

    def close(self) -> None:
        """Close the HTTP client (a later call opens a new one)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
