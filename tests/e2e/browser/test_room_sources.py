"""An answer's sources in a real browser (issue 17): a numbered list under the message, live
and after a reload, titles shown as text, only http(s) links, opened without a referrer."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People
from tests.e2e.browser.room import script

pytestmark = pytest.mark.e2e

HOSTILE_TITLE = '<img src=x onerror="window.pwned=1">Page A'
CITED = [{"url": "https://example.org/a", "title": HOSTILE_TITLE},
         {"url": "javascript:alert(1)", "title": "never a link"},
         {"url": "https://docs.example.com/b", "title": "Page B"}]


def test_sources_are_a_numbered_list_of_safe_links(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name)
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    alice.send(script({"text": "Found it."}, {"sources": CITED}))
    for room in (alice, bob):
        links = room.messages("assistant").locator("section.sources ol > li > a")
        expect(links).to_have_count(2)
        expect(links).to_have_text([HOSTILE_TITLE, "Page B"])
        expect(links.first).to_have_attribute("href", "https://example.org/a")
        expect(links.first).to_have_attribute("rel", "noopener noreferrer nofollow")
        expect(room.messages("assistant").locator("section.sources .source-site")).to_have_text(
            ["example.org", "docs.example.com"])
        assert room.page.locator("section.sources img").count() == 0
        assert room.page.evaluate("window.pwned") is None
    bob.reload()
    expect(bob.messages("assistant").locator("section.sources li")).to_have_count(2)
    expect(bob.messages("assistant").locator("section.sources h3")).to_have_text("Sources")
