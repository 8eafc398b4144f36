"""How memories are shown to Claude: one delimited block, one line per memory, within a character budget."""

from __future__ import annotations

from collections.abc import Sequence

from memcli.hooks.text import BLOCK_CLOSE, BLOCK_TAG, clip, one_line
from memcli.models import Memory, short_id


def age(created_ms: int, now_ms: int) -> str:
    s = max(0, (now_ms - int(created_ms)) // 1000)
    for unit, size in (("y", 31_536_000), ("mo", 2_592_000), ("d", 86_400), ("h", 3_600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit} ago"
    return "just now"


def memory_line(m: Memory, now_ms: int, *, max_chars: int = 400, show_project: bool = False) -> str:
    meta = [age(m.created_at, now_ms), m.scope]
    if show_project and m.project:
        meta.append(f"project {m.project}")
    tags = [t for t in m.tags if t != "turn"]
    if "turn" in m.tags:
        meta.append("captured turn")
    if tags:
        meta.append("#" + " #".join(tags[:4]))
    if m.outdated_by:  # shown only with the memory that changed it (memcli.hooks.inject.current_only)
        meta.append(f"outdated by {short_id(m.outdated_by)}")
    return f"- [{short_id(m.id)}] ({', '.join(meta)}) {clip(one_line(m.content), max_chars)}"


def block(event: str, header: str, sections: Sequence[tuple[str | None, Sequence[str]]], *,
          project: str | None) -> str:
    attrs = f' event="{event}"' + (f' project="{_attr(project)}"' if project else "")
    lines = [f"<{BLOCK_TAG}{attrs}>", header]
    for title, items in sections:
        if not items:
            continue
        if title:
            lines.append(title)
        lines.extend(items)
    lines.append(BLOCK_CLOSE)
    return "\n".join(lines)


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def fill(memories: Sequence[Memory], budget: int, now_ms: int, *, max_chars: int = 400,
         show_project: bool = False) -> tuple[list[str], list[str], int]:
    """As many memory lines as fit in ``budget`` characters: (lines, ids, characters used)."""
    lines: list[str] = []
    ids: list[str] = []
    used = 0
    for m in memories:
        line = memory_line(m, now_ms, max_chars=max_chars, show_project=show_project)
        if used + len(line) + 1 > budget:
            shorter = memory_line(m, now_ms, max_chars=max(80, budget - used - 80), show_project=show_project)
            if used + len(shorter) + 1 > budget or budget - used < 160:
                continue
            line = shorter
        lines.append(line)
        ids.append(m.id)
        used += len(line) + 1
    return lines, ids, used


INDEX_CHARS = 90  # of the memory's text, on an index line
INDEX_TITLE = "Maybe related — open one with `memcli get <id>` (or the MCP `get` tool):"


def index_line(m: Memory, now_ms: int) -> str:
    """One compact line for a memory the model may open: ``- [id] its first 90 characters… (age, author)``."""
    author = m.scope[len("agent:"):] if m.scope.startswith("agent:") else m.source if m.source != "cli" else "you"
    outdated = f", outdated by {short_id(m.outdated_by)}" if m.outdated_by else ""
    return (f"- [{short_id(m.id)}] {clip(one_line(m.content), INDEX_CHARS)} "
            f"({age(m.created_at, now_ms)}, {author}{outdated})")


def index_lines(memories: Sequence[Memory], token_budget: int, now_ms: int) -> tuple[list[str], list[str]]:
    """As many index lines as fit in ``token_budget`` tokens: (lines, ids)."""
    from memcli.distill.condense import estimate_tokens

    lines: list[str] = []
    ids: list[str] = []
    used = 0
    for m in memories:
        line = index_line(m, now_ms)
        cost = estimate_tokens(line)
        if used + cost > token_budget:
            break
        lines.append(line)
        ids.append(m.id)
        used += cost
    return lines, ids
