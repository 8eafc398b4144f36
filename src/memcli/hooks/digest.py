"""SessionStart: a short digest — this project's memories first, then the rest (other projects, global;
not their captured turns).

Ranked by importance and recency (a week-scale decay), deliberate memories before captured turns, within
``hooks.session_start_budget`` characters. The namespace is the configured one: the project only ranks.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from memcli.hooks.render import INDEX_TITLE, block, fill, index_lines
from memcli.memory.reader import quote
from memcli.memory.search import build_where
from memcli.models import Memory, now_ms

if TYPE_CHECKING:
    from memcli.memory.service import MemoryService

HEADER = ("Shared memory (memcli): what you and other agents on this machine or team remembered earlier, "
          "most important and most recent first. Use what helps; `memcli recall \"<query>\"` searches more, "
          "`memcli get <id>` shows one in full.")
CANDIDATES = 40
WINDOW_ROWS = 2_000  # the newest memories the digest reads first (×4 until they hold the best)
PROJECT_ROWS = 20_000  # a project with up to this many memories is read whole
RECENCY_HALF_LIFE_DAYS = 14.0


def rank(importance: float, created_at: int, tags: list[str] | None, now: int) -> float:
    age_days = max(0.0, (now - created_at) / 86_400_000)
    recency = math.exp(-math.log(2) * age_days / RECENCY_HALF_LIFE_DAYS)
    turn_penalty = 0.2 if tags and "turn" in tags else 0.0
    return float(importance or 0.0) + 0.4 * recency - turn_penalty


def _newest_cut(store: Any, base: str, take: int, now: int) -> int | None:
    """The created_at of the ``take``-th newest memory matching ``base`` (0: fewer match; None: none)."""
    from memcli.errors import StoreError

    try:
        return store.reader.newest_cut(store.reader.snapshot(), base, take, now)
    except (OSError, RuntimeError, ValueError) as exc:
        raise StoreError(f"reading the store failed: {exc}. Run `memcli doctor`.") from exc


def _ranked(service: "MemoryService", where: str | None, project: str | None,
            now: int) -> tuple[list[tuple[float, int, str]], list[tuple[float, int, str]]] | None:
    """This project's and the other memories as (score, created_at, id), best first (None: no memory at all),
    exact in their first CANDIDATES. A project of up to PROJECT_ROWS memories is read whole (its index finds
    them). The others are read from the newest WINDOW_ROWS (and every one of more than the default importance),
    ×4 until no row outside can rank among the first CANDIDATES (one outside scores below 0.5 + 0.4 × the
    recency of the window's oldest): at a million memories reading them all as rows took seconds."""
    store = service.store
    cols = ["id", "project", "importance", "created_at", "tags"]
    base = f"({where})" if where else "TRUE"
    ours = f"project = {quote(project)}" if project else "FALSE"
    mine: list[tuple[float, int, str]] = []
    whole = bool(project) and store.count(f"{base} AND {ours}") <= PROJECT_ROWS
    if whole:
        mine = sorted(((rank(r["importance"], r["created_at"], r["tags"], now), r["created_at"], r["id"])
                       for r in store.column_values(f"{base} AND {ours}", cols)), reverse=True)
    take = WINDOW_ROWS
    cut = _newest_cut(store, base, take, now)
    if cut is None:
        return None
    while True:
        full = cut == 0  # every memory is inside
        rows = store.column_values(where if full else f"{base} AND created_at >= {cut}", cols)
        if not full:  # read apart, by importance's index alone (with created_at's it read ~1M row ids)
            rows += [r for r in store.column_values(f"{base} AND importance > 0.5", cols) if r["created_at"] < cut]
        other = []
        if not whole:
            mine = []
        for r in rows:
            score = rank(r["importance"], r["created_at"], r["tags"], now)
            if project and r["project"] == project:
                if not whole:
                    mine.append((score, r["created_at"], r["id"]))
            elif not (r["tags"] and "turn" in r["tags"]):
                # another project's captured turns are its conversation log: recalled when relevant to a prompt,
                # not worth a place in this project's digest
                other.append((score, r["created_at"], r["id"]))
        mine.sort(reverse=True)
        other.sort(reverse=True)
        if full:
            return mine, other
        bound = 0.5 + 0.4 * math.exp(-math.log(2) * (max(0, now - cut) / 86_400_000) / RECENCY_HALF_LIFE_DAYS)
        outside = f"{base} AND created_at < {cut} AND (importance IS NULL OR importance <= 0.5)"
        lists = [(other, f"{outside} AND NOT ({ours} AND project IS NOT NULL) AND "
                         "(tags IS NULL OR NOT array_has(tags, 'turn'))")]
        if project and not whole:
            lists.append((mine, f"{outside} AND {ours}"))
        # a list is settled when its first CANDIDATES outscore any row outside, or no row of it is outside
        if all((len(xs) >= CANDIDATES and xs[CANDIDATES - 1][0] >= bound) or store.count(rest) == 0
               for xs, rest in lists):
            return mine, other
        take *= 4
        cut = _newest_cut(store, base, take, now) or 0


def session_digest(service: "MemoryService", *, project: str | None, budget: int,
                   project_only: bool = False, now: int | None = None, index_top_k: int = 0,
                   index_budget: int = 0) -> tuple[str | None, list[str]]:
    """The digest block and the ids it shows (None when there is nothing to show): the best memories in full,
    then up to ``index_top_k`` of the next ones as index lines within ``index_budget`` tokens."""
    now = now or now_ms()
    where = build_where(namespace=service.namespace, project=project if project_only else None, now=now)
    # what is current only: a memory a later one changed is never shown without it, so not at all here
    where = f"{where} AND outdated_by IS NULL" if where else "outdated_by IS NULL"
    found = _ranked(service, where, project, now)
    if found is None:
        return None, []
    mine, other = found
    pick = [i for _, _, i in mine[:CANDIDATES]] + [i for _, _, i in other[:CANDIDATES]]
    by_id = {m.id: m for m in service.store.get_many(pick)}
    mine_m: list[Memory] = [by_id[i] for _, _, i in mine[:CANDIDATES] if i in by_id]
    other_m: list[Memory] = [by_id[i] for _, _, i in other[:CANDIDATES] if i in by_id]

    index_chars = 4 * index_budget + 80 if index_top_k > 0 and index_budget > 0 else 0
    base_room = max(0, budget - len(HEADER) - 200)
    # the index lines' room never takes more than a third of a small digest: memories in full come first
    index_chars = min(index_chars, base_room // 3)
    room = base_room - index_chars
    # this project gets up to 60% when there is something else to show; unused room flows to the rest
    mine_room = room if not other_m else int(room * 0.6)
    mine_lines, mine_ids, used = fill(mine_m, mine_room, now, max_chars=350)
    other_lines, other_ids, _ = fill(other_m, room - used, now, max_chars=300, show_project=True)
    if not mine_lines and not other_lines:
        return None, []
    shown = set(mine_ids) | set(other_ids)
    index, _ = index_lines([m for m in mine_m + other_m if m.id not in shown][:index_top_k],
                           min(index_budget, max(0, (index_chars - 80) // 4)), now) if index_chars else ([], [])
    while True:
        sections = []
        if mine_lines:
            sections.append((f"## This project ({project})", mine_lines))
        if other_lines:
            sections.append(("## Other projects and global" if project else "## Memories", other_lines))
        if index:
            sections.append((INDEX_TITLE, index))
        text = block("SessionStart", HEADER, sections, project=project)
        if len(text) <= budget or not (mine_lines or other_lines):
            break
        if index:  # over the budget: the index lines go before any memory in full
            index.pop()
        elif other_lines:
            other_lines.pop()
            other_ids.pop()
        else:
            mine_lines.pop()
            mine_ids.pop()
    if not mine_lines and not other_lines:
        return None, []
    # the ids shown in full (an index line's memory may still come in full with a prompt later)
    return text, mine_ids + other_ids
