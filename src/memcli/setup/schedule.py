"""`memcli setup --schedule hourly|daily|off`: run `memcli distill --apply` periodically.

Linux (and other Unix with cron): one line in the user's crontab, read with ``crontab -l`` and written back
with ``crontab -``, marked with this home so that a second run changes nothing and ``off`` removes exactly
that line (other lines, and other homes' schedules, are left alone). macOS: a launchd agent
(``~/Library/LaunchAgents/dev.memcli.distill.distiller.<hash of the home>.plist``), loaded with ``launchctl``.
The job logs to ``<home>/logs/distill.log``.
"""

from __future__ import annotations

import hashlib
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from memcli.errors import MemcliError, ValidationError

SCHEDULES = {"hourly": "17 * * * *", "daily": "17 3 * * *"}  # off the top of the hour
INTERVALS = {"hourly": 3600, "daily": 86400}
MARKER = "# memcli distill, home="


@dataclass
class ScheduleResult:
    """What setup did: ``changed`` is False when the schedule was already as asked."""

    schedule: str
    changed: bool
    where: str
    command: str


def memcli_command(home: Path) -> list[str]:
    """How the job runs memcli: this environment's console script (else ``python -m memcli.cli``)."""
    exe = Path(sys.executable).parent / "memcli"
    base = [str(exe)] if exe.exists() else [sys.executable, "-m", "memcli.cli"]
    return [*base, "--home", str(home), "distill", "--apply", "--json"]


def apply_schedule(schedule: str, home: Path, *, platform: str | None = None) -> ScheduleResult:
    """Install (``hourly``, ``daily``) or remove (``off``) the distill job of ``home``."""
    if schedule not in (*SCHEDULES, "off"):
        raise ValidationError(f"unknown schedule {schedule!r}: use hourly, daily or off")
    home = home.expanduser().resolve()
    if (platform or sys.platform) == "darwin":
        return _launchd(schedule, home)
    return _cron(schedule, home)


def _run(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise MemcliError(f"`{args[0]}` is not installed: cannot schedule memcli distill here. Run "
                          "`memcli distill --apply` from your own scheduler instead.") from None
    except subprocess.TimeoutExpired:
        raise MemcliError(f"`{' '.join(args)}` did not answer in 30 s") from None


def _cron(schedule: str, home: Path) -> ScheduleResult:
    listed = _run(["crontab", "-l"])
    if listed.returncode != 0 and "no crontab" not in (listed.stderr or "").lower():
        raise MemcliError(f"`crontab -l` failed: {(listed.stderr or '').strip() or listed.returncode}")
    current = listed.stdout if listed.returncode == 0 else ""
    marker = MARKER + str(home)
    kept = [line for line in current.splitlines() if not line.rstrip().endswith(marker)]
    log = home / "logs" / "distill.log"
    command = " ".join(shlex.quote(a) for a in memcli_command(home)) + f" >> {shlex.quote(str(log))} 2>&1"
    lines = kept + ([f"{SCHEDULES[schedule]} {command} {marker}"] if schedule != "off" else [])
    new = "\n".join(lines) + "\n" if lines else ""
    if new == (current if current.endswith("\n") or not current else current + "\n"):
        return ScheduleResult(schedule, False, "crontab", command)
    log.parent.mkdir(parents=True, exist_ok=True)
    written = _run(["crontab", "-"], stdin=new)
    if written.returncode != 0:
        raise MemcliError(f"`crontab -` failed: {(written.stderr or '').strip() or written.returncode}")
    return ScheduleResult(schedule, True, "crontab", command)


def _launchd(schedule: str, home: Path) -> ScheduleResult:
    import plistlib

    label = "dev.memcli.distill.distiller." + hashlib.sha256(str(home).encode()).hexdigest()[:10]
    path = Path.home() / "Library" / "LaunchAgents" / f"{label}.plist"
    command = " ".join(shlex.quote(a) for a in memcli_command(home))
    if schedule == "off":
        if not path.exists():
            return ScheduleResult(schedule, False, str(path), command)
        _run(["launchctl", "unload", "-w", str(path)])
        path.unlink()
        return ScheduleResult(schedule, True, str(path), command)
    log = str(home / "logs" / "distill.log")
    data = plistlib.dumps({"Label": label, "ProgramArguments": memcli_command(home),
                           "StartInterval": INTERVALS[schedule], "RunAtLoad": False,
                           "StandardOutPath": log, "StandardErrorPath": log})
    if path.exists() and path.read_bytes() == data:
        return ScheduleResult(schedule, False, str(path), command)
    path.parent.mkdir(parents=True, exist_ok=True)
    (home / "logs").mkdir(parents=True, exist_ok=True)
    if path.exists():
        _run(["launchctl", "unload", "-w", str(path)])
    path.write_bytes(data)
    loaded = _run(["launchctl", "load", "-w", str(path)])
    if loaded.returncode != 0:
        raise MemcliError(f"`launchctl load` failed: {(loaded.stderr or '').strip() or loaded.returncode}")
    return ScheduleResult(schedule, True, str(path), command)
