"""Start, kill and stop the processes of a scaled-out confab (DESIGN 3.8) for end-to-end tests.

A :class:`ProcessStack` shares one environment (``DATABASE_URL`` -> PostgreSQL, ``REDIS_URL``
-> Redis, a temporary ``CONFAB_DATA_DIR``, shared secrets: see
:func:`tests.services.django_proc.django_env`) between every process it starts:

- ``start_daphne()``: ``python -m config.daphne -b 127.0.0.1 -p PORT config.asgi:application``
  (Daphne on the configured event loop), ready when ``GET /healthz`` answers 200;
- ``start_worker()``: ``manage.py runworker agent-runs``, ready when that process is blocked
  reading the channel in Redis (so its ASGI application imported and its consumer listens);
- ``start_fakellm(rate=...)``: ``python -m apps.engine.fakellm``, ready when ``GET /health``
  answers 200;
- ``start(name, command, ...)``: anything else, with a readiness check of your own.

Each ``start_*`` returns once the process is ready (or raises with the tail of its log), so
starts are sequential. ``stack.kill(proc)`` is ``kill -9`` of that process (and its process
group); ``stack.stop_all()`` — also on leaving the ``with`` block or at fixture teardown —
SIGTERMs every process still running, SIGKILLs what is left after a grace period, and checks
that none survived. Every child is started through ``setpriv --pdeathsig KILL``, so even a
test run killed outright leaves no orphans. Each process logs (stdout and stderr) to
``<workdir>/logs/<name>.log``; ``proc.log_text()`` reads it.

    with ProcessStack(env, workdir) as stack:          # or the ``e2e_stack`` fixture
        a, b = stack.start_daphne(), stack.start_daphne()
        worker = stack.start_worker()
        llm = stack.start_fakellm(rate=50)
        demo = stack.manage_json(["demo", "--json"])
        ... a.ws_url("/ws/conversations/1/") ...
        stack.kill(worker)                              # mid-run
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import psutil

from tests.services.django_proc import ROOT, run_manage
from tests.services.procs import (
    LOOPBACK,
    free_port,
    log_tail,
    orphan_guard,
    stop_process,
    wait_until,
)

READY_TIMEOUT = 30.0
STOP_GRACE = 10.0
RUN_CHANNEL = "agent-runs"


def http_ok(url: str, timeout: float = 1.0) -> bool:
    """True when GET ``url`` answers 200 (proxies from the environment are ignored)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


@dataclass
class ManagedProcess:
    """One process of the stack."""

    name: str
    command: list[str]
    proc: subprocess.Popen
    log: Path
    port: int | None = None
    started_seconds: float = 0.0  # from spawn to ready
    killed: bool = field(default=False, repr=False)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (processes that listen)."""
        if self.port is None:
            raise RuntimeError(f"{self.name} does not listen on a port")
        return f"http://{LOOPBACK}:{self.port}"

    def ws_url(self, path: str) -> str:
        """``ws://127.0.0.1:PORT/<path>``."""
        return "ws" + self.url.removeprefix("http") + "/" + path.lstrip("/")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


class ProcessStack:
    """The processes of one scaled-out deployment; a context manager (see module docstring).

    ``env``: the shared environment (``django_env(...)``); ``workdir``: where logs go.
    ``redis_url`` (default: ``env["REDIS_URL"]``) is used for the worker's readiness check."""

    def __init__(self, env: dict[str, str], workdir: Path, *,
                 redis_url: str | None = None) -> None:
        self.env = env
        self.workdir = Path(workdir)
        self.logs = self.workdir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.redis_url = redis_url or env.get("REDIS_URL")
        self.processes: list[ManagedProcess] = []

    # -- starting ----------------------------------------------------------------------------

    def start(self, name: str, command: list[str], *,
              ready: Callable[[ManagedProcess], bool] | None = None,
              port: int | None = None, timeout: float = READY_TIMEOUT,
              env: dict[str, str] | None = None) -> ManagedProcess:
        """Start ``command`` (in the project root, its own process group) and wait until
        ``ready(proc)`` is true; without ``ready``, until it has stayed up for half a second."""
        if any(p.name == name for p in self.processes):
            raise ValueError(f"a process named {name!r} was already started")
        log = self.logs / f"{name}.log"
        began = time.monotonic()
        with open(log, "ab") as out:
            popen = subprocess.Popen([*orphan_guard(), *command], env=env or self.env, cwd=ROOT,
                                     stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        managed = ManagedProcess(name, command, popen, log, port)
        self.processes.append(managed)
        if ready is None:
            ready = _up_for(0.5)
        try:
            wait_until(lambda: ready(managed), timeout=timeout, what=name, proc=popen, log=log)
        except BaseException:
            self._terminate(managed)
            raise
        managed.started_seconds = time.monotonic() - began
        return managed

    def _start_listening(self, prefix: str, name: str | None,
                         command_for: Callable[[int], list[str]], health_path: str,
                         timeout: float) -> ManagedProcess:
        """Start a server on a free port (three tries: a port can be taken between picking it
        and binding it), ready when ``GET health_path`` answers 200."""
        name = name or self._next_name(prefix)
        for attempt in range(3):
            port = free_port()
            attempt_name = name if attempt == 0 else f"{name}.retry{attempt}"
            try:
                return self.start(attempt_name, command_for(port), port=port, timeout=timeout,
                                  ready=lambda p: http_ok(p.url + health_path))
            except RuntimeError as error:
                if "already in use" not in str(error) and "Errno 98" not in str(error):
                    raise
        raise RuntimeError(f"{name}: could not bind a free port (3 attempts)")

    def start_daphne(self, name: str | None = None, *, timeout: float = READY_TIMEOUT,
                     extra_args: tuple[str, ...] = ()) -> ManagedProcess:
        """A Daphne process serving ``config.asgi:application``; ready on ``/healthz``."""
        return self._start_listening(
            "daphne", name,
            lambda port: [sys.executable, "-m", "config.daphne", "-b", LOOPBACK, "-p", str(port),
                          *extra_args, "config.asgi:application"],
            "/healthz", timeout)

    def start_fakellm(self, rate: float = 50.0, name: str | None = None, *,
                      timeout: float = READY_TIMEOUT) -> ManagedProcess:
        """The scripted model server at ``rate`` tokens/s; ready on ``/health``. Point the
        team's provider at ``proc.url``."""
        return self._start_listening(
            "fakellm", name,
            lambda port: [sys.executable, "-m", "apps.engine.fakellm", "--host", LOOPBACK,
                          "--port", str(port), "--rate", str(rate)],
            "/health", timeout)

    def start_worker(self, *channels: str, name: str | None = None,
                     timeout: float = READY_TIMEOUT) -> ManagedProcess:
        """``manage.py runworker`` on ``channels`` (default ``agent-runs``), ready when the
        process has a Redis connection blocked in BZPOPMIN: the channel layer's receive, which
        it only reaches once the ASGI application imported. Without Redis: when it has stayed
        up for half a second."""
        command = [sys.executable, str(ROOT / "manage.py"), "runworker",
                   *(channels or (RUN_CHANNEL,))]
        ready = self._blocked_on_redis if self.redis_url else _up_for(0.5)
        return self.start(name or self._next_name("worker"), command, ready=ready,
                          timeout=timeout)

    def _blocked_on_redis(self, managed: ManagedProcess) -> bool:
        import redis  # channels-redis's own dependency

        ports = {port for proc in _tree(managed.pid) for port in _connected_ports(proc)}
        if not ports:
            return False
        client = redis.Redis.from_url(self.redis_url, socket_timeout=2)
        try:
            return any(int(entry["addr"].rsplit(":", 1)[1]) in ports
                       and entry.get("cmd") == "bzpopmin" for entry in client.client_list())
        finally:
            client.close()

    def _next_name(self, prefix: str) -> str:
        taken = {p.name for p in self.processes}
        return next(f"{prefix}{i}" for i in range(1, 1000) if f"{prefix}{i}" not in taken)

    # -- Django commands with the stack's environment ------------------------------------------

    def manage(self, args: list[str], *, timeout: float = 120,
               check: bool = True) -> subprocess.CompletedProcess[str]:
        """``manage.py ARGS`` with the stack's environment (e.g. ``["demo", "--json"]``)."""
        return run_manage(args, self.env, timeout=timeout, check=check)

    def manage_json(self, args: list[str], *, timeout: float = 120) -> Any:
        """``manage.py ARGS``'s standard output parsed as JSON."""
        return json.loads(self.manage(args, timeout=timeout).stdout)

    # -- killing and stopping ------------------------------------------------------------------

    def get(self, name: str) -> ManagedProcess:
        return next(p for p in self.processes if p.name == name)

    def kill(self, target: ManagedProcess | str, sig: int = signal.SIGKILL,
             timeout: float = 10.0) -> int:
        """``kill -9`` (or ``sig``) the process and its process group; wait for it; return its
        exit status (negative: the signal)."""
        managed = self.get(target) if isinstance(target, str) else target
        managed.killed = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(managed.pid, sig)
        return managed.proc.wait(timeout)

    def _terminate(self, managed: ManagedProcess) -> None:
        stop_process(managed.proc, timeout=STOP_GRACE)

    def stop_all(self) -> None:
        """Stop every process (SIGTERM, then SIGKILL) and check that none is left running."""
        for managed in reversed(self.processes):
            self._terminate(managed)
        deadline = time.monotonic() + 5  # SIGKILLed group members take a moment to vanish
        while True:
            survivors = [p.name for p in self.processes
                         if p.proc.poll() is None or any(True for _ in _group_members(p.pid))]
            if not survivors:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"processes survived stop_all: {survivors}")
            time.sleep(0.05)

    def describe(self) -> str:
        """One line per process: name, pid, port, state, and the tail of logs of dead ones
        (for assertion messages)."""
        lines = []
        for p in self.processes:
            state = "running" if p.alive() else f"exited {p.proc.returncode}"
            lines.append(f"{p.name} pid={p.pid} port={p.port} {state}")
            if not p.alive() and not p.killed:
                lines.append(log_tail(p.log, 20))
        return "\n".join(lines)

    def __enter__(self) -> ProcessStack:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop_all()


def _up_for(seconds: float) -> Callable[[ManagedProcess], bool]:
    """A readiness check that passes once ``seconds`` have gone by (the process is still up:
    :func:`wait_until` fails early when it exits)."""
    settled = time.monotonic() + seconds
    return lambda _managed: time.monotonic() > settled


def _connected_ports(proc: psutil.Process) -> set[int]:
    """Local ports of ``proc``'s connected TCP sockets; none when it ended meanwhile (a
    short-lived child of the tree, listed a moment before it exited)."""
    try:
        return {conn.laddr.port for conn in proc.net_connections(kind="tcp") if conn.raddr}
    except psutil.NoSuchProcess:
        return set()


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _group_members(pgid: int):
    """Live processes in process group ``pgid``."""
    for proc in psutil.process_iter(["pid"]):
        with contextlib.suppress(psutil.Error, ProcessLookupError, OSError):
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                yield proc
