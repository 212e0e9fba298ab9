"""What a run writes is searchable (issue 19): a person's message as it is stored and the
agent's answer as the projector stores it at ``message_ended`` both get their plain text,
Chinese included, through the real worker and fakellm over loopback."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import User
from apps.rooms.models import Conversation
from apps.rooms.search import search
from tests.consumers.conftest import connect, script

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_runs_question_and_answer_are_found_by_search(
        bob: User, conversation: Conversation, worker: None) -> None:
    client, _ = await connect(bob, conversation.pk)
    question = script({"text": "新办公室的地址在柏林米特区。"})
    await client.send({"type": "send", "client_id": "q1", "text": question})
    ended = await client.until_event("message_ended")
    await client.until_event("run_ended", status="completed")

    hits, count = await sync_to_async(search)(user=bob, query="地址在柏林")
    assert count == 1  # the question is the script's JSON, where json.dumps wrote \uXXXX
    answer = hits[0]
    assert answer.message.role == "assistant"
    assert answer.message.engine_id == ended["message_id"]
    assert answer.snippet == "新办公室的地址在柏林米特区。"
    assert answer.snippet[slice(*answer.highlight)] == "地址在柏林"
    asked, _ = await sync_to_async(search)(user=bob, query='{"script"')
    assert [(h.message.role, h.message.author_id) for h in asked] == [("user", bob.pk)]
    await client.close()
