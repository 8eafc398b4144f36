"""README.md is one document: no section pasted in twice (a stale copy keeps stale figures and commands)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def headings(text: str) -> list[tuple[str, ...]]:
    """Each heading outside code fences as its path of titles (## section, ### subsection, …)."""
    out: list[tuple[str, ...]] = []
    path: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        m = re.match(r"^(#{1,6}) (.+)$", line)
        if fenced or not m:
            continue
        level = len(m.group(1))
        path = path[: level - 1] + [""] * max(0, level - 1 - len(path)) + [m.group(2).strip()]
        out.append(tuple(path))
    return out


def test_every_readme_section_appears_once() -> None:
    counts = Counter(headings(README.read_text(encoding="utf-8")))
    assert [h for h, n in counts.items() if n > 1] == []


def test_the_check_finds_a_pasted_copy() -> None:
    text = "# memcli\n## Plugin\n### Install\n```bash\n# not a heading\n```\n## Benchmarks\n### Speed\n"
    assert sorted(Counter(headings(text + text.split("\n", 1)[1])).values()) == [1] + [2] * 4
    assert [h for h, n in Counter(headings(text)).items() if n > 1] == []
