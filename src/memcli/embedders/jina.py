"""`jina`: Jina AI's embeddings API (``POST {base_url}/embeddings``).

Configuration: ``base_url`` (default ``https://api.jina.ai/v1``, normalised like the ``openai`` embedder's),
``model`` (default ``jina-embeddings-v3``), ``dims`` (sent as ``dimensions`` when set; v3 supports
Matryoshka sizes 32..1024), ``api_key`` (required by api.jina.ai), ``timeout``, ``batch_size``,
``max_retries``, ``backoff_base``. Passages are embedded with ``task = "retrieval.passage"`` and queries with
``task = "retrieval.query"`` (the v3 LoRA adapters for asymmetric retrieval); the v2 models take no task.
Over-long inputs are truncated by the API (``truncate: true``). Batching, retries and errors are described
in :mod:`memcli.embedders._http`.
"""

from __future__ import annotations

from typing import Any

from memcli.embedders._http import HTTPEmbedder

DEFAULT_BASE_URL = "https://api.jina.ai/v1"
DEFAULT_MODEL = "jina-embeddings-v3"
PASSAGE_TASK = "retrieval.passage"
QUERY_TASK = "retrieval.query"
_NO_TASK_PREFIXES = ("jina-embeddings-v2",)


class JinaEmbedder(HTTPEmbedder):
    """Embeddings from Jina AI: ``JinaEmbedder(cfg: EmbedderConfig)``."""

    provider = "jina"
    default_base_url = DEFAULT_BASE_URL
    default_model = DEFAULT_MODEL

    def _payload(self, texts: list[str], *, query: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": texts, "embedding_type": "float", "truncate": True}
        if not self.model.startswith(_NO_TASK_PREFIXES):
            body["task"] = QUERY_TASK if query else PASSAGE_TASK
        if self.dims_requested is not None:
            body["dimensions"] = self.dims_requested
        return body
