"""The CLI's fast path (memcli.cli.fast, memcli.cli.lean): the installed `memcli` answers recall/get/remember/
forget through the warm server without typer, with the same stdout and exit code as the typer app
(MEMCLI_FAST=0), and steps aside whenever it is not sure: help, flags it does not know, human output, a
config it has not seen validated, a team server, a server that has not proven it is this home's."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _memcli_server import MEMCLI, ServerProc, start_server
from test_cli_server_writes import _env, cli

from memcli.cli import fast, lean
from memcli.proof import verified_mark

pytestmark = pytest.mark.slow


def both(env: dict[str, str], *args: str, cwd: Path | None = None) -> tuple[Any, Any]:
    """(returncode, stdout) of the fast path and of the typer app for the same command line."""
    a = cli(env, *args, cwd=cwd)
    b = cli({**env, "MEMCLI_FAST": "0"}, *args, cwd=cwd)
    assert not a.stderr and not b.stderr, (a.stderr, b.stderr)
    return (a.returncode, a.stdout), (b.returncode, b.stdout)


ROUTE = ("import sys; from memcli.cli import fast; code = fast.run(sys.argv[1:]); "
         "print('route:', 'none' if code is None else 'full' if 'memcli.config' in sys.modules else 'lean', "
         "file=sys.stderr)")


def route(env: dict[str, str], *args: str) -> str:
    """Which route the fast path took for this command line: lean, full (memcli.config read), none (typer)."""
    p = subprocess.run([sys.executable, "-c", ROUTE, *args], env=env, capture_output=True, text=True, timeout=120)
    return p.stderr.rsplit("route: ", 1)[-1].strip()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("fast")
    srv = start_server(MEMCLI, _env(tmp / "home", HOME=str(tmp)), tmp / "home")
    env = _env(srv.home)
    for text, extra in (("The billing API listens on port 8081", ("-t", "config", "-t", "billing")),
                        ("Deploys to production need two approvals", ("--agent", "codex")),
                        ("The cache keeps sessions for 30 minutes", ("--importance", "0.9")),
                        ("Staging runs on Kubernetes 1.29", ("--namespace", "ops")),
                        ("The old VPN host was retired", ("--ttl", "1s"))):
        p = cli({**env, "MEMCLI_FAST": "0"}, "remember", text, *extra, "--json")
        assert p.returncode == 0, p.stdout + p.stderr
    time.sleep(1.5)  # the 1 s memory has expired for both routes of every comparison
    yield srv
    srv.stop()


def _ids(env: dict[str, str]) -> list[str]:
    return [m["memory_id"] for m in json.loads(cli(env, "list", "--json").stdout)]  # of the default namespace


READS: list[tuple[str, ...]] = [
    ("recall", "which port does billing use"),
    ("recall", "approvals for production", "-k", "1"),
    ("recall", "port", "--top-k=2", "--mode", "text"),
    ("recall", "billing", "-t", "config", "--tag", "billing"),
    ("recall", "deploys", "--agent", "codex", "--explain"),
    ("recall", "deploys", "--scope", "global", "--min-score", "0.2"),
    ("recall", "kubernetes", "--namespace", "ops", "--include-archived"),
    ("recall", "vpn host", "--include-expired", "--project", "nowhere"),
    ("recall", "sessions", "--mode", "vector", "--json"),
    ("recall", "naïve 中文 query with spaces & symbols ?#%", "-k", "3"),
    ("recall", "x", "--mode", "nonsense"),  # the server's validation error
    ("recall", "x", "--top-k", "0"),
    ("recall", "x", "-n", "bad namespace"),  # config's error: the typer app's words
    ("recall", "  "),
    ("get", "@0"),
    ("get", "@0:8"),  # a unique prefix
    ("get", "zzzz"),
    ("get", "0190ffff"),
    ("get", "01"),  # too short
    ("get", "@0", "-n", "ops"),  # an id of another namespace: not found there
    ("get", "@0:8", "--all-namespaces"),
    ("forget", "0190ffff"),
    ("forget", "0190ffff", "0190fffe"),
    ("forget", "@0", "--namespace", "ops"),  # not found in ops: nothing deleted
]


@pytest.mark.parametrize("args", READS, ids=[" ".join(a)[:40] for a in READS])
def test_same_answer_as_the_typer_app(served: ServerProc, args: tuple[str, ...], tmp_path: Path) -> None:
    env = _env(served.home)
    ids = _ids(env)
    real = [ids[0] if a == "@0" else ids[0][:8] if a == "@0:8" else a for a in args]
    fast_answer, typer_answer = both(env, *real, "--json", cwd=tmp_path)
    assert fast_answer == typer_answer
    json.loads(fast_answer[1])  # JSON either way
    # not handed to typer (but a namespace the config refuses: the typer app words that error); forget of
    # several ids checks them all first, on the full client
    expected = "none" if "bad namespace" in args else "full" if args[0] == "forget" and len(args) == 3 else "lean"
    assert route(env, *real, "--json") == expected


def test_the_lean_route_answers_plain_reads_and_writes(served: ServerProc, tmp_path: Path) -> None:
    env = _env(served.home)
    cli(env, "recall", "warm", "--json")  # proves the server once (hooks-state/verified)
    for args in (("recall", "billing", "-k", "2"), ("get", _ids(env)[0]), ("forget", "0190ffff"),
                 ("remember", "The lean route writes too", "--tag", "x")):
        assert route(env, *args, "--json") == "lean", args
    # what the lean route cannot check itself goes through the full client, with the same answers
    assert route(env, "recall", "billing", "--since", "2d", "--json") == "full"
    assert route(env, "remember", "with metadata", "--metadata", '{"a": 1}', "--json") == "full"
    assert route(env, "forget", "0190ffff", "0190fffe", "--json") == "full"
    # a wrong token of its own: refused by the server, then by the full client's proof: the typer app's answer
    assert route({**env, "MEMCLI_TOKEN": "x" * 20}, "recall", "billing", "--json") == "none"
    token = json.loads((served.home / "auth.json").read_text())["token"]
    assert route({**env, "MEMCLI_TOKEN": token}, "recall", "billing", "--json") == "lean"
    # a setting the config refuses: the typer app's error, whichever route would have answered
    assert route({**env, "MEMCLI_EMBED_DIMS": "many"}, "recall", "billing", "--json") == "none"
    p = cli({**env, "MEMCLI_EMBED_DIMS": "many"}, "recall", "billing", "--json")
    assert p.returncode == 1 and json.loads(p.stdout)["code"] == "config_error"


def test_writes_store_what_the_typer_app_stores(served: ServerProc, tmp_path: Path) -> None:
    env = _env(served.home, MEMCLI_AGENT="aider")
    cli(env, "recall", "warm", "--json")  # proves the server once (hooks-state/verified)
    repo = tmp_path / "shop"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    made = {}
    for name, extra_env in (("fast", {}), ("typer", {"MEMCLI_FAST": "0"})):
        e = {**env, **extra_env, "MEMCLI_NAMESPACE": f"writes-{name}"}  # neither sees the other's memories
        out = [json.loads(cli(e, *args, "--json", cwd=repo / "src").stdout) for args in (
            ("remember", f"The {name} queue retries 3 times", "-t", "queue", "-i", "0.7", "--ttl", "7d"),
            ("remember", f"The {name} queue retries 3 times", "-t", "queue"),  # the same fact again
            ("remember", f"{name} staging port is 8443", "--key", f"{name}-port", "--scope", "global"),
            ("remember", f"{name} staging port is 9443", "--key", f"{name}-port", "--scope", "global"),
            ("remember", f"{name} token sk-ant-api03-{'a1B2' * 20}", "--agent", "codex"),
        )]
        got = [json.loads(cli(e, "get", o["memory_id"], "--json").stdout) for o in out]
        made[name] = (out, got)
    (fo, fg), (to, tg) = made["fast"], made["typer"]
    volatile = {"memory_id", "content", "created_at", "updated_at", "expires_at", "key", "duplicate_of",
                "namespace", "related"}

    def same(d: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in d.items() if k not in volatile} | {
            "related": [{k: v for k, v in r.items() if k != "memory_id"} for r in d.get("related") or []]}

    for a, b in zip(fo + fg, to + tg, strict=True):
        assert same(a) == same(b)
    assert {m["namespace"] for m in fg} == {"writes-fast"}
    assert route({**env, "MEMCLI_NAMESPACE": "writes-fast"}, "remember", "x y z", "--json") == "lean"
    assert fo[1]["memory_id"] == fo[0]["memory_id"] and fo[1]["created"] is False
    assert fo[3]["memory_id"] == fo[2]["memory_id"] and fo[3]["updated"] is True
    assert fg[0]["scope"] == "agent:aider" and fg[0]["project"] == "shop" and fg[0]["source"] == "cli"
    assert fg[0]["expires_at"] and fg[4]["scope"] == "agent:codex"
    assert "sk-ant" not in fg[4]["content"] and "[REDACTED" in fg[4]["content"]
    p = cli(env, "forget", fo[0]["memory_id"], "--json")  # of another namespace than the caller's
    assert p.returncode == 1 and json.loads(p.stdout)["code"] == "not_found"
    p = cli(env, "forget", fo[0]["memory_id"], "--namespace", "writes-fast", "--json")
    assert p.returncode == 0 and json.loads(p.stdout) == {"ok": True, "forgotten": [fo[0]["memory_id"]]}
    assert cli(env, "get", fo[0]["memory_id"], "-A", "--json").returncode == 1


def test_human_output_help_and_unknown_flags_go_to_the_typer_app(served: ServerProc) -> None:
    env = _env(served.home, MEMCLI_JSON="0")
    p = cli(env, "recall", "billing")
    assert p.returncode == 0 and not p.stdout.lstrip().startswith("[") and "billing" in p.stdout.lower()
    env = _env(served.home)
    for args in (("recall", "--help"), ("recall", "x", "--frobnicate"), ("recall", "x", "-k", "many"),
                 ("recall",), ("get", "a", "b"), ("remember", "-"), ("--no-server", "recall", "x"),
                 ("get", "abcd", "-A", "-n", "ops")):  # one or the other: the typer app's usage error
        assert fast.parse(list(args)) is None or route(env, *args) == "none", args
    p = cli(env, "recall", "x", "-k", "many", "--json")
    assert p.returncode == 2 and "many" in p.stderr  # click's usage error, as always
    p = cli(env, "recall", "--help")
    assert p.returncode == 0 and "--top-k" in p.stdout
    p = subprocess.run([MEMCLI, "remember", "-", "--json"], env=env, input="From stdin: the lean route hands on",
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and json.loads(p.stdout)["created"] is True


def test_a_config_file_is_read_by_the_full_client_first(served: ServerProc) -> None:
    home = served.home
    env = _env(home)
    config = home / "config.toml"
    try:
        config.write_text('namespace = "ops"\n')
        assert route(env, "recall", "kubernetes", "--json") == "full"  # not seen yet: validated, noted
        assert route(env, "recall", "kubernetes", "--json") == "lean"
        hits = json.loads(cli(env, "recall", "kubernetes", "--json").stdout)
        assert hits and {h["namespace"] for h in hits} == {"ops"}
        config.write_text('namespace = "default"\nagent = "zed"\n')  # changed: read again
        assert route(env, "recall", "kubernetes", "--json") == "full"
        assert {h["namespace"] for h in json.loads(cli(env, "recall", "billing", "--json").stdout)} == {"default"}
        config.write_text('namespace = "ops"\napi_url = "http://127.0.0.1:9"\napi_token = "t0k3n-t0k3n"\n')
        for _ in range(2):  # a team server: never this home's server, never the lean route
            assert route(env, "recall", "kubernetes", "--json") == "none"
        config.write_text("namespace = [broken\n")
        p = cli(env, "recall", "x", "--json")
        assert p.returncode == 1 and json.loads(p.stdout)["code"] == "config_error"
    finally:
        config.unlink()


def test_an_unproven_server_gets_nothing_from_the_lean_route(served: ServerProc, tmp_path: Path) -> None:
    env = _env(served.home)
    verified = served.home / "hooks-state" / "verified"
    verified.unlink(missing_ok=True)
    assert route(env, "recall", "billing", "--json") == "full"  # proves it, and notes it
    assert verified.read_text() == verified_mark(served.port, served.proc.pid)
    assert route(env, "recall", "billing", "--json") == "lean"
    verified.write_text(f"{served.port} 1")  # a proof of another process
    assert route(env, "recall", "billing", "--json") == "full"
    # the proof of an earlier process that had this pid (same port and pid, another start time): not this one
    port, pid, start, boot = verified_mark(served.port, served.proc.pid).split(" ")
    verified.write_text(f"{port} {pid} {int(start) - 1} {boot}")
    assert route(env, "recall", "billing", "--json") == "full"
    assert verified.read_text() == verified_mark(served.port, served.proc.pid)  # proven again, and noted


def test_parse_takes_only_what_click_would_take_the_same_way() -> None:
    assert fast.parse(["recall", "q", "-k", "3", "--tag", "a", "-t", "b", "--json"]) == (
        None, "recall", {"top_k": 3, "mode": "hybrid", "min_score": 0.0, "tag": ["a", "b"], "json_": True}, ["q"])
    assert fast.parse(["--home", "/h", "get", "abcd"]) == ("/h", "get", {}, ["abcd"])
    assert fast.parse(["--home=/h", "forget", "a1b2", "c3d4"])[3] == ["a1b2", "c3d4"]  # type: ignore[index]
    assert fast.parse(["recall", "q", "--min-score=-0.5"])[2]["min_score"] == -0.5  # type: ignore[index]
    assert fast.parse(["recall", "q", "--top-k", "-1"])[2]["top_k"] == -1  # type: ignore[index]
    assert fast.parse(["recall", "q", "--top-k", " +1_0 "])[2]["top_k"] == 10  # type: ignore[index]
    for argv in (["recall"], ["recall", "a", "b"], ["recall", "q", "-k"], ["recall", "q", "-k5"],
                 ["recall", "q", "--json=1"], ["recall", "q", "--agent", "--json"], ["recall", "q", "--", "x"],
                 ["remember", "-"], ["update", "x", "-c", "y"], ["--version", "recall", "q"], ["list"],
                 ["recall", "q", "-h"], ["recall", "q", "--top-k", "1.5"], ["recall", "q", "-k", "3.0"], ["recall", "q", "-k", "３"],
                 ["remember", "x", "-i", "０.5"], [], ["--home"]):
        assert fast.parse(argv) is None, argv


def test_the_fast_specs_match_the_typer_commands() -> None:
    import typer

    from memcli.cli.app import build_app

    group = typer.main.get_command(build_app())
    types = {fast._int: "int", fast._float: "float", str: "str"}  # noqa: SLF001
    for name, spec in fast.SPECS.items():
        command = group.commands[name]  # type: ignore[attr-defined]
        params = {opt: p for p in command.params for opt in (*p.opts, *p.secondary_opts)}
        for opt, (dest, kind, conv) in spec.options.items():
            p = params[opt]
            assert p.param_type_name == "option" and p.name == dest, (name, opt)
            assert p.is_flag == (kind == fast.FLAG) and p.multiple == (kind == fast.MULTI), (name, opt)
            if conv is not None:
                annotation = p.type_descriptor.annotation
                assert getattr(annotation, "__name__", None) == types[conv] or str(annotation) in (
                    f"typing.List[{types[conv]}]", f"typing.Optional[{types[conv]}]"), (name, opt, annotation)
            if dest in spec.defaults:
                assert p.default == spec.defaults[dest], (name, opt)
        arguments = [p for p in command.params if p.param_type_name == "argument"]
        assert len(arguments) == 1 and (arguments[0].nargs == -1) == (spec.positional == "1+"), name


def test_lean_helpers_equal_the_libraries_they_replace(tmp_path: Path) -> None:
    import random
    import urllib.parse

    from memcli.project import detect_project

    rng = random.Random(7)
    alphabet = "ab c/+%&=é中~._-\n\t?#:"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert lean.quote(text) == urllib.parse.quote(text, safe="")
        assert lean.urlencode([("q", text), ("tag", text)]) == urllib.parse.urlencode([("q", text), ("tag", text)])
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "a" / "b").mkdir(parents=True)
    (tmp_path / "plain").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "repo" / "a")
    for d in (tmp_path / "repo" / "a" / "b", tmp_path / "plain", tmp_path / "link", Path("/")):
        assert lean.detect_project(str(d)) == detect_project(d), d
    from memcli.config import _ENV_MAP, MNEMO_ENV  # noqa: PLC2701 - the list the lean route must know all of

    assert set(lean.CONFIG_ENV) == set(_ENV_MAP) | set(MNEMO_ENV)
    from memcli.models import Memory, RecallHit
    from memcli.team.remote import _hit  # noqa: PLC2701

    d = {"memory_id": "m1", "content": "c", "scope": "global", "namespace": "default", "importance": 0.5,
         "created_at": 1, "updated_at": 2, "score": 0.123456, "relation": "related", "extra": "dropped"}
    assert lean.hit_item(d) == _hit(d).item()
    assert lean.hit_item({**d, "explain": {"dense": 0.5}, "status": None}) == _hit(
        {**d, "explain": {"dense": 0.5}, "status": None}).item()
    assert isinstance(_hit(d), RecallHit) and isinstance(_hit(d).memory, Memory)
