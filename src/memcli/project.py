"""The project a writer works in: the git root's name, else the working directory's name."""

from __future__ import annotations

from pathlib import Path


def detect_project(cwd: str | Path | None) -> str | None:
    """Walk up from ``cwd`` to a directory holding `.git`; its name is the project. No subprocess."""
    if not cwd:
        return None
    try:
        p = Path(cwd).resolve()
    except OSError:
        return None
    for d in (p, *p.parents):
        if (d / ".git").exists():
            return d.name or None
    return p.name or None
