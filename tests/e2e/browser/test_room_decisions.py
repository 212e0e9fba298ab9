"""Decisions on tool calls in a real browser (issue 16): who denied a call is still shown after
a reload, and the denied call is "denied", not a red "error"."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People
from tests.e2e.browser.room import script

pytestmark = pytest.mark.e2e


@pytest.fixture
def conversation(confab_server: ConfabServer, request: pytest.FixtureRequest) -> int:
    return confab_server.new_conversation(request.node.name)


def test_a_denied_call_still_says_who_denied_it_after_a_reload(
        people: People, conversation: int) -> None:
    alice = people.room("alice", conversation)
    after = "The command was denied, so nothing was written."
    alice.send(script(
        {"tool_call": {"name": "Bash", "arguments": {"command": "echo hi > out.txt"}}},
        {"text": after}))
    card = alice.tool_cards()
    expect(card.locator('button[data-action="deny"]')).to_be_visible()
    card.locator('button[data-action="deny"]').click()
    expect(alice.assistant_bodies().last).to_contain_text(after)
    expect(alice.run_status).to_have_text("Completed")
    alice.reload()
    card = alice.tool_cards()
    expect(card).to_have_count(1)
    expect(card.locator(".decided-by")).to_have_text("Denied by Alice")
    expect(card.locator(".tool-status")).to_contain_text("denied")
    expect(card.locator(".tool-status")).not_to_contain_text("error")
    assert card.get_attribute("data-status") == "denied"


def test_a_reload_mid_batch_keeps_finished_calls_the_step_and_the_context_gauge(
        people: People, conversation: int) -> None:
    alice = people.room("alice", conversation)
    alice.send(script(
        {"tool_call": {"name": "Glob", "arguments": {"pattern": "*.md"}}},
        {"tool_call": {"name": "Bash", "arguments": {"command": "echo hi > out.txt"}}},
        {"text": "finished"}))
    glob = alice.tool_cards().filter(has_text="Glob")
    expect(glob).to_have_attribute("data-status", "done")
    expect(alice.tool_cards().filter(has_text="Bash")).to_have_attribute("data-status", "waiting")
    alice.reload()
    expect(alice.tool_cards().filter(has_text="Glob")).to_have_attribute("data-status", "done")
    expect(alice.run_status).to_contain_text("step 1")
    expect(alice.page.locator("#usage .usage-context")).to_contain_text("% full")
    bash = alice.tool_cards().filter(has_text="Bash")
    bash.locator('button[data-action="deny"]').click()
    expect(alice.run_status).to_have_text("Completed")


def test_a_sub_agents_tool_call_and_question_are_answered_in_the_room(
        people: People, conversation: int) -> None:
    alice = people.room("alice", conversation)
    sub = script({"tool_call": {"name": "Bash", "arguments": {"command": "echo sub > sub.txt"}}},
                 {"tool_call": {"name": "AskUser", "arguments": {"question": "Which branch?"}}},
                 {"text": "sub-agent finished"})
    alice.send(script({"tool_call": {"name": "Task", "arguments": {
        "description": "write a file", "prompt": sub}}}, {"text": "all done"}))
    bash = alice.tool_cards().filter(has_text="Bash (sub-agent)")
    expect(bash.locator('button[data-action="approve"]')).to_be_visible()
    alice.reload()  # the wait is in the state frame too
    bash = alice.tool_cards().filter(has_text="Bash (sub-agent)")
    bash.locator('button[data-action="approve"]').click()
    expect(bash.locator(".decided-by")).to_have_text("Approved by Alice")
    expect(bash).to_have_attribute("data-status", "done")
    ask = alice.tool_cards().filter(has_text="AskUser (sub-agent)")
    ask.locator("textarea[name=answer]").fill("main")
    ask.locator('button[data-action="answer"]').click()
    expect(ask.locator(".answered-by")).to_have_text("Answered by Alice: main")
    expect(alice.assistant_bodies().last).to_contain_text("all done")
    expect(alice.run_status).to_have_text("Completed")
    alice.reload()  # decided and answered, the sub-agent's cards are still there
    bash = alice.tool_cards().filter(has_text="Bash (sub-agent)")
    expect(bash.locator(".decided-by")).to_have_text("Approved by Alice")
    expect(bash).to_have_attribute("data-status", "done")
    expect(alice.tool_cards().filter(has_text="AskUser (sub-agent)").locator(".answered-by")
           ).to_have_text("Answered by Alice: main")


def test_a_member_edits_a_calls_arguments_in_the_card_and_approves_them(
        people: People, conversation: int) -> None:
    alice = people.room("alice", conversation)
    alice.send(script(
        {"tool_call": {"name": "Bash", "arguments": {"command": "echo hi > out.txt"}}},
        {"text": "ran the edited command"}))
    card = alice.tool_cards()
    card.locator('button[data-action="edit"]').click()
    area = card.locator("form.tool-edit textarea[name=arguments]")
    expect(area).to_be_visible()
    area.fill("{not json")
    card.locator('button[data-action="approve-edited"]').click()
    expect(card.locator(".tool-edit-error")).to_contain_text("Not valid JSON")
    area.fill('{"command": 5}')
    card.locator('button[data-action="approve-edited"]').click()
    expect(alice.page.locator(".notice")).to_contain_text("is not of type 'string'")
    expect(area).to_be_enabled()  # the call still waits: edit again
    area.fill('{"command": "echo edited-in-the-card"}')
    card.locator('button[data-action="approve-edited"]').click()
    expect(card.locator(".decided-by")).to_have_text("Approved by Alice with changes")
    expect(card.locator(".tool-edited")).to_contain_text("echo edited-in-the-card")
    expect(alice.assistant_bodies().last).to_contain_text("ran the edited command")
    alice.reload()
    card = alice.tool_cards()
    expect(card.locator(".decided-by")).to_have_text("Approved by Alice with changes")
    expect(card.locator(".tool-edited")).to_contain_text("echo edited-in-the-card")
