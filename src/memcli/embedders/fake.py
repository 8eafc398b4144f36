"""A deterministic, dependency-free embedder for tests and experiments (`provider = "hash"`).

It hashes word unigrams and character trigrams into a fixed-size vector: texts sharing words are close,
unrelated texts are nearly orthogonal. Fast and stable across runs; it does not understand meaning.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from memcli.embedders.base import Embedder

_WORD_RE = re.compile(r"\w+", re.UNICODE)


class HashEmbedder(Embedder):
    provider = "hash"
    model = "hash-v1"

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim

    def _one(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        low = text.casefold()
        feats = _WORD_RE.findall(low)
        feats += [low[i:i + 3] for i in range(max(0, len(low) - 2))]
        for f in feats or [low or " "]:
            h = hashlib.blake2b(f.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            idx = int.from_bytes(h[:4], "little") % self.dim
            v[idx] += 1.0 if h[4] & 1 else -1.0
        if not np.any(v):
            v[0] = 1.0
        return v

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        return np.stack([self._one(t) for t in texts])
