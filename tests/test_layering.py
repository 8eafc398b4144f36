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
    names = {str(p.relative_to(PKG)) for p in _core_files()}
    assert {"memory/service.py", "memory/store.py", "models.py", "config.py", "errors.py", "memory/search.py",
            "distill/service.py", "board/service.py", "team/spaces.py"} <= names


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


# ------------------------------------------------------------------------------------------ one-way imports
def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PKG.rglob("*.py")}


def _edges(name: str) -> tuple[set[str], list[tuple[str, str]]]:
    """The memcli modules ``name`` imports — anywhere: at the top, inside functions, under TYPE_CHECKING — and
    the names it imports from them."""
    path = MODULES[name]
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    names: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("memcli")}
        elif isinstance(node, ast.ImportFrom):
            mod = ".".join(base[: len(base) - node.level + 1] + [node.module or ""]).strip(".") if node.level \
                else node.module or ""
            if not mod.startswith("memcli"):
                continue
            for a in node.names:
                if f"{mod}.{a.name}" in MODULES:
                    out.add(f"{mod}.{a.name}")
                else:
                    out.add(mod)
                    names.append((mod, a.name))
    return {m for m in out if m in MODULES and m != name}, names


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    graph = {m: _edges(m)[0] for m in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for m in sorted(graph):
        if m not in index:
            visit(m)
    return found


def test_no_import_circles() -> None:
    """Imports run one way: no two modules of memcli import each other, directly or around a circle (type-only
    and function-level imports count too — they are the same dependency, only later)."""
    assert _cycles() == []


def test_the_cycle_check_finds_a_circle(tmp_path: Path) -> None:
    """The check above can fail: a made-up pair of modules importing each other is found."""
    saved = dict(MODULES)
    try:
        (tmp_path / "memcli").mkdir()
        (tmp_path / "memcli" / "a.py").write_text("from memcli import b\n")
        (tmp_path / "memcli" / "b.py").write_text("def f():\n    from memcli.a import x\n")
        MODULES.clear()
        MODULES.update({"memcli.a": tmp_path / "memcli" / "a.py", "memcli.b": tmp_path / "memcli" / "b.py"})
        assert _cycles() == [["memcli.a", "memcli.b"]]
    finally:
        MODULES.clear()
        MODULES.update(saved)


def test_no_private_name_is_imported_from_another_module() -> None:
    """A name with a leading underscore is its module's own business: no other module imports it."""
    offenders = [f"{m} imports {name} from {mod}" for m in MODULES for mod, name in _edges(m)[1]
                 if name.startswith("_") and not name.startswith("__")]
    assert not offenders, offenders


# ------------------------------------------------------------------------------------------ the house's order
# Which package may import which (docs/architecture.md): each layer may import the layers before it, never one
# after it, and packages of one layer do not import each other. "top" is the shared modules directly under
# memcli/ (config, errors, models, …); the faces (the last layer) may import anything below and each other.
LAYERS: list[set[str]] = [
    {"top"},
    {"embedders", "facts"},
    {"memory"},
    {"distill"},
    {"board", "team"},
    set(FACES),
]
MAX_TOP_MODULES = 12


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (PKG / parts[1]).is_dir()) else "top"


def _layer(package: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if package in layer)


def _order_offenders(modules: dict[str, Path]) -> list[str]:
    out = []
    for name in modules:
        mine = _package(name)
        for dep in _edges(name)[0]:
            theirs = _package(dep)
            if theirs == mine or mine in FACES:
                continue
            if _layer(theirs) >= _layer(mine):
                out.append(f"{name} ({mine}) imports {dep} ({theirs})")
    return sorted(out)


def test_every_package_has_a_layer_and_says_what_it_holds() -> None:
    packages = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages <= set().union(*LAYERS), packages - set().union(*LAYERS)
    for name in packages - set(FACES):
        doc = ast.get_docstring(ast.parse((PKG / name / "__init__.py").read_text(encoding="utf-8"))) or ""
        assert "May import" in doc, f"memcli/{name}/__init__.py should say what it holds and what it may import"


def test_packages_import_one_way() -> None:
    assert _order_offenders(MODULES) == []


def test_the_order_check_finds_an_import_back_up(tmp_path: Path) -> None:
    """The check above can fail: the memory core importing consolidation is found."""
    saved = dict(MODULES)
    try:
        for d in ("memory", "distill"):
            (tmp_path / "memcli" / d).mkdir(parents=True)
        (tmp_path / "memcli" / "memory" / "service.py").write_text("def f():\n    from memcli.distill.x import y\n")
        (tmp_path / "memcli" / "distill" / "x.py").write_text("from memcli.memory.service import f\n")
        MODULES.clear()
        MODULES.update({"memcli.memory.service": tmp_path / "memcli" / "memory" / "service.py",
                        "memcli.distill.x": tmp_path / "memcli" / "distill" / "x.py"})
        assert _order_offenders(MODULES) == ["memcli.memory.service (memory) imports memcli.distill.x (distill)"]
    finally:
        MODULES.clear()
        MODULES.update(saved)


def test_the_top_of_the_package_stays_small() -> None:
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top
