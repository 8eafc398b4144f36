"""README.md and docs/ stay true: no section pasted in twice, every docs page linked from the README, every
relative link and anchor resolves, and the README's commands still run."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
README_LIMIT = 400


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


def slug(title: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (letters of every script kept), spaces
    as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors a page's headings make (a repeated title gets -1, -2, … as on GitHub)."""
    seen: Counter[str] = Counter()
    out: set[str] = set()
    for path in headings(text):
        s = slug(path[-1])
        out.add(s if not seen[s] else f"{s}-{seen[s]}")
        seen[s] += 1
    return out


def links(text: str) -> list[str]:
    """The targets of the page's markdown links and images outside code (inline code and fences)."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    return re.findall(r"\]\(([^)\s]+)\)", prose)


def broken_links(page: Path) -> list[str]:
    bad = []
    for target in links(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{page.name}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text(encoding="utf-8")):
            bad.append(f"{page.name}: {target} (no such heading)")
    return bad


# ------------------------------------------------------------------------------------------ one document
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_section_appears_once(page: Path) -> None:
    counts = Counter(headings(page.read_text(encoding="utf-8")))
    assert [h for h, n in counts.items() if n > 1] == []


def test_the_check_finds_a_pasted_copy() -> None:
    text = "# memcli\n## Plugin\n### Install\n```bash\n# not a heading\n```\n## Benchmarks\n### Speed\n"
    assert sorted(Counter(headings(text + text.split("\n", 1)[1])).values()) == [1] + [2] * 4
    assert [h for h, n in Counter(headings(text)).items() if n > 1] == []


def test_the_readme_fits() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= README_LIMIT


# ------------------------------------------------------------------------------------------ links
def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in links(README.read_text(encoding="utf-8"))}
    assert [p.name for p in DOCS.glob("*.md") if p.resolve() not in linked] == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_the_link_check_finds_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A page\n## Its part (`x`)\n[ok](#its-part-x) [ok](b.md#b) [gone](c.md) "
                                   "[no anchor](b.md#nowhere) [web](https://example.com) `[code](nope.md)`\n")
    (tmp_path / "b.md").write_text("# B\n")
    assert broken_links(tmp_path / "a.md") == ["a.md: c.md (no such file)", "a.md: b.md#nowhere (no such heading)"]


def test_slugs_follow_github() -> None:
    assert slug("Speed (`python bench/core.py`, `python bench/hooks.py`)") == \
        "speed-python-benchcorepy-python-benchhookspy"
    assert slug("`memcli serve` and the REST API") == "memcli-serve-and-the-rest-api"
    assert slug("数据库 选型") == "数据库-选型"


# ------------------------------------------------------------------------------------------ commands
def _bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def readme_commands() -> list[list[str]]:
    """Every `memcli …` command of the README's bash blocks, as argv (comments dropped, `&&` chains split)."""
    out = []
    for block in _bash_blocks(README.read_text(encoding="utf-8")):
        for line in block.splitlines():
            for part in line.split("&&"):
                part = part.strip()
                if part.startswith(".venv/bin/memcli "):
                    part = part[len(".venv/bin/"):]
                if part.startswith("memcli "):
                    out.append(shlex.split(part, comments=True))
    return out


def test_the_test_command_is_what_ci_runs() -> None:
    blocks = _bash_blocks(README.read_text(encoding="utf-8"))
    test_cmd = next(b.strip() for b in blocks if "pytest" in b)
    assert (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip().endswith(test_cmd)


@pytest.mark.slow
def test_the_tour_runs(memcli_bin: str, subprocess_env: dict[str, str], home: Path) -> None:
    """The tour's remember-and-recall block, run as written through a warm server as a user's shell would (the
    short id is the first memory's), and every other README command's flags parse (``--help`` after them: a flag
    that no longer exists fails)."""
    from _memcli_server import start_server

    env = {**subprocess_env, "NO_COLOR": "1"}
    srv = start_server(memcli_bin, env, home)
    ran = parsed = 0
    short: str | None = None
    try:
        for argv in readme_commands():
            cmd, args = argv[1], argv[2:]
            if cmd in ("remember", "recall", "list", "get", "update", "history", "check-duplicate", "forget"):
                if short is not None:
                    args = [short if a == "7001ec26" else a for a in args]
                res = subprocess.run([memcli_bin, cmd, *args, "--json"], env=env, capture_output=True, text=True,
                                     timeout=120)
                assert res.returncode == 0, (argv, res.stderr)
                if cmd == "remember" and short is None:
                    short = json.loads(res.stdout)["memory_id"][-8:]
                ran += 1
            else:
                res = subprocess.run([memcli_bin, *argv[1:], "--help"], env=env, capture_output=True, text=True,
                                     timeout=60, cwd=os.environ.get("TMPDIR", "/tmp"))
                assert res.returncode == 0, (argv, res.stdout[-500:], res.stderr[-500:])
                parsed += 1
    finally:
        srv.stop()
    assert ran >= 10 and parsed >= 10
