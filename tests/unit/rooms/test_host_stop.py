"""A finished run's host and its notes agent: ``run.stop`` without a person (a newer run of the
conversation started) cancels the notes; a person's stop sent again after the end does not."""

from __future__ import annotations

import asyncio
from pathlib import Path

from apps.engine.compaction.session_memory import SessionMemory
from apps.engine.events import RunEnded
from apps.rooms.host import RunHost


async def _ended_host_with_notes(tmp_path: Path) -> tuple[RunHost, asyncio.Task[None]]:
    host = RunHost(1)
    host.ended = RunEnded(status="cancelled", turns=1)
    memory = SessionMemory(provider=None, model="m", workspace=tmp_path)  # type: ignore[arg-type]
    notes = asyncio.create_task(asyncio.sleep(60), name="session-memory")
    memory._tasks.add(notes)  # an extraction under way, as turn_end starts one
    host._memory = memory
    return host, notes


async def test_a_persons_stop_after_the_end_leaves_the_notes_agent_running(tmp_path: Path
                                                                           ) -> None:
    host, notes = await _ended_host_with_notes(tmp_path)
    host.stop(stopped_by={"id": 2, "name": "Bob"})  # sent again: the first may have been lost
    await asyncio.sleep(0)
    assert not notes.done()
    notes.cancel()


async def test_a_newer_runs_release_cancels_the_notes_agent(tmp_path: Path) -> None:
    host, notes = await _ended_host_with_notes(tmp_path)
    host.stop()  # notes_release: run.stop without stopped_by
    await asyncio.gather(notes, return_exceptions=True)
    assert notes.cancelled()
