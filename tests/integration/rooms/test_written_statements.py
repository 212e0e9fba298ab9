"""The statements written out or compiled once for speed (issue 20) answer as their ORM forms
did: the next history position (compacted messages do not count), whether a message is pending,
and the run's setup, the history and a sidebar row through :class:`CompiledQuery`. Run on
SQLite here and on PostgreSQL by ``tests/postgres/test_written_statements.py``."""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import Max
from django.test.utils import CaptureQueriesContext

from apps.accounts.models import Team, User
from apps.common.compiled import CompiledQuery
from apps.integrations.demo import ensure_demo_models
from apps.rooms.host import _setup_run, _setup_runs
from apps.rooms.models import Conversation, Message, MessageStatus, Room, Run, RunStatus
from apps.rooms.ports import messages_waiting, pending_rows
from apps.rooms.services.events import positions_allocate
from apps.rooms.sidebar import _conversation_row, _rows
from apps.rooms.transcript import _ENGINE_FIELDS, _history, history_of, history_rows

pytestmark = pytest.mark.django_db


def _conversations() -> tuple[Conversation, Conversation]:
    team = Team.objects.create(name="Statements", slug="statements")
    room = Room.objects.create(team=team, name="r")
    return (Conversation.objects.create(room=room), Conversation.objects.create(room=room))


def _message(conversation: Conversation, **fields: object) -> Message:
    return Message.objects.create(conversation=conversation, role="user", **fields)


def test_the_next_position_follows_the_last_that_is_not_compacted() -> None:
    mine, other = _conversations()
    with transaction.atomic():
        assert positions_allocate(mine.pk, 1) == 1  # an empty history
    _message(mine, position=3)
    _message(mine, position=9, compacted=True)  # replaced by its summary: not counted
    _message(mine, position=None, status=MessageStatus.PENDING)
    _message(other, position=40)
    with transaction.atomic():
        assert positions_allocate(mine.pk, 2) == 4
    orm = (Message.objects.filter(conversation=mine, compacted=False)
           .aggregate(m=Max("position"))["m"])
    assert orm + 1 == 4


def test_a_pending_message_is_seen_only_in_its_own_conversation() -> None:
    mine, other = _conversations()
    _message(mine, position=1)
    _message(other, status=MessageStatus.PENDING)
    assert not messages_waiting(mine.pk) and messages_waiting(other.pk)
    waiting = _message(mine, status=MessageStatus.PENDING)
    assert messages_waiting(mine.pk) == pending_rows(mine.pk).exists() is True
    Message.objects.filter(pk=waiting.pk).update(status=MessageStatus.COMPLETE)
    assert not messages_waiting(mine.pk)


# -- the queries compiled once (apps/common/compiled.py) ------------------------------------------

def _setup_fields(run: Run) -> tuple[object, ...]:
    """What the run's setup reads of the row and beside it."""
    conversation = run.conversation
    team = conversation.room.team
    model = team.ai_config.default_model
    return (run.pk, run.status, run.purpose, run.previous_run, run.messages_waiting,
            run.mcp_candidates, run.started_by.username, conversation.pk, conversation.title,
            conversation.room.name, team.name, team.tool_policy, model.model_id,
            model.provider.kind, model.provider.base_url)


def test_the_setup_query_compiled_once_answers_as_the_orm(django_assert_num_queries: Any) -> None:
    mine, other = _conversations()
    alice = User.objects.create(username="starter")
    ensure_demo_models(mine.room.team, fakellm_url="http://127.0.0.1:9")
    done = RunStatus.COMPLETED  # one active run per conversation
    runs = [Run.objects.create(conversation=mine, started_by=alice, status=done),
            Run.objects.create(conversation=other, started_by=alice, status=done),
            Run.objects.create(conversation=mine, started_by=alice)]
    _message(other, status=MessageStatus.PENDING)
    for run in runs:  # the first call compiles, the others run the same SQL
        with django_assert_num_queries(1):  # the related objects came with it
            compiled = _setup_fields(_setup_run(run.pk)[0])
        assert compiled == _setup_fields(_setup_runs().get(pk=run.pk))
    assert [_setup_fields(r)[3:5] for r in (_setup_run(p.pk)[0] for p in runs)] == [
        (None, False), (None, True), (runs[0].pk, False)]
    assert _setup_run(runs[-1].pk + 1000) == []  # a run that is not there


def test_the_history_compiled_once_answers_as_the_orm() -> None:
    mine, other = _conversations()
    _message(mine, position=2, content=[{"type": "text", "text": "second"}], author_name="bo")
    _message(mine, position=1, content=[{"type": "text", "text": "first"}])
    _message(mine, position=3, compacted=True, content=[{"type": "text", "text": "gone"}])
    _message(other, position=1, content=[{"type": "text", "text": "elsewhere"}])
    for conversation in (mine, other, mine):
        rows = _history(conversation.pk)
        assert rows == list(history_rows(conversation.pk).values_list(*_ENGINE_FIELDS))
        assert all(isinstance(row, tuple) for row in rows)  # values_list's tuples, not dicts
    assert [m.content[0].text for m in history_of(mine.pk)] == ["first", "second"]


def test_the_sidebar_row_compiled_once_answers_as_the_orm() -> None:
    mine, other = _conversations()
    Run.objects.create(conversation=other, status=RunStatus.RUNNING)
    for conversation in (mine, other, mine):
        assert list(_conversation_row(conversation.pk)) == list(
            _rows().filter(pk=conversation.pk))
    assert [row["running"] for row in (*_conversation_row(mine.pk),
                                       *_conversation_row(other.pk))] == [False, True]


def test_a_compiled_query_is_compiled_once_per_connection() -> None:
    mine, _ = _conversations()
    query = CompiledQuery(lambda pk: Conversation.objects.filter(pk=pk))
    with CaptureQueriesContext(connection) as first:
        assert list(query(mine.pk)) == [mine]
    compiled = query._thread.compiled
    with CaptureQueriesContext(connection) as again:
        assert list(query(mine.pk + 1000)) == []
    assert query._thread.compiled is compiled  # the same compilation, its SQL run again
    assert again[0]["sql"] == first[0]["sql"].replace(str(mine.pk), str(mine.pk + 1000))

    seen: list[object] = []

    def elsewhere() -> None:  # another thread: a connection, and a compilation, of its own
        try:
            seen.append(list(query(-1)))  # (this test's rows are not committed: none there)
            seen.append(query._thread.compiled is compiled)
        finally:
            connection.close()
    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert seen == [[], False] and query._thread.compiled is compiled


def test_a_query_without_its_key_exactly_once_is_refused() -> None:
    twice = CompiledQuery(lambda pk: Conversation.objects.filter(pk=pk, room_id=pk))
    with pytest.raises(ValueError, match="is 2 of the query's parameters"):
        twice(1)
    with pytest.raises(ValueError, match="is 0 of"):
        CompiledQuery(lambda pk: Conversation.objects.all())(1)


def test_threads_compiling_at_once_each_compile_the_same_sql() -> None:
    """Compiling a select_related query adds its joins to the query compiled: threads that
    compiled the shared template at once saved SQL that names tables it does not join (the
    review of 9774b4c; without the copy this failed 2 runs in 3). Each compiles a copy now; a
    tiny switch interval makes the threads meet."""
    expected = _setup_runs().filter(pk=-1).query.sql_with_params()[0]
    sqls: list[object] = []

    def first_call(query: CompiledQuery, start: threading.Barrier) -> None:
        try:
            start.wait()
            query(-1)
            sqls.append(query._thread.compiled.sql)
        except Exception as exc:  # a damaged compile may raise instead: recorded, asserted
            sqls.append(exc)
        finally:
            connection.close()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        for _ in range(5):
            query = CompiledQuery(lambda pk: _setup_runs().filter(pk=pk))
            start = threading.Barrier(6)
            threads = [threading.Thread(target=first_call, args=(query, start))
                       for _ in range(6)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert sqls == [expected] * 30
