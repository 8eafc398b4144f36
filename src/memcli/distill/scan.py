"""What a distill plan reads: the light columns of every active row, its vectors, and Memory objects only
for the rows a plan names.

At a million memories a :class:`~memcli.models.Memory` per row (its metadata and context parsed from JSON)
and a row of Python dicts per memory cost more than the clustering: :class:`Scan` keeps each light column as
one list, the vectors in one float32 array filled batch by batch (no second copy of 1.5 GB at 384 dims ×
1M), builds a light Memory for a row when the clustering needs one (:meth:`Scan.memory`), and reads whole
rows (:meth:`Scan.full`) from the same snapshot only for the memories a plan archives, merges, promotes or
lists as a conflict (the CLI, apply and the web panel read those).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from memcli.errors import StoreError
from memcli.memory.reader import quote
from memcli.memory.rows import row_to_memory
from memcli.models import Memory

LIGHT = ["id", "content", "namespace", "scope", "tags", "importance", "key", "source", "created_at",
         "updated_at", "expires_at", "version", "content_hash", "merged_from", "outdated_by"]


def _ids(raw: str | None) -> list[str]:
    """A JSON list of ids (``merged_from``), as :func:`memcli.memory.rows.row_to_memory` reads it."""
    try:
        out = json.loads(raw) if raw else []
    except json.JSONDecodeError:
        return []
    return [str(x) for x in out] if isinstance(out, list) else []


class Scan:
    """The active rows of one snapshot (``where``), column by column; row ``i`` is the same in each."""

    def __init__(self, snapshot: Any, where: str, dim: int) -> None:
        self.snapshot, self.where = snapshot, where
        try:
            n = int(snapshot.count_rows(filter=where))
            self.vectors = np.empty((n, dim), dtype=np.float32)
            cols: dict[str, list[Any]] = {c: [] for c in LIGHT}
            pos = 0
            for batch in snapshot.to_batches(columns=[*LIGHT, "vector"], filter=where):
                k = batch.num_rows
                if pos + k > n:
                    raise ValueError("the snapshot changed while it was read")
                vec = batch.column("vector")
                self.vectors[pos:pos + k] = vec.flatten().to_numpy(zero_copy_only=False).reshape(k, dim)
                for c in LIGHT:
                    cols[c] += batch.column(c).to_pylist()
                pos += k
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"reading the store failed: {exc}. Run `memcli doctor`.") from exc
        self.vectors = self.vectors[:pos]
        self.cols = cols
        self.ids: list[str] = cols["id"]
        self.contents: list[str] = [c or "" for c in cols["content"]]
        self.namespaces: list[str] = [c or "" for c in cols["namespace"]]
        self._light: dict[int, Memory] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def memory(self, i: int) -> Memory:
        """Row ``i`` as a Memory of its light columns (no metadata, context or vector)."""
        m = self._light.get(i)
        if m is None:
            c = self.cols
            m = self._light[i] = Memory(
                id=c["id"][i], content=self.contents[i], namespace=self.namespaces[i], scope=c["scope"][i] or "",
                tags=list(c["tags"][i] or []), importance=float(c["importance"][i] or 0.0), key=c["key"][i],
                source=c["source"][i] or "cli", created_at=int(c["created_at"][i]),
                updated_at=int(c["updated_at"][i] or c["created_at"][i]), expires_at=c["expires_at"][i],
                version=int(c["version"][i] or 1), content_hash=c["content_hash"][i] or "",
                merged_from=_ids(c["merged_from"][i]), outdated_by=c["outdated_by"][i])
        return m

    def rank(self, i: int) -> tuple[float, int, int]:
        """Row ``i``'s keeper rank (see :func:`memcli.distill.distiller._keeper_rank`), from the light columns."""
        c = self.cols
        captured = c["source"][i] == "hook:stop" or "turn" in (c["tags"][i] or [])
        return (float(c["importance"][i] or 0.0), 0 if captured else 1, int(c["created_at"][i]))

    def updated(self, i: int) -> int:
        return int(self.cols["updated_at"][i] or self.cols["created_at"][i])

    def built(self) -> dict[str, Memory]:
        """Id → the light Memory of each row built so far."""
        return {m.id: m for m in self._light.values()}

    def lookup(self, ids: Sequence[str]) -> dict[str, Memory]:
        """Id → light Memory of each of ``ids`` the scan holds."""
        return {x: self.memory(i) for x, i in self.rows_of(set(ids)).items()}

    def rows_of(self, ids: set[str]) -> dict[str, int]:
        """Row index of each of ``ids`` present."""
        return {x: i for i, x in enumerate(self.ids) if x in ids}

    def merged_into(self) -> dict[str, str]:
        """Id of an earlier merged member → the memory it was merged into."""
        return {x: self.ids[i] for i, raw in enumerate(self.cols["merged_from"]) if raw
                for x in _ids(raw)}

    def full(self, ids: Sequence[str], columns: list[str]) -> dict[str, Memory]:
        """Whole Memory objects of ``ids``, from the snapshot the scan read (the versions apply checks)."""
        out: dict[str, Memory] = {}
        ids = list(dict.fromkeys(ids))
        try:
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                where = f"({self.where}) AND id IN (" + ", ".join(quote(i) for i in chunk) + ")"
                for r in self.snapshot.to_table(columns=columns, filter=where).to_pylist():
                    out[r["id"]] = row_to_memory(r)
        except (OSError, RuntimeError, ValueError) as exc:
            raise StoreError(f"reading the store failed: {exc}. Run `memcli doctor`.") from exc
        return out


class View(Sequence[Memory]):
    """Rows ``idx`` of a scan as a sequence of light Memory objects (built when first read), with the light
    columns :meth:`memcli.distill.distiller.Distiller._clusters` reads for every row."""

    def __init__(self, scan: Scan, idx: list[int]) -> None:
        self.scan, self.idx = scan, idx
        self.contents = [scan.contents[i] for i in idx]
        self.keys = [scan.cols["key"][i] for i in idx]

    def __len__(self) -> int:
        return len(self.idx)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self.scan.memory(self.idx[j]) for j in range(*i.indices(len(self.idx)))]
        return self.scan.memory(self.idx[i])

    def rank(self, i: int) -> tuple[float, int, int]:
        return self.scan.rank(self.idx[i])

    def updated(self, i: int) -> int:
        return self.scan.updated(self.idx[i])

    def id(self, i: int) -> str:
        return self.scan.ids[self.idx[i]]
