"""Ending every descendant of a command, also those that left its process group (DESIGN 4).

Killing a command's process group misses a process that called ``setsid`` (``setsid sleep &``,
a daemon's double fork): it has a session and a group of its own, and once its parent is gone
it is re-parented to init, out of our reach. Bubblewrap's pid namespace ends it too, but only
a moment after bwrap's monitor process has exited (the namespace is torn down afterwards), and
not at all without the sandbox. This module closes the hole exactly, sandboxed or not, with
Linux's *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux 3.4, prctl(2)): an orphaned
descendant is re-parented to its nearest subreaper ancestor instead of init, so every process a
command started stays in the subreaper's tree, wherever it moved its session.

:func:`supervised_argv` turns a command line into one that runs this file as a small supervisor
process between us and the command::

    argv = supervised_argv(["bash", "-c", "setsid sleep 100 &"])   # spawn argv instead

The supervisor

- becomes a child subreaper, and asks for SIGTERM when its parent dies (``PR_SET_PDEATHSIG``,
  which follows the parent *thread*: spawn it from a thread that lives as long as the command
  should, such as the event loop's), so a server that crashes leaves no tree behind either;
- starts the command in its own (the supervisor's) process group, so the caller's ``killpg``
  still reaches what stayed in the group, with the same stdin, stdout, stderr and environment,
  and then lets go of stdin and stdout (the pipes close once the command's tree is gone);
- waits until the command exits, or until it gets SIGTERM, SIGINT or SIGHUP;
- then ends every descendant: SIGTERM, up to ``grace_s`` seconds for them to exit, SIGKILL to
  whatever still runs (again until nothing does: a process may fork meanwhile), and reaps them
  all, the command included;
- exits the way the command did: its exit status, or killed by the same signal (core dumps
  off), so the caller sees the command's own ending.

It is only the standard library, run by ``python -I -S`` (isolated, no ``site``); it adds
about 40 ms to a command here (Python's start, the imports, a few scans of /proc).
A caller that kills the supervisor with SIGKILL before it is done defeats it, so callers give
it more than ``grace_s`` between their SIGTERM and their SIGKILL. Linux only (prctl, /proc).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from typing import NamedTuple, NoReturn

__all__ = ["DEFAULT_GRACE_S", "ProcStat", "proc_stat", "running_descendants", "supervised_argv"]

DEFAULT_GRACE_S = 2.0  # SIGTERM -> SIGKILL for the descendants

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_PR_SET_CHILD_SUBREAPER = 36
_POLL_S = 0.01
_STOPS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
_WATCHED = {signal.SIGCHLD, *_STOPS}
_CANNOT_RUN = 127  # what a shell answers for a command it cannot start
_GONE = ("Z", "X")  # zombie, dead: not running any more


class ProcStat(NamedTuple):
    """The first fields of ``/proc/<pid>/stat`` (proc(5)): ``state`` is one letter (R, S, D,
    T, Z, X, ...), ``ppid`` the parent, ``pgrp`` the process group."""

    pid: int
    state: str
    ppid: int
    pgrp: int


def proc_stat(pid: int | str) -> ProcStat | None:
    """``/proc/<pid>/stat`` of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    fields = raw[raw.rindex(b")") + 2:].split()
    return ProcStat(int(pid), fields[0].decode(), int(fields[1]), int(fields[2]))


def _processes() -> Iterator[ProcStat]:
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := proc_stat(entry)) is not None:
            yield stat


def running_descendants(root: int) -> list[int]:
    """Pids of the descendants of ``root`` that still run (zombies are dead: left out)."""
    children: dict[int, list[ProcStat]] = {}
    for stat in _processes():
        children.setdefault(stat.ppid, []).append(stat)
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            todo.append(child.pid)
            if child.state not in _GONE:
                found.append(child.pid)
    return found


def supervised_argv(argv: Sequence[str], *, grace_s: float = DEFAULT_GRACE_S) -> list[str]:
    """The command line that runs ``argv`` under the supervisor (module doc). Spawn it from
    this process: the supervisor checks that its parent is the process that built the line."""
    if not argv:
        raise ValueError("no command to supervise")
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), str(os.getpid()),
            f"{grace_s:g}", "--", *argv]


# -- the supervisor process -------------------------------------------------------------------
def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                  ctypes.c_ulong(0)) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def _reap(leader: int, status: int | None) -> int | None:
    """Reap every child that has exited (orphans re-parented here too); the leader's wait
    status when it is among them, else ``status``."""
    while True:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == leader:
            status = wait_status


def _wait_for_end(leader: int) -> int | None:
    """Until the leader exits (its wait status) or a stop signal comes (None)."""
    while True:
        if signal.sigwaitinfo(_WATCHED).si_signo in _STOPS:
            return None
        status = _reap(leader, None)
        if status is not None:
            return status


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # ended meanwhile
            os.kill(pid, signum)


def _end_descendants(leader: int, status: int | None, grace_s: float) -> int:
    """SIGTERM every descendant, SIGKILL what runs after ``grace_s``, reap all; the leader's
    wait status."""
    me = os.getpid()
    _signal_all(running_descendants(me), signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while running_descendants(me) and time.monotonic() < deadline:
        status = _reap(leader, status)
        time.sleep(_POLL_S)
    while live := running_descendants(me):  # a process may fork until its SIGKILL lands
        _signal_all(live, signal.SIGKILL)
        status = _reap(leader, status)
        time.sleep(_POLL_S)
    while True:  # what is left are zombies and processes on their way out
        try:
            pid, wait_status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == leader:
            status = wait_status
    assert status is not None  # the leader is our child: reaped above at the latest
    return status


def _exit_like(status: int) -> NoReturn:
    """Exit with the leader's wait status: its code, or killed by its signal."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # its core, not ours, if any
        if signum != signal.SIGKILL:  # the one whose disposition cannot be set
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)  # a signal whose default is not to terminate
    os._exit(os.waitstatus_to_exitcode(status))


def _let_go_of_stdio() -> None:
    """Stdin and stdout to /dev/null: only the command holds the caller's pipes (stderr stays,
    for a last-resort traceback)."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


def main(args: Sequence[str]) -> NoReturn:
    """``subreaper.py PARENT_PID GRACE_S -- COMMAND ARGS...``: see the module doc."""
    parent, grace, separator, *argv = args
    if separator != "--" or not argv:
        sys.exit(f"usage: {sys.argv[0]} PARENT_PID GRACE_S -- COMMAND [ARGS...]")
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)  # taken with sigwaitinfo, none lost
    if os.getppid() != int(parent):  # the parent died before PDEATHSIG was set
        sys.exit(_CANNOT_RUN)
    try:
        # Python ignores SIGPIPE and SIGXFSZ; the command gets the defaults, and no mask.
        leader = os.posix_spawnp(argv[0], argv, os.environ, setsigmask=(),
                                 setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
    except OSError as exc:
        print(f"{argv[0]}: {exc.strerror}", file=sys.stderr)
        sys.exit(_CANNOT_RUN)
    _let_go_of_stdio()
    _exit_like(_end_descendants(leader, _wait_for_end(leader), float(grace)))


if __name__ == "__main__":
    main(sys.argv[1:])
