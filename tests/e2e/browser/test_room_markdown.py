"""Markdown in the room is rendered safely (issue 5): no script from a model or a person runs.

The page's Content-Security-Policy already forbids inline scripts, so this test switches it off
(Playwright's ``bypass_csp``) to test the renderer itself: raw HTML stays text, Markdown's own
links lose ``javascript:`` URLs, and nothing a person or the model wrote becomes an element with
an event handler, a script, a frame or a form. Every wait is on the page's DOM.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Dialog, expect

from tests.e2e.browser.live import ConfabServer, People
from tests.e2e.browser.room import Room, script

pytestmark = pytest.mark.e2e

PAYLOADS = "\n\n".join([
    "<script>window.__pwned = 'script'</script>",
    '<img src="x" onerror="window.__pwned = \'img\'">',
    '<svg onload="window.__pwned = \'svg\'"></svg>',
    '<iframe srcdoc="<script>parent.__pwned = \'iframe\'</script>"></iframe>',
    '<details open ontoggle="window.__pwned = \'details\'">x</details>',
    '<form id="composer"><button formaction="javascript:window.__pwned=1">go</button></form>',
    "[a link](javascript:window.__pwned='link')",
    "![an image](javascript:window.__pwned='image')",
    '<a href="javascript:window.__pwned=\'anchor\'">anchor</a>',
    "**bold** and `code`",
])
DANGEROUS = ", ".join(f"#transcript {selector}" for selector in (
    "script", "iframe", "svg", "form:not(.ask-user)", "[style]", "[id='composer']",
    "a[href^='javascript']", "img[src^='javascript']"))
ON_ATTRIBUTES = """root => [...root.querySelectorAll('*')].flatMap(el => [...el.attributes]
    .filter(a => a.name.startsWith('on')).map(a => el.tagName + ' ' + a.name))"""


@pytest.fixture
def conversation(confab_server: ConfabServer) -> int:
    return confab_server.new_conversation("Markdown safety")


def test_no_script_from_a_model_or_a_person_runs_even_without_the_csp(
        confab_server: ConfabServer, people: People, conversation: int) -> None:
    people.context("alice")  # signs alice in once; her cookies open the CSP-less context
    context = people.new_context(storage_state=people.states["alice"], bypass_csp=True)
    try:
        page = context.new_page()
        dialogs: list[str] = []

        def dismiss(dialog: Dialog) -> None:
            dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", dismiss)
        room = Room(page, conversation, "alice")
        room.open()
        room.wait_until_present(confab_server.user_id("alice"))

        # the person's message carries the payloads; the model's thinking, reply and tool
        # call repeat them
        room.send(script({"thinking": PAYLOADS},
                         {"tool_call": {"name": "Glob", "arguments": {"pattern": PAYLOADS}}},
                         {"text": PAYLOADS}))
        expect(room.run_status).to_contain_text("Completed")
        expect(room.assistant_bodies()).to_have_count(2)
        last = room.assistant_bodies().last
        expect(last.locator("strong")).to_have_text("bold")  # Markdown still renders
        expect(last.locator("code")).to_have_text("code")
        expect(last).to_contain_text("<script>window.__pwned = 'script'</script>")  # as text
        expect(room.tool_cards().locator(".tool-args")).to_contain_text("<svg onload=")

        assert page.evaluate("() => window.__pwned") is None
        assert dialogs == []
        assert page.locator(DANGEROUS).count() == 0, page.locator(DANGEROUS).evaluate_all(
            "els => els.map(e => e.outerHTML)")
        assert room.transcript.evaluate(ON_ATTRIBUTES) == []
        assert page.locator("#composer").count() == 1  # the page's own, not a clobbered one
    finally:
        context.close()
