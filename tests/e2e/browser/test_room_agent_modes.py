"""Agent modes in a real browser (issue 15): the mode is shown and switchable; in ``always``
every message gets an answer; in ``mention`` people chat, "@" completes the agent and the
people, a message that calls the agent is marked for its author, and "Ask the agent" asks it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People
from tests.e2e.browser.room import Room

pytestmark = pytest.mark.e2e


def _mode(room: Room):
    return room.page.locator("#agent-mode")


def _ask(room: Room):
    return room.page.get_by_role("button", name="Ask the agent")


def _wakes_marks(room: Room):
    return room.messages("user").locator(".message-flag.wakes")


def test_in_always_mode_every_message_gets_an_answer_and_nothing_is_marked(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name)
    alice = people.room("alice", conversation)
    expect(_mode(alice)).to_have_value("always")
    expect(_ask(alice)).to_be_hidden()
    alice.send("hello")
    expect(alice.assistant_bodies()).to_have_count(1)
    expect(_wakes_marks(alice)).to_have_count(0)


def test_in_mention_mode_people_chat_and_the_agent_answers_when_called(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name, agent_mode="mention")
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    for room in (alice, bob):
        expect(_mode(room)).to_have_value("mention")
        expect(_ask(room)).to_be_visible()

    alice.send("lunch at noon?")
    expect(bob.messages("user")).to_have_count(1)
    expect(bob.transcript).to_contain_text("lunch at noon?")
    expect(alice.run_status).to_have_text("Idle")
    expect(alice.assistant_bodies()).to_have_count(0)

    alice.textarea.press_sequentially("@ag")
    options = alice.page.locator("#mention-list [role=option]")
    expect(options.first).to_have_text("@agent (the agent)")
    alice.textarea.press("Enter")  # picks: it does not send
    expect(alice.textarea).to_have_value("@agent ")
    alice.textarea.press_sequentially("what do you think?")
    alice.textarea.press("Enter")
    expect(alice.assistant_bodies()).to_have_count(1)
    expect(_wakes_marks(alice)).to_have_count(1)
    expect(_wakes_marks(alice)).to_have_text("called the agent")
    expect(bob.assistant_bodies()).to_have_count(1)
    expect(_wakes_marks(bob)).to_have_count(0)  # only its author's are marked

    expect(alice.run_status).to_have_text("Completed")
    _ask(bob).click()
    expect(alice.assistant_bodies()).to_have_count(2)


def test_the_at_sign_completes_the_teams_people(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name, agent_mode="mention")
    alice = people.room("alice", conversation)
    alice.textarea.press_sequentially("thanks @b")
    expect(alice.page.locator("#mention-list [role=option]")).to_have_text(["@Bob"])
    alice.textarea.press("Tab")
    expect(alice.textarea).to_have_value("thanks @Bob ")
    expect(alice.page.locator("#mention-list")).to_be_hidden()


def test_a_member_switches_the_mode_and_everyone_sees_it(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name)
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    carol = people.room("carol", conversation)
    expect(_mode(carol)).to_be_disabled()
    _mode(alice).select_option("mention")
    for room in (alice, bob, carol):
        expect(_mode(room)).to_have_value("mention")
        expect(room.page.locator("#notices")).to_contain_text(
            "Alice set the agent to answer when mentioned or asked.")
    expect(_ask(bob)).to_be_visible()
    expect(_ask(carol)).to_have_count(0)
    bob.reload()
    expect(_mode(bob)).to_have_value("mention")
