"""``manage.py serve``: Daphne with the embedded run worker, and the offline model server.

Everything runs on 127.0.0.1 by default and stops together on Ctrl-C or SIGTERM. With Redis
(``REDIS_URL``) run workers can live in ``manage.py runworker agent-runs`` processes instead:
pass ``--no-worker`` then.
"""

from __future__ import annotations

import asyncio
import ctypes
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import httpx2
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.common.event_loops import new_event_loop

FAKELLM_START_S = 30.0
_PR_SET_PDEATHSIG = 1


def _require_free(host: str, port: int) -> None:
    """Refuse a taken port: a stale offline model left there would answer in our place.

    The probe binds as the server will (uvicorn sets ``SO_REUSEADDR``), so connections of a
    previous run still in TIME_WAIT do not count, while a socket listening there still does
    (Linux refuses that bind either way: socket(7), ``SO_REUSEADDR``)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            raise CommandError(f"port {port} on {host} is taken (a previous run's offline model "
                               "still running?); stop it or pass --fakellm-port") from None


def _die_with_parent() -> None:
    """In the child: end with SIGTERM when serve dies, even by SIGKILL (Linux prctl)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class Command(BaseCommand):
    help = "Run confab: Daphne, the embedded run worker and the offline model server."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--fakellm-port", type=int, default=8001,
                            help="port of the offline scripted model (0: do not start it)")
        parser.add_argument("--fakellm-rate", type=float, default=50.0,
                            help="tokens per second the offline model streams")
        parser.add_argument("--no-worker", action="store_true",
                            help="do not host runs here (runworker processes do)")

    def handle(self, *args: Any, **options: Any) -> None:
        fakellm = self._start_fakellm(options)
        try:
            self._serve(options)
        finally:
            if fakellm is not None:
                fakellm.terminate()
                try:
                    fakellm.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    fakellm.kill()

    def _start_fakellm(self, options: dict[str, Any]) -> subprocess.Popen[bytes] | None:
        """Start the offline model and wait until it answers, so that once /healthz answers
        everything is ready."""
        if not options["fakellm_port"]:
            return None
        _require_free(options["host"], options["fakellm_port"])
        process = subprocess.Popen([sys.executable, "-m", "apps.engine.fakellm", "--host",
                                    options["host"], "--port", str(options["fakellm_port"]),
                                    "--rate", str(options["fakellm_rate"])],
                                   preexec_fn=_die_with_parent)
        health = f"http://{options['host']}:{options['fakellm_port']}/health"
        deadline = time.monotonic() + FAKELLM_START_S
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if httpx2.get(health, timeout=1).status_code == 200:
                    return process
            except httpx2.TransportError:
                time.sleep(0.1)
        process.kill()
        raise CommandError(f"the offline model server did not start on {health}")

    def _serve(self, options: dict[str, Any]) -> None:
        try:  # apps.common installed Daphne's reactor over it, unless it cannot be had
            new_event_loop().close()
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        from daphne.server import Server
        from twisted.internet import reactor

        from config.asgi import application

        host, port = options["host"], options["port"]
        server = Server(application=application,
                        endpoints=[f"tcp:port={port}:interface={host}"],
                        signal_handlers=True, verbosity=0)
        if not options["no_worker"]:
            from apps.rooms.embedded import start_embedded_worker
            from apps.rooms.shutdown import close_before_reactor_shutdown

            reactor.callWhenRunning(lambda: asyncio.get_event_loop().call_soon(
                start_embedded_worker, application))
            close_before_reactor_shutdown(reactor)
        layer = settings.CHANNEL_LAYERS["default"]["BACKEND"].rsplit(".", 1)[-1]
        ready = f"confab is serving on http://{host}:{port}/ ({layer}); Ctrl-C stops it."

        def say_ready() -> None:  # flushed: a script reading a pipe waits for this line
            self.stdout.write(ready)
            self.stdout.flush()

        # Once the reactor runs: Daphne listens on its endpoints before that, so a script that
        # waits for the line finds the port open (when listening fails, it is never said).
        reactor.callWhenRunning(say_ready)
        server.run()
        if server.abort_start:  # Daphne could not listen: it logged why and never ran
            raise CommandError(f"could not listen on {host}:{port} (taken by another server?); "
                               "stop it or pass --port")
