"""A deterministic, dependency-free embedder for tests and experiments (`provider = "hash"`).

It hashes word unigrams and character trigrams into a fixed-size vector: texts sharing words are close,
unrelated texts are nearly orthogonal. Fast and stable across runs; it does not understand meaning.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from memcli.embedders.base import Embedder, Relevance

_WORD_RE = re.compile(r"\w+", re.UNICODE)


class HashRelevance(Relevance):
    """64 hashed dimensions know words, not meaning: unrelated texts reach cosine ~0.45 by chance (the best of a
    few hundred memories for an off-topic question: 12% of them), so the cosine counts little and the keyword
    match most — an off-topic question's best hit holds half of its keywords for 0–2% of the questions, an
    answering memory for 54–92% (bench/scores.py --embedders hash). The two parts add up: off-topic
    best hits reach 0.5 for 1–9% of the questions, answering memories for 76–100%."""

    COSINE = ([0.30, 0.40, 0.60], [0.0, 0.25, 0.50])
    MATCH = ([0.10, 0.30, 0.70], [0.0, 0.50, 0.80])

    def __call__(self, cosine: float | None, match: float | None, baseline: float | None = None) -> float:
        m = max(0.0, min(1.0, match or 0.0))
        rel = float(np.interp(cosine, *self.COSINE)) if cosine is not None else 0.0
        return min(1.0, rel + float(np.interp(m, *self.MATCH)))


class HashEmbedder(Embedder):
    provider = "hash"
    model = "hash-v1"

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        # feature -> (index, sign): words and trigrams repeat across texts, and hashing each again was most
        # of an import's time with this embedder (bench/scale.py)
        self._slots: dict[str, tuple[int, float]] = {}

    def _slot(self, f: str) -> tuple[int, float]:
        hit = self._slots.get(f)
        if hit is None:
            h = hashlib.blake2b(f.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            if len(self._slots) > 500_000:
                self._slots.clear()
            hit = self._slots[f] = (int.from_bytes(h[:4], "little") % self.dim, 1.0 if h[4] & 1 else -1.0)
        return hit

    def relevance(self) -> Relevance:
        return HashRelevance()

    def _one(self, text: str) -> np.ndarray:
        acc = [0.0] * self.dim  # sums of ±1 (exact in floats): the same vector as adding into the array
        low = text.casefold()
        feats = _WORD_RE.findall(low)
        feats += [low[i:i + 3] for i in range(max(0, len(low) - 2))]
        slot = self._slot
        for f in feats or [low or " "]:
            idx, sign = slot(f)
            acc[idx] += sign
        v = np.array(acc, dtype=np.float32)
        if not np.any(v):
            v[0] = 1.0
        return v

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        return np.stack([self._one(t) for t in texts])
