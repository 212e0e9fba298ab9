"""A server process's heap as it starts, frozen out of CPython's cyclic garbage collector.

A full collection walks every object the collector tracks. A run worker holds about 230,000
once it has started (Django, the application, aiohttp's and the MCP SDK's modules), nearly
all of them alive as long as the process, and walking them held its event loop for 184-195 ms
at each full collection under bench_fanout's 64 x 5 (issue 20): a pause that every live
conversation's deltas wait through, so the step's p99 with it. Frozen (``gc.freeze``, made for
this: https://docs.python.org/3/library/gc.html#gc.freeze), they are left out of every later
collection; the worker's full collections then took 18 ms. What the process makes afterwards is
collected as before. A cycle among the frozen objects is never freed, which is why only what
the start made is frozen, after a collection of its garbage.
"""

from __future__ import annotations

import gc

__all__ = ["freeze_startup_heap"]


def freeze_startup_heap() -> int:
    """Collect the garbage, then freeze every object the process holds now (call it once,
    when the process has loaded what it serves and before it serves); the count frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
