"""The core never imports a face (DESIGN.md: services own behaviour; faces only compose)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "src" / "memcli"
FACES = ("cli", "hooks", "mcp", "server", "setup", "agents", "web")
FORBIDDEN = ("typer", "rich", "mcp", "starlette", "uvicorn", "click") + tuple(f"memcli.{f}" for f in FACES)


def _core_files() -> list[Path]:
    return [p for p in PKG.rglob("*.py") if p.relative_to(PKG).parts[0] not in FACES]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_core_files_exist() -> None:
    names = {p.name for p in _core_files()}
    assert {"service.py", "store.py", "models.py", "config.py", "errors.py", "search.py"} <= names


def test_core_never_imports_a_face() -> None:
    offenders = []
    for path in _core_files():
        for name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
                offenders.append(f"{path.relative_to(PKG)} imports {name}")
    assert not offenders, offenders


def test_core_does_not_read_the_environment() -> None:
    """Only entry points read configuration; config.py is where that reading lives."""
    offenders = []
    for path in _core_files():
        if path.name in ("config.py",):
            continue
        text = path.read_text(encoding="utf-8")
        if "os.environ[" in text or "os.environ.get(" in text or "os.getenv(" in text:
            offenders.append(str(path.relative_to(PKG)))
    assert not offenders, offenders
