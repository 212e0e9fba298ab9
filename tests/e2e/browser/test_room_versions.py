"""Regenerate, earlier versions and titles in a real browser (issue 19): a regenerated answer
keeps the old one as an earlier version that a switch shows; the first exchange titles the
conversation and a rename reaches every watcher live."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People, docs_screenshot

pytestmark = pytest.mark.e2e


def test_a_regenerated_answer_keeps_the_earlier_one_behind_a_switch(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name)
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    alice.send("Name a colour.")
    expect(alice.assistant_bodies()).to_have_count(1)
    expect(alice.run_status).to_have_text("Completed")

    bob.page.get_by_role("button", name="Regenerate").click()
    for room in (alice, bob):
        expect(room.run_status).to_have_text("Completed")
        expect(room.messages("assistant")).to_have_count(2)  # both are in the transcript
        expect(room.assistant_bodies().locator("visible=true")).to_have_count(1)
    switch = alice.page.locator('button[data-action="earlier-versions"]')
    expect(switch).to_have_text("Show earlier versions (1)")
    switch.click()
    expect(switch).to_have_text("Hide earlier versions (1)")
    expect(alice.assistant_bodies().locator("visible=true")).to_have_count(2)
    earlier = alice.transcript.locator("article.message.superseded")
    expect(earlier).to_have_count(1)
    expect(earlier.locator(".message-flag.earlier")).to_have_text("earlier version")
    docs_screenshot(alice.page, "room-earlier-versions")

    bob.reload()  # the state frame carries the earlier version too
    expect(bob.messages("assistant")).to_have_count(2)
    expect(bob.page.locator('button[data-action="earlier-versions"]')).to_have_text(
        "Show earlier versions (1)")


def test_the_first_exchange_titles_the_conversation_and_a_rename_reaches_everyone(
        confab_server: ConfabServer, people: People) -> None:
    conversation = confab_server.new_conversation("New conversation")
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    alice.send("Plan the office move to Berlin next spring")
    for room in (alice, bob):
        expect(room.page.locator(".room-title")).to_have_text("Plan the office move to Berlin")
    expect(bob.page).to_have_title(re.compile(r"^Plan the office move to Berlin · "))

    bob.page.get_by_role("button", name="Rename").click()
    bob.page.locator("#rename-title").fill("Berlin move 2027")
    bob.page.locator("#rename-title").press("Enter")
    for room in (alice, bob):
        expect(room.page.locator(".room-title")).to_have_text("Berlin move 2027")
    expect(bob.page.locator("#rename")).to_be_hidden()
