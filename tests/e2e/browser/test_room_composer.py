"""The composer in a real browser (issue 16): what it says when a message is not sent, and that
the text typed is never lost."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People

pytestmark = pytest.mark.e2e


@pytest.fixture
def conversation(confab_server: ConfabServer, request: pytest.FixtureRequest) -> int:
    return confab_server.new_conversation(request.node.name)


def test_a_whitespace_only_send_says_why_and_keeps_the_text(
        people: People, conversation: int) -> None:
    alice = people.room("alice", conversation)
    blank = "   \n\t  "
    alice.textarea.fill(blank)
    alice.composer.locator('button[data-action="send"]').click()
    status = alice.page.locator("#composer-status")
    expect(status).to_contain_text("only spaces or blank lines")
    expect(alice.textarea).to_have_value(blank)
    alice.textarea.press("Enter")  # Enter too: the same words, still nothing sent
    expect(status).to_contain_text("only spaces or blank lines")
    assert alice.messages("user").count() == 0
    alice.textarea.fill("Hello")  # typing something real clears the reason
    expect(status).to_have_text("")
