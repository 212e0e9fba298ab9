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


TOO_LONG = "x" * 32_001  # the default CONFAB_MESSAGE_MAX_CHARS is 32,000
TOO_LONG_WORDS = "32,001 characters long; at most 32,000 fit in one message"


def test_the_composer_knows_the_servers_limit_and_keeps_a_too_long_message(
        people: People, conversation: int) -> None:
    alice = people.room("alice", conversation)
    assert alice.textarea.get_attribute("maxlength") is None  # a paste is never cut short
    assert alice.composer.get_attribute("data-max-chars") == "32000"
    alice.textarea.fill(TOO_LONG)
    alice.composer.locator('button[data-action="send"]').click()
    expect(alice.page.locator("#composer-status")).to_contain_text(f"Not sent: the message is "
                                                                   f"{TOO_LONG_WORDS}")
    expect(alice.textarea).to_have_value(TOO_LONG)
    assert alice.messages("user").count() == 0


def test_a_message_the_server_refuses_is_marked_not_sent_and_its_text_comes_back(
        people: People, conversation: int) -> None:
    alice = people.room("alice", conversation)
    # A page whose idea of the limit is out of date (the setting changed since it loaded):
    # the server has the last word.
    alice.composer.evaluate("form => { form.dataset.maxChars = '10000000'; }")
    alice.textarea.fill(TOO_LONG)  # not Room.send: the text may be back before it looks
    alice.composer.locator('button[data-action="send"]').click()
    bubble = alice.messages("user").last
    expect(bubble).to_contain_text(f"not sent: The message is {TOO_LONG_WORDS}")
    expect(bubble).not_to_contain_text("sending…")
    expect(alice.textarea).to_have_value(TOO_LONG)
    expect(alice.page.locator("#composer-status")).to_contain_text(TOO_LONG_WORDS)
    expect(alice.page.locator("#notices")).not_to_contain_text("text:")  # no pydantic words
