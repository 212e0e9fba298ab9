"""The agent writes the team wiki while the room watches, in a real browser (issue 10): the
offline model calls WikiWrite; alice and bob both get a line under the answer with links to
the page and its diff; the line survives a reload (the state frame); "view" opens the page.

Every wait is on the page's DOM (Playwright's ``expect``), never a sleep.
"""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People
from tests.e2e.browser.room import script

pytestmark = pytest.mark.e2e


def test_alice_and_bob_see_the_agents_wiki_change_with_links(
        confab_server: ConfabServer, people: People) -> None:
    conversation = confab_server.new_conversation("wiki change")
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    ids = confab_server.user_id("alice"), confab_server.user_id("bob")
    alice.wait_until_present(*ids)
    bob.wait_until_present(*ids)
    path = f"Decisions-{uuid.uuid4().hex[:8]}.md"
    alice.send(script(
        {"tool_call": {"name": "WikiWrite", "arguments": {
            "path": path, "content": "# Decisions\n\n- Ship on Fridays.\n",
            "message": "Record the shipping decision"}}},
        {"text": "Written down."}))

    for room in (alice, bob):
        line = room.transcript.locator(f'.wiki-change[data-path="{path}"]')
        expect(line).to_have_count(1)
        expect(line).to_contain_text(
            f"agent (for Alice) created {path}: Record the shipping decision — view · diff")
        view = line.get_by_role("link", name="view")
        expect(view).to_have_attribute("href", re.compile(rf"^/teams/\d+/wiki/{path}$"))
        expect(line.get_by_role("link", name="diff")).to_have_attribute(
            "href", re.compile(rf"^/teams/\d+/wiki/-/diff/{path}\?from=[0-9a-f]{{40}}&to="))
        expect(room.assistant_bodies().last).to_contain_text("Written down.")

    bob.reload()  # the state frame brings the line back
    line = bob.transcript.locator(f'.wiki-change[data-path="{path}"]')
    expect(line).to_have_count(1)
    line.get_by_role("link", name="view").click()
    expect(bob.page).to_have_url(re.compile(rf"/wiki/{path}$"))
    expect(bob.page.locator("main")).to_contain_text("Ship on Fridays.")
