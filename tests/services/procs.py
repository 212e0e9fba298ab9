"""Small process helpers shared by the service and e2e harnesses: free ports, readiness polling,
children that cannot outlive the test run, and stopping a process group for good."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that is free right now (the caller retries if another process takes it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def wait_until(check: Callable[[], bool], *, timeout: float, what: str,
               proc: subprocess.Popen | None = None, log: Path | None = None,
               interval: float = 0.02) -> None:
    """Poll ``check`` until it returns true; fail early if ``proc`` exits, and after ``timeout``.

    The error carries the tail of ``log`` so a failed start explains itself."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError):
            if check():
                return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode} before it was ready"
                               + log_tail(log))
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {timeout:.0f}s" + log_tail(log))
        time.sleep(interval)


def log_tail(log: Path | None, lines: int = 40) -> str:
    """The last lines of a log file, formatted for an error message ('' when there is none)."""
    if log is None or not log.exists():
        return ""
    text = log.read_text(errors="replace").splitlines()[-lines:]
    return f"\n--- last lines of {log} ---\n" + "\n".join(text)


def orphan_guard() -> list[str]:
    """A command prefix that makes the child get SIGKILL when the test process dies (even by
    SIGKILL), so a crashed run leaves no servers behind: util-linux's ``setpriv --pdeathsig``,
    which execs the command in place (same pid). Empty where setpriv is missing.

    The signal fires when the *thread* that started the child exits: start services from the
    main thread (pytest fixtures do)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


def stop_process(proc: subprocess.Popen, *, sig: int = signal.SIGTERM,
                 timeout: float = 10.0) -> None:
    """Stop ``proc`` and its process group (it must have been started with
    ``start_new_session=True``): ``sig`` first, SIGKILL after ``timeout`` seconds."""
    if proc.poll() is None:
        _signal_group(proc, sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait(5)
    # Whatever the leader left in its group (workers, backends) goes too.
    _signal_group(proc, signal.SIGKILL)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
