"""``python -m config.daphne [daphne's arguments]``: Daphne's command line on the event loop
``CONFAB_EVENT_LOOP`` names (uvloop by default), where the ``daphne`` command runs on asyncio's
own: the same options, e.g. ``python -m config.daphne -b 0.0.0.0 -p 8000
config.asgi:application`` (:mod:`apps.common.event_loops`). The server freezes the heap as the
process started (the application imported; Django loads the URLconf and views at the first
request) before it serves (:mod:`apps.common.heap`)."""

from __future__ import annotations

import os
import sys


def main() -> None:
    """Install Twisted's reactor over the configured loop, then run Daphne's command line,
    which finds it installed. Exits like ``daphne`` (its argument errors, status 2), and with
    status 1 and the reason when ``CONFAB_EVENT_LOOP`` cannot be had."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.exceptions import ImproperlyConfigured

    from apps.common.event_loops import install_reactor

    try:
        install_reactor()
    except ImproperlyConfigured as exc:
        sys.exit(f"python -m config.daphne: {exc}")
    from daphne.cli import CommandLineInterface  # imports the reactor: only once installed
    from daphne.server import Server

    from apps.common.heap import freeze_startup_heap

    class FrozenStartServer(Server):
        def run(self) -> None:
            freeze_startup_heap()  # the CLI has loaded the application
            super().run()

    class FrozenStartCommandLine(CommandLineInterface):
        server_class = FrozenStartServer

    sys.argv[0] = "python -m config.daphne"  # its usage line names this command, not daphne.py
    FrozenStartCommandLine.entrypoint()


if __name__ == "__main__":
    main()
