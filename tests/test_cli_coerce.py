"""memcli's pydantic-free option conversion (memcli.cli.coerce) gives what the installed typer gives, for
every option of every command, and keeps pydantic out of a CLI process."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import typer

from memcli.cli.coerce import LightParam, light_param

SAMPLES: list[Any] = ["abc", "", "  x ", "数据库", "5", "-3", "0", " 7 ", "3.0", "3.5", "0.5", "1e3", "true",
                      "false", "yes", "no", "1", "maybe", True, False, "/tmp", "rel/path", 7, 2.5]


def _typer_params() -> list[Any]:
    from typer.main import get_command

    from memcli.cli.app import build_app

    group = get_command(build_app())
    params = list(group.params)
    for cmd in group.commands.values():
        params += cmd.params
    return params


def _outcome(runtime: Any, value: Any, param: Any) -> tuple[str, Any]:
    try:
        return "ok", runtime.coerce(value, param=param, ctx=None)
    except typer.BadParameter:
        return "error", None


def _norm(outcome: tuple[str, Any]) -> tuple[str, Any]:
    kind, value = outcome
    return kind, list(value) if isinstance(value, tuple) else value  # typer normalises collections afterwards


def test_light_conversion_matches_typer() -> None:
    try:
        from typer._coercion import build_runtime_param
    except ImportError:
        pytest.skip("this typer converts without pydantic: nothing to replace")
    checked = 0
    params = _typer_params()
    for p in params:
        desc = getattr(p, "type_descriptor", None)
        light = light_param(desc) if desc is not None else None
        if light is None:
            continue
        reference = build_runtime_param(desc)
        multi = p.multiple or p.nargs == -1
        values = [None, ["a", "b"], ["5"], []] if multi else [None, *SAMPLES]
        for v in values:
            got, want = _norm(_outcome(light, v, p)), _norm(_outcome(reference, v, p))
            assert got[0] == want[0] and got[1] == want[1] and type(got[1]) is type(want[1]), (p.name, v, got, want)
        checked += 1
    assert checked == len(params) > 50  # every option of every command (all plain types today)


def test_every_option_of_the_read_commands_is_converted_lightly() -> None:
    for p in _typer_params():
        if p.name in ("query", "top_k", "tag", "since", "project", "explain", "json_", "home", "namespace"):
            assert light_param(p.type_descriptor) is not None, p.name


def test_a_cli_read_imports_neither_pydantic_nor_rich_nor_lancedb(tmp_path: Any) -> None:
    """`memcli recall --json` through the warm server path: none of the heavy modules (no server runs here,
    so the command falls back to the store after this check: only the first import matters)."""
    code = ("import sys; sys.argv = ['memcli', 'recall', 'x', '--json']\n"
            "import memcli.cli.app as a, memcli.cli.context as c\n"
            "c.State.service = lambda self, **k: (_ for _ in ()).throw(SystemExit(0))\n"
            "try:\n    a.main()\nexcept SystemExit:\n    pass\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'rich', 'lancedb', 'numpy', "
            "'httpx', 'pyarrow', 'starlette', 'mcp'}))")
    env = {"MEMCLI_HOME": str(tmp_path / "h"), "MEMCLI_EMBEDDER": "hash", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


def test_bad_values_are_usage_errors(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from memcli.cli.app import app

    r = CliRunner().invoke(app, ["recall", "x", "--top-k", "many"])
    assert r.exit_code == 2 and "--top-k" in r.output
    assert isinstance(LightParam(int, "an integer", False), LightParam)


def test_only_the_command_being_run_is_registered(tmp_path: Any) -> None:
    from pathlib import Path

    from memcli.cli.app import _command_of

    assert _command_of(["recall", "x", "--json"]) == "recall"
    assert _command_of(["--home", "/h", "list"]) == "list" and _command_of(["--home=/h", "get", "x"]) == "get"
    assert _command_of(["--version"]) is None and _command_of(["--help"]) is None and _command_of([]) is None
    memcli = str(Path(sys.executable).parent / "memcli")
    assert _command_of(["--no-server", "list"]) == "list"
    env = {"MEMCLI_EMBEDDER": "hash", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MEMCLI_AUTOSTART": "0"}
    p = subprocess.run([memcli, "--home", str(tmp_path / "h"), "list", "--json"], capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stderr
    p = subprocess.run([memcli, "--version"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("memcli ")
    p = subprocess.run([memcli, "no-such-command"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 2 and "No such command" in p.stderr
