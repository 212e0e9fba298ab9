"""One transaction for many conversations' coalesced deltas (issue 20: capacity).

A worker hosts many runs, and each run's projector flushes its deltas every ``COALESCE_MS``. One
transaction per flush per conversation made the worker's one database thread the bottleneck: a
commit per flush, and the broadcast (``on_commit`` -> ``async_to_sync(group_send)``) holding the
thread while Redis answered. Here every flush waiting while the thread is busy joins the next
write: one transaction for all of them (conversation rows locked in id order, so two workers
never deadlock), then, from the event loop and only after the commit, one ``group_send`` per
event, conversations concurrently and each conversation's events in ``seq`` order. A flush
returns once its events are stored *and* broadcast, so the projector's next event cannot
overtake them on the wire. While the channel layer is down the broadcast is dropped, not the run:
the events are stored with their seqs, and sockets read them again when they reconnect with
``after_seq`` (:mod:`apps.realtime.outage`).

A batch that fails (its conversation was deleted) must not fail the others: when the shared
transaction fails, each batch is written again alone and only the bad one gets the error.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from django.db import transaction

from apps.realtime.broadcast import broadcast_layer
from apps.realtime.groups import EventEnvelope, conversation_group
from apps.realtime.outage import send_or_drop
from apps.rooms.models import ConversationEvent, Message
from apps.rooms.services.events import event_envelope, seqs_allocate

__all__ = ["LogWriter", "log_writer"]


@dataclass(slots=True)
class _Batch:
    """One projector's flush: events to log and message rows to checkpoint."""

    conversation_id: int
    run_id: int
    events: list[tuple[str, dict[str, Any]]]
    checkpoints: dict[int, list[dict[str, Any]]]  # Message pk -> its content so far (the
    # batch's events included: stored with the batch's last seq as its checkpoint_seq)
    done: asyncio.Future[None]
    envelopes: list[EventEnvelope] = field(default_factory=list)


class LogWriter:
    """Writes flushes for every projector of one event loop; see the module's docstring."""

    def __init__(self) -> None:
        self._queue: list[_Batch] = []
        self._task: asyncio.Task[None] | None = None

    async def write(self, conversation_id: int, run_id: int,
                    events: list[tuple[str, dict[str, Any]]],
                    checkpoints: dict[int, list[dict[str, Any]]]) -> None:
        """Store ``(kind, payload)`` events with their seqs and the messages' content so far,
        then broadcast the events; returns once both are done. Raises what storing raised
        (``Conversation.DoesNotExist``, database errors)."""
        batch = _Batch(conversation_id, run_id, events, checkpoints,
                       asyncio.get_running_loop().create_future())
        self._queue.append(batch)
        if self._task is None:
            self._task = asyncio.create_task(self._drain(), name="log-writer")
        await asyncio.shield(batch.done)  # a cancelled projector leaves the write to finish

    async def _drain(self) -> None:
        try:
            while self._queue:
                batches, self._queue = self._queue, []
                await self._write(batches)
        finally:
            self._task = None

    async def _write(self, batches: list[_Batch]) -> None:
        try:
            await database_sync_to_async(_store)(batches)
            stored = batches
        except Exception:  # find the bad batch: each alone
            stored = []
            for batch in batches:
                try:
                    await database_sync_to_async(_store)([batch])
                    stored.append(batch)
                except Exception as exc:
                    batch.done.set_exception(exc)
        by_conversation: dict[int, list[_Batch]] = {}
        for batch in stored:
            by_conversation.setdefault(batch.conversation_id, []).append(batch)
        await asyncio.gather(*(_broadcast(group) for group in by_conversation.values()))


def _store(batches: list[_Batch]) -> None:
    """Store every batch in one transaction of three statements, however many there are: the
    seqs of all their conversations (one UPDATE), their events (one INSERT), the messages'
    checkpoints (one UPDATE), each with the last seq it includes. A conversation's batches get
    consecutive seqs in their order."""
    counts: dict[int, int] = {}
    for batch in batches:
        counts[batch.conversation_id] = counts.get(batch.conversation_id, 0) + len(batch.events)
    checkpoints: dict[int, Message] = {}
    rows: list[ConversationEvent] = []
    with transaction.atomic():
        following = seqs_allocate({c: n for c, n in counts.items() if n})
        for batch in batches:
            first = following[batch.conversation_id] if batch.events else 0
            made = [ConversationEvent(conversation_id=batch.conversation_id, seq=first + i,
                                      kind=kind, payload=payload, run_id=batch.run_id)
                    for i, (kind, payload) in enumerate(batch.events)]
            following[batch.conversation_id] = first + len(made)
            batch.envelopes = [event_envelope(row) for row in made]
            rows += made
            for pk, content in batch.checkpoints.items():  # a later flush's wins
                checkpoints[pk] = Message(pk=pk, content=content,
                                          checkpoint_seq=first + len(made) - 1)
        ConversationEvent.objects.bulk_create(rows)
        if checkpoints:
            Message.objects.bulk_update(list(checkpoints.values()), ["content", "checkpoint_seq"])


async def _broadcast(batches: list[_Batch]) -> None:
    """Send one conversation's batches' events, in seq order."""
    group = conversation_group(batches[0].conversation_id)
    for batch in batches:
        try:
            await send_or_drop(broadcast_layer().group_send, group,
                               [dict(envelope) for envelope in batch.envelopes])
        except Exception as exc:  # not an outage: the run ends visibly
            batch.done.set_exception(exc)
            continue
        batch.done.set_result(None)


_writers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LogWriter] = (
    weakref.WeakKeyDictionary())


def log_writer() -> LogWriter:
    """The running event loop's writer (one per worker process; tests have a loop each)."""
    loop = asyncio.get_running_loop()
    writer = _writers.get(loop)
    if writer is None:
        writer = _writers[loop] = LogWriter()
    return writer
