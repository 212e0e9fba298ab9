"""Signing in to an MCP server that needs OAuth, in a real browser (issue 23): bob's run skips
the server with a notice, its "Sign in" link leads to the sign-in page, the browser goes to the
server's authorization endpoint and back to confab's callback, and bob's next run calls the
server's tool with his own sign-in; then he signs out and the server revokes the grant. The
server is the SDK-written OAuth-protected one (tests/services/oauth_mcp.py), on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People
from tests.e2e.browser.room import script
from tests.services.django_proc import last_json, run_script
from tests.services.oauth_mcp import AuthServerState, oauth_mcp_server

pytestmark = pytest.mark.e2e
WHOAMI = {"tool_call": {"name": "mcp__tracker__whoami", "arguments": {}}}


@pytest.fixture
def conversation(confab_server: ConfabServer, request: pytest.FixtureRequest) -> int:
    return confab_server.new_conversation(request.node.name)


@pytest.fixture
def tracker(confab_server: ConfabServer) -> Iterator[tuple[int, AuthServerState]]:
    """The demo team's person-scoped server ``tracker`` (removed afterwards, so the package's
    other runs do not meet it): ``(server id, the authorization server's state)``."""
    with oauth_mcp_server() as (url, state):
        code = (
            "import json\n"
            "from apps.integrations.models import McpServerConfig\n"
            f"server = McpServerConfig.objects.create(team_id={confab_server.demo['team']['id']},"
            f" name='tracker', transport='streamable_http', url={url!r}, sign_in='person')\n"
            "print(json.dumps({'id': server.pk}))\n")
        server_id = last_json(run_script(code, confab_server.env))["id"]
        try:
            yield server_id, state
        finally:
            run_script("from apps.integrations.models import McpServerConfig\n"
                       f"McpServerConfig.objects.filter(pk={server_id}).delete()\n",
                       confab_server.env)


def test_bob_signs_in_from_the_runs_notice_and_his_next_run_uses_his_sign_in(
        confab_server: ConfabServer, people: People, conversation: int,
        tracker: tuple[int, AuthServerState]) -> None:
    server_id, state = tracker
    room = people.room("bob", conversation)
    room.send(script(WHOAMI, {"text": "first"}))
    notice = room.page.locator("#notices .notice", has_text="MCP server 'tracker' is skipped")
    expect(notice).to_be_visible()
    link = notice.locator("a.notice-link")
    expect(link).to_have_text("Sign in")
    team = confab_server.demo["team"]["id"]
    expect(link).to_have_attribute("href", f"/teams/{team}/mcp/{server_id}/sign-in/")
    link.click()
    page = room.page
    expect(page.locator("#sign-in-state")).to_have_text("Not signed in.")
    state.next_subject = "remote-bob"
    page.get_by_role("button", name="Sign in to tracker").click()  # there and back again
    expect(page.locator("#sign-in-state")).to_contain_text("Signed in as bob, expires")
    assert len(state.issued) == 1
    html = page.content()
    assert state.issued[0] not in html and "rt-" not in html

    room.open()
    room.send(script(WHOAMI, {"text": "second"}))
    card = room.tool_cards().last
    expect(card.locator(".tool-status")).to_contain_text("done")
    expect(card.locator(".tool-result-preview")).to_contain_text("signed in as remote-bob")

    page.goto(f"/teams/{team}/mcp/{server_id}/sign-in/")
    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("#sign-in-state")).to_have_text("Not signed in.")
    assert len(state.revoked) == 1 and state.issued[0] not in state.access
    assert json.dumps(state.resources).count("/mcp") == 1  # RFC 8707 reached the server
