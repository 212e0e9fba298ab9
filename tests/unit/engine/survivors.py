"""Finding the processes a test started in /proc, whoever their parent is now: by a marker in
the command line (a ``sleep`` of a unique length) or by process group. Read independently of
the code under test."""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from pathlib import Path

__all__ = ["kill_marked", "marker_sleep", "running", "sleeping"]


def _stat(pid: str) -> tuple[str, int] | None:
    """(state, process group) of a process, or None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rindex(b")") + 2:].split()
    return fields[0].decode(), int(fields[2])


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def running(*, marker: str | None = None, pgid: int | None = None) -> list[str]:
    """Pids of live (not zombie) processes with ``marker`` in their command line or in the
    process group ``pgid``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        stat = _stat(pid)
        if stat is None or stat[0] in ("Z", "X"):
            continue
        if (pgid is not None and stat[1] == pgid) or (marker and marker in _cmdline(pid)):
            found.append(pid)
    return found


def sleeping(marker: str) -> list[str]:
    """Pids of the live ``sleep <marker>`` processes themselves (not the shells around them)."""
    return [pid for pid in running(marker=marker) if _cmdline(pid).split() == ["sleep", marker]]


def marker_sleep() -> tuple[str, str]:
    """A ``sleep`` no other process runs, so it can be found in /proc: (command, marker)."""
    seconds = f"1000.{uuid.uuid4().int % 10**9:09d}"
    return f"sleep {seconds}", seconds


def kill_marked(marker: str) -> None:
    """Kill what a failing test left running (the escapes outlive it otherwise)."""
    for pid in running(marker=marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
