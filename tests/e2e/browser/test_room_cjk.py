"""Writing Chinese in the room (issue 25): an input method's Enter never sends a half-typed
message nor picks a mention, its Escape never closes an editor, "@" mentions work with the
full-width "＠" and a Chinese agent handle, and an export downloads under its Chinese title.

The input method is Chromium's own, driven over the DevTools protocol:
``Input.imeSetComposition`` opens and updates a composition (what an IME's candidate line
shows), ``Input.insertText`` commits it, ``Input.dispatchKeyEvent`` presses keys.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import CDPSession, expect

from tests.e2e.browser.live import ConfabServer, People
from tests.e2e.browser.room import Room, script
from tests.services.django_proc import last_json, run_script

pytestmark = pytest.mark.e2e

ENTER = {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13}
ESCAPE = {"key": "Escape", "code": "Escape", "windowsVirtualKeyCode": 27}
RECORD_KEYS = """() => {
  window.seenKeys = [];
  document.addEventListener("keydown", e => window.seenKeys.push(
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
    alice.page.evaluate(RECORD_KEYS)
    alice.textarea.focus()
    return alice, alice.page.context.new_cdp_session(alice.page)


def last_key(room: Room) -> dict[str, Any]:
    seen = room.page.evaluate("window.seenKeys")
    assert seen, "no keydown reached the page"
    return seen[-1]


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


def test_escape_while_composing_keeps_the_editor_and_the_rename_form(people: People,
                                                                   conversation: int) -> None:
    alice, cdp = composing_room(people, conversation)
    alice.send(script({"text": "好的"}))
    expect(alice.run_status).to_have_text("Completed")
    alice.messages("user").locator('button[data-action="edit-message"]').click()
    editor = alice.transcript.locator("form.message-edit textarea")
    expect(editor).to_be_focused()
    editor.fill("")
    for escape in (ESCAPE, {**ESCAPE, "windowsVirtualKeyCode": 229}):
        compose(cdp, "xiugai")  # the candidate line is open
        press(cdp, **escape)  # the IME's Escape: it drops its candidates, nothing else
        assert last_key(alice)["isComposing"] or last_key(alice)["keyCode"] == 229
        expect(editor).to_be_visible()
        cdp.send("Input.insertText", {"text": "修改"})
    expect(editor).to_have_value("修改修改")
    editor.press("Escape")  # a plain Escape still closes the editor
    expect(editor).to_have_count(0)

    alice.page.get_by_role("button", name="Rename").click()
    title = alice.page.locator("#rename-title")
    expect(title).to_be_focused()
    title.fill("")
    for escape in (ESCAPE, {**ESCAPE, "windowsVirtualKeyCode": 229}):
        compose(cdp, "biaoti")
        press(cdp, **escape)
        expect(alice.page.locator("#rename")).to_be_visible()
        cdp.send("Input.insertText", {"text": "标题"})
    expect(title).to_have_value("标题标题")
    title.press("Escape")
    expect(alice.page.locator("#rename")).to_be_hidden()


def set_agent_handle(server: ConfabServer, handle: str) -> None:
    """The demo team's name for its agent, written in a Django process on the server's
    database (the room page reads it when it loads)."""
    code = ("from apps.accounts.models import Team\n"
            f"Team.objects.filter(pk={server.demo['team']['id']}).update(agent_handle={handle!r})\n"
            "print('{}')\n")
    last_json(run_script(code, server.env))


def test_mentions_with_a_full_width_at_sign_a_chinese_handle_and_an_ime_enter(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name, agent_mode="mention")
    set_agent_handle(confab_server, "助手")
    try:
        alice, cdp = composing_room(people, conversation)
        options = alice.page.locator("#mention-list [role=option]")
        cdp.send("Input.insertText", {"text": "请＠助"})  # a Chinese keyboard's ＠
        expect(options).to_have_text(["@助手 (the agent)"])
        press(cdp, key="Enter", code="Enter", windowsVirtualKeyCode=229)  # Safari's IME commit
        assert last_key(alice) == {"key": "Enter", "isComposing": False, "keyCode": 229}
        expect(options).to_have_count(1)  # still open: nothing was picked or sent
        expect(alice.textarea).to_have_value("请＠助")
        alice.textarea.press("Enter")  # a plain Enter picks, and writes "@"
        expect(alice.textarea).to_have_value("请@助手 ")
        cdp.send("Input.insertText", {"text": "总结一下"})
        alice.textarea.press("Enter")
        expect(alice.messages("user").locator(".message-flag.wakes")).to_have_count(1)
        expect(alice.assistant_bodies()).to_have_count(1)  # the server heard its name
        alice.send("＠助手 再说一遍", enter=True)  # the full-width form wakes it too
        expect(alice.assistant_bodies()).to_have_count(2)
    finally:
        set_agent_handle(confab_server, "agent")
