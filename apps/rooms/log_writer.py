"""One transaction for many conversations' coalesced deltas (issue 20: capacity).

A worker hosts many runs, and each run's projector flushes its deltas every ``COALESCE_MS``. One
transaction per flush per conversation made the worker's one database thread the bottleneck: a
commit per flush, and the broadcast (``on_commit`` -> ``async_to_sync(group_send)``) holding the
thread while Redis answered. Here every flush waiting while the thread is busy joins the next
write: one transaction for all of them (conversation rows locked in id order, so two workers
never deadlock), then, from the event loop and only after the commit, every event's
``group_send`` in one batch (:func:`~apps.realtime.broadcast.group_send_many`),
each conversation's events in ``seq`` order. A flush returns once its events are stored *and*
broadcast, so the projector's next event cannot overtake them on the wire. While the channel
layer is down the broadcast is dropped, not the run: the events are stored with their seqs, and
sockets read them again when they reconnect with ``after_seq`` (:mod:`apps.realtime.outage`).

A batch that fails (its conversation was deleted) must not fail the others: when the shared
transaction fails, each batch is written again alone and only the bad one gets the error.

On PostgreSQL the writer has a database connection of its own, and no thread: psycopg's
``AsyncConnection`` on the worker's event loop, made from Django's settings for the database
(its parameters and role) and opened at the first write. On the one thread every other
database call of the worker shares, a flush waited behind whatever the other runs were doing
there: when a few dozen runs ended (or started) within a second, their transactions
held the thread for hundreds of milliseconds and every live conversation's deltas arrived that
much later (bench_fanout, 48 conversations: p99 75-105 ms while streaming, 340 ms as the runs
ended). A thread of the writer's own fixed that, but each write then paid two thread hops and
the GIL passed back and forth with the loop's thread: on the loop the worker's CPU per streamed
token fell by 4.5 % (issue 20, 64 x 5). The two connections take rows in the same order, so
they cannot deadlock: every transaction that appends to a conversation's log locks the
conversation's row first (``conversation_lock``, or the seq UPDATE of ``events_append`` as its
first statement), then message rows, and the writer locks its conversations in id order, then
their messages. A connection that broke (the server restarted) is dropped and the next write
opens another: the retry of each batch alone that follows a failed write then stores them. The
worker closes it when it stops (:func:`close_log_writer`). SQLite, whose writers take turns at
one file lock anyway, keeps the shared thread.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from channels.db import database_sync_to_async
from django.db import connection, connections, transaction
from django.utils import timezone
from psycopg import sql

from apps.realtime.broadcast import group_send_many
from apps.realtime.event_frame import event_frame_text
from apps.realtime.groups import EventEnvelope, conversation_group
from apps.realtime.outage import send_all_or_drop
from apps.rooms.models import Conversation, ConversationEvent, Message
from apps.rooms.services.events import seqs_allocate

__all__ = ["CLOSE_WAIT_S", "LogWriter", "close_log_writer", "log_writer"]

logger = logging.getLogger(__name__)

CLOSE_WAIT_S = 5.0
"""How long :meth:`LogWriter.aclose` waits for the statement on the connection before it
cancels it, and then for the cancelled statement to end."""


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
    texts: list[tuple[str, str]] = field(default_factory=list)  # (kind, payload as JSON)


class LogWriter:
    """Writes flushes for every projector of one event loop; see the module's docstring."""

    def __init__(self) -> None:
        self._queue: list[_Batch] = []
        self._task: asyncio.Task[None] | None = None
        self._connection: psycopg.AsyncConnection[Any] | None = None  # PostgreSQL's own
        # set when the statement on the connection ends (one drain at a time: one statement)
        self._running: asyncio.Event | None = None

    async def write(self, conversation_id: int, run_id: int,
                    events: list[tuple[str, dict[str, Any]]],
                    checkpoints: dict[int, list[dict[str, Any]]]) -> None:
        """Store ``(kind, payload)`` events with their seqs and the messages' content so far,
        then broadcast the events; returns once both are done. Raises what storing raised
        (``Conversation.DoesNotExist``, database errors: psycopg's own on PostgreSQL,
        Django's elsewhere)."""
        if not events:
            return
        batch = _Batch(conversation_id, run_id, events, checkpoints,
                       asyncio.get_running_loop().create_future())
        self._queue.append(batch)
        if self._task is None:
            self._task = asyncio.create_task(self._drain(), name="log-writer")
        await asyncio.shield(batch.done)  # a cancelled projector leaves the write to finish

    async def _drain(self) -> None:
        batches: list[_Batch] = []
        try:
            while self._queue:
                batches, self._queue = self._queue, []
                await self._write(batches)
        finally:
            self._task = None
            for batch in batches:  # cancelled mid-write (the loop stops): tell their writers
                if not batch.done.done():
                    batch.done.cancel()
            if self._queue:  # queued meanwhile (a run's last flush as it is cancelled too)
                self._task = asyncio.create_task(self._drain(), name="log-writer")

    async def aclose(self) -> None:
        """Close the writer's PostgreSQL connection, if open, once the statement on it (if
        any) has its answer: closed under it, the server would still commit the write while
        the writer, seeing it fail, stored its batches again (found by review). A statement
        still running after :data:`CLOSE_WAIT_S` is cancelled on the server, so the write
        rolls back and its batches, each written again alone, are stored once. Later writes
        (a run that still flushes while the worker stops, that retry) open another
        connection."""
        opened, self._connection = self._connection, None
        if opened is None:
            return
        running = self._running  # on ``opened``: a statement starts only on _connection
        try:
            if running is not None:
                await _let_end(opened, running)
        finally:  # a cancel that could not be sent, or this close cancelled: closed anyway
            await opened.close()

    async def _write(self, batches: list[_Batch]) -> None:
        store = self._store if _on_postgresql() else database_sync_to_async(_store)
        try:
            gone = await store(batches)
            stored = [batch for batch in batches if batch.conversation_id not in gone]
            for batch in batches:
                if batch.conversation_id in gone:
                    batch.done.set_exception(Conversation.DoesNotExist(
                        f"conversation {batch.conversation_id} is gone"))
        except Exception:  # find the bad batch: each alone
            stored = []
            for batch in batches:
                try:
                    if not await store([batch]):
                        stored.append(batch)
                        continue
                    raise Conversation.DoesNotExist(f"conversation {batch.conversation_id} is gone")
                except Exception as exc:
                    batch.done.set_exception(exc)
        await _broadcast(stored)


    async def _store(self, batches: list[_Batch]) -> set[int]:
        """PostgreSQL: :func:`_store`'s work in one statement on the writer's connection."""
        write = _Round(batches)
        statement, params = _one_statement(write)
        opened = await self._connect()
        self._running = running = asyncio.Event()
        try:
            cursor = await opened.execute(statement, params)
            rows = await cursor.fetchall()
        except psycopg.Error:
            raise  # a broken connection reads closed: the next write opens another
        except BaseException:  # cancelled mid-statement: the connection's state is unknown
            if self._connection is opened:
                self._connection = None
            await opened.close()  # finishes at once: no await point to be cancelled at
            raise
        finally:
            running.set()
            self._running = None
        return _stored(write, {int(c): int(last) - write.counts[c] + 1 for c, last in rows})

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        """The writer's connection, opened with Django's parameters for the database when
        there is none (or it closed): autocommit, each write being one statement."""
        if self._connection is not None and not self._connection.closed:
            return self._connection
        wrapper = connections["default"]
        params = wrapper.get_connection_params()
        params.pop("cursor_factory")  # a synchronous cursor
        opened = await psycopg.AsyncConnection.connect(**params, autocommit=True)
        # OPTIONS' isolation_level applies to transactions; each write is a statement in
        # autocommit, run at the server's default level as Django's autocommit statements are.
        role = wrapper.settings_dict["OPTIONS"].get("assume_role")
        if role:  # as Django's _configure_role, composed by psycopg (Django's compose_sql
            try:  # needs Django's own connection)
                await opened.execute(sql.SQL("SET ROLE {}").format(sql.Literal(role)))
            except BaseException:
                await opened.close()
                raise
        self._connection = opened
        return opened


async def _let_end(opened: psycopg.AsyncConnection[Any], ended: asyncio.Event) -> None:
    """Wait :data:`CLOSE_WAIT_S` for the statement on ``opened`` to end (``ended`` is set),
    then cancel it on the server and wait as long again."""
    if await _ended(ended, CLOSE_WAIT_S):
        return
    await opened.cancel_safe(timeout=CLOSE_WAIT_S)
    if not await _ended(ended, CLOSE_WAIT_S):
        logger.warning("closing the log writer's connection under a statement that did not "
                       "end when cancelled")


async def _ended(event: asyncio.Event, timeout: float) -> bool:
    """Whether ``event`` is set within ``timeout`` seconds."""
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return False
    return True


def _on_postgresql() -> bool:
    return connections["default"].vendor == "postgresql"


def _store(batches: list[_Batch]) -> set[int]:
    """Any database but PostgreSQL, on the thread of the process's database calls: store every
    batch (seqs, events, checkpoints) in one transaction and set its envelopes; returns the ids
    of the conversations that are gone (their batches stored nothing)."""
    write = _Round(batches)
    return _stored(write, _store_in_a_transaction(write))


def _stored(write: _Round, firsts: dict[int, int]) -> set[int]:
    """Set the envelopes of the batches whose conversation got ``firsts`` (its first seq in
    this write); returns the ids of the conversations that are gone. Each event's payload is
    encoded once, for the store and the frame alike. A conversation's batches get consecutive
    seqs in their order; a checkpoint is stored with the last seq it includes."""
    for batch, offsets in zip(write.batches, write.offsets, strict=True):
        if batch.conversation_id in firsts:
            first = firsts[batch.conversation_id]
            batch.envelopes = [
                {"type": "conv.event", "seq": first + offset, "kind": kind,
                 "frame": event_frame_text(first + offset, text)}
                for offset, (kind, text) in zip(offsets, batch.texts, strict=True)]
    return set(write.counts) - set(firsts)


class _Round:
    """What one write stores, by conversation: ``counts`` (events each), each batch's
    ``offsets`` (its events' places among its conversation's in this write) and its payloads
    as JSON text (``batch.texts``)."""

    def __init__(self, batches: list[_Batch]) -> None:
        self.batches = batches
        self.counts: dict[int, int] = {}
        self.offsets: list[range] = []
        for batch in batches:
            start = self.counts.get(batch.conversation_id, 0)
            self.offsets.append(range(start, start + len(batch.events)))
            self.counts[batch.conversation_id] = start + len(batch.events)
            batch.texts = [(kind, json.dumps(payload)) for kind, payload in batch.events]


def _one_statement(write: _Round) -> tuple[str, list[Any]]:
    """PostgreSQL: the seqs (an UPDATE ... RETURNING), the events (an INSERT) and the
    checkpoints (an UPDATE) in one statement of data-modifying CTEs (each runs once, to
    completion, whether or not the query reads it): one round trip and no BEGIN/COMMIT,
    however many batches. The events and the checkpoints travel as one JSON array each, with
    the payloads already encoded set in as they are: two parameters whatever the round's size,
    where a parameter per column made adapting each one (psycopg, in Python) the writer's
    largest cost. A conversation that is gone has no row in ``s``, so nothing of
    it is stored. Returns the statement and its parameters; its rows are each stored
    conversation's id and new last seq."""
    ids = sorted(write.counts)
    events: list[str] = []
    checkpoints: dict[int, str] = {}
    for batch, offsets in zip(write.batches, write.offsets, strict=True):
        count = write.counts[batch.conversation_id]  # seq = new last seq - (count - offset) + 1
        row = f'{{"c":{batch.conversation_id},"r":{json.dumps(batch.run_id)},"d":'
        events += [f'{row}{count - offset},"k":{json.dumps(kind)},"p":{text}}}'
                   for offset, (kind, text) in zip(offsets, batch.texts, strict=True)]
        for pk, content in batch.checkpoints.items():  # a later flush's wins
            checkpoints[pk] = (f'{{"pk":{pk},"c":{batch.conversation_id},'
                               f'"d":{count - offsets.stop},"content":{json.dumps(content)}}}')
    id_array = _array(ids)
    params: list[Any] = [_array(write.counts[c] for c in ids), id_array, id_array,
                         timezone.now(), f"[{','.join(events)}]"]
    if checkpoints:
        params.append(f"[{','.join(checkpoints.values())}]")
    return _statement(bool(checkpoints)), params


def _array(numbers: Iterable[int]) -> str:
    """A PostgreSQL array literal of integers: passed as text, it is quoted like any string
    (psycopg dumps a Python list element by element, in Python)."""
    return "{" + ",".join(map(str, numbers)) + "}"


@functools.cache
def _statement(checkpoints: bool) -> str:
    """The statement below for the quoted tables, with or without its checkpoints' part.
    Its text is the same whatever the round's size (the ids and counts are two arrays), so
    psycopg parses it once, not at every round (it does not cache long statements)."""
    quote = connection.ops.quote_name
    names = {name: quote(model._meta.db_table) for name, model in (
        ("conversation", Conversation), ("event", ConversationEvent), ("message", Message))}
    return _ONE_STATEMENT.format(checkpoints=_CHECKPOINTS.format(**names) if checkpoints
                                 else "", **names)


# s: the conversations' new last seqs (``id = ANY``: the rows are locked in id order, as the
# index scan visits them; each adds its count, found by its place among the ids); e: each
# event at (new last seq - d + 1); m: each checkpoint with the seq of its batch's last event
# (new last seq - d).
_ONE_STATEMENT = """
WITH s AS (
    UPDATE {conversation}
    SET last_seq = last_seq + (%s::integer[])[array_position(%s::bigint[], id)]
    WHERE id = ANY(%s::bigint[]) RETURNING id, last_seq),
e AS (
    INSERT INTO {event} (conversation_id, seq, kind, payload, run_id, created_at)
    SELECT v.c, s.last_seq - v.d + 1, v.k, v.p, v.r, %s
    FROM jsonb_to_recordset(%s::jsonb) AS v(c bigint, r bigint, d integer, k text, p jsonb)
    JOIN s ON s.id = v.c){checkpoints}
SELECT id, last_seq FROM s
"""
_CHECKPOINTS = """,
m AS (
    UPDATE {message} SET content = v.content, checkpoint_seq = s.last_seq - v.d
    FROM jsonb_to_recordset(%s::jsonb) AS v(pk bigint, c bigint, d integer, content jsonb)
    JOIN s ON s.id = v.c
    WHERE {message}.id = v.pk)"""


def _store_in_a_transaction(write: _Round) -> dict[int, int]:
    """Any other database: one transaction of three statements (the seqs, the events, the
    checkpoints). Raises ``Conversation.DoesNotExist`` when a conversation is gone (nothing
    is stored then)."""
    checkpoints: dict[int, Message] = {}
    rows: list[ConversationEvent] = []
    with transaction.atomic():
        firsts = seqs_allocate(write.counts)
        for batch, offsets in zip(write.batches, write.offsets, strict=True):
            first = firsts[batch.conversation_id]
            rows += [ConversationEvent(conversation_id=batch.conversation_id, seq=first + offset,
                                       kind=kind, payload=payload, run_id=batch.run_id)
                     for offset, (kind, payload) in zip(offsets, batch.events, strict=True)]
            for pk, content in batch.checkpoints.items():  # a later flush's wins
                checkpoints[pk] = Message(pk=pk, content=content,
                                          checkpoint_seq=first + offsets.stop - 1)
        ConversationEvent.objects.bulk_create(rows)
        if checkpoints:
            Message.objects.bulk_update(list(checkpoints.values()), ["content", "checkpoint_seq"])
    return firsts


async def _broadcast(batches: list[_Batch]) -> None:
    """Send the stored batches' events, each conversation's in seq order: one batch
    for the whole write, not one per event. Dropped while the layer is down; any other
    failure fails every batch's write (the run ends visibly)."""
    sends = [(conversation_group(batch.conversation_id), dict(envelope))
             for batch in batches for envelope in batch.envelopes]
    try:
        await send_all_or_drop(group_send_many, sends)
    except Exception as exc:  # not an outage
        for batch in batches:
            batch.done.set_exception(exc)
        return
    for batch in batches:
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


async def close_log_writer() -> None:
    """Close the running event loop's writer's database connection (a worker that stops)."""
    writer = _writers.get(asyncio.get_running_loop())
    if writer is not None:
        await writer.aclose()
