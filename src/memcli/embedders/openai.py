"""`openai`: any OpenAI-compatible ``/v1/embeddings`` API (OpenAI, Azure-style proxies, Ollama, LM Studio, vLLM).

Configuration (``[embedder]`` / ``MEMCLI_EMBED_*``): ``base_url`` (default ``https://api.openai.com/v1``; a
bare host such as ``http://localhost:11434`` gets ``/v1`` added, a base with a path gets ``/embeddings``
appended, a full ``.../embeddings`` URL is used as is), ``model`` (default ``text-embedding-3-small``),
``dims`` (sent as ``dimensions`` only when set; otherwise learned from the first response), ``api_key``
(sent as ``Authorization: Bearer``; local servers need none), ``timeout``, ``batch_size``, ``max_retries``,
``backoff_base``. Batching, retries and errors are described in :mod:`memcli.embedders._http`.

Inputs are clipped to ~7,000 estimated tokens each (OpenAI's models accept 8,191 and reject longer input
instead of truncating); queries and passages are embedded the same way.
"""

from __future__ import annotations

from typing import Any

from memcli.embedders._http import HTTPEmbedder

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "text-embedding-3-small"


class OpenAIEmbedder(HTTPEmbedder):
    """Embeddings from an OpenAI-compatible API: ``OpenAIEmbedder(cfg: EmbedderConfig)``."""

    provider = "openai"
    default_base_url = DEFAULT_BASE_URL
    default_model = DEFAULT_MODEL
    max_input_tokens = 7000.0

    def _payload(self, texts: list[str], *, query: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dims_requested is not None:
            body["dimensions"] = self.dims_requested
        return body
