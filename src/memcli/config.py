"""Configuration: a TOML file in the home dir, overridden by environment variables, overridden by flags.

Only entry points (the CLI, the hook launcher, the servers) call :func:`load_config`; the core receives a
:class:`Config` and never reads the environment itself.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit

from memcli.errors import ConfigError
from memcli.models import DEFAULT_NAMESPACE, validate_namespace

CONFIG_FILE = "config.toml"


def default_home() -> Path:
    """platformdirs' user data dir for memcli."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("memcli", appauthor=False))


@dataclass
class EmbedderConfig:
    """Which embedder to use. `local` needs nothing else; `openai`/`jina` need a base URL/model/key."""

    provider: str = "local"  # local | openai | jina | hash (tests)
    base_url: str | None = None
    model: str | None = None
    dims: int | None = None
    api_key: str | None = None
    timeout: float = 30.0
    batch_size: int = 64
    max_retries: int = 4
    backoff_base: float = 0.5  # seconds; retry delays grow as backoff_base * 2**attempt (with jitter)


@dataclass
class HooksConfig:
    """Claude Code hook behaviour."""

    session_start_budget: int = 6000
    prompt_budget: int = 3000
    prompt_top_k: int = 5
    # the gates read recall's calibrated score (0.5: probably answers the prompt)
    min_score: float = 0.90  # relevance from which a memory goes in as full text
    # when the prompt's best candidate reaches index_min_score, the best recalled memories not shown in full go
    # in as one index line each (id, the memory's start, age, author): up to index_top_k lines within
    # index_budget tokens (chosen with bench/agentfacts.py --gate; bench/README.md)
    index_min_score: float = 0.50
    index_top_k: int = 4
    index_budget: int = 120
    # a prompt whose best candidate reaches index_strong_score is plainly about what the store holds: its index
    # lines may take index_strong_budget tokens (a captured turn's line is ~40 tokens, so 120 holds two of them)
    index_strong_score: float = 0.65
    index_strong_budget: int = 180
    # the prompt's candidates: memories written in another script than the prompt (Chinese / Latin) get this much
    # more cosine before they are ranked (e5 scores two texts of one language higher; bench/sessions.py)
    other_script_lift: float = 0.02
    capture_subagents: bool = False
    project_only: bool = False
    deadline_ms: int = 1500
    llm_provider: str | None = None  # None (extractive) | openai | anthropic
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_daily_token_budget: int = 200_000


@dataclass
class ServerConfig:
    """`memcli serve` defaults."""

    host: str = "127.0.0.1"
    port: int = 8765
    idle_timeout: float = 0.0  # seconds; 0 = never exit when idle
    token: str | None = None
    # team mode (space tokens): token buckets per space token and per client IP (0 = off); the home's own
    # (admin) token is not limited
    rate_limit: float = 50.0  # requests per second, per space token
    rate_burst: int = 200
    ip_rate_limit: float = 100.0  # requests per second, per client IP (space tokens and refused requests)
    ip_rate_burst: int = 400
    # on object storage: skip the conditional-PUT check, knowingly running one writer (see objectstore.py)
    single_writer: bool = False
    # team spaces with conflict = "llm-merge" (memcli.team.conflict): the [hooks] llm_* endpoint may take this long
    # and spend at most this many tokens (prompt + answer) on one stale update; else the update is refused (412)
    merge_timeout: float = 15.0
    merge_token_budget: int = 4_000
    # a memory command that finds no server of its home running starts one in the background for the next
    # command (as the hooks do); it exits after autostart_idle_timeout seconds without a request
    autostart: bool = True
    autostart_idle_timeout: float = 1800.0


DEFAULT_COLUMNS = ("backlog", "todo", "doing", "review", "done")
_COLUMN_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")  # always fullmatch (`$` would let "done\n" in)
MAX_JOB_TIMEOUT = 86_400.0


@dataclass
class BoardConfig:
    """The task board (``[board]``): its columns, in order (the first is where new cards go)."""

    columns: list[str] = field(default_factory=lambda: list(DEFAULT_COLUMNS))


@dataclass
class JobConfig:
    """One job the user allows the board to run (``[jobs.NAME]``). ``command`` is an argv list, or a string
    split like a shell would split words (shlex) but never run through a shell: no pipes, no ``$VARS``."""

    name: str
    command: list[str]
    cwd: str | None = None
    timeout: float = 600.0  # seconds; past it the job's process group is killed and the run is marked failed


@dataclass
class DistillConfig:
    """`memcli distill` (memcli.distill.distiller): merge threshold, promotion, optional LLM condensation (it uses the
    [hooks] llm_provider/llm_base_url/llm_model/llm_api_key endpoint)."""

    threshold: float = 0.80  # calibrated similarity from which a pair is a candidate (the same-fact test decides)
    promote_importance: float = 0.8
    llm: bool = False
    llm_token_budget: int = 20_000


@dataclass
class Config:
    """Everything an entry point passes to the core."""

    home: Path = field(default_factory=default_home)
    namespace: str = DEFAULT_NAMESPACE
    agent: str | None = None
    storage_uri: str | None = None  # default: <home>/data ; may be s3://, gs://, az:// (MEMCLI_STORE_URI)
    # lance storage options of an object-store URI (credentials, endpoint, region: from the AWS_* variables)
    storage_options: dict[str, str] = field(default_factory=dict)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    hooks: HooksConfig = field(default_factory=HooksConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    duplicate_threshold: float = 0.90
    auto_compact_fragments: int = 32
    board: BoardConfig = field(default_factory=BoardConfig)
    jobs: dict[str, JobConfig] = field(default_factory=dict)
    # team mode: every face talks to this memcli server with this (space) token instead of the local store
    api_url: str | None = None
    api_token: str | None = None

    @property
    def data_uri(self) -> str:
        return self.storage_uri or str(self.home / "data")

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"


_ENV_MAP = {
    "MEMCLI_NAMESPACE": ("namespace", None),
    "MEMCLI_AGENT": ("agent", None),
    "MEMCLI_STORAGE_URI": ("storage_uri", None),
    "MEMCLI_STORE_URI": ("storage_uri", None),
    "MEMCLI_SINGLE_WRITER": ("single_writer", "server"),
    "MEMCLI_AUTOSTART": ("autostart", "server"),
    "MEMCLI_EMBEDDER": ("provider", "embedder"),
    "MEMCLI_EMBED_BASE_URL": ("base_url", "embedder"),
    "MEMCLI_EMBED_MODEL": ("model", "embedder"),
    "MEMCLI_EMBED_DIMS": ("dims", "embedder"),
    "MEMCLI_EMBED_API_KEY": ("api_key", "embedder"),
    "MEMCLI_PORT": ("port", "server"),
    "MEMCLI_TOKEN": ("token", "server"),
    "MEMCLI_API_URL": ("api_url", None),
    "MEMCLI_API_TOKEN": ("api_token", None),
    "MEMCLI_RATE_LIMIT": ("rate_limit", "server"),
    "MEMCLI_RATE_BURST": ("rate_burst", "server"),
    "MEMCLI_IP_RATE_LIMIT": ("ip_rate_limit", "server"),
    "MEMCLI_IP_RATE_BURST": ("ip_rate_burst", "server"),
}


# seed 002's (mem9 / mnemo) names, honoured beside memcli's own: each fills its MEMCLI_ twin when that is unset
# (MEMCLI_* wins when both are set). A mnemo user's MNEMO_API_URL + MNEMO_API_TOKEN reach the team server instead
# of being ignored (a write would land in a new local store, split from the team).
MNEMO_ENV = {
    "MNEMO_API_URL": "MEMCLI_API_URL",
    "MNEMO_API_TOKEN": "MEMCLI_API_TOKEN",
    "MNEMO_EMBED_API_KEY": "MEMCLI_EMBED_API_KEY",
    "MNEMO_EMBED_BASE_URL": "MEMCLI_EMBED_BASE_URL",
    "MNEMO_EMBED_MODEL": "MEMCLI_EMBED_MODEL",
    "MNEMO_EMBED_DIMS": "MEMCLI_EMBED_DIMS",
}
# in seed 002 an embedding key or URL alone turns on its (OpenAI-compatible) embedder
MNEMO_EMBEDDER_SELECTORS = ("MNEMO_EMBED_API_KEY", "MNEMO_EMBED_BASE_URL")


def effective_env(env: Mapping[str, str]) -> dict[str, str]:
    """The MEMCLI_ settings of ``env`` with seed 002's MNEMO_ names filled in (:data:`MNEMO_ENV`) where the
    MEMCLI_ twin is unset; only the variables :func:`load_config` reads."""
    out = {var: env[var] for var in _ENV_MAP if env.get(var)}
    for mnemo, ours in MNEMO_ENV.items():
        if env.get(mnemo) and not out.get(ours):
            out[ours] = env[mnemo]
    return out


def _coerce(section: object, name: str, value: Any, origin: str) -> Any:
    ftype = {f.name: f.type for f in fields(section)}.get(name)  # type: ignore[arg-type]
    if ftype is None:
        raise ConfigError(f"{origin}: unknown setting {name!r}")
    t = str(ftype)
    try:
        if "int" in t and "float" not in t and value is not None and value != "":
            return int(value)
        if "float" in t and value is not None and value != "":
            return float(value)
        if "bool" in t and isinstance(value, str):
            return value.strip().lower() in ("1", "true", "yes", "on")
    except (TypeError, ValueError):
        raise ConfigError(f"{origin}: {name} must be a number, got {value!r}") from None
    if value == "":
        return None
    return value


def _apply(section: object, values: Mapping[str, Any], origin: str) -> None:
    for name, value in values.items():
        setattr(section, name, _coerce(section, name, value, origin))


def config_path(home: Path) -> Path:
    return home / CONFIG_FILE


def load_config(
    home: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    **overrides: Any,
) -> Config:
    """Build the Config: file < environment < explicit overrides (flags). None overrides are ignored."""
    env = os.environ if env is None else env
    home_path = Path(home or env.get("MEMCLI_HOME") or default_home()).expanduser()
    cfg = Config(home=home_path)
    path = config_path(home_path)
    file_provider = False  # config.toml chose an embedder: a MNEMO_ embedding key alone does not change it
    if path.exists():
        if sys.version_info >= (3, 11):  # imported only when there is a file to read (~5 ms)
            import tomllib
        else:  # pragma: no cover
            import tomli as tomllib
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}") from None
        for section in ("embedder", "hooks", "server", "distill"):
            sub = data.pop(section, None)
            if sub is not None:
                if not isinstance(sub, dict):
                    raise ConfigError(f"{path}: [{section}] must be a table")
                _apply(getattr(cfg, section), sub, str(path))
                file_provider = file_provider or (section == "embedder" and "provider" in sub)
        cfg.board = _board_config(data.pop("board", None), str(path))
        cfg.jobs = _jobs_config(data.pop("jobs", None), str(path))
        if "store_uri" in data:  # the name MEMCLI_STORE_URI suggests
            data["storage_uri"] = data.pop("store_uri")
        _apply(cfg, data, str(path))
    values = effective_env(env)
    for var, (name, section) in _ENV_MAP.items():
        if values.get(var):
            origin = next((m for m, ours in MNEMO_ENV.items() if ours == var and not env.get(var)), var)
            _apply(getattr(cfg, section) if section else cfg, {name: values[var]}, origin)
    if (not values.get("MEMCLI_EMBEDDER") and not file_provider
            and any(env.get(v) for v in MNEMO_EMBEDDER_SELECTORS)):
        cfg.embedder.provider = "openai"  # MNEMO_EMBED_API_KEY or _BASE_URL alone: seed 002's embedder
    for name, value in overrides.items():
        if value is None:
            continue
        if "." in name:
            section, name = name.split(".", 1)
            _apply(getattr(cfg, section), {name: value}, f"--{name}")
        else:
            _apply(cfg, {name: value}, f"--{name}")
    try:
        validate_namespace(cfg.namespace)
    except Exception as exc:
        raise ConfigError(str(exc)) from None
    if cfg.storage_uri:
        cfg.storage_uri = validate_store_uri(cfg.storage_uri) or None
        if cfg.storage_uri and "://" in cfg.storage_uri:
            cfg.storage_options = storage_options_from_env(cfg.storage_uri, env)
    if cfg.embedder.provider not in ("local", "openai", "jina", "hash"):
        raise ConfigError(f"unknown embedder {cfg.embedder.provider!r}: use local, openai or jina")
    return cfg


def _board_config(raw: Any, origin: str) -> BoardConfig:
    """``[board] columns = [...]``: 2..12 distinct lowercase names, in board order."""
    if raw is None:
        return BoardConfig()
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: [board] must be a table")
    unknown = sorted(set(raw) - {"columns"})
    if unknown:
        raise ConfigError(f"{origin}: unknown setting(s) in [board]: {', '.join(unknown)}")
    cols = raw.get("columns", list(DEFAULT_COLUMNS))
    if (not isinstance(cols, list) or not 2 <= len(cols) <= 12
            or not all(isinstance(c, str) and _COLUMN_RE.fullmatch(c) for c in cols) or len(set(cols)) != len(cols)):
        raise ConfigError(f"{origin}: [board] columns must be a list of 2..12 distinct lowercase names "
                          f"(letters, digits, _ -), e.g. {list(DEFAULT_COLUMNS)}")
    return BoardConfig(columns=list(cols))


def _jobs_config(raw: Any, origin: str) -> dict[str, JobConfig]:
    """``[jobs.NAME]`` tables: command (argv list or string), optional cwd and timeout (seconds)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: [jobs] must hold [jobs.NAME] tables")
    jobs: dict[str, JobConfig] = {}
    for name, spec in raw.items():
        where = f"{origin}: [jobs.{name}]"
        if not _COLUMN_RE.fullmatch(name):
            raise ConfigError(f"{where}: a job name is lowercase letters, digits, _ and - (max 32)")
        if not isinstance(spec, dict):
            raise ConfigError(f"{where} must be a table with a command")
        unknown = sorted(set(spec) - {"command", "cwd", "timeout"})
        if unknown:
            raise ConfigError(f"{where}: unknown setting(s) {', '.join(unknown)}; allowed: command, cwd, timeout")
        cmd = spec.get("command")
        import shlex  # only a config with jobs needs it

        try:
            argv = shlex.split(cmd) if isinstance(cmd, str) else cmd
        except ValueError as exc:
            raise ConfigError(f"{where}: command cannot be split into words: {exc}") from None
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
            raise ConfigError(f"{where}: command must be a non-empty list of strings or a string")
        cwd = spec.get("cwd")
        if cwd is not None and (not isinstance(cwd, str) or not cwd):
            raise ConfigError(f"{where}: cwd must be a directory path")
        timeout = spec.get("timeout", 600)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_JOB_TIMEOUT:
            raise ConfigError(f"{where}: timeout must be a number of seconds, 0 < timeout <= {MAX_JOB_TIMEOUT:.0f}")
        jobs[name] = JobConfig(name=name, command=list(argv), cwd=cwd, timeout=float(timeout))
    return jobs


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    s = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{s}"'


def save_config(home: Path, values: Mapping[str, Any]) -> Path:
    """Write a config file from a nested mapping (sections as dicts); None values are left out."""
    lines: list[str] = []
    tables: list[tuple[str, Mapping[str, Any]]] = []
    for k, v in values.items():
        if isinstance(v, Mapping):
            tables.append((k, v))
        elif v is not None:
            lines.append(f"{k} = {_toml_value(v)}")
    for name, table in tables:
        body = [f"{k} = {_toml_value(v)}" for k, v in table.items() if v is not None]
        if body:
            lines += ["", f"[{name}]", *body]
    from memcli.home import PRIVATE_FILE, secure_home

    secure_home(home)
    path = config_path(home)
    # it may hold an API key or the server token: the user's alone
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines).lstrip("\n") + "\n")
    os.chmod(path, PRIVATE_FILE)
    return path


# ------------------------------------------------------------------------------------- the store's URI and options
REMOTE_SCHEMES = ("s3", "s3+ddb", "gs", "az")  # object storage (memcli.memory.objectstore); else a local path


def is_remote(uri: str) -> bool:
    return "://" in uri


def validate_store_uri(uri: str) -> str:
    """A local path, ``file://`` path (returned as a path) or ``s3://bucket[/prefix]`` (also s3+ddb, gs, az)."""
    uri = uri.strip()
    if not is_remote(uri):
        return uri
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme == "file":
        return parts.path
    if scheme not in REMOTE_SCHEMES:
        raise ConfigError(f"store URI {uri!r}: use a local path or s3://bucket/prefix "
                          f"({', '.join(s + '://' for s in REMOTE_SCHEMES)} are supported)")
    if not parts.netloc:
        raise ConfigError(f"store URI {uri!r} names no bucket: use {scheme}://BUCKET/PREFIX")
    return uri.rstrip("/")


def storage_options_from_env(uri: str, env: Mapping[str, str]) -> dict[str, str]:
    """Lance storage options for an s3:// URI from the usual AWS variables. Variables left unset are left
    to lance's own credential chain (profiles, instance roles)."""
    if not uri.lower().startswith("s3"):
        return {}
    opts: dict[str, str] = {}
    for var, key in (("AWS_ACCESS_KEY_ID", "aws_access_key_id"), ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"),
                     ("AWS_SESSION_TOKEN", "aws_session_token")):
        if env.get(var):
            opts[key] = env[var]
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        opts["aws_region"] = region
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or env.get("AWS_ENDPOINT")
    if endpoint:
        opts["aws_endpoint"] = endpoint.rstrip("/")
        if endpoint.lower().startswith("http://"):
            opts["allow_http"] = "true"  # a local MinIO/moto: lance refuses plain HTTP unless told
    return opts
