"""Careful edits of other programs' config files: JSON keys and list items, one TOML table.

Every edit goes through a :class:`Workspace`: files are read once, changed in memory, shown as a diff, and
written only if their bytes change (atomically, keeping the file's mode, after a backup). So a second run
with the same settings writes nothing, and a dry run is the same code path minus the write.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcli.errors import MemcliError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class SetupError(MemcliError):
    """A config file memcli cannot edit safely (unparseable, unexpected shape...)."""

    code = "setup_error"


MISSING: Any = object()


# Secrets a config file may hold (space tokens, the server's bearer token): written to the file, never shown
# in the diff that setup prints (terminals are scrolled back, screen-shared and logged).
_SECRETS = (
    (re.compile(r"\bmnemo_[A-Za-z0-9_\-]{4,}"), "mnemo_…"),
    (re.compile(r"(Bearer\s+)[^\s\"',]+"), r"\1…"),
    (re.compile(r"((?:api_token|token|MEMCLI_TOKEN|MEMCLI_API_TOKEN)[\"']?\s*[=:]\s*[\"'])[^\"']+"), r"\1…"),
)


def redact(text: str) -> str:
    """``text`` with every token replaced by an ellipsis (what setup shows of a change)."""
    for pattern, repl in _SECRETS:
        text = pattern.sub(repl, text)
    return text


# ---------------------------------------------------------------------------------------------- files
@dataclass
class FileChange:
    path: Path
    before: str | None  # None: the file does not exist
    after: str | None  # None: delete the file

    @property
    def action(self) -> str:
        if self.before is None:
            return "create"
        return "delete" if self.after is None else "update"

    def diff(self, *, context: int = 3) -> str:
        a = (self.before or "").splitlines(keepends=True)
        b = (self.after or "").splitlines(keepends=True)
        lines = difflib.unified_diff(a, b, fromfile=str(self.path) if self.before is not None else "/dev/null",
                                     tofile=str(self.path) if self.after is not None else "/dev/null", n=context)
        return redact("".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines))


@dataclass
class Workspace:
    """Files read once, edited in memory; :meth:`changes` lists what differs from disk."""

    original: dict[Path, str | None] = field(default_factory=dict)
    current: dict[Path, str | None] = field(default_factory=dict)

    def read(self, path: Path) -> str | None:
        path = Path(path)
        if path not in self.current:
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                text = None
            except UnicodeDecodeError:
                raise SetupError(f"{path} is not UTF-8 text; memcli will not edit it") from None
            except OSError as exc:
                raise SetupError(f"cannot read {path}: {exc.strerror or exc}") from None
            self.original[path] = text
            self.current[path] = text
        return self.current[path]

    def write(self, path: Path, text: str | None) -> None:
        self.read(path)
        self.current[Path(path)] = text

    def changes(self) -> list[FileChange]:
        return [FileChange(p, self.original[p], self.current[p]) for p in self.current
                if self.current[p] != self.original[p]]


def apply_changes(changes: list[FileChange], backup_dir: Path | None) -> list[Path]:
    """Write the changes (atomically, keeping modes); back up every existing file first. Returns backups."""
    backups: list[Path] = []
    for ch in changes:
        if ch.before is not None and backup_dir is not None:
            backups.append(backup_file(ch.path, backup_dir))
        if ch.after is None:
            try:
                ch.path.unlink()
            except FileNotFoundError:
                pass
            continue
        atomic_write(ch.path, ch.after)
    return backups


def backup_file(path: Path, backup_dir: Path) -> Path:
    """Copy ``path`` into ``backup_dir`` (mirroring its absolute path); returns the copy."""
    rel = path.resolve()
    target = backup_dir / str(rel).lstrip("/\\").replace(":", "")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(path.read_bytes())
    return target


def atomic_write(path: Path, text: str, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777 if mode is None else mode
    except FileNotFoundError:
        mode = 0o600 if mode is None else mode
    tmp = path.with_name(f".{path.name}.memcli-{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        raise


# ---------------------------------------------------------------------------------------------- JSON
def load_json(text: str | None, path: Path) -> dict[str, Any]:
    """A JSON object from a config file's text (absent or empty file: {})."""
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SetupError(f"{path} is not plain JSON ({exc.msg}, line {exc.lineno}); memcli will not rewrite it "
                         "(comments or JSON5?): add the entry by hand") from None
    if not isinstance(data, dict):
        raise SetupError(f"{path} does not hold a JSON object; memcli will not edit it")
    return data


def dump_json(data: Any, like: str | None) -> str:
    """JSON text in the style of the original file (indent, final newline)."""
    indent: int | str = 2
    if like:
        m = re.search(r"\n([ \t]+)\S", like)
        if m:
            ws = m.group(1)
            indent = "\t" if ws.startswith("\t") else len(ws)
    end = "\n" if like is None or like.endswith("\n") or not like.strip() else ""
    return json.dumps(data, indent=indent, ensure_ascii=False) + end


def get_in(doc: Any, keys: list[str]) -> Any:
    for k in keys:
        if not isinstance(doc, dict) or k not in doc:
            return MISSING
        doc = doc[k]
    return doc


def set_in(doc: dict[str, Any], keys: list[str], value: Any, path: Path) -> list[list[str]]:
    """Set ``doc[k1][k2]... = value``; returns the containers it had to create (for a clean uninstall)."""
    created: list[list[str]] = []
    cur = doc
    for i, k in enumerate(keys[:-1]):
        if k not in cur:
            cur[k] = {}
            created.append(keys[: i + 1])
        cur = cur[k]
        if not isinstance(cur, dict):
            raise SetupError(f"{path}: {'.'.join(keys[: i + 1])} is not an object; memcli will not edit it")
    cur[keys[-1]] = value
    return created


def delete_in(doc: dict[str, Any], keys: list[str]) -> None:
    parent = get_in(doc, keys[:-1]) if len(keys) > 1 else doc
    if isinstance(parent, dict):
        parent.pop(keys[-1], None)


def prune_empty(doc: dict[str, Any], containers: list[list[str]]) -> None:
    """Remove containers memcli created, deepest first, when they are empty again."""
    for keys in sorted(containers, key=len, reverse=True):
        if get_in(doc, keys) in ({}, []):
            delete_in(doc, keys)


# ---------------------------------------------------------------------------------------------- TOML
def toml_str(value: str) -> str:
    """A TOML basic string (JSON's escapes are valid TOML)."""
    return json.dumps(value, ensure_ascii=False)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return toml_str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else toml_str(key)


def toml_table_block(table: str, values: dict[str, Any]) -> str:
    return f"[{table}]\n" + "".join(f"{_toml_key(k)} = {toml_value(v)}\n" for k, v in values.items())


def _header_re(table: str) -> re.Pattern[str]:
    name = r"\s*\.\s*".join(re.escape(p) for p in table.split("."))
    return re.compile(rf"^[ \t]*\[[ \t]*{name}[ \t]*\][ \t]*(#.*)?$")


def _sub_header_re(table: str) -> re.Pattern[str]:
    name = r"\s*\.\s*".join(re.escape(p) for p in table.split("."))
    return re.compile(rf"^[ \t]*\[[ \t]*{name}[ \t]*\.")


def find_toml_table(text: str, table: str) -> tuple[int, int] | None:
    """Character span of ``[table]`` (with its sub-tables) up to the next other table header, or None."""
    lines = text.splitlines(keepends=True)
    head, sub = _header_re(table), _sub_header_re(table)
    start = end = None
    pos = 0
    for ln in lines:
        bare = ln.rstrip("\r\n")
        if start is None:
            if head.match(bare):
                start = pos
        elif re.match(r"^[ \t]*\[", bare) and not sub.match(bare):
            end = pos
            break
        pos += len(ln)
    if start is None:
        return None
    return start, (end if end is not None else len(text))


def toml_get(text: str | None, dotted: str, path: Path) -> Any:
    if not text:
        return MISSING
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(f"{path} is not valid TOML ({exc}); memcli will not edit it") from None
    return get_in(data, dotted.split("."))


def set_toml_table(text: str | None, table: str, values: dict[str, Any], path: Path) -> tuple[str, str | None, str]:
    """Put ``[table]`` with ``values`` into the TOML text, leaving every other byte alone.

    Returns (new text, the block it replaced or None, the separator inserted before an appended block).
    """
    text = text or ""
    toml_get(text, table, path)  # refuse to edit a file that does not parse
    block = toml_table_block(table, values)
    span = find_toml_table(text, table)
    if span is not None:
        old = text[span[0]:span[1]]
        trailing = old[len(old.rstrip("\n")):]  # keep the blank lines that separated it from what follows
        new_block = block + trailing[1:] if trailing else block
        new = text[: span[0]] + new_block + text[span[1]:]
        previous, sep = old, ""
    else:
        sep = ("" if not text or text.endswith("\n") else "\n") + ("\n" if text.strip() else "")
        new = text + sep + block
        previous = None
    if toml_get(new, table, path) != values:
        raise SetupError(f"{path}: [{table}] is defined in a form memcli cannot edit (inline or dotted keys); "
                         f"set it by hand to:\n{block}")
    return new, previous, sep


def remove_toml_table(text: str, table: str, expected: dict[str, Any], previous: str | None, sep: str,
                      path: Path) -> tuple[str, bool]:
    """Undo :func:`set_toml_table` if the table still holds ``expected``. Returns (text, removed?)."""
    if toml_get(text, table, path) != expected:
        return text, False
    span = find_toml_table(text, table)
    if span is None:
        return text, False
    old = text[span[0]:span[1]]
    if previous is not None:
        trailing = old[len(old.rstrip("\n")):]
        prev = previous.rstrip("\n") + "\n" + trailing[1:] if trailing else previous
        return text[: span[0]] + prev + text[span[1]:], True
    before, after = text[: span[0]], text[span[1]:]
    if not after and sep and before.endswith(sep):
        before = before[: len(before) - len(sep)]
    return before + after, True
