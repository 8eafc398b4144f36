"""Telling a damaged table from a missing one, for :class:`memcli.memory.store.MemoryStore`'s opening.

lance reports a table whose ``_versions`` manifests were deleted exactly as it reports one that never existed
("was not found"). Created anew, it would hide every memory its data files hold (and the next compaction
would drop them): so before creating a table the store asks :func:`refuse_leftovers` whether files of one are
there already, and names the damage and the way out (:func:`damaged`) instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memcli.errors import DamagedStoreError

REMOTE_WAITS = 5  # tries, REMOTE_WAIT seconds apart, before a listed but unreadable remote table counts as damaged
REMOTE_WAIT = 0.5


def table_path(uri: str, name: str) -> str:
    """Where table ``name`` of the database at ``uri`` lives (a directory, or a prefix on object storage)."""
    return f"{uri.rstrip('/')}/{name}.lance"


def table_names(db: Any) -> set[str]:
    """The names of every table directory (or prefix) of the database, readable or not."""
    names: set[str] = set()
    token = None
    while True:
        page = db.list_tables(page_token=token)
        names.update(page.tables)
        token = page.page_token
        if not token:
            return names


def can_open(db: Any, name: str) -> bool:
    """Whether table ``name`` opens (now)."""
    try:
        db.open_table(name)
    except (OSError, RuntimeError, ValueError):
        return False
    return True


def damaged(uri: str, name: str, why: str, *, label: str | None = None) -> DamagedStoreError:
    """The error for table ``name`` that is there but cannot be read: what is wrong, and the way out."""
    path = table_path(uri, name)
    what = label or f"the table {name!r}"
    if "://" not in uri:
        way = (f"memcli writes nothing over it: restore {path} from a backup, or move it aside "
               f"(mv {path} {path}.damaged) to start that table empty")
    else:
        way = (f"memcli writes nothing over it: restore the prefix {path}/ from a backup (or a versioned "
               "bucket's earlier objects), or move it aside to start that table empty")
    return DamagedStoreError(f"{what} at {path} is damaged: {why}", way)


def refuse_leftovers(db: Any, uri: str, name: str, *, opens: Callable[[], bool], label: str | None = None) -> None:
    """Table ``name`` has no version (lance found none): raise DamagedStoreError when its files hold rows
    nonetheless (its ``_versions`` deleted, a half-copied directory) rather than let a new table be created
    over them. An empty leftover (a creation that died before its first commit) is no loss. On object storage
    a listed prefix counts once ``opens()`` (the table opens after all) stayed False for a moment: a creator
    of another process may be between its first object and its commit (s3:// creators take turns, see
    objectstore.creation_guard, so there it is not waited for)."""
    if "://" not in uri:
        data = Path(table_path(uri, name)) / "data"
        found = sum(1 for p in data.iterdir() if p.is_file()) if data.is_dir() else 0
        if found:
            raise damaged(uri, name, f"it holds {found} data file{'s' if found != 1 else ''} but no readable "
                                     "version (its _versions directory is missing or empty)", label=label)
        return
    try:
        listed = name in table_names(db)
    except (OSError, RuntimeError, ValueError):
        return  # the creation that follows fails in the store's own words
    if not listed:
        return
    for _ in range(0 if uri.lower().startswith("s3://") else REMOTE_WAITS):
        time.sleep(REMOTE_WAIT)
        if opens():
            return
    raise damaged(uri, name, "its files are there but it has no readable version (its _versions are missing)",
                  label=label)


def refuse_orphans(db: Any, uri: str, meta_table: str, default_table: str) -> None:
    """The settings table is new, yet memory tables are there (the one a reindex made, ``memories_<ms>``,
    while ``memories`` is absent): the setting that named the active table is lost, and a new empty
    ``memories`` table would hide every memory."""
    try:
        names = table_names(db)
    except (OSError, RuntimeError, ValueError):
        return
    orphans = sorted(n for n in names if n.startswith(f"{default_table}_"))
    if orphans and default_table not in names:
        meta = table_path(uri, meta_table)
        raise DamagedStoreError(
            f"the store's settings table ({meta_table}) at {meta} is missing or new, but memory tables are there "
            f"({', '.join(orphans)}): the setting that names the active one is lost",
            f"memcli writes nothing over them: restore {meta} from a backup, or rename the newest table's "
            f"directory to {default_table}.lance and run `memcli doctor`")
