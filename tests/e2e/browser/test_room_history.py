"""A long conversation in a real browser (issue 21): the room opens on the newest page and
loads older ones as the person scrolls up, keeping their place, until the first message."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People

pytestmark = pytest.mark.e2e


def test_scrolling_up_loads_older_pages_and_keeps_the_place(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name)
    confab_server.fill_conversation(conversation, 40)  # 160 messages: four pages of 50
    alice = people.room("alice", conversation)
    page = alice.page
    expect(alice.assistant_bodies().last).to_have_text("answer 39")
    expect(alice.transcript).not_to_contain_text("question 0")
    more = page.locator("#history-more")
    expect(more).to_be_visible()
    shown = alice.messages().count()
    top_id = alice.messages().first.get_attribute("data-message-id")
    more.scroll_into_view_if_needed()
    expect(alice.messages()).not_to_have_count(shown)  # a page came in above
    box = page.locator(f'article[data-message-id="{top_id}"]').bounding_box()
    assert box is not None and 0 <= box["y"] < page.viewport_size["height"]  # still in view
    for _ in range(10):
        if not more.is_visible():
            break
        more.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
    expect(more).to_be_hidden()
    expect(alice.messages().first).to_contain_text("question 0")
    cards = alice.tool_cards()
    expect(cards).to_have_count(40)
    expect(cards.filter(has_text="contents 0")).to_have_count(1)  # results beside their calls
