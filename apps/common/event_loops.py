"""The event loop of the run workers (``manage.py runworker``) and of Daphne: uvloop's by
default.

``CONFAB["EVENT_LOOP"]`` (``CONFAB_EVENT_LOOP``): ``uvloop`` (the default) or ``asyncio``.
Daphne runs on Twisted's asyncio reactor, which ``daphne.server`` installs over a loop of its
own (asyncio's) when it is imported: by the ``daphne`` command line before anything else, and by
Django's app registry (``daphne`` is an installed app). :func:`install_reactor` installs it over
the configured loop first: the ``apps.common`` app, listed before ``daphne``, calls it when the
registry imports it (``manage.py serve``, with the embedded worker on the same loop), and
``python -m config.daphne`` (Daphne's command line) before Daphne is imported. The plain
``daphne`` command still runs on asyncio's loop, as does a process whose setting cannot be had
(a command that serves says why; the others, ``migrate`` and the like, have no loop to run).

Why: a run worker's work is mostly many small socket events — a provider's stream is one read
per token, each an epoll wake-up, a transport callback and a task step, besides the channel
layer's and the database thread's wake-ups. uvloop (libuv, with its transports, timers and
callback queue in C) does that part in a fraction of the time asyncio's Python selector loop
takes: in ``bench_fanout`` at 64 conversations × 5 watchers the worker's CPU per streamed
token went down by 5-10 %. Daphne's work per delivered frame is the same kind (a channel
layer message read, a task step per socket, a socket write): on uvloop its CPU per frame over
fakellm's per token went down by 4-12 % at 64 × 5 in alternating runs (issue 20), the loop's
Python (``_run_once``, handles, the selector) having been a tenth of Daphne's CPU.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

__all__ = ["EVENT_LOOPS", "install_reactor", "new_event_loop"]

EVENT_LOOPS = ("uvloop", "asyncio")
"""The values ``CONFAB["EVENT_LOOP"]`` may take."""


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new event loop of the kind ``CONFAB["EVENT_LOOP"]`` names. Raises
    ``ImproperlyConfigured`` for another name, or for uvloop where it cannot be imported (a
    platform without its wheels: set ``CONFAB_EVENT_LOOP=asyncio``)."""
    return _factory(settings.CONFAB["EVENT_LOOP"])()


def install_reactor() -> None:
    """Install Twisted's asyncio reactor (Daphne's) over a loop of :func:`new_event_loop`,
    whose thread pool has ``ASGI_THREADS`` threads when that is set (as Daphne gives its own
    loop: ``daphne.server``); nothing when a reactor is installed already (Twisted allows one
    per process, and it cannot change once code holds it). Raises ``ImproperlyConfigured``
    like :func:`new_event_loop`, installing nothing."""
    if "twisted.internet.reactor" in sys.modules:
        return
    from twisted.internet import asyncioreactor

    loop = new_event_loop()
    if "ASGI_THREADS" in os.environ:
        loop.set_default_executor(ThreadPoolExecutor(int(os.environ["ASGI_THREADS"])))
    asyncioreactor.install(loop)


def _factory(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    if name == "asyncio":
        return asyncio.new_event_loop
    if name != "uvloop":
        raise ImproperlyConfigured(f"CONFAB_EVENT_LOOP is {name!r}; it may be "
                                   + " or ".join(EVENT_LOOPS))
    try:
        import uvloop
    except ImportError as exc:
        raise ImproperlyConfigured(f"CONFAB_EVENT_LOOP is 'uvloop' but uvloop cannot be "
                                   f"imported ({exc}); install it or set "
                                   "CONFAB_EVENT_LOOP=asyncio") from exc
    return uvloop.new_event_loop
