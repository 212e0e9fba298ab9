"""The lists that show conversation titles outside the room — the room list, a room's page and
the search page — on a phone, in a real browser (issue 19 review): a long unbroken title (no
space to break at) wraps inside the screen and leaves who started it and when in view, where it
used to widen the page to thousands of pixels."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People

pytestmark = pytest.mark.e2e

WIDTH = 360


def test_a_long_unbroken_title_wraps_inside_a_phone_screen(
        confab_server: ConfabServer, people: People) -> None:
    conversation = confab_server.new_conversation("W" * 100)
    page = people.page("alice")
    page.set_viewport_size({"width": WIDTH, "height": 740})
    room = confab_server.demo["room"]["id"]
    for path, row, parts in (
            (f"/rooms/{room}/", "#conversation-list > li", ("a", ".meta")),
            ("/rooms/", ".room-item .conversation-list > li", ("a", "time")),
            ("/search/?q=WWW", "#search-results > li", (".hit-title", ".hit-where"))):
        page.goto(path)
        shown = page.locator(f'{row}[data-conversation-id="{conversation}"]').first
        expect(shown).to_be_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= WIDTH, f"{path} is {width} px wide"
        for part in parts:
            box = shown.locator(part).first.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= WIDTH, (
                path, part, box)
