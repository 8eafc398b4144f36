"""The Embedder interface, similarity calibration and the content-hash vector cache."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from memcli.errors import EmbedderError

# Raw cosine → calibrated similarity anchors. Cosines are compressed differently by every model (with e5,
# two unrelated turns of one conversation have cosine ~0.86, a paraphrase ~0.95, a near copy ~0.99), so
# thresholds such as "duplicate at 0.90" and "relevant enough to inject" are applied to a calibrated value
# that means the same thing for every model: ~0.2 unrelated-but-same-topic, 0.9 paraphrase, 1.0 identical.
DEFAULT_CALIBRATION: dict[str, list[list[float]]] = {
    "local": [[0.70, 0.0], [0.80, 0.05], [0.86, 0.25], [0.90, 0.50], [0.93, 0.70], [0.95, 0.90],
              [0.985, 0.97], [1.0, 1.0]],
    "openai": [[0.0, 0.0], [0.30, 0.10], [0.50, 0.35], [0.70, 0.65], [0.85, 0.90], [0.97, 0.98],
               [1.0, 1.0]],
    "jina": [[0.0, 0.0], [0.30, 0.10], [0.50, 0.35], [0.70, 0.65], [0.85, 0.90], [0.97, 0.98], [1.0, 1.0]],
    "hash": [[0.0, 0.0], [0.5, 0.5], [1.0, 1.0]],
}


class Calibration:
    """A monotone piecewise-linear map from raw cosine to a 0..1 similarity."""

    def __init__(self, points: Sequence[Sequence[float]]) -> None:
        pts = sorted((float(a), float(b)) for a, b in points)
        self.points = [list(p) for p in pts]
        self._x = np.array([p[0] for p in pts], dtype=np.float64)
        self._y = np.array([p[1] for p in pts], dtype=np.float64)

    def __call__(self, cosine: float) -> float:
        return float(np.interp(cosine, self._x, self._y, left=0.0, right=1.0))

    def many(self, cosines: Any) -> Any:
        """The similarities of an array of cosines (same shape)."""
        return np.interp(cosines, self._x, self._y, left=0.0, right=1.0)


class Relevance:
    """How relevant a memory is to a query, 0..1, from absolute evidence (never from the other hits' ranks):
    the query→memory cosine, how far it stands out from the query's ``baseline`` (the median cosine of its
    nearest memories), and the keyword ``match`` (the memory's BM25 over what a memory holding the whole query
    would score). 0.5 is "probably answers it". This base maps the cosine through the embedder's passage
    calibration and adds ``match_bonus`` for a memory holding most of the query's keywords; an embedder
    measured for it (the bundled e5, the hash test embedder) has its own."""

    match_bonus = 0.25

    def __init__(self, cosine: Calibration | None = None) -> None:
        self.cosine = cosine

    def __call__(self, cosine: float | None, match: float | None, baseline: float | None = None) -> float:
        m = max(0.0, min(1.0, match or 0.0))
        rel = 0.0
        if cosine is not None:
            rel = self.cosine(cosine) if self.cosine is not None else max(0.0, float(cosine))
        if m >= 0.5:
            rel += self.match_bonus
        return max(0.0, min(1.0, rel))


class Embedder(ABC):
    """Turns text into L2-normalised float32 vectors. Subclasses implement ``_embed``."""

    provider: str = "base"
    model: str = ""
    dim: int = 0

    def identity(self) -> dict[str, Any]:
        """What the store records: a different identity means the stored vectors are not comparable."""
        return {"provider": self.provider, "model": self.model, "dim": int(self.dim)}

    def calibration(self) -> Calibration:
        return Calibration(DEFAULT_CALIBRATION.get(self.provider, DEFAULT_CALIBRATION["openai"]))

    def relevance(self) -> Relevance:
        """The query→memory relevance of this embedder's vectors (recall's ``score``; the prompt hook's gate)."""
        return Relevance(self.calibration())

    @abstractmethod
    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        """Return an (n, dim) array for n texts."""

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for texts to be stored."""
        return self._checked(list(texts), query=False)

    def embed_query(self, text: str) -> np.ndarray:
        """The vector of one search query."""
        return self._checked([text], query=True)[0]

    def _checked(self, texts: list[str], *, query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = np.asarray(self._embed(texts, query=query), dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[0] != len(texts):
            raise EmbedderError(f"the embedder returned {vecs.shape} for {len(texts)} texts")
        if self.dim and vecs.shape[1] != self.dim:
            raise EmbedderError(f"the embedder returned {vecs.shape[1]} dimensions, expected {self.dim}")
        norms = np.linalg.norm(vecs, axis=1)
        if not np.all(np.isfinite(vecs)) or np.any(norms < 1e-6):
            # never store a zero or garbage vector: fail the write instead
            raise EmbedderError("the embedder returned an empty or non-finite vector; nothing was written")
        return vecs / norms[:, None]

    def close(self) -> None:
        """Release resources (HTTP clients)."""


class CachedEmbedder(Embedder):
    """Wraps an embedder with an LRU cache keyed by content hash (retries and re-recalls are free)."""

    def __init__(self, inner: Embedder, size: int = 4096) -> None:
        self.inner = inner
        self.provider, self.model = inner.provider, inner.model
        self._cache: OrderedDict[tuple[bool, str], np.ndarray] = OrderedDict()
        self._size = size

    @property  # type: ignore[override]
    def dim(self) -> int:
        """The inner embedder's dim, read lazily (an HTTP embedder may learn it from its first response)."""
        return self.inner.dim

    @dim.setter
    def dim(self, value: int) -> None:
        self.inner.dim = value

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def calibration(self) -> Calibration:
        return self.inner.calibration()

    def relevance(self) -> Relevance:
        return self.inner.relevance()

    @staticmethod
    def _key(text: str, query: bool) -> tuple[bool, str]:
        return (query, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest())

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        keys = [self._key(t, query) for t in texts]
        missing = [i for i, k in enumerate(keys) if k not in self._cache]
        if missing:
            # de-duplicate inside the batch too
            uniq: dict[tuple[bool, str], int] = {}
            for i in missing:
                uniq.setdefault(keys[i], i)
            fresh = self.inner._checked([texts[i] for i in uniq.values()], query=query)
            for k, v in zip(uniq.keys(), fresh):
                self._cache[k] = v
                if len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        out = []
        for k in keys:
            v = self._cache[k]
            self._cache.move_to_end(k)
            out.append(v)
        return np.stack(out)

    def close(self) -> None:
        self.inner.close()
