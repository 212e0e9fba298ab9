"""Search from the header, in a real browser (issue 19): titles and what was said across the
team's conversations, a Chinese substring found mid-sentence, the match marked; a result opens
the room at its message — loading older pages until it is there — scrolled into view and
marked; another team's person finds none of it."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser.live import ConfabServer, People, docs_screenshot, login
from tests.e2e.browser.room import conversation_path, script

pytestmark = pytest.mark.e2e


def search_from_the_header(page: Page, query: str) -> None:
    box = page.locator("#site-search-q")
    box.fill(query)
    box.press("Enter")
    expect(page.locator("#search-page")).to_be_visible()


def hit(page: Page, conversation_id: int):
    return page.locator(f'#search-results > li[data-conversation-id="{conversation_id}"]')


def test_a_result_opens_the_room_at_the_matching_message(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    long = confab_server.new_conversation("Search: a long one")
    confab_server.fill_conversation(long, 40)  # 160 messages: "answer 0" is three pages back
    alice = people.room("alice", long)
    page = alice.page
    expect(alice.transcript).not_to_contain_text("answer 0")

    search_from_the_header(page, "answer 0")
    found = hit(page, long)
    expect(found).to_have_count(1)
    expect(found.locator("mark")).to_have_text("answer 0")
    message_id = found.get_attribute("data-message-id")
    found.locator("a").click()
    expect(page).to_have_url(f"{confab_server.url}{conversation_path(long)}#message-{message_id}")
    focused = page.locator("article.message.focused")
    expect(focused).to_have_count(1)
    expect(focused.locator(".body")).to_have_text("answer 0")
    expect(focused).to_be_in_viewport()
    expect(focused).to_be_focused()
    expect(alice.messages().first).to_contain_text("question 0")  # the older pages came in


def test_search_finds_chinese_substrings_and_titles_of_the_team_only(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    talk = confab_server.new_conversation("Search: 办公室搬迁计划")
    bob = people.room("bob", talk)
    bob.send(script({"text": "好的，我会把新办公室的地址发给大家。"}))
    expect(bob.assistant_bodies().last).to_have_text("好的，我会把新办公室的地址发给大家。")
    alice = people.room("alice", confab_server.new_conversation("Search: elsewhere"))
    page = alice.page

    search_from_the_header(page, "公室的地")
    results = page.locator("#search-results > li")
    expect(results).to_have_count(1)
    expect(results.first).to_have_attribute("data-conversation-id", str(talk))
    expect(results.first.locator("mark")).to_have_text("公室的地")
    expect(results.first.locator(".hit-where")).to_contain_text("the agent")

    search_from_the_header(page, "公室搬")
    expect(hit(page, talk)).to_have_count(1)
    expect(hit(page, talk).locator(".hit-title")).to_have_text("Search: 办公室搬迁计划")
    expect(hit(page, talk)).not_to_have_attribute("data-message-id", "")  # a title: none
    docs_screenshot(page, "room-search")

    confab_server.create_outsider("dora", "Dora's team")
    outsider = people.new_context()
    dora = login(outsider, "dora", confab_server.password("dora"))
    search_from_the_header(dora, "公室")
    expect(dora.locator("#search-results > li")).to_have_count(0)
    expect(dora.locator(".search-count")).to_contain_text("0 results")
    outsider.close()


def test_a_blank_or_too_long_search_says_why(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    page = people.page("alice")
    page.goto("/search/?q=" + "x" * 101)
    expect(page.locator(".notice-error")).to_have_text("Search for at most 100 characters.")
