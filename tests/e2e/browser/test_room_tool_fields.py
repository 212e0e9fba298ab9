"""Streaming tool arguments shown as fields in a real browser (issue 19, "Reading"): fakellm
streams a Write call's arguments in 12-character pieces, and every state the card goes through
shows key → value fields, never the raw JSON text; the whole arguments look the same."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People, docs_screenshot
from tests.e2e.browser.room import script

pytestmark = pytest.mark.e2e

# Long enough to stream for several seconds at the harness's pace (FAKELLM_RATE pieces a second)
CONTENT = "".join(f"Line {n}: the quick brown fox jumps over the lazy dog, \"quoted\".\n"
                  for n in range(1, 41))
PATH = "notes/fox.txt"

# Every change to the first card's arguments, as the page shows them: [status, fields, text].
RECORD = """() => {
  window.argStates = [];
  const seen = () => {
    const card = document.querySelector("#transcript .tool-card");
    const args = card && card.querySelector(".tool-args");
    if (!args || args.hidden) return;
    const fields = [...args.querySelectorAll(".tool-field")].map(
      (row) => [row.dataset.key, row.querySelector("dd").textContent]);
    const state = [card.dataset.status, fields, args.textContent];
    const last = window.argStates.at(-1);
    if (!last || JSON.stringify(last) !== JSON.stringify(state)) window.argStates.push(state);
  };
  new MutationObserver(seen).observe(document.querySelector("#transcript"),
    { subtree: true, childList: true, characterData: true, attributes: true });
}"""


def test_streaming_tool_arguments_are_shown_as_fields_while_they_arrive(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name)
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    expect(bob.transcript).to_have_attribute("aria-busy", "false")
    bob.page.evaluate(RECORD)
    alice.send(script({"tool_call": {"name": "Write",
                                     "arguments": {"file_path": PATH, "content": CONTENT}}},
                      {"text": "Written."}))

    streaming = bob.transcript.locator('.tool-card[data-status="streaming"]')  # no call id yet
    content = streaming.locator('.tool-field[data-key="content"] > dd')
    expect(content).to_contain_text("Line 3:")  # part of the value, before the rest arrives
    docs_screenshot(bob.page, "room-streaming-tool-fields", part=streaming)
    card = bob.tool_cards()
    expect(card.locator(".tool-status")).to_have_text("waiting for approval")

    states = bob.page.evaluate("window.argStates")
    during = [fields for status, fields, _ in states if status == "streaming"]
    assert len(during) >= 5, states  # seen growing, piece by piece
    for status, fields, text in states:
        assert not text.lstrip().startswith("{") and '": "' not in text, (status, text)
        assert [key for key, _ in fields] in (["file_path"], ["file_path", "content"]), fields
        assert all(CONTENT.startswith(value) for key, value in fields if key == "content")
    assert [f for f in during if len(f) == 2 and 0 < len(f[1][1]) < len(CONTENT)], during

    # the whole arguments: the same fields, for the sender too and after a reload
    for room in (alice, bob):
        fields = room.tool_cards().locator(".tool-field")
        expect(fields.locator("dt")).to_have_text(["file_path", "content"])
        expect(fields.locator("dd")).to_have_text([PATH, CONTENT], use_inner_text=False)
    alice.reload()
    expect(alice.tool_cards().locator(".tool-field dd")).to_have_text(
        [PATH, CONTENT], use_inner_text=False)
    bob.tool_cards().locator('button[data-action="approve"]').click()
    expect(alice.assistant_bodies().last).to_have_text("Written.")
