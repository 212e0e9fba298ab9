"""The event loop of the run workers (``manage.py runworker``): uvloop's by default.

``CONFAB["EVENT_LOOP"]`` (``CONFAB_EVENT_LOOP``): ``uvloop`` (the default) or ``asyncio``.
Daphne's loop is not chosen here: Daphne makes it when it is imported, which Django's app
registry does (``daphne`` is an installed app), so ``daphne`` and ``manage.py serve`` (with the
embedded worker) run on asyncio's own loop.

Why: a run worker's work is mostly many small socket events — a provider's stream is one read
per token, each an epoll wake-up, a transport callback and a task step, besides the channel
layer's and the database thread's wake-ups. uvloop (libuv, with its transports, timers and
callback queue in C) does that part in a fraction of the time asyncio's Python selector loop
takes: in ``bench_fanout`` at 64 conversations × 5 watchers the worker's CPU per streamed
token went down by 5-10 %.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

__all__ = ["EVENT_LOOPS", "new_event_loop"]

EVENT_LOOPS = ("uvloop", "asyncio")
"""The values ``CONFAB["EVENT_LOOP"]`` may take."""


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new event loop of the kind ``CONFAB["EVENT_LOOP"]`` names. Raises
    ``ImproperlyConfigured`` for another name, or for uvloop where it cannot be imported (a
    platform without its wheels: set ``CONFAB_EVENT_LOOP=asyncio``)."""
    return _factory(settings.CONFAB["EVENT_LOOP"])()


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
