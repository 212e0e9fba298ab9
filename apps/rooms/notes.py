"""A run's session notes after its end (DESIGN 2.6): the notes agent never holds a run open.

The notes agent a run's last steps started may still be working when the answer is done. The
run ends without it — ``run_ended`` is stored and the room may start the next run — and the
run's host then gives it ``CONFAB["NOTES_TIMEOUT_S"]`` more on its clock and stores how far the
notes go, unless a newer run of the conversation exists by then: that run read the old mark, and
its own notes agent owns the file now. A new run cancels the last run's notes agent through that
run's group (``run.stop``), so it reaches the host in whichever worker it lives.
"""

from __future__ import annotations

import asyncio

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db.models import Exists, OuterRef, Subquery

from apps.engine.clock import Clock
from apps.engine.compaction.session_memory import SessionMemory
from apps.realtime.groups import run_group
from apps.realtime.outage import send_or_drop
from apps.rooms.models import Conversation, Run

__all__ = ["notes_mark_save", "notes_previous_run", "notes_release", "notes_settle"]


async def notes_settle(memory: SessionMemory, *, conversation_id: int, run_id: int,
                       clock: Clock) -> None:
    """Let the extraction in progress finish within the timeout (else cancel it), then store
    how far the notes go. Returns at once when none is in progress; never raises."""
    if not memory.busy:
        return
    upto = memory.state.extracted_upto
    waiting = asyncio.ensure_future(memory.wait())
    timer = asyncio.ensure_future(clock.sleep(settings.CONFAB["NOTES_TIMEOUT_S"]))
    try:
        await asyncio.wait({waiting, timer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
        memory.cancel()  # timed out, or the host is cancelled: the next run's steps retry
        await waiting
    if memory.state.extracted_upto != upto:
        await database_sync_to_async(notes_mark_save)(conversation_id, run_id,
                                                      memory.state.extracted_upto)


def notes_mark_save(conversation_id: int, run_id: int, upto: int) -> bool:
    """Store ``upto`` (a history index) as how far the notes go, unless a run newer than
    ``run_id`` exists (checked in the same statement); whether it was stored."""
    newer = Run.objects.filter(conversation_id=OuterRef("pk"), pk__gt=run_id)
    return bool(Conversation.objects.filter(~Exists(newer), pk=conversation_id)
                .update(memory_upto=upto))


def notes_previous_run() -> Subquery:
    """An annotation of a ``Run`` query: the id of the run before each row in its conversation
    (None: none), whose notes agent :func:`notes_release` cancels. An annotation, so the run's
    setup reads it with the run itself."""
    return Subquery(Run.objects.filter(conversation_id=OuterRef("conversation_id"),
                                       pk__lt=OuterRef("pk")).order_by("-pk").values("pk")[:1])


async def notes_release(previous: int | None) -> None:
    """Ask the host of run ``previous`` (:func:`notes_previous_run`), if any, to cancel its
    notes agent (a finished run's host takes ``run.stop`` to mean that)."""
    if previous is not None:
        # Dropped while the layer is down: that notes agent ends at NOTES_TIMEOUT_S instead,
        # and cannot overwrite this run's mark (notes_mark_save).
        await send_or_drop(get_channel_layer().group_send, run_group(previous),
                           [{"type": "run.stop", "run_id": previous}])
