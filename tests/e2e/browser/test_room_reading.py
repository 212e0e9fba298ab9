"""Reading aids in a real browser (issue 19, "Reading"): copy buttons on code blocks and on
messages, each person's initials in their own colour, long tool outputs folded."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e.browser.live import ConfabServer, People, docs_screenshot
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


def contrast(page: Page, badge: Locator) -> float:
    """The WCAG contrast ratio of ``badge``'s text against its background, as computed."""
    return page.evaluate("""(el) => {
      const rgb = (c) => c.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number);
      const lum = (c) => {
        const [r, g, b] = rgb(c).map((v) => {
          v /= 255;
          return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
      };
      const style = getComputedStyle(el);
      const [a, b] = [lum(style.color), lum(style.backgroundColor)].sort((x, y) => y - x);
      return (a + 0.05) / (b + 0.05);
    }""", badge.element_handle())


def test_each_person_has_their_initials_in_a_colour_of_their_own(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name)
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    alice.send("Hello from Alice")
    expect(alice.messages("assistant")).to_have_count(1)
    bob.send("Hello from Bob")
    expect(alice.messages("assistant")).to_have_count(2)

    badges = alice.messages("user").locator(".initials")
    expect(badges).to_have_text(["A", "B"])
    expect(alice.messages("assistant").locator(".initials:visible")).to_have_count(0)  # people only
    colours = [badges.nth(i).get_attribute("data-colour") for i in range(2)]
    index = alice.page.evaluate("""async (ids) => {
      const { colourIndex } = await import("/static/rooms/initials.js");
      return ids.map((id) => String(colourIndex(id)));
    }""", [confab_server.user_id("alice"), confab_server.user_id("bob")])
    assert colours == index  # the colour follows the person's id ...
    bob.reload()
    expect(bob.messages("user").locator(".initials")).to_have_text(["A", "B"])
    assert [bob.messages("user").locator(".initials").nth(i).get_attribute("data-colour")
            for i in range(2)] == colours  # ... the same for every watcher, after a reload

    for scheme in ("light", "dark"):
        context = people.new_context(storage_state=people.states["alice"], color_scheme=scheme)
        try:
            room = Room(context.new_page(), conversation, f"alice-{scheme}")
            room.open()
            badge = room.messages("user").locator(".initials")
            expect(badge).to_have_count(2)
            for i in range(2):
                ratio = contrast(room.page, badge.nth(i))
                assert ratio >= 4.5, f"{scheme}: initials contrast {ratio:.2f} < 4.5"
        finally:
            context.close()


HOSTILE_CODE = 'def f():\n    return "</code><img src=x onerror=window.pwned=1>"'


def test_code_blocks_are_highlighted_within_the_pages_csp(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name)
    alice = people.room("alice", conversation)
    violations: list[str] = []
    alice.page.on("console", lambda message: violations.append(message.text)
                  if "Content Security Policy" in message.text else None)
    text = f"```python\n{HOSTILE_CODE}\n```\n\n```nosuchlanguage\nplain words\n```"
    alice.send(script({"text": text}))
    blocks = alice.messages("assistant").locator(".body pre > code")
    expect(blocks).to_have_count(2)
    python, unknown = blocks.nth(0), blocks.nth(1)
    expect(python).to_have_attribute("data-language", "python")
    expect(python.locator("span.hljs-keyword").first).to_have_text("def")
    expect(python.locator("span.hljs-string")).to_have_text(
        '"</code><img src=x onerror=window.pwned=1>"')
    expect(python).to_have_text(HOSTILE_CODE)  # the code itself is unchanged, shown as text
    assert alice.page.locator(".body img").count() == 0
    assert alice.page.evaluate("window.pwned") is None
    expect(unknown.locator("span")).to_have_count(0)  # an unknown language stays plain
    expect(unknown).to_have_text("plain words\n")
    keyword = python.locator("span.hljs-keyword").first
    assert keyword.evaluate("(el) => getComputedStyle(el).color") != python.evaluate(
        "(el) => getComputedStyle(el).color")  # the theme's stylesheet applies
    assert violations == []
    docs_screenshot(alice.page, "room-reading")
