"""Reading aids in a real browser (issue 19, "Reading"): copy buttons on code blocks and on
messages, each person's initials in their own colour, long tool outputs folded."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People
from tests.e2e.browser.room import Room, script

pytestmark = pytest.mark.e2e

CODE = "def add(a, b):\n    return a + b"
ANSWER = f"Here it is:\n\n```python\n{CODE}\n```\n\nUse it **well**."


def clipboard(room: Room) -> str:
    return room.page.evaluate("navigator.clipboard.readText()")


def test_copy_buttons_put_a_code_block_or_a_whole_message_on_the_clipboard(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name)
    people.context("bob").grant_permissions(["clipboard-read", "clipboard-write"])
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    alice.send(script({"text": ANSWER}))
    answer = bob.messages("assistant")
    expect(answer.locator(".body pre")).to_have_text(CODE)

    code_copy = answer.locator(".code-block > button.copy")
    expect(code_copy).to_have_accessible_name("Copy code")
    code_copy.click()
    expect(code_copy).to_have_text("Copied")
    assert clipboard(bob) == CODE

    message_copy = answer.locator(".message-head > button.copy")
    expect(message_copy).to_have_text("Copy")  # each button shows its own state
    message_copy.click()
    expect(message_copy).to_have_text("Copied")
    assert clipboard(bob) == ANSWER  # the Markdown as written, not the rendered text

    bob.messages("user").locator(".message-head > button.copy").click()
    assert clipboard(bob) == script({"text": ANSWER})


def bash(command: str) -> dict:
    return {"tool_call": {"name": "Bash", "arguments": {"command": command}}}


def test_long_tool_outputs_are_folded_until_show_all(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name)
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    alice.send(script(bash("seq 1 60"), bash("printf '%03000d' 7"), bash("echo short"),
                      {"text": "Done."}))
    expect(alice.assistant_bodies().last).to_have_text("Done.")

    lines, wide, short = (bob.tool_cards().nth(i).locator(".tool-result") for i in range(3))
    # more than 20 lines: the first 20 are shown
    expect(lines.locator("pre")).to_have_text("\n".join(map(str, range(1, 21))) + "\n…")
    # one line of 3,000 characters: the first 2,000
    expect(wide.locator("pre")).to_have_text("0" * 2000 + "\n…")
    expect(short.locator("pre")).to_contain_text("short")
    expect(short.locator("button.tool-result-toggle")).to_be_hidden()

    toggle = lines.locator("button.tool-result-toggle")
    expect(toggle).to_have_text(re.compile(r"^Show all \(\d+ characters\)$"))
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    expect(lines.locator("pre")).to_contain_text("\n59\n60")
    expect(toggle).to_have_text("Show less")
    expect(wide.locator("pre")).to_have_text("0" * 2000 + "\n…")  # each card folds on its own
    toggle.click()
    expect(lines.locator("pre")).not_to_contain_text("21")
