"""The room in Simplified Chinese (issue 25): a browser that asks for Chinese (Playwright's
``locale``, which sets ``Accept-Language``) gets the page and its JavaScript in zh-Hans, and
the header's switch goes back to English. The agent-mode switch, its notice and "Ask the agent"
(issue 15) are in Chinese too.

With ``CONFAB_DOCS_SCREENSHOTS=1`` it replaces ``docs/screenshots/room-zh-hans.png`` (the
glyphs need a CJK font on the machine, e.g. Debian's fonts-wqy-microhei).
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People, docs_screenshot
from tests.e2e.browser.room import Room

pytestmark = pytest.mark.e2e


def test_the_room_speaks_chinese_to_a_chinese_browser(confab_server: ConfabServer,
                                                      people: People) -> None:
    conversation = confab_server.new_conversation("发布前检查")
    people.context("alice")  # signs alice in once; her cookies seed the Chinese context
    context = people.new_context(storage_state=people.states["alice"], locale="zh-CN")
    try:
        room = Room(context.new_page(), conversation, "alice")
        room.open()
        page = room.page
        assert page.locator("html").get_attribute("lang") == "zh-hans"
        expect(page.locator("#connection")).to_have_text("已连接")  # the JavaScript catalog
        expect(room.textarea).to_have_attribute("placeholder", "给房间和智能体发消息——Enter 发送，"
                                                               "Shift+Enter 换行")
        reply = "好的，我先看看最近两次构建的日志，再把超时的迁移拆成小批次。"
        room.send(json.dumps({"script": [{"text": reply}]}, ensure_ascii=False))
        expect(room.assistant_bodies().last).to_have_text(reply)
        expect(room.run_status).to_have_text("已完成")
        expect(room.messages("assistant").last.locator(".author")).to_have_text("智能体")
        docs_screenshot(page, "room-zh-hans")
        # The engine states its approval reason in English; the room says it in Chinese.
        room.send(json.dumps({"script": [
            {"tool_call": {"name": "Bash", "arguments": {"command": "echo hi > out.txt"}}},
            {"text": "好的。"}]}))
        card = page.locator(".tool-card").last
        expect(card.locator(".tool-reason")).to_have_text(
            "按团队的工具策略，Bash 需要一位成员审批。")
        card.locator('button[data-action="deny"]').click()
        expect(room.run_status).to_have_text("已完成")
        # What issue 15 added to the room speaks Chinese too: the mode switch (the template),
        # its notice and "Ask the agent" (the JavaScript catalog).
        expect(page.locator("label.agent-mode")).to_contain_text("智能体回复")
        expect(page.locator('#agent-mode option[value="always"]')).to_have_text("每条消息")
        page.locator("#agent-mode").select_option("mention")
        expect(page.locator("#notices")).to_contain_text("将智能体设为仅在被提及或被请求时回复。")
        expect(page.locator('button[data-action="ask-agent"]')).to_have_text("请智能体回复")
        page.locator('form.language-switch button[value="en"]').click()  # the header's switch
        expect(page.locator("html")).to_have_attribute("lang", "en")
        expect(page.locator("#connection")).to_have_text("Connected")
    finally:
        context.close()
