"""Distill's candidate neighbours: for each memory to compare, its most similar others in one namespace.

- Up to :data:`EXACT_MAX` vectors the similarities are **exact**: each block of rows against every vector
  (O(n²) multiply-adds, in numpy).
- Above, the vectors are **partitioned**: spherical k-means on a sample, with about √n centroids; each vector
  joins the buckets of its 2 nearest centroids and the similarities are exact within each bucket, so the work
  is about O(n·√n) and the memory one block of a bucket at a time. A near pair that shares no bucket is not
  proposed (rare: two vectors close to each other are close to the same centroids).

Either way a row with more than ``k_hi + k_lo`` partners from the ``lo`` cosine keeps its ``k_hi`` most similar
from ``hi`` (merge candidates) and ``k_lo`` below (read for conflicts only) — :data:`MERGE_K` and :data:`CLOSE_K`
on the exact path, :data:`MERGE_K_LARGE` and :data:`CLOSE_K_LARGE` partitioned —; and :func:`bounded` reads at most
:data:`CLOSE_EXAMINE` conflict-band pairs, the most similar. So the rule checks that follow (~1 ms a pair) are
bounded however dense the store (a store of turns in common words has most pairs in the conflict band), and
a store of facts reaches neither cap: there the pairs are exactly today's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

EXACT_MAX = 10_000  # up to this many vectors in a namespace: every pair (today's exact path)
MERGE_K, CLOSE_K = 64, 8  # exact path: merge candidates and conflict-band pairs kept per crowded memory
MERGE_K_LARGE, CLOSE_K_LARGE = 8, 2  # partitioned path: each pair costs the rules ~1 ms (a star grows by runs)
CLOSE_EXAMINE = 20_000  # conflict-band pairs read per namespace and run (the most similar)
_BLOCK = 1024  # rows of the exact path's similarity block (1024 × n float32)
_CELLS = 1 << 24  # a bucket's similarity block holds at most this many floats (64 MB)
_SAMPLE_PER_CENTROID = 40
_ITERATIONS = 8

Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]  # (row i, partner c, raw cosine), sorted by i then c


def neighbours(vecs: np.ndarray, rows: np.ndarray, lo: float, hi: float, *, k_hi: int | None = None,
               k_lo: int | None = None, exact_max: int = EXACT_MAX, seed: int = 0) -> Pairs:
    """The pairs (i, c) with ``i`` in ``rows``, ``c != i`` and a raw cosine ≥ ``lo``: each ``i``'s ``k_hi``
    most similar from ``hi`` and ``k_lo`` most similar below ``hi`` (default: the caps of the path taken);
    sorted by ``i``, then ``c`` (partitioned: by ``i``'s bucket first)."""
    n = len(vecs)
    rows = np.asarray(rows, dtype=np.int64)
    if n < 2 or not len(rows):
        return _empty()
    if n <= exact_max:
        k_hi, k_lo = MERGE_K if k_hi is None else k_hi, CLOSE_K if k_lo is None else k_lo
        parts = []
        for start in range(0, len(rows), _BLOCK):
            block = rows[start:start + _BLOCK]
            sims = vecs[block] @ vecs.T
            sims[np.arange(len(block)), block] = -np.inf  # not its own neighbour
            r, c, v = _top(sims, lo, hi, k_hi, k_lo)
            parts.append((block[r], c, v))
        return _sorted(parts)
    return _partitioned(vecs, rows, lo, hi, MERGE_K_LARGE if k_hi is None else k_hi,
                        CLOSE_K_LARGE if k_lo is None else k_lo, seed)


def _empty() -> Pairs:
    return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32)


def _sorted(parts: list[Pairs]) -> Pairs:
    if not parts:
        return _empty()
    i, c, v = (np.concatenate([p[k] for p in parts]) for k in range(3))
    order = np.lexsort((c, i))
    return i[order], c[order], v[order]


def _top(sims: np.ndarray, lo: float, hi: float, k_hi: int, k_lo: int) -> Pairs:
    """(row, column, value) of each row's values ≥ ``lo``: all of them when a row has at most ``k_hi + k_lo``,
    else its ``k_hi`` best from ``hi`` and ``k_lo`` best below. ``sims`` is scratch (changed in place)."""
    k = k_hi + k_lo
    width = sims.shape[1]
    sims[sims < lo] = -np.inf  # in place: no second block
    counts = np.count_nonzero(sims >= lo, axis=1)
    out = []
    few = np.nonzero((counts <= k) & (counts > 0))[0]
    if len(few):
        r, c = np.nonzero(sims[few] >= lo)
        out.append((few[r], c, sims[few[r], c]))
    many = np.nonzero(counts > k)[0]
    if len(many):  # a crowded row: its k best (argpartition: O(width), not a sort), then the caps per band
        sub = sims if len(many) == len(sims) else sims[many]
        c = np.argpartition(sub, width - k, axis=1)[:, width - k:]
        v = np.take_along_axis(sub, c, axis=1)
        by = np.argsort(-v, axis=1, kind="stable")
        c, v = np.take_along_axis(c, by, axis=1), np.take_along_axis(v, by, axis=1)
        high = v >= hi
        keep = (high & (np.cumsum(high, axis=1) <= k_hi)) | (~high & (v >= lo) & (np.cumsum(~high, axis=1) <= k_lo))
        r = np.broadcast_to(many[:, None], c.shape)[keep]
        out.append((r, c[keep], v[keep]))
    if not out:
        return _empty()
    return tuple(np.concatenate([o[j] for o in out]) for j in range(3))  # type: ignore[return-value]


def bounded(calibrated: np.ndarray, thr: float, cthr: float, limit: int = CLOSE_EXAMINE) -> np.ndarray:
    """Which pairs to read (a mask, the pairs' order kept): every merge candidate (≥ ``thr``), and of the
    conflict band (``cthr`` to ``thr``) at most ``limit``, the most similar. Each such pair costs the rule
    checks ~1 ms: a dense store of turns has millions of them, and a store of facts far fewer than ``limit``."""
    keep = calibrated >= thr
    band = np.nonzero(~keep & (calibrated >= cthr))[0]
    if len(band) > limit:
        band = band[np.argsort(-calibrated[band], kind="stable")[:limit]]
    keep[band] = True
    return keep


def _partitioned(vecs: np.ndarray, rows: np.ndarray, lo: float, hi: float, k_hi: int, k_lo: int,
                 seed: int) -> Pairs:
    n = len(vecs)
    rng = np.random.default_rng(seed)
    cents = _kmeans(vecs, max(2, int(math.sqrt(n))), rng)
    near2 = np.empty((n, 2), dtype=np.int32)
    step = max(1, _CELLS // len(cents))
    for start in range(0, n, step):
        s = vecs[start:start + step] @ cents.T
        near2[start:start + step] = np.argpartition(-s, 1, axis=1)[:, :2]
    member = np.repeat(np.arange(n, dtype=np.int64), 2)
    bucket = near2.ravel()
    order = np.argsort(bucket, kind="stable")
    member, bucket = member[order], bucket[order]
    bounds = np.searchsorted(bucket, np.arange(len(cents) + 1))
    wanted = np.zeros(n, dtype=bool)
    wanted[rows] = True
    parts: list[Pairs] = []
    for b in range(len(cents)):
        ms = member[bounds[b]:bounds[b + 1]]  # ascending (a stable sort of ascending ids)
        fs = ms[wanted[ms]]
        if len(ms) < 2 or not len(fs):
            continue
        mv = vecs[ms]
        step = max(1, _CELLS // len(ms))
        for start in range(0, len(fs), step):
            block = fs[start:start + step]
            sims = vecs[block] @ mv.T
            sims[np.arange(len(block)), np.searchsorted(ms, block)] = -np.inf
            r, c, v = _top(sims, lo, hi, k_hi, k_lo)
            parts.append((block[r], ms[c], v))
    if not parts:
        return _empty()
    i, c, v = (np.concatenate([p[k] for p in parts]) for k in range(3))
    parts.clear()
    # a pair found in both of its buckets once; then each row's k best per band again (two buckets gave 2k)
    high = v >= hi
    order = np.lexsort((-v, c, i))
    i, c, v, high = i[order], c[order], v[order], high[order]
    first = np.ones(len(i), dtype=bool)
    first[1:] = (i[1:] != i[:-1]) | (c[1:] != c[:-1])
    i, c, v, high = i[first], c[first], v[first], high[first]
    order = np.lexsort((-v, ~high, i))
    i, c, v, high = i[order], c[order], v[order], high[order]
    group = np.ones(len(i), dtype=bool)
    group[1:] = (i[1:] != i[:-1]) | (high[1:] != high[:-1])
    starts = np.nonzero(group)[0]
    rank = np.arange(len(i)) - np.repeat(starts, np.diff(np.append(starts, len(i))))
    keep = rank < np.where(high, k_hi, k_lo)
    i, c, v = i[keep], c[keep], v[keep]
    # by bucket (nearest centroid), then i, then c: the rule checks then read the texts of one bucket after
    # another, which the same-fact test's cache of parsed texts holds (in i order each partner is a miss)
    order = np.lexsort((c, i, near2[i, 0]))
    return i[order], c[order], v[order]


def _kmeans(vecs: np.ndarray, k: int, rng: Any) -> np.ndarray:
    """``k`` unit centroids of a sample of ``vecs`` (spherical k-means: cosine is the vectors' similarity)."""
    n = len(vecs)
    sample = vecs[np.sort(rng.choice(n, size=min(n, k * _SAMPLE_PER_CENTROID), replace=False))]
    cents = sample[rng.choice(len(sample), size=k, replace=False)].astype(np.float32)
    for _ in range(_ITERATIONS):
        assign = np.empty(len(sample), dtype=np.int64)
        step = max(1, _CELLS // k)
        for start in range(0, len(sample), step):
            assign[start:start + step] = np.argmax(sample[start:start + step] @ cents.T, axis=1)
        sums = np.zeros_like(cents)
        np.add.at(sums, assign, sample)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        filled = norms[:, 0] > 0  # an empty cluster keeps its centroid
        cents[filled] = sums[filled] / norms[filled]
    return cents
