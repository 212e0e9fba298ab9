"""``events_store`` on PostgreSQL: the seqs and the events in one statement (issue 20), the rows
returned as stored, a conversation that is gone storing nothing (see conftest.py for how this
directory runs)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from apps.accounts.models import Team
from apps.rooms.models import Conversation, ConversationEvent, Room, Run
from apps.rooms.services.events import events_store

pytestmark = pytest.mark.django_db


def _conversation() -> tuple[int, int]:
    """(conversation, run) ids."""
    team = Team.objects.create(name="Events", slug="events")
    conversation = Conversation.objects.create(room=Room.objects.create(team=team, name="r"))
    return conversation.pk, Run.objects.create(conversation=conversation).pk


def test_events_get_consecutive_seqs_after_the_last_in_one_statement() -> None:
    conversation, run = _conversation()
    Conversation.objects.filter(pk=conversation).update(last_seq=7)
    events = [("message_started", {"kind": "message_started", "message_id": "m"}),
              ("text_delta", {"kind": "text_delta", "message_id": "m", "text": "Hi"}),
              ("text_delta", {"kind": "text_delta", "message_id": "m", "text": " there"})]
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        rows = events_store(conversation, events, run_id=run)
    statements = [q["sql"] for q in queries if "SAVEPOINT" not in q["sql"]]  # the test's
    assert len(statements) == 1 and "INSERT" in statements[0], statements
    stored = list(ConversationEvent.objects.filter(conversation_id=conversation))
    assert [(r.pk, r.seq, r.kind, r.payload, r.run_id) for r in rows] == [
        (s.pk, s.seq, s.kind, s.payload, s.run_id) for s in stored]
    assert [r.seq for r in rows] == [8, 9, 10]
    assert [r.payload for r in rows] == [payload for _, payload in events]
    assert all(r.created_at == stored[0].created_at for r in rows)
    assert Conversation.objects.get(pk=conversation).last_seq == 10
    rows[0].refresh_from_db()  # a stored row, as bulk_create returns them
    assert not rows[0]._state.adding


def test_awkward_payloads_round_trip_exactly() -> None:
    """The events travel as one JSON document: text that quoting, JSON escapes or the driver's
    placeholders could change is stored exactly as given."""
    conversation, run = _conversation()
    awkward = ["it's \"quoted\" \\ back", "%s %(x)s {}", "中文 ✓ 🚀 \u2028 \t\n", "$1 ?"]
    events = [("text_delta", {"kind": "text_delta", "text": text, "n": 1.5e-7, "none": None})
              for text in awkward]
    with transaction.atomic():
        events_store(conversation, events, run_id=run)
    assert [e.payload for e in ConversationEvent.objects.order_by("seq")] == [
        payload for _, payload in events]


def test_a_conversation_that_is_gone_raises_and_stores_nothing() -> None:
    conversation, _ = _conversation()
    Conversation.objects.filter(pk=conversation).delete()
    with pytest.raises(Conversation.DoesNotExist), transaction.atomic():
        events_store(conversation, [("probe", {"kind": "probe"})])
    assert not ConversationEvent.objects.exists()
