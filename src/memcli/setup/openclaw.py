"""`memcli setup` for OpenClaw: memcli's memory plugin in OpenClaw's memory slot, and back out again.

The plugin is the ``openclaw/`` folder of memcli (shipped inside the wheel as ``memcli/openclaw``). It is
installed with OpenClaw's own CLI, which records the install and accepts its capabilities:

    openclaw plugins install --link <dir> --force --accept-capabilities    (load path, enabled, memory slot)
    openclaw config set plugins.entries.memcli '{"enabled": true, "hooks": {"allowConversationAccess": true},
                                                 "config": {"command": [<memcli>], ...}}' --strict-json --merge

OpenClaw's CLI rewrites ``openclaw.json`` in its own way (and switches off the plugin that held the slot), so
setup records the file's exact text before and after; ``--uninstall`` runs ``openclaw plugins uninstall
memcli --force --keep-files`` (its install record) and then puts the recorded text back byte for byte. If the
user edited the file since, only what the install changed (and the user did not touch since) is reverted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memcli.setup.agents import Machine
from memcli.setup.edits import MISSING, SetupError, dump_json, get_in, load_json

PLUGIN_ID = "memcli"
KIND = "openclaw_plugin"
SLOT = ["plugins", "slots", "memory"]
PATHS = ["plugins", "load", "paths"]


def plugin_dir() -> Path | None:
    """The plugin folder of this memcli: inside the installed package (a wheel), else the source checkout."""
    import memcli

    pkg = Path(memcli.__file__).resolve().parent
    for d in (pkg / "openclaw", pkg.parents[1] / "openclaw"):
        if (d / "openclaw.plugin.json").is_file() and (d / "index.js").is_file():
            return d
    return None


def plugin_config(m: Machine) -> dict[str, Any]:
    """The plugin's config entry: how to start memcli's server (absolute paths) and, if not the default, the home."""
    command = m.memcli if not m.memcli[1:] else [m.python, "-m", "memcli.cli"]
    out: dict[str, Any] = {"command": list(command)}
    if m.server_env:
        out["home"] = str(m.memcli_home)
    return out


def wanted_entry(config: dict[str, Any]) -> dict[str, Any]:
    """``plugins.entries.memcli`` as setup wants it (merged into whatever the user keeps there)."""
    return {"enabled": True, "hooks": {"allowConversationAccess": True}, "config": config}


def _parse(text: str | None, path: Path) -> dict[str, Any] | None:
    """The config as a dict, or None when it is not plain JSON (JSON5 with comments: OpenClaw's CLI reads it)."""
    try:
        return load_json(text, path)
    except SetupError:  # JSON5 (comments): OpenClaw's CLI edits such a file; setup only cannot check it
        return None


def installed(text: str | None, path: Path, source: Path, config: dict[str, Any]) -> bool:
    """Is the plugin installed as wanted already (slot, load path, enabled, conversation access, config)?"""
    doc = _parse(text, path)
    if doc is None:
        return False
    entry = get_in(doc, ["plugins", "entries", PLUGIN_ID])
    paths = get_in(doc, PATHS)
    if not isinstance(entry, dict) or not isinstance(paths, list):
        return False
    cfg = entry.get("config") if isinstance(entry.get("config"), dict) else {}
    hooks = entry.get("hooks") if isinstance(entry.get("hooks"), dict) else {}
    return (get_in(doc, SLOT) == PLUGIN_ID and str(source) in paths and entry.get("enabled") is True
            and hooks.get("allowConversationAccess") is True and all(cfg.get(k) == v for k, v in config.items()))


def install_commands(openclaw: str, source: Path, config: dict[str, Any]) -> list[list[str]]:
    """The OpenClaw commands that install and configure the plugin."""
    return [[openclaw, "plugins", "install", "--link", str(source), "--force", "--accept-capabilities"],
            [openclaw, "config", "set", f"plugins.entries.{PLUGIN_ID}", json.dumps(wanted_entry(config)),
             "--strict-json", "--merge"]]


def describe(text: str | None, path: Path, source: Path) -> list[str]:
    """What the commands will change, for the user to read before saying yes."""
    doc = _parse(text, path) or {}
    slot = get_in(doc, SLOT)
    before = "OpenClaw's built-in memory (memory-core)" if slot is MISSING else f"{slot!r}"
    return [f"{path}: OpenClaw's CLI will set the memory slot (now {before}) to {PLUGIN_ID!r}, add {source} to "
            f"plugins.load.paths, and enable plugins.entries.{PLUGIN_ID} with hooks.allowConversationAccess and "
            "its config (how to start memcli); a plugin holding the slot now is switched off by OpenClaw",
            "memcli setup --uninstall puts the file back exactly as it is now"]


def record_written(entry: dict[str, Any]) -> None:
    """After the commands ran: remember the file's text as they left it (what --uninstall compares with)."""
    try:
        entry["written"] = Path(entry["file"]).read_text(encoding="utf-8")
    except FileNotFoundError:
        entry["written"] = None


def uninstall_commands(openclaw: str | None) -> list[list[str]]:
    """OpenClaw's own uninstall (its install record); the plugin's files are memcli's and stay."""
    return [[openclaw, "plugins", "uninstall", PLUGIN_ID, "--force", "--keep-files"]] if openclaw else []


def restored_text(entry: dict[str, Any], current: str | None, path: Path) -> tuple[str | None, bool]:
    """The config text after uninstall and whether it is the exact text from before setup.

    Unchanged since setup → the recorded original, byte for byte. Edited since → the current document with
    each value the install changed (and nobody changed since) set back to the original, and the plugin's
    entry, load path and slot removed."""
    previous, written = entry.get("previous"), entry.get("written", MISSING)
    if written is not MISSING and current == written:
        return previous, True
    before = _parse(previous, path) or {}
    now = _parse(current, path)
    if now is None:
        return current, False  # JSON5 the user edited: OpenClaw's uninstall command does the removal
    after = _parse(written, path) if isinstance(written, str) else None
    # without a record of what the install wrote, only the plugin's own keys below are removed
    doc = _revert(before, after, now) if after is not None else json.loads(json.dumps(now))
    entries = get_in(doc, ["plugins", "entries"])
    if isinstance(entries, dict) and PLUGIN_ID not in (get_in(before, ["plugins", "entries"]) or {}):
        entries.pop(PLUGIN_ID, None)
    paths = get_in(doc, PATHS)
    if isinstance(paths, list) and entry.get("plugin_dir") in paths and entry.get("plugin_dir") not in (
            get_in(before, PATHS) if isinstance(get_in(before, PATHS), list) else []):
        paths.remove(entry["plugin_dir"])
    if get_in(doc, SLOT) == PLUGIN_ID:
        old = get_in(before, SLOT)
        slots = get_in(doc, ["plugins", "slots"])
        if old is MISSING:
            slots.pop("memory", None)
        else:
            slots["memory"] = old
    return dump_json(doc, current), False


def _revert(before: Any, after: Any, now: Any) -> Any:
    """``now`` with every change ``before`` → ``after`` undone where ``now`` still holds ``after``'s value."""
    if not (isinstance(before, dict) and isinstance(after, dict) and isinstance(now, dict)):
        return before if now == after else now
    out = dict(now)
    for key in list(before) + [k for k in after if k not in before]:
        b, a = before.get(key, MISSING), after.get(key, MISSING)
        if b == a:
            continue
        n = now.get(key, MISSING)
        if isinstance(b, dict) and isinstance(a, dict) and isinstance(n, dict):
            out[key] = _revert(b, a, n)
        elif isinstance(a, list) and isinstance(n, list):  # keep what the user added, drop what the install did
            added = [x for x in a if not isinstance(b, list) or x not in b]
            out[key] = [x for x in n if x not in added]
            if b is MISSING and not out[key]:
                del out[key]
        elif n == a:
            if b is MISSING:
                out.pop(key, None)
            else:
                out[key] = b
    return out
