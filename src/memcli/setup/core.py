"""`memcli setup` without the prompts: plan what to change, show it, apply it, undo it.

A plan is computed against the files as they are (nothing is written while planning), so the same code
serves `--print`, the confirmation screen and the real run. Everything setup adds is recorded in
``<memcli home>/setup-state.json`` with what was there before, so ``--uninstall`` removes exactly that and
restores what it replaced, and leaves alone anything the user changed since.
"""

from __future__ import annotations

import copy
import json
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcli.setup import openclaw as oc
from memcli.setup.agents import GEMINI_TRUST, HOOK_MARKER, SERVER_NAME, Machine
from memcli.setup.edits import (
    MISSING,
    FileChange,
    SetupError,
    Workspace,
    apply_changes,
    backup_file,
    delete_in,
    dump_json,
    get_in,
    load_json,
    prune_empty,
    remove_toml_table,
    set_in,
    set_toml_table,
    toml_get,
)

STATE_FILE = "setup-state.json"
STATE_VERSION = 1
PLUGIN_LINES = ("/plugin marketplace add <path or owner/repo of memcli>", "/plugin install memcli@memcli")


@dataclass
class SetupOptions:
    agents: list[str]
    namespace: str | None = None
    embedder: dict[str, Any] | None = None  # provider, base_url, model, dims, api_key; None: leave as is
    claude_hooks: str = "auto"  # auto (settings unless the plugin is installed) | settings | plugin | none
    use_cli: bool = True  # use the `claude` / `openclaw` CLIs when they are on PATH
    api_url: str | None = None  # team mode: every face of this home talks to this server...
    api_token: str | None = None  # ...with this (space) token


@dataclass
class CommandStep:
    agent: str
    argv: list[str]
    entry: dict[str, Any] | None = None  # the state entry this command creates (None: an undo)
    record: Callable[[], None] | None = None  # once it succeeded: note in the state what it did

    def shell(self) -> str:
        import shlex

        return " ".join(shlex.quote(a) for a in self.argv)


@dataclass
class Plan:
    machine: Machine
    files: list[FileChange] = field(default_factory=list)
    commands: list[CommandStep] = field(default_factory=list)
    notes: dict[str, list[str]] = field(default_factory=dict)  # agent -> lines for the user
    errors: dict[str, str] = field(default_factory=dict)  # agent -> why it was skipped
    state: FileChange | None = None
    entries: list[dict[str, Any]] = field(default_factory=list)  # the state after this plan
    late_files: list[FileChange] = field(default_factory=list)  # written after the commands (undoing what they wrote)
    # the JSON files setup edited: {path: {"before": the text before memcli's first edit, "after": what setup left}}
    json_files: dict[str, dict[str, str | None]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.files and not self.commands and not self.late_files

    def note(self, agent: str, text: str) -> None:
        self.notes.setdefault(agent, []).append(text)


@dataclass
class ApplyResult:
    written: list[Path]
    backups: list[Path]
    commands: list[tuple[str, int, str]]  # (command line, exit code, output)

    @property
    def ok(self) -> bool:
        return all(code == 0 for _, code, _ in self.commands)


# ---------------------------------------------------------------------------------------------- state
def state_path(m: Machine) -> Path:
    return m.memcli_home / STATE_FILE


def load_state(m: Machine, ws: Workspace | None = None) -> list[dict[str, Any]]:
    path = state_path(m)
    text = ws.read(path) if ws else (path.read_text(encoding="utf-8") if path.exists() else None)
    if not text:
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise SetupError(f"{path} is corrupt; remove it to start over (setup will then not undo earlier runs)") from None
    return list(data.get("entries", [])) if isinstance(data, dict) else []


def _identity(e: dict[str, Any]) -> tuple[Any, ...]:
    return (e["agent"], e["kind"], e.get("file"), tuple(e.get("keys") or ()), e.get("table"))


def load_json_files(m: Machine, ws: Workspace) -> dict[str, dict[str, str | None]]:
    """The JSON files earlier runs edited, with their text before memcli's first edit (:attr:`Plan.json_files`)."""
    text = ws.read(state_path(m))
    try:
        data = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {}
    files = data.get("json_files") if isinstance(data, dict) else None
    return {k: v for k, v in files.items() if isinstance(v, dict)} if isinstance(files, dict) else {}


def _dump_state(entries: list[dict[str, Any]], json_files: dict[str, dict[str, str | None]] | None = None) -> str:
    data: dict[str, Any] = {"version": STATE_VERSION, "entries": entries}
    if json_files:
        data["json_files"] = json_files
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


JSON_KINDS = ("json_key", "json_list_item")


def _json_files(old: list[dict[str, Any]], old_files: dict[str, dict[str, str | None]],
                entries: list[dict[str, Any]], ws: Workspace) -> dict[str, dict[str, str | None]]:
    """Which JSON files an uninstall can give back byte for byte: their text before memcli's first edit, and
    the text setup leaves (a JSON edit re-serializes the file: inline objects would come back expanded). A file
    edited by an earlier run and changed by hand since loses its record: its old text would undo those changes."""
    out = dict(old_files)
    had_entries = {e.get("file") for e in old if e.get("kind") in JSON_KINDS}
    for name in sorted({e["file"] for e in entries if e.get("kind") in JSON_KINDS and e.get("file")}):
        path = Path(name)
        if path not in ws.original or ws.current[path] == ws.original[path]:
            continue  # not edited by this run: the earlier record (if any) still holds
        prior = old_files.get(name)
        if prior is not None and prior.get("after") == ws.original[path]:
            out[name] = {"before": prior.get("before"), "after": ws.current[path]}
        elif prior is None and name not in had_entries:
            out[name] = {"before": ws.original[path], "after": ws.current[path]}
        else:
            out.pop(name, None)
    return out


# ---------------------------------------------------------------------------------------------- install
class _Installer:
    def __init__(self, m: Machine, opts: SetupOptions, ws: Workspace, plan: Plan, old: list[dict[str, Any]]) -> None:
        self.m, self.opts, self.ws, self.plan = m, opts, ws, plan
        self.old = {_identity(e): e for e in old}
        self.entries: list[dict[str, Any]] = []

    def _keep(self, ident_entry: dict[str, Any]) -> dict[str, Any] | None:
        return self.old.get(_identity(ident_entry))

    # ------------------------------------------------------------------ primitives
    def json_key(self, agent: str, path: Path, keys: list[str], value: Any) -> None:
        text = self.ws.read(path)
        doc = load_json(text, path)
        cur = get_in(doc, keys)
        probe = {"agent": agent, "kind": "json_key", "file": str(path), "keys": keys}
        prior = self._keep(probe)
        if cur == value:
            if prior:
                self.entries.append(prior)
            self.plan.note(agent, f"{path}: {'.'.join(keys)} already set")
            return
        created = set_in(doc, keys, value, path)
        self.ws.write(path, dump_json(doc, text))
        entry = dict(probe, value=value)
        if prior:
            entry.update(previous=prior.get("previous"), had_previous=prior.get("had_previous", False),
                         created=prior.get("created", []), created_file=prior.get("created_file", False))
        else:
            entry.update(previous=None if cur is MISSING else cur, had_previous=cur is not MISSING, created=created,
                         created_file=self.ws.original.get(path) is None)
        self.entries.append(entry)

    def json_list_item(self, agent: str, path: Path, keys: list[str], value: dict[str, Any]) -> None:
        """One memcli item in a JSON list (a Claude Code hook group), replacing an older memcli item."""
        text = self.ws.read(path)
        doc = load_json(text, path)
        probe = {"agent": agent, "kind": "json_list_item", "file": str(path), "keys": keys}
        prior = self._keep(probe)
        lst = get_in(doc, keys)
        created: list[list[str]] = []
        if lst is MISSING:
            created = set_in(doc, keys, [], path) + [list(keys)]
            lst = get_in(doc, keys)
        if not isinstance(lst, list):
            raise SetupError(f"{path}: {'.'.join(keys)} is not a list; memcli will not edit it")
        ours = [i for i, item in enumerate(lst) if _is_memcli_group(item)]
        if [lst[i] for i in ours] == [value]:
            if prior:
                self.entries.append(prior)
            self.plan.note(agent, f"{path}: {'.'.join(keys)} hook already set")
            return
        if ours:
            lst[ours[0]] = value
            for i in reversed(ours[1:]):
                del lst[i]
        else:
            lst.append(value)
        self.ws.write(path, dump_json(doc, text))
        entry = dict(probe, value=value)
        if prior:
            entry.update(created=prior.get("created", []), created_file=prior.get("created_file", False))
        else:
            entry.update(created=created, created_file=self.ws.original.get(path) is None)
        self.entries.append(entry)

    def toml_table(self, agent: str, path: Path, table: str, values: dict[str, Any]) -> None:
        text = self.ws.read(path)
        probe = {"agent": agent, "kind": "toml_table", "file": str(path), "table": table}
        prior = self._keep(probe)
        if toml_get(text, table, path) == values:
            if prior:
                self.entries.append(prior)
            self.plan.note(agent, f"{path}: [{table}] already set")
            return
        new, previous, sep = set_toml_table(text, table, values, path)
        self.ws.write(path, new)
        entry = dict(probe, value=values)
        if prior:
            entry.update(previous=prior.get("previous"), sep=prior.get("sep", ""),
                         created_file=prior.get("created_file", False))
        else:
            entry.update(previous=previous, sep=sep, created_file=self.ws.original.get(path) is None)
        self.entries.append(entry)

    # ------------------------------------------------------------------ memcli's own config
    def memcli_config(self) -> None:
        from memcli.config import config_path

        values: dict[str, Any] = {}
        if self.opts.namespace is not None:
            values["namespace"] = self.opts.namespace
        if self.opts.embedder is not None:
            values["embedder"] = {k: v for k, v in self.opts.embedder.items() if v is not None}
        if self.opts.api_url is not None:
            values.update(api_url=self.opts.api_url, api_token=self.opts.api_token)
        path = config_path(self.m.memcli_home)
        text = self.ws.read(path)
        current = _parse_toml(text, path)
        merged = copy.deepcopy(current)
        for k, v in values.items():
            if isinstance(v, dict):
                section = merged.setdefault(k, {})
                section.update(v)
                if k == "embedder":  # a new provider: drop the old one's endpoint settings
                    for stale in ("base_url", "model", "dims", "api_key"):
                        if stale not in v:
                            section.pop(stale, None)
            else:
                merged[k] = v
        probe = {"agent": "memcli", "kind": "file", "file": str(path)}
        prior = self._keep(probe)
        if merged == current:
            if prior:
                self.entries.append(prior)
            return
        new = _render_config(merged)
        self.ws.write(path, new)
        self.entries.append(dict(probe, written=new, previous=prior["previous"] if prior else text))

    # ------------------------------------------------------------------ agents
    def claude_code(self) -> None:
        m = self.m
        server = m.mcp_server("claude-code")
        claude = m.which("claude") if self.opts.use_cli else None
        claude_json = m.claude_json()
        current = get_in(_read_json_quietly(claude_json), ["mcpServers", SERVER_NAME])
        if claude:
            probe = {"agent": "claude-code", "kind": "claude_mcp_cli", "file": str(claude_json)}
            prior = self._keep(probe)
            if _same_server(current, server):
                if prior:
                    self.entries.append(prior)
                self.plan.note("claude-code", "MCP server `memcli` already registered (user scope)")
            else:
                previous = prior.get("previous") if prior else (None if current is MISSING else current)
                if current is not MISSING:
                    self.plan.commands.append(CommandStep("claude-code", [claude, "mcp", "remove", "--scope", "user",
                                                                          SERVER_NAME]))
                # the name comes before -e: `-e` takes several values and would swallow it
                argv = [claude, "mcp", "add", "--scope", "user", SERVER_NAME]
                for k, v in server.get("env", {}).items():
                    argv += ["-e", f"{k}={v}"]
                argv += ["--", server["command"], *server["args"]]
                entry = dict(probe, value=server, previous=previous, claude=claude)
                self.plan.commands.append(CommandStep("claude-code", argv, entry))
                self.entries.append(entry)
        else:
            self.json_key("claude-code", claude_json, ["mcpServers", SERVER_NAME], {"type": "stdio", **server})
        mode = self.opts.claude_hooks
        if mode == "auto":
            mode = "none" if m.claude_plugin_installed() else "settings"
            if mode == "none":
                self.plan.note("claude-code", "hooks: the memcli plugin is installed and runs them already")
        if mode == "settings":
            settings = m.claude_config_dir() / "settings.json"
            for event, group in m.hook_groups().items():
                self.json_list_item("claude-code", settings, ["hooks", event], group)
        elif mode == "plugin":
            self.plan.note("claude-code", "hooks: install the plugin inside Claude Code:\n  " + "\n  ".join(PLUGIN_LINES))

    def codex(self) -> None:
        self.toml_table("codex", self.m.codex_config(), f"mcp_servers.{SERVER_NAME}", self.m.mcp_server("codex"))

    def gemini(self) -> None:
        self.json_key("gemini", self.m.gemini_settings(), ["mcpServers", SERVER_NAME], self.m.mcp_server("gemini"))
        self.plan.note("gemini", GEMINI_TRUST)

    def antigravity(self) -> None:
        self.json_key("antigravity", self.m.antigravity_config(), ["mcpServers", SERVER_NAME],
                      self.m.mcp_server("antigravity"))

    def claude_desktop(self) -> None:
        self.json_key("claude-desktop", self.m.claude_desktop_config(), ["mcpServers", SERVER_NAME],
                      self.m.mcp_server("claude-desktop"))

    def openclaw(self) -> None:
        path, source = self.m.openclaw_config(), oc.plugin_dir()
        openclaw = self.m.which("openclaw") if self.opts.use_cli else None
        if openclaw and source:  # memcli's memory plugin (recall, capture, tools) instead of the MCP server alone
            self.openclaw_plugin(openclaw, path, source)
            return
        if source:
            self.plan.note("openclaw", "memcli's memory plugin is installed with the `openclaw` CLI (on PATH, without "
                                       "--no-cli); the MCP server is set up instead")
        try:
            self.json_key("openclaw", path, ["mcp", "servers", SERVER_NAME], self.m.mcp_server("openclaw"))
        except SetupError:
            openclaw = self.m.which("openclaw") if self.opts.use_cli else None
            if not openclaw:
                raise
            # JSON5 (comments): let OpenClaw's own CLI edit its config.
            probe = {"agent": "openclaw", "kind": "openclaw_mcp_cli", "file": str(path)}
            entry = dict(probe, value=self.m.mcp_server("openclaw"), openclaw=openclaw)
            self.plan.commands.append(CommandStep("openclaw", [openclaw, "mcp", "set", SERVER_NAME,
                                                               json.dumps(self.m.mcp_server("openclaw"))], entry))
            self.entries.append(entry)

    def openclaw_plugin(self, openclaw: str, path: Path, source: Path) -> None:
        text = self.ws.read(path)
        config = oc.plugin_config(self.m)
        probe = {"agent": "openclaw", "kind": oc.KIND, "file": str(path)}
        prior = self._keep(probe)
        if oc.installed(text, path, source, config):
            if prior:
                self.entries.append(prior)
            self.plan.note("openclaw", f"the memcli memory plugin is installed already ({source})")
            return
        # the file's text before memcli's first install is what --uninstall puts back, however many runs later
        entry = dict(probe, plugin_dir=str(source), openclaw=openclaw, previous=prior["previous"] if prior else text)
        for line in oc.describe(text, path, source):
            self.plan.note("openclaw", line)
        for i, argv in enumerate(oc.install_commands(openclaw, source, config)):
            self.plan.commands.append(CommandStep("openclaw", argv, entry if i == 0 else None,
                                                  lambda entry=entry: oc.record_written(entry)))
        self.entries.append(entry)


def _is_memcli_group(item: Any) -> bool:
    hooks = item.get("hooks") if isinstance(item, dict) else None
    return isinstance(hooks, list) and any(isinstance(h, dict) and HOOK_MARKER in str(h.get("command", ""))
                                           for h in hooks)


def _same_server(current: Any, wanted: dict[str, Any]) -> bool:
    if not isinstance(current, dict):
        return False
    return (current.get("command") == wanted["command"] and current.get("args", []) == wanted["args"]
            and (current.get("env") or {}) == wanted.get("env", {}))


def _read_json_quietly(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _parse_toml(text: str | None, path: Path) -> dict[str, Any]:
    from memcli.setup.edits import tomllib

    if not text:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(f"{path} is not valid TOML ({exc}); fix or remove it first") from None


def _render_config(values: dict[str, Any]) -> str:
    """The config file text, written by memcli.config.save_config (the one writer of that format)."""
    from memcli.config import config_path, save_config

    with tempfile.TemporaryDirectory() as d:
        save_config(Path(d), values)
        return config_path(Path(d)).read_text(encoding="utf-8")


INSTALLERS = {"claude-code": _Installer.claude_code, "codex": _Installer.codex, "gemini": _Installer.gemini,
              "antigravity": _Installer.antigravity, "claude-desktop": _Installer.claude_desktop,
              "openclaw": _Installer.openclaw}


def plan_install(m: Machine, opts: SetupOptions) -> Plan:
    """What setup would change for these agents (nothing is written)."""
    ws = Workspace()
    plan = Plan(m)
    old = load_state(m, ws)
    inst = _Installer(m, opts, ws, plan, old)
    inst.memcli_config()
    for agent in opts.agents:
        mark = len(inst.entries), len(plan.commands)
        snapshot = dict(ws.current)
        try:
            INSTALLERS[agent](inst)
        except SetupError as exc:  # one agent's unusual config does not stop the others
            for p in ws.current:
                ws.current[p] = snapshot.get(p, ws.original[p])
            del inst.entries[mark[0]:]
            del plan.commands[mark[1]:]
            plan.errors[agent] = exc.message
    # what earlier runs added and this run did not touch stays recorded, so --uninstall still removes it
    # (in the order they were first recorded: a second identical run rewrites nothing, not even the state)
    new = {_identity(e): e for e in inst.entries}
    olds = {_identity(e) for e in old}
    plan.entries = [new.get(_identity(e), e) for e in old] + [e for e in inst.entries if _identity(e) not in olds]
    plan.json_files = _json_files(old, load_json_files(m, ws), inst.entries, ws)
    _finish(plan, ws)
    return plan


def _finish(plan: Plan, ws: Workspace) -> None:
    sp = state_path(plan.machine)
    new_state = _dump_state(plan.entries, plan.json_files) if plan.entries else None
    if (ws.read(sp) or None) != new_state:
        ws.write(sp, new_state)
    changes = ws.changes()
    plan.files = [c for c in changes if c.path != sp]
    plan.state = next((c for c in changes if c.path == sp), None)


# ---------------------------------------------------------------------------------------------- uninstall
def plan_uninstall(m: Machine, *, use_cli: bool = True) -> Plan:
    """Undo everything setup-state.json records, restoring what it replaced; leave user changes alone."""
    ws = Workspace()
    plan = Plan(m)
    entries = load_state(m, ws)
    json_files = load_json_files(m, ws)
    created: dict[Path, list[list[str]]] = {}
    created_files: set[Path] = set()
    for e in reversed(entries):
        agent, kind = e["agent"], e["kind"]
        path = Path(e["file"]) if e.get("file") else None
        try:
            if kind == "json_key":
                assert path is not None
                doc = load_json(ws.read(path), path)
                if get_in(doc, e["keys"]) != e["value"]:
                    plan.note(agent, f"{path}: {'.'.join(e['keys'])} changed since setup; left as it is")
                    continue
                if e.get("had_previous"):
                    set_in(doc, e["keys"], e["previous"], path)
                else:
                    delete_in(doc, e["keys"])
                ws.write(path, dump_json(doc, ws.read(path)))
                created.setdefault(path, []).extend(e.get("created", []))
            elif kind == "json_list_item":
                assert path is not None
                doc = load_json(ws.read(path), path)
                lst = get_in(doc, e["keys"])
                if not isinstance(lst, list) or e["value"] not in lst:
                    plan.note(agent, f"{path}: the {'.'.join(e['keys'])} hook changed since setup; left as it is")
                    continue
                lst.remove(e["value"])
                ws.write(path, dump_json(doc, ws.read(path)))
                created.setdefault(path, []).extend(e.get("created", []))
            elif kind == "toml_table":
                assert path is not None
                text = ws.read(path) or ""
                new, removed = remove_toml_table(text, e["table"], e["value"], e.get("previous"), e.get("sep", ""),
                                                 path)
                if not removed:
                    plan.note(agent, f"{path}: [{e['table']}] changed since setup; left as it is")
                    continue
                ws.write(path, new)
            elif kind == "file":
                assert path is not None
                if ws.read(path) != e["written"]:
                    plan.note(agent, f"{path} changed since setup; left as it is")
                    continue
                ws.write(path, e.get("previous"))
            elif kind == "claude_mcp_cli":
                current = get_in(_read_json_quietly(Path(e["file"])), ["mcpServers", SERVER_NAME])
                if not _same_server(current, e["value"]):
                    plan.note(agent, "MCP server `memcli` changed since setup; left as it is")
                    continue
                claude = (m.which("claude") if use_cli else None) or e.get("claude")
                plan.commands.append(CommandStep(agent, [claude, "mcp", "remove", "--scope", "user", SERVER_NAME]))
                if e.get("previous"):
                    plan.commands.append(CommandStep(agent, [claude, "mcp", "add-json", "--scope", "user", SERVER_NAME,
                                                             json.dumps(e["previous"])]))
            elif kind == "openclaw_mcp_cli":
                openclaw = (m.which("openclaw") if use_cli else None) or e.get("openclaw")
                plan.commands.append(CommandStep(agent, [openclaw, "mcp", "unset", SERVER_NAME]))
            elif kind == oc.KIND:
                assert path is not None
                openclaw = (m.which("openclaw") if use_cli else None) or e.get("openclaw")
                for argv in oc.uninstall_commands(openclaw if openclaw and Path(openclaw).exists() else None):
                    plan.commands.append(CommandStep(agent, argv))
                current = ws.read(path)
                text, exact = oc.restored_text(e, current, path)
                if not exact:
                    plan.note(agent, f"{path} changed since setup: only what the plugin's install changed is undone")
                plan.late_files.append(FileChange(path, current, text))
            if e.get("created_file") and path is not None:
                created_files.add(path)
        except SetupError as exc:
            plan.errors[agent] = exc.message
    for path, containers in created.items():
        doc = load_json(ws.read(path), path)
        prune_empty(doc, containers)
        ws.write(path, dump_json(doc, ws.read(path)))
    for name, rec in json_files.items():
        # untouched since setup: the very bytes it had before (the undo above re-serialized it)
        path = Path(name)
        if path in ws.original and ws.original[path] is not None and ws.original[path] == rec.get("after"):
            ws.write(path, rec.get("before"))
    for path in created_files:
        text = ws.read(path)
        if text is not None and (not text.strip() or (path.suffix == ".json" and load_json(text, path) == {})):
            ws.write(path, None)
    plan.entries = []
    _finish(plan, ws)
    return plan


# ---------------------------------------------------------------------------------------------- apply
def apply_plan(plan: Plan, *, run: Any = None) -> ApplyResult:
    """Write the files (with backups), run the commands, record the state."""
    run = run or _run
    written = [c.path for c in plan.files + plan.late_files]
    backup_dir = plan.machine.memcli_home / "backups" / time.strftime("%Y%m%d-%H%M%S")
    backups = apply_changes(plan.files, backup_dir if any(c.before is not None for c in plan.files) else None)
    backups += [backup_file(c.path, backup_dir) for c in plan.late_files if c.before is not None]
    results = []
    failed: list[dict[str, Any]] = []
    recorded = False
    for step in plan.commands:
        code, out = run(step.argv)
        results.append((step.shell(), code, out))
        if code != 0 and step.entry is not None:
            failed.append(step.entry)
        elif code == 0 and step.record is not None:
            step.record()
            recorded = True
    apply_changes(plan.late_files, None)  # after the commands: they rewrite these files in their own way
    if failed or recorded:  # what did not happen is not recorded as done; what did, is
        plan.entries = [e for e in plan.entries if all(e is not f for f in failed)]
        ws = Workspace()
        ws.read(state_path(plan.machine))
        _finish(plan, ws)
    if plan.state is not None:
        apply_changes([plan.state], None)
    if plan.machine.memcli_home.is_dir():
        from memcli.home import secure_home

        secure_home(plan.machine.memcli_home)  # config (API key), state and backups: the user's alone
    return ApplyResult(written, backups, results)


def _run(argv: list[str]) -> tuple[int, str]:
    try:
        # OpenClaw's CLI takes 7–70 s a command on a busy machine (plugins install/uninstall, config set)
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 1, str(exc)
    return p.returncode, (p.stdout + p.stderr).strip()


# ---------------------------------------------------------------------------------------------- embedder
def check_embedder(values: dict[str, Any]) -> str:
    """Embed one sentence with these embedder settings; returns a description or raises MemcliError."""
    from memcli.config import EmbedderConfig
    from memcli.embedders import make_embedder

    cfg = EmbedderConfig(**{k: v for k, v in values.items() if v is not None})
    emb = make_embedder(cfg, cache=False)
    try:
        vec = emb.embed_query("memcli setup: does this embedder answer?")
        return f"{cfg.provider} embedder answered: {len(vec)} dimensions"
    finally:
        emb.close()
