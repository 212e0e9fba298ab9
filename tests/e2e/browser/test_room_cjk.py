"""Writing Chinese in the room (issue 25): an input method's Enter never sends a half-typed
message, and an export downloads under its Chinese title.

The input method is Chromium's own, driven over the DevTools protocol:
``Input.imeSetComposition`` opens and updates a composition (what an IME's candidate line
shows), ``Input.insertText`` commits it, ``Input.dispatchKeyEvent`` presses keys.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import CDPSession, expect

from tests.e2e.browser.live import ConfabServer, People
from tests.e2e.browser.room import Room

pytestmark = pytest.mark.e2e

ENTER = {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13}
RECORD_KEYS = """area => {
  window.seenKeys = [];
  area.addEventListener("keydown", e => window.seenKeys.push(
    {key: e.key, isComposing: e.isComposing, keyCode: e.keyCode}), {capture: true});
}"""


@pytest.fixture
def conversation(confab_server: ConfabServer, request: pytest.FixtureRequest) -> int:
    return confab_server.new_conversation(request.node.name)


def press(cdp: CDPSession, **key: Any) -> None:
    """A key down and up, as the keyboard (or the IME) sends them."""
    for kind in ("keyDown", "keyUp"):
        cdp.send("Input.dispatchKeyEvent", {"type": kind, **key})


def compose(cdp: CDPSession, text: str) -> None:
    """The IME shows ``text`` as its composition (not yet committed)."""
    cdp.send("Input.imeSetComposition", {"text": text, "selectionStart": len(text),
                                         "selectionEnd": len(text)})


def composing_room(people: People, conversation: int) -> tuple[Room, CDPSession]:
    alice = people.room("alice", conversation)
    alice.textarea.evaluate(RECORD_KEYS)
    alice.textarea.focus()
    return alice, alice.page.context.new_cdp_session(alice.page)


def test_enter_that_picks_an_ime_candidate_does_not_send(people: People,
                                                         conversation: int) -> None:
    alice, cdp = composing_room(people, conversation)
    compose(cdp, "bu")
    compose(cdp, "部署")
    press(cdp, **ENTER)  # the IME's Enter: choose the candidate
    seen = alice.page.evaluate("window.seenKeys")
    assert seen and seen[-1]["key"] == "Enter" and seen[-1]["isComposing"], seen
    cdp.send("Input.insertText", {"text": "部署"})  # the composition is committed
    expect(alice.textarea).to_have_value("部署")  # a sent message empties the composer
    compose(cdp, "wan")
    compose(cdp, "完了")
    cdp.send("Input.insertText", {"text": "完了"})
    expect(alice.textarea).to_have_value("部署完了")
    assert alice.messages("user").count() == 0
    alice.textarea.press("Enter")  # a plain Enter sends what is there
    expect(alice.textarea).to_have_value("")
    expect(alice.messages("user").last).to_contain_text("部署完了")


def test_enter_with_key_code_229_does_not_send(people: People, conversation: int) -> None:
    # Safari (and some IMEs elsewhere) send the committing Enter after compositionend, so
    # isComposing is false; keyCode 229 ("an IME is processing this key") still tells.
    alice, cdp = composing_room(people, conversation)
    compose(cdp, "好的")
    cdp.send("Input.insertText", {"text": "好的"})
    press(cdp, key="Enter", code="Enter", windowsVirtualKeyCode=229)
    seen = alice.page.evaluate("window.seenKeys")
    assert seen and seen[-1]["keyCode"] == 229 and not seen[-1]["isComposing"], seen
    expect(alice.textarea).to_have_value("好的")
    assert alice.messages("user").count() == 0


def test_an_export_downloads_under_its_chinese_title(confab_server: ConfabServer,
                                                     people: People) -> None:
    conversation = confab_server.new_conversation("部署计划：第二阶段")
    alice = people.room("alice", conversation)
    for kind in ("md", "json"):
        with alice.page.expect_download() as download:
            alice.page.locator(f'a.export[data-export="{kind}"]').click()
        assert download.value.suggested_filename == f"部署计划：第二阶段.{kind}"
