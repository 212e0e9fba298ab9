"""Regenerate, edit, fork, versions and titles in a real browser (issue 19): each replaced
answer or message stays as an earlier version behind a ‹ k/n › switcher, live for every watcher
and after a reload; Edit, Fork and Regenerate in the transcript, refused clearly; the first
exchange titles the conversation and a rename reaches every watcher live."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People, docs_screenshot
from tests.e2e.browser.room import Room, script

pytestmark = pytest.mark.e2e


def shown_answers(room: Room) -> list[str | None]:
    """The ``data-message-id`` of each answer the transcript shows (not the hidden versions)."""
    answers = room.messages("assistant").locator("visible=true")
    return [answers.nth(i).get_attribute("data-message-id") for i in range(answers.count())]


def test_each_regenerated_answer_is_a_version_behind_its_own_switcher(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name)
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    alice.send("Name a colour.")
    expect(alice.run_status).to_have_text("Completed")
    expect(alice.page.locator(".version-switch")).to_have_count(0)  # one version: no switcher
    first = shown_answers(alice)

    bob.page.get_by_role("button", name="Regenerate").click()
    for room in (alice, bob):
        # the new answer first: until its run is queued the status still says the last run's
        expect(room.messages("assistant")).to_have_count(2)  # both are in the transcript
        expect(room.run_status).to_have_text("Completed")
        expect(room.messages("assistant").locator("visible=true")).to_have_count(1)
        expect(room.page.locator(".version-switch .version-count")).to_have_text("2/2")
    second = shown_answers(alice)
    assert second != first

    switch = alice.page.locator(".version-switch")
    switch.get_by_role("button", name="Previous version").click()
    expect(switch.locator(".version-count")).to_have_text("1/2")
    assert shown_answers(alice) == first
    expect(alice.messages("assistant").locator("visible=true").locator(
        ".message-flag.earlier")).to_have_text("earlier version")
    expect(switch.get_by_role("button", name="Previous version")).to_be_disabled()
    expect(bob.page.locator(".version-count")).to_have_text("2/2")  # each watcher flips alone
    docs_screenshot(alice.page, "room-version-switcher")

    alice.page.get_by_role("button", name="Regenerate").click()  # a new version: shown to all
    for room in (alice, bob):
        expect(room.page.locator(".version-count")).to_have_text("3/3")
        expect(room.run_status).to_have_text("Completed")
        expect(room.messages("assistant").locator("visible=true")).to_have_count(1)
    third = shown_answers(bob)
    assert third not in (first, second)

    bob.reload()  # the state frame carries every version and who replaced whom
    expect(bob.messages("assistant")).to_have_count(3)
    expect(bob.page.locator(".version-count")).to_have_text("3/3")
    assert shown_answers(bob) == third
    for shown, answer in (("2/3", second), ("1/3", first)):
        bob.page.get_by_role("button", name="Previous version").click()
        expect(bob.page.locator(".version-count")).to_have_text(shown)
        assert shown_answers(bob) == answer
    bob.page.get_by_role("button", name="Next version").click()
    expect(bob.page.locator(".version-count")).to_have_text("2/3")


LONG = " ".join(["words"] * 120)  # about 3 s at the harness's pace


def test_edit_fork_and_regenerate_from_the_transcript(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name)
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    carol = people.room("carol", conversation)  # a viewer
    question = script({"text": LONG})
    alice.send(question)
    mine = alice.messages("user")
    expect(alice.run_status).to_contain_text("Running")
    expect(mine.locator('button[data-action="edit-message"]')).to_be_hidden()  # not mid-run
    forks = alice.page.locator('.message-actions button[data-action="fork"]:visible')
    expect(forks).to_have_count(0)
    expect(alice.run_status).to_have_text("Completed")
    expect(mine.locator('button[data-action="edit-message"]')).to_be_visible()
    expect(alice.messages("assistant").locator('button[data-action="fork"]')).to_be_visible()
    # only the author edits; a viewer gets no buttons at all
    expect(bob.messages("user").locator('button[data-action="edit-message"]')).to_be_hidden()
    expect(bob.messages("user").locator('button[data-action="fork"]')).to_be_visible()
    expect(carol.messages("assistant")).to_have_count(1)
    expect(carol.page.locator(".message-actions button:visible")).to_have_count(0)
    expect(carol.page.get_by_role("button", name="Regenerate")).to_have_count(0)

    # a run started meanwhile: the edit is refused, said in the editor, the text kept
    mine.locator('button[data-action="edit-message"]').click()
    editor = alice.transcript.locator("form.message-edit textarea")
    expect(editor).to_have_value(question)
    bob.page.get_by_role("button", name="Regenerate").click()
    expect(alice.run_status).to_contain_text("Running")
    editor.fill("Name a fruit.")
    alice.page.get_by_role("button", name="Save and ask again").click()
    expect(alice.transcript.locator(".message-edit-error")).to_have_text(
        "Not saved: The agent is working: wait for its run to end, or stop it first.")
    expect(editor).to_have_value("Name a fruit.")
    expect(alice.run_status).to_have_text("Completed")

    alice.page.get_by_role("button", name="Save and ask again").click()
    for room in (alice, bob):
        # the new message first: it comes after its run's run_queued, so "Completed" is then
        # that run's end (until the run is queued the status still says the last run's)
        expect(room.messages("user").locator("visible=true").locator(".body")).to_have_text(
            "Name a fruit.")
        expect(room.run_status).to_have_text("Completed")
        expect(room.messages("user").locator(".version-count")).to_have_text("2/2")
    expect(alice.transcript.locator("form.message-edit")).to_have_count(0)
    # the earlier version: the question and the answer it had then (itself a 2/2 version)
    bob.messages("user").get_by_role("button", name="Previous version").click()
    expect(bob.messages("user").locator("visible=true").locator(".body")).to_have_text(question)
    expect(bob.messages("assistant").locator("visible=true").locator(".version-count")).to_have_text(
        "2/2")
    bob.messages("user").get_by_role("button", name="Next version").click()
    # The switch redraws at the next frame; until then the earlier answer is the one shown,
    # and a click keeps to the element its locator found first (a hidden one: it waits for
    # that one to show, never looks again). So the new version must be on screen first.
    expect(bob.messages("user").locator("visible=true").locator(".body")).to_have_text(
        "Name a fruit.")

    # Fork at the new answer (streamed live: the page knows it by its engine id only)
    answer = bob.messages("assistant").locator("visible=true")
    expect(answer).to_have_count(1)
    fork = answer.locator('button[data-action="fork"]')
    expect(fork).to_be_visible()  # the current answer, its run over: Fork is offered
    fork.click()
    bob.page.wait_for_url(lambda url: f"/conversations/{conversation}/" not in url)
    forked = Room(bob.page, int(bob.page.url.rstrip("/").rsplit("/", 1)[1]), "bob")
    expect(forked.messages("user").locator(".body")).to_have_text(["Name a fruit."])
    expect(forked.messages("assistant")).to_have_count(1)
    assert forked.conversation_id != conversation


def test_in_a_mention_conversation_an_edit_stays_chat_unless_it_mentions_the_agent(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name, agent_mode="mention")
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    bob.send("Lunch at noon?")
    mine = bob.messages("user")
    edit = mine.locator('button[data-action="edit-message"]')
    expect(edit).to_be_visible()
    expect(edit).to_have_attribute("title", re.compile(
        r"^Change your message; .* The agent answers only if the new text mentions it\.$"))
    edit.click()
    bob.transcript.locator("form.message-edit textarea").fill("Lunch at one?")
    bob.transcript.locator("form.message-edit").get_by_role("button", name="Save").click()
    for room in (alice, bob):  # a new version of the chat, and no run
        expect(room.messages("user").locator("visible=true").locator(".body")).to_have_text(
            "Lunch at one?")
        expect(room.messages("user").locator(".version-count")).to_have_text("2/2")
        expect(room.run_status).to_have_text("Idle")
    expect(alice.messages("assistant")).to_have_count(0)

    mine.locator("visible=true").locator('button[data-action="edit-message"]').click()
    bob.transcript.locator("form.message-edit textarea").fill("@agent lunch at one?")
    bob.transcript.locator("form.message-edit").get_by_role("button", name="Save").click()
    for room in (alice, bob):  # a mention runs the agent, as a sent message would
        expect(room.run_status).to_have_text("Completed")
        expect(room.messages("user").locator(".version-count")).to_have_text("3/3")
        expect(room.messages("assistant")).to_have_count(1)
    bob.reload()  # the versions survive a reload, chat edit included
    expect(bob.messages("user").locator(".version-count")).to_have_text("3/3")
    bob.page.get_by_role("button", name="Previous version").first.click()
    expect(bob.messages("user").locator("visible=true").locator(".body")).to_have_text(
        "Lunch at one?")
    expect(bob.messages("assistant").locator("visible=true")).to_have_count(0)


def test_a_fork_shows_where_it_came_from_and_a_question_it_ends_with_can_be_answered(
        confab_server: ConfabServer, people: People) -> None:
    conversation = confab_server.new_conversation("Colours")
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    alice.send("Name a colour.")
    expect(alice.run_status).to_have_text("Completed")
    ask = alice.page.get_by_role("button", name="Ask the agent")
    expect(ask).to_be_hidden()  # "always" mode, and the question has its answer

    question = alice.messages("user")
    question.locator('button[data-action="fork"]').click()  # a fork that ends with a question
    alice.page.wait_for_url(lambda url: f"/conversations/{conversation}/" not in url)
    fork = Room(alice.page, int(alice.page.url.rstrip("/").rsplit("/", 1)[1]), "alice")
    expect(alice.page.locator(".room-title")).to_have_text("Colours (fork)")
    origin = alice.page.locator("#forked-from")
    expect(origin).to_have_text("Forked from “Colours”")
    expect(fork.messages("user").locator(".body")).to_have_text(["Name a colour."])
    regenerate = alice.page.get_by_role("button", name="Regenerate")
    expect(regenerate).to_be_hidden()  # there is no answer to regenerate...
    expect(ask).to_be_visible()  # ...but the question can be answered
    ask.click()
    expect(alice.run_status).to_have_text("Completed")
    expect(fork.messages("assistant")).to_have_count(1)
    expect(ask).to_be_hidden()
    expect(regenerate).to_be_visible()

    # the source: bob saw the fork made, live, under the message it was made at
    line = bob.messages("user").locator(".fork-lines .fork-line")
    expect(line).to_have_text("Alice forked the conversation here: “Colours (fork)”")
    forked = fork.conversation_id
    expect(line.get_by_role("link")).to_have_attribute("href", f"/conversations/{forked}/")
    expect(bob.page.locator(f'#conversation-list > li[data-conversation-id="{forked}"]'
                            " .nav-title")).to_have_text("Colours (fork)")
    origin.get_by_role("link").click()  # back to the source, at the message, after a reload
    expect(alice.page).to_have_url(re.compile(rf"/conversations/{conversation}/#message-\d+$"))
    expect(alice.messages("user").locator(".fork-line")).to_have_text(
        "Alice forked the conversation here: “Colours (fork)”")


def test_the_first_exchange_titles_the_conversation_and_a_rename_reaches_everyone(
        confab_server: ConfabServer, people: People) -> None:
    conversation = confab_server.new_conversation("New conversation")
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    alice.send("Plan the office move to Berlin next spring")
    for room in (alice, bob):
        expect(room.page.locator(".room-title")).to_have_text("Plan the office move to Berlin")
    expect(bob.page).to_have_title(re.compile(r"^Plan the office move to Berlin · "))

    bob.page.get_by_role("button", name="Rename").click()
    bob.page.locator("#rename-title").fill("Berlin move 2027")
    bob.page.locator("#rename-title").press("Enter")
    for room in (alice, bob):
        expect(room.page.locator(".room-title")).to_have_text("Berlin move 2027")
    expect(bob.page.locator("#rename")).to_be_hidden()
