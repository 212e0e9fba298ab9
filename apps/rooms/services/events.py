"""The conversation's event log: ``seq`` allocation, storage, then broadcast (DESIGN 3.3, 4).

The channel layer delivers at most once, so every event is stored with its ``seq`` *before* it is
broadcast, and clients repair gaps from the store. ``seq`` comes from ``Conversation.last_seq``
updated under a row lock in the same transaction as the insert, and ``(conversation, seq)`` is
unique: two writers can never produce the same number or skip one.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from apps.realtime.broadcast import broadcast_on_commit
from apps.realtime.event_frame import event_frame
from apps.realtime.groups import EventEnvelope, conversation_group
from apps.rooms.models import Conversation, ConversationEvent, Message
from apps.rooms.sidebar import SIDEBAR_KINDS, sidebar_changed_on_commit

__all__ = [
    "conversation_lock",
    "event_append",
    "event_envelope",
    "events_after",
    "events_append",
    "events_last_seq",
    "events_last_seqs",
    "events_store",
    "person",
    "positions_allocate",
    "seq_allocate",
    "seqs_allocate",
]


def person(user: Any) -> dict[str, object]:
    """``user`` as events name people: a PERSON, ``{"id", "name"}`` (docs/protocol.md)."""
    return {"id": user.pk, "name": user.shown_name}


def conversation_lock(conversation_id: int, *fields: str) -> dict[str, Any]:
    """Lock the conversation row until the transaction ends: every writer of the transcript's
    order (seq, positions, runs) takes it first, so they queue instead of colliding. Returns
    the row's ``fields`` as read under the lock, in the same query (``{}`` when the row is
    gone)."""
    rows = Conversation.objects.select_for_update().filter(pk=conversation_id).values(
        "pk", *fields)
    return next(iter(rows), {})


def positions_allocate(conversation_id: int, count: int) -> int:
    """The first of ``count`` new history positions. Call inside a transaction that holds
    :func:`conversation_lock`. The statement is written out: as an ORM aggregate it took
    longer to compile than to run, at every message's end (issue 20)."""
    with connection.cursor() as cursor:
        cursor.execute(_last_position_sql(connection.vendor), [conversation_id, False])
        (last,) = cursor.fetchone()
    return (last or 0) + 1


@functools.cache
def _last_position_sql(vendor: str) -> str:
    """The statement, once per database vendor (quoting is the vendor's)."""
    meta, quote = Message._meta, connection.ops.quote_name
    column = {name: quote(meta.get_field(name).column)
              for name in ("conversation", "compacted", "position")}
    return (f"SELECT MAX({column['position']}) FROM {quote(meta.db_table)} "
            f"WHERE {column['conversation']} = %s AND {column['compacted']} = %s")


def seq_allocate(conversation_id: int, count: int = 1) -> int:
    """Reserve ``count`` numbers; returns the first. Call inside a transaction. Raises
    ``Conversation.DoesNotExist`` when the conversation is gone."""
    return seqs_allocate({conversation_id: count})[conversation_id]


def seqs_allocate(counts: dict[int, int]) -> dict[int, int]:
    """Reserve ``counts[c]`` numbers for each conversation ``c``; returns each one's first.
    Call inside a transaction. One round trip whatever the number of conversations: the
    UPDATE takes the rows' locks (SQLite: the write lock) and RETURNING reads the new values
    (PostgreSQL, SQLite >= 3.35). Raises ``Conversation.DoesNotExist`` when one is gone."""
    meta, quote = Conversation._meta, connection.ops.quote_name
    table, pk = quote(meta.db_table), quote(meta.pk.column)
    last = quote(meta.get_field("last_seq").column)
    ids = sorted(counts)
    cases = " ".join(["WHEN %s THEN %s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET {last} = {last} + CASE {pk} {cases} END "
            f"WHERE {pk} IN ({', '.join(['%s'] * len(ids))}) RETURNING {pk}, {last}",
            [value for i in ids for value in (i, counts[i])] + ids)
        rows = cursor.fetchall()
    firsts = {int(conversation_id): int(seq) - counts[conversation_id] + 1
              for conversation_id, seq in rows}
    if missing := set(ids) - firsts.keys():
        raise Conversation.DoesNotExist(f"conversation {min(missing)} is gone")
    return firsts


def events_store(conversation_id: int, events: Iterable[tuple[str, dict[str, Any]]], *,
                 run_id: int | None = None) -> list[ConversationEvent]:
    """Store ``(kind, payload)`` events with consecutive seqs, without broadcasting them: the
    caller broadcasts each (:func:`event_envelope`) once the transaction has committed. Call
    inside a transaction. Raises ``Conversation.DoesNotExist`` when the conversation is gone."""
    items = list(events)
    if not items:
        return []
    if connection.vendor == "postgresql":
        return _store_in_one_statement(conversation_id, items, run_id)
    first = seq_allocate(conversation_id, len(items))
    return ConversationEvent.objects.bulk_create([
        ConversationEvent(conversation_id=conversation_id, seq=first + i, kind=kind,
                          payload=payload, run_id=run_id)
        for i, (kind, payload) in enumerate(items)
    ])


def _store_in_one_statement(conversation_id: int, items: list[tuple[str, dict[str, Any]]],
                            run_id: int | None) -> list[ConversationEvent]:
    """PostgreSQL: the seqs (an UPDATE ... RETURNING, which locks the conversation's row
    first, as :func:`seq_allocate` does) and the events (an INSERT) in one statement, the
    events as one JSON array, as the log writer stores its rounds (``apps.rooms.log_writer``).
    The seq UPDATE and a ``bulk_create``, which builds its INSERT in Python at every call,
    were two thirds of a message start's database work (issue 20: 664 -> 366 µs of CPU for
    its two events). Rows as ``bulk_create`` returns them."""
    now = timezone.now()
    count = len(items)  # seq = new last seq - (count - i) + 1
    document = "[" + ",".join(
        f'{{"d":{count - i},"k":{json.dumps(kind)},"p":{json.dumps(payload)}}}'
        for i, (kind, payload) in enumerate(items)) + "]"
    with connection.cursor() as cursor:
        cursor.execute(_one_statement(), [count, conversation_id, conversation_id, run_id, now,
                                          document])
        ids = dict(cursor.fetchall())  # seq -> id
    if not ids:
        raise Conversation.DoesNotExist(f"conversation {conversation_id} is gone")
    first = min(ids)
    rows = [ConversationEvent(id=ids[first + i], conversation_id=conversation_id, seq=first + i,
                              kind=kind, payload=payload, run_id=run_id, created_at=now)
            for i, (kind, payload) in enumerate(items)]
    for row in rows:  # stored, as bulk_create leaves them
        row._state.adding, row._state.db = False, connection.alias
    return rows


@functools.cache
def _one_statement() -> str:
    """The statement of :func:`_store_in_one_statement` for the quoted tables (one text, so
    psycopg parses it once)."""
    quote = connection.ops.quote_name
    return _ONE_STATEMENT.format(conversation=quote(Conversation._meta.db_table),
                                 event=quote(ConversationEvent._meta.db_table))


_ONE_STATEMENT = """
WITH s AS (
    UPDATE {conversation} SET last_seq = last_seq + %s WHERE id = %s RETURNING last_seq)
INSERT INTO {event} (conversation_id, seq, kind, payload, run_id, created_at)
SELECT %s, s.last_seq - v.d + 1, v.k, v.p, %s, %s
FROM s, jsonb_to_recordset(%s::jsonb) AS v(d integer, k text, p jsonb)
RETURNING seq, id
"""


def event_envelope(row: ConversationEvent) -> EventEnvelope:
    """The channel-layer message that carries a stored event to the sockets, its frame
    encoded once here instead of once per socket."""
    return {"type": "conv.event", "seq": row.seq, "kind": row.kind,
            "frame": event_frame(row.seq, row.payload)}


def events_append(conversation_id: int, events: Iterable[tuple[str, dict[str, Any]]], *,
                  run_id: int | None = None) -> list[ConversationEvent]:
    """Store ``(kind, payload)`` events with consecutive seqs and broadcast each after commit.

    ``payload`` is the event as clients receive it (it holds its own ``kind``).
    """
    # No savepoint inside a caller's transaction (two statements fewer a call): a failure
    # here fails the caller's whole transaction, which none of them goes on from.
    with transaction.atomic(savepoint=False):
        rows = events_store(conversation_id, events, run_id=run_id)
        group = conversation_group(conversation_id)
        for row in rows:
            broadcast_on_commit(group, dict(event_envelope(row)))
        if any(row.kind in SIDEBAR_KINDS for row in rows):  # the room's sidebar shows it
            sidebar_changed_on_commit(conversation_id)
    return rows


def event_append(conversation_id: int, kind: str, payload: dict[str, Any], *,
                 run_id: int | None = None) -> ConversationEvent:
    """One event; see :func:`events_append`."""
    return events_append(conversation_id, [(kind, payload)], run_id=run_id)[0]


def events_last_seq(conversation_id: int) -> int:
    """The seq of the conversation's last stored event (0: none); a committed value, so every
    event up to it can be read."""
    return Conversation.objects.values_list("last_seq", flat=True).get(pk=conversation_id)


def events_last_seqs(conversation_ids: list[int]) -> dict[int, int]:
    """:func:`events_last_seq` of each conversation, in one query: ``{id: seq}`` (a deleted
    conversation is left out)."""
    return dict(Conversation.objects.filter(pk__in=conversation_ids)
                .values_list("pk", "last_seq"))


def events_after(conversation_id: int, after_seq: int, limit: int = 500
                 ) -> list[ConversationEvent]:
    """Up to ``limit`` stored events with ``seq > after_seq``, in order."""
    return list(ConversationEvent.objects.filter(conversation_id=conversation_id,
                                                 seq__gt=after_seq).order_by("seq")[:limit])
