"""The room's conversations beside the transcript, in a real browser (issue 19): newest first,
the current one marked, who is in each and which are running, all following the room live; a
click switches conversation; on a phone the list folds behind a toggle."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser.live import ConfabServer, People, docs_screenshot
from tests.e2e.browser.room import conversation_path, script

pytestmark = pytest.mark.e2e


def rows(page: Page):
    return page.locator("#conversation-list > li")


def row(page: Page, conversation_id: int):
    return page.locator(f'#conversation-list > li[data-conversation-id="{conversation_id}"]')


def test_the_sidebar_follows_the_room_live_and_switches_conversation(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    first = confab_server.new_conversation("Sidebar: the office move")
    second = confab_server.new_conversation("Sidebar: 预算")
    alice = people.room("alice", first)
    page = alice.page
    expect(rows(page).nth(0)).to_have_attribute("data-conversation-id", str(second))
    expect(rows(page).nth(1)).to_have_attribute("data-conversation-id", str(first))
    expect(row(page, first).locator("a")).to_have_attribute("aria-current", "page")
    expect(row(page, second).locator("a")).not_to_have_attribute("aria-current", "page")
    expect(row(page, first).locator(".nav-people")).to_have_text("Alice")
    expect(row(page, second).locator(".nav-people")).to_have_count(0)

    bob = people.room("bob", second)
    expect(row(page, second).locator(".nav-people")).to_have_text("Bob")
    bob.send(script({"text": " ".join(["budget"] * 120)}))  # a few seconds of streaming
    expect(row(page, second)).to_have_attribute("data-running", "true")
    expect(row(page, second).locator(".nav-running")).to_be_visible()
    expect(bob.run_status).to_have_text("Completed")
    expect(row(page, second)).to_have_attribute("data-running", "false")

    third = confab_server.new_conversation("Sidebar: a newer one")
    expect(rows(page).nth(0)).to_have_attribute("data-conversation-id", str(third))
    expect(row(page, third).locator(".nav-title")).to_have_text("Sidebar: a newer one")

    row(page, second).locator("a").click()
    expect(page).to_have_url(confab_server.url + conversation_path(second))
    expect(page.locator("h1.room-title")).to_have_text("Sidebar: 预算")
    expect(row(page, second).locator("a")).to_have_attribute("aria-current", "page")
    expect(row(page, second).locator(".nav-people")).to_have_text("Alice, Bob")
    expect(row(page, first).locator(".nav-people")).to_have_count(0)  # alice left it
    expect(alice.assistant_bodies().last).to_contain_text("budget")
    assert_the_room_header_keeps_its_rows(page)
    docs_screenshot(page, "room-sidebar")


def assert_the_room_header_keeps_its_rows(page: Page) -> None:
    """At 1200 px the site's bar is one row (an owner's, the longest), the run bar is one row
    ("The agent answers" on one line beside its select, the exports at its end) and Rename
    sits beside the title; scrolled down, the sticky header covers the top of the window, with
    nothing of the transcript above it."""
    tops = page.evaluate("[...document.querySelector('.topbar').children]"
                         ".map((e) => e.getBoundingClientRect().bottom)")
    assert max(tops) < 60, tops  # one row (two would end near 80 px)
    box = {name: page.locator(selector).bounding_box() for name, selector in (
        ("status", "#run-status"), ("exports", ".exports"), ("label", "label.agent-mode"),
        ("select", "#agent-mode"), ("title", ".room-title"), ("rename", "button.rename"))}
    middle = {name: b["y"] + b["height"] / 2 for name, b in box.items()}
    assert abs(middle["status"] - middle["exports"]) < 8, box
    assert box["label"]["height"] <= box["select"]["height"] + 4, box  # one line
    assert box["rename"]["x"] - (box["title"]["x"] + box["title"]["width"]) < 30, box
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    header = page.locator(".room-header").bounding_box()
    assert header is not None and abs(header["y"]) < 1, header
    assert page.evaluate("!!document.elementFromPoint(600, 2)?.closest('.room-header')")


def test_on_a_phone_the_sidebar_folds_behind_a_toggle(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    first = confab_server.new_conversation("Sidebar on a phone")
    second = confab_server.new_conversation("Sidebar on a phone, newer")
    alice = people.room("alice", first)
    page = alice.page
    page.set_viewport_size({"width": 390, "height": 844})
    toggle = page.locator("#sidebar-toggle")
    nav = page.locator("#conversation-nav")
    expect(toggle).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(nav).to_be_hidden()
    title = page.locator(".room-title").bounding_box()
    assert title is not None and title["width"] > 200  # its own line, not a letter a line
    badge = page.locator("#connection").bounding_box()
    assert badge is not None and badge["x"] + badge["width"] <= 390  # not cut off
    # A long transcript leaves the page scrolled to its end: the list must open into view,
    # below the sticky room header, not behind it.
    page.evaluate("document.body.style.paddingBottom = '3000px';"
                  "window.scrollTo(0, document.body.scrollHeight)")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(nav).to_be_visible()
    box = nav.bounding_box()
    assert box is not None and box["width"] <= 390  # one column, no sideways scrolling
    first_row = row(page, second).locator("a").bounding_box()
    assert first_row is not None
    on_top = page.evaluate(
        "([x, y]) => !!document.elementFromPoint(x, y)?.closest('#conversation-nav')",
        [first_row["x"] + first_row["width"] / 2, first_row["y"] + first_row["height"] / 2])
    assert on_top, "the opened list is covered (or off screen)"
    row(page, second).locator("a").click()
    expect(page).to_have_url(confab_server.url + conversation_path(second))
    expect(page.locator("#conversation-nav")).to_be_hidden()  # folded again on the new page
    page.set_viewport_size({"width": 1200, "height": 900})
    expect(page.locator("#sidebar-toggle")).to_be_hidden()
    expect(page.locator("#conversation-nav")).to_be_visible()


def test_the_watchers_of_an_archived_or_deleted_conversation_are_told_at_once(
        confab_server: ConfabServer, people: People) -> None:
    conversation = confab_server.new_conversation("Sidebar: soon archived")
    bob = people.room("bob", conversation)
    page = bob.page
    expect(row(page, conversation)).to_be_visible()

    confab_server.api("POST", f"/api/conversations/{conversation}/archive")
    notice = page.locator('#notices .notice[data-kind="gone"]')
    expect(notice.locator(".notice-text")).to_have_text(
        "Alice archived this conversation: it is no longer listed in the room.")
    back = notice.get_by_role("link", name="Back to the room")
    expect(back).to_have_attribute("href", f"/rooms/{confab_server.demo['room']['id']}/")
    expect(row(page, conversation)).to_have_count(0)
    expect(page.locator("#connection")).to_have_text("Connected")  # it still works here

    confab_server.api("DELETE", f"/api/conversations/{conversation}", status=204)
    expect(notice.locator(".notice-text")).to_have_text(
        "Alice deleted this conversation: nothing more can be said here.")
    expect(page.locator("#connection")).to_have_text("Disconnected")
    expect(bob.textarea).to_be_disabled()
    notice.get_by_role("link", name="Back to the room").click()
    expect(page).to_have_url(confab_server.url + f"/rooms/{confab_server.demo['room']['id']}/")
