"""The browser set-up itself: Debian's Chromium reaches the live server and a person signs in."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People, login

pytestmark = pytest.mark.e2e


def test_the_login_page_loads_and_alice_signs_in(confab_server: ConfabServer,
                                                  people: People) -> None:
    context = people.new_context()
    try:
        page = context.new_page()
        response = page.goto("/accounts/login/")
        assert response is not None and response.status == 200
        expect(page.locator("#id_username")).to_be_visible()
        expect(page.locator("#id_password")).to_be_visible()
        page.close()
        signed_in = login(context, "alice", confab_server.password("alice"))
        assert "/accounts/login/" not in signed_in.url
        assert any(c["name"] == "sessionid" for c in context.cookies())
    finally:
        context.close()
