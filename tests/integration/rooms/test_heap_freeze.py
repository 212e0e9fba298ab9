"""The server processes freeze the heap they started with before they serve
(:mod:`apps.common.heap`): Daphne from ``python -m config.daphne`` once its command line has
loaded the application, the run worker as ``manage.py runworker`` runs it."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
from channels.layers import InMemoryChannelLayer

from apps.common.heap import freeze_startup_heap
from apps.rooms.run_worker import OutlastingWorker
from tests.integration.rooms.test_event_loops import launching
from tests.services.django_proc import django_env, run_code

# An ASGI application that, once the reactor runs (the server serving), prints how many
# objects are frozen and whether one the application's import made is among them (frozen
# objects are left out of gc.get_objects()), then stops the reactor: Daphne's command line
# then exits 0.
PROBE = """
import gc
from twisted.internet import reactor

class Marker:
    pass

MARKER = Marker()

def report():
    frozen = not any(o is MARKER for o in gc.get_objects())
    print(gc.get_freeze_count(), frozen, flush=True)
    reactor.stop()

reactor.callWhenRunning(report)

async def application(scope, receive, send):
    pass
"""


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """This test process's heap unfrozen before and after the test."""
    gc.unfreeze()
    yield
    gc.unfreeze()


class _Node:
    cycle: _Node


def test_freezing_collects_the_garbage_then_freezes_what_the_process_holds(
        unfrozen: None) -> None:
    node = _Node()
    node.cycle = node  # garbage only the collector frees once the name is gone
    garbage = weakref.ref(node)
    del node
    frozen = freeze_startup_heap()
    assert garbage() is None  # collected, not frozen for ever
    assert frozen == gc.get_freeze_count() > 0


def test_daphne_serves_with_the_heap_it_started_with_frozen(tmp_path: Path) -> None:
    (tmp_path / "freeze_probe.py").write_text(PROBE)
    code = f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\n" + launching(
        "-b", "127.0.0.1", "-p", "0", "freeze_probe:application")
    result = run_code(code, django_env(data_dir=tmp_path), timeout=60)
    count, application_frozen = result.stdout.split()
    assert int(count) > 10_000  # Django, Daphne, Twisted...
    assert application_frozen == "True"  # frozen after the application was loaded


def test_the_run_worker_freezes_the_heap_before_it_runs(
        unfrozen: None, monkeypatch: pytest.MonkeyPatch) -> None:
    worker = OutlastingWorker(None, ["agent-runs"], InMemoryChannelLayer())
    seen: list[int] = []

    async def arun() -> None:  # what serving would do first: see the heap it runs with
        seen.append(gc.get_freeze_count())

    monkeypatch.setattr(worker, "arun", arun)
    worker.run()
    assert seen and seen[0] > 0
