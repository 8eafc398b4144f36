"""Reads of the memories table straight through its lance dataset.

LanceDB's query builder costs about 2 ms per query on top of lance here (schema round trips, blob checks,
a hop through its background event loop); a recall makes three or four queries, against a 20 ms budget.
Reading through the lance dataset directly skips that. Each read first moves the dataset to the latest
committed version (a cheap check), so other processes' writes are seen at once, and a search and the row
fetch after it use one snapshot: the row ids a search returns stay valid for the fetch.
"""

from __future__ import annotations

import threading
from typing import Any, Iterator, Sequence

import numpy as np

from memcli.errors import StoreError, ValidationError


def quote(value: str) -> str:
    """A SQL string literal: user values are data, never query syntax."""
    if not isinstance(value, str):
        raise ValidationError("filter values must be strings")
    return "'" + value.replace("'", "''") + "'"


WINDOW_MS = 86_400_000  # the first window of newest_cut: a day
SHORT_ID = 8  # memcli.models.short_id: the last 8 hex digits, the part people see and type


def _dashed(compact: str, start: int) -> str:
    """Hex digits that sit at ``start`` of a 32-digit id, with the id's dashes put back (8-4-4-4-12)."""
    return "".join(("-" if start + i in (8, 12, 16, 20) and i else "") + ch for i, ch in enumerate(compact))


def id_like(compact: str, column: str = "id") -> str:
    """The filter of the ids a partial id names: a prefix or a suffix of the id, or the start of its short
    form (``3f9a`` of ``…3f9a2c1b``: people type the start of what they see). ``compact`` holds only hex digits
    (the caller checks), so the patterns hold no wildcard of the caller's."""
    parts = [f"{column} LIKE '{_dashed(compact, 0)}%'", f"{column} LIKE '%{_dashed(compact, 32 - len(compact))}'"]
    if len(compact) < SHORT_ID:  # within the last group (12 digits, no dash): `_` is one character
        parts.append(f"{column} LIKE '%{compact}{'_' * (SHORT_ID - len(compact))}'")
    return "(" + " OR ".join(parts) + ")"


class Reader:
    """The latest snapshot of one lance dataset, and the queries memcli makes on it."""

    # An ANN search reads refine_factor × k candidates' full vectors to re-rank them exactly (recall@5
    # against exact search at 1M rows: bench/scale.py). ``exact``: never the index (benches compare with it).
    refine_factor: int | None = None
    exact = False

    def __init__(self, dataset: Any) -> None:
        self._ds = dataset
        self._lock = threading.Lock()

    def snapshot(self) -> Any:
        """The dataset at its latest committed version (the index cache is kept across versions)."""
        try:
            latest = self._ds.latest_version
            if latest != self._ds.version:
                with self._lock:
                    if latest != self._ds.version:
                        self._ds = self._ds.checkout_version(latest)
            return self._ds
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"cannot read the store: {exc}. Run `memcli doctor`.") from exc

    def rows(self, where: str | None, columns: Sequence[str], limit: int | None = None) -> list[dict[str, Any]]:
        """Rows matching an exact filter (scalar indexes are used where they exist)."""
        return self.snapshot().to_table(columns=list(columns), filter=where or None, limit=limit).to_pylist()

    def count(self, where: str | None = None) -> int:
        return int(self.snapshot().count_rows(where or None))

    def vector(self, snapshot: Any, vector: Sequence[float], column: str, where: str | None, k: int,
               columns: Sequence[str], nprobes: int | None) -> list[dict[str, Any]]:
        """Nearest rows by cosine distance (``_distance``), filtered before top-k, with ``_rowid``."""
        import pyarrow as pa

        # an arrow float32 array goes to lance as is (a list or numpy array is copied through float64)
        nearest: dict[str, Any] = {"column": column, "q": pa.array(np.asarray(vector, dtype=np.float32)), "k": k,
                                   "metric": "cosine"}
        if nprobes:
            nearest["nprobes"] = nprobes
            if self.refine_factor:
                nearest["refine_factor"] = self.refine_factor
        if self.exact:
            nearest["use_index"] = False
        return snapshot.to_table(columns=list(columns) + ["_distance"], filter=where or None, prefilter=True,
                                 nearest=nearest, with_row_id=True,
                                 disable_scoring_autoprojection=True).to_pylist()

    def text(self, snapshot: Any, query: str, column: str, where: str | None, k: int,
             columns: Sequence[str]) -> list[dict[str, Any]]:
        """BM25 matches (``_score``) of an OR query over ``column``, filtered before top-k, with ``_rowid``."""
        return snapshot.to_table(columns=list(columns) + ["_score"], filter=where or None, prefilter=True,
                                 full_text_query={"query": query, "columns": [column]}, limit=k,
                                 with_row_id=True, disable_scoring_autoprojection=True).to_pylist()

    def take(self, snapshot: Any, rowids: Sequence[int], columns: Sequence[str]) -> list[tuple[int, dict[str, Any]]]:
        """Rows by the row ids a search on ``snapshot`` returned, as (row id, row). A row id names a row of a
        data file, and data files never change, so on the snapshot that returned it the id is always valid.
        (pylance calls its take-by-row-id unstable; memcli pins pylance's major version and tests it.)"""
        if not rowids:
            return []
        rows = snapshot._take_rows(list(rowids), columns=[*columns, "_rowid"]).to_pylist()
        return [(int(r.pop("_rowid")), r) for r in rows]

    def sorted_rowids(self, snapshot: Any, where: str | None, *, newest_first: bool,
                      limit: int | None = None) -> list[int]:
        """The row ids of the matching rows by (created_at, id), oldest or newest first, the first ``limit``
        only. Only the sort keys are read and they stay in arrow (at 1M rows a sort of Python dicts took
        seconds); arrow's select_k finds a page without sorting the rest."""
        import pyarrow.compute as pc

        if newest_first and limit is not None:  # the newest page: only the rows of a recent window are read
            cut = self.newest_cut(snapshot, where, max(1, limit))
            if cut:
                where = f"({where}) AND created_at >= {cut}" if where else f"created_at >= {cut}"
        keys = snapshot.to_table(columns=["created_at", "id"], filter=where or None, with_row_id=True)
        way = "descending" if newest_first else "ascending"
        order = [("created_at", way), ("id", way)]
        if limit is not None and limit < keys.num_rows:
            keys = pc.take(keys, pc.select_k_unstable(keys, k=limit, sort_keys=order))
        return pc.take(keys.column("_rowid"), pc.sort_indices(keys, sort_keys=order)).to_pylist()

    def newest_cut(self, snapshot: Any, where: str | None, take: int, now: int | None = None) -> int | None:
        """The created_at of the ``take``-th newest row matching ``where`` (0: fewer match; None: none), read from
        windows of time growing ×2 back from now: created_at's index finds a window's rows, where reading a
        column of a million rows whole took ~60 ms (the ids: ~300 ms)."""
        import time

        now = int(time.time() * 1000) if now is None else now
        base = f"({where})" if where else "TRUE"
        span = WINDOW_MS
        while True:
            since = now - span
            stamps = snapshot.to_table(columns=["created_at"], filter=base if since <= 0 else
                                       f"{base} AND created_at >= {since}").column("created_at").to_numpy()
            if len(stamps) >= take:
                return int(np.partition(stamps, len(stamps) - take)[len(stamps) - take])
            if since <= 0:
                return 0 if len(stamps) else None
            span *= 2

    def sorted_batches(self, snapshot: Any, where: str | None, columns: Sequence[str],
                       batch_size: int) -> Iterator[list[dict[str, Any]]]:
        """The matching rows oldest first, ``batch_size`` at a time, read by row id: only the sort keys are held
        (~50 bytes a row). Columns an older schema lacks are left out."""
        have = set(snapshot.schema.names)
        cols = [c for c in columns if c in have]
        rowids = self.sorted_rowids(snapshot, where, newest_first=False)
        for start in range(0, len(rowids), batch_size):
            ids = rowids[start:start + batch_size]
            rows = dict(self.take(snapshot, ids, cols))
            yield [rows[i] for i in ids if i in rows]
