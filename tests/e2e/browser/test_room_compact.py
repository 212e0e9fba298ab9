""""Compact now" in a real browser (issue 14): while automatic compaction is paused the room says
until when; a member's button compacts at once and both people see it; a viewer has no button."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People
from tests.services.django_proc import run_script

pytestmark = pytest.mark.e2e


@pytest.fixture
def conversation(confab_server: ConfabServer, request: pytest.FixtureRequest) -> int:
    return confab_server.new_conversation(request.node.name)


def pause_compaction(server: ConfabServer, conversation_id: int) -> None:
    """The breaker as three failures in a row leave it: paused for ten minutes."""
    run_script(
        "from datetime import timedelta\n"
        "from django.utils import timezone\n"
        "from apps.rooms.models import Conversation\n"
        f"Conversation.objects.filter(pk={conversation_id}).update(compaction_failures=3,\n"
        "    compaction_paused_until=timezone.now() + timedelta(minutes=10))\n", server.env)


def test_a_paused_room_says_so_and_compact_now_compacts_for_everyone(
        confab_server: ConfabServer, people: People, conversation: int) -> None:
    alice = people.room("alice", conversation)
    for answers, text in enumerate(("First question.", "Second question."), start=1):
        alice.send(text)
        expect(alice.assistant_bodies()).to_have_count(answers)
        expect(alice.run_status).to_have_text("Completed")
    pause_compaction(confab_server, conversation)
    bob, carol = people.room("bob", conversation), people.room("carol", conversation)
    notices = bob.page.locator("#notices")
    expect(notices).to_contain_text("3 compactions failed in a row: automatic compaction is "
                                    "paused until")
    expect(carol.page.locator('button[data-action="compact"]')).to_have_count(0)

    bob.page.get_by_role("button", name="Compact now").click()
    for room in (alice, bob):
        expect(room.page.locator("#notices")).to_contain_text("earlier messages summarized")
        expect(room.run_status).to_have_text("Completed")
    expect(notices).not_to_contain_text("paused until")
    bob.reload()  # the summary is in the history, the pause is gone
    expect(bob.transcript).to_contain_text("Summary of the earlier conversation")
    expect(bob.page.locator("#notices")).not_to_contain_text("paused until")
