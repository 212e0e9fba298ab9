"""Concurrency on PostgreSQL, in-process: several threads, each with its own connection, write
to one conversation at once (see conftest.py for how this directory runs)."""

from __future__ import annotations

import threading

import pytest
from django.db import IntegrityError, connection, transaction

from apps.accounts.models import Team
from apps.rooms.models import Conversation, Room, Run
from apps.rooms.services.events import events_append

pytestmark = pytest.mark.django_db(transaction=True)  # threads need committed rows


def _conversation() -> Conversation:
    team = Team.objects.create(name="Threads", slug="threads")
    return Conversation.objects.create(room=Room.objects.create(team=team, name="room"))


def _in_threads(count: int, work) -> list:
    """Run ``work(i)`` in ``count`` threads released together; their results in order."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def body(i: int) -> None:
        try:
            barrier.wait(10)
            results[i] = work(i)
        except Exception as error:  # reported by the test
            results[i] = error
        finally:
            connection.close()  # each thread's own connection

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def test_seq_numbers_from_four_threads_have_no_gap_nor_duplicate() -> None:
    conversation = _conversation()

    def append(i: int) -> list[int]:
        return [row.seq for _ in range(25)
                for row in events_append(conversation.pk, [("probe", {"kind": "probe"})])]

    results = _in_threads(4, append)
    seqs = [seq for result in results for seq in result]
    assert sorted(seqs) == list(range(1, 101)), results
    conversation.refresh_from_db()
    assert conversation.last_seq == 100


def test_one_active_run_per_conversation_under_a_race() -> None:
    conversation = _conversation()

    def start(i: int) -> str:
        try:
            with transaction.atomic():
                Run.objects.create(conversation=conversation, status="queued")
            return "started"
        except IntegrityError:
            return "refused"

    assert sorted(_in_threads(4, start)) == ["refused"] * 3 + ["started"]
    assert Run.objects.filter(conversation=conversation).count() == 1
