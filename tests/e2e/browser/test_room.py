"""The room in a real browser (issue 5): two people share one streamed run, steer it, stop it,
reload in the middle of it, approve a tool; a viewer watches without a composer and a person of
another team gets "not found".

Each test has a conversation of its own in the demo room and a fresh browser context per
persona. The offline model streams at 40 tokens (word pieces) per second, so ``LONG`` (200 words)
streams for about 5 s: long enough to act in the middle of it. Every wait is on the page's DOM
(Playwright's ``expect``), never a sleep.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser.live import ConfabServer, People
from tests.e2e.browser.room import Room, conversation_path, script

pytestmark = pytest.mark.e2e

LONG = " ".join(f"word{i}" for i in range(200))
OFFLINE_REPLY_START = "I am confab's offline scripted model"
QUEUED = "queued, joins at the next step"
STOPPED_BY_BOB = re.compile("stopped by bob", re.IGNORECASE)


@pytest.fixture
def conversation(confab_server: ConfabServer, request: pytest.FixtureRequest) -> int:
    return confab_server.new_conversation(request.node.name)


def streaming(room: Room, words: int = 5) -> None:
    """Wait until the assistant's reply shows ``LONG``'s first ``words`` words (mid-stream)."""
    expect(room.assistant_bodies().first).to_contain_text(f"word{words - 1} ")


def test_alice_and_bob_see_the_same_reply_thinking_and_tool_card(
        confab_server: ConfabServer, people: People, conversation: int) -> None:
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    ids = confab_server.user_id("alice"), confab_server.user_id("bob")
    alice.wait_until_present(*ids)
    bob.wait_until_present(*ids)

    thinking = "The person wants text files, so I will look for them first."
    before = "Let me look for text files in the workspace."
    after = "There are no text files here, so there is nothing to read."
    alice.send(script({"thinking": thinking}, {"text": before},
                      {"tool_call": {"name": "Glob", "arguments": {"pattern": "*.txt"}}},
                      {"text": after}))

    for room in (alice, bob):
        expect(room.messages("user").first.locator(".author")).to_contain_text("Alice")
        expect(room.transcript.locator("details.thinking")).to_contain_text(thinking)
        card = room.tool_cards()
        expect(card).to_have_count(1)
        expect(card.locator(".tool-name")).to_have_text("Glob")
        expect(card.locator(".tool-args")).to_contain_text("*.txt")
        expect(card.locator(".tool-status")).to_contain_text("done")
        expect(room.assistant_bodies().last).to_contain_text(after)
        expect(room.assistant_bodies().first).to_contain_text(before)
        # thinking is collapsed until someone opens it
        assert room.transcript.locator("details.thinking").first.get_attribute("open") is None

    assert alice.tool_cards().get_attribute("data-call-id") == \
        bob.tool_cards().get_attribute("data-call-id")
    assert alice.assistant_bodies().all_inner_texts() == bob.assistant_bodies().all_inner_texts()


def test_a_message_sent_mid_run_is_queued_then_answered_at_the_next_step(
        confab_server: ConfabServer, people: People, conversation: int) -> None:
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    bob.wait_until_present(confab_server.user_id("alice"), confab_server.user_id("bob"))
    alice.send(script({"text": LONG}))
    streaming(bob)

    bob.send("What are you?", enter=True)
    queued = bob.page.locator(".queued")
    expect(queued).to_contain_text(QUEUED)
    print(f"bob sees {queued.first.inner_text()!r} while the reply is at "
          f"{len(bob.body_text(0).split())} of 200 words")
    expect(bob.assistant_bodies()).to_have_count(1)  # still the first step, still streaming
    assert bob.body_text(0) != LONG, "the run ended before bob's message: nothing was queued"

    # the next step takes bob's message in and answers it
    expect(bob.assistant_bodies()).to_have_count(2)
    expect(bob.assistant_bodies().nth(1)).to_contain_text(OFFLINE_REPLY_START)
    expect(queued).to_have_count(0)
    assert bob.body_text(0) == LONG
    bobs = bob.messages("user").filter(has_text="What are you?")
    expect(bobs.locator(".author")).to_contain_text("Bob")
    for room in (alice, bob):  # bob's message sits between the two replies
        roles = room.transcript.locator("article.message[data-role]").evaluate_all(
            "els => els.map(e => e.dataset.role + ':' + e.innerText.slice(0, 40))")
        bobs_at = next(i for i, r in enumerate(roles) if "What are you?" in r)
        replies = [i for i, r in enumerate(roles) if r.startswith("assistant:")]
        assert replies[0] < bobs_at < replies[-1], roles


def test_bob_stops_the_run_and_both_see_who_stopped_it(
        confab_server: ConfabServer, people: People, conversation: int,
        screenshot: Callable[[Page, str], Path]) -> None:
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    ids = confab_server.user_id("alice"), confab_server.user_id("bob")
    alice.wait_until_present(*ids)
    bob.wait_until_present(*ids)
    alice.send(script({"text": LONG}))
    streaming(alice)
    streaming(bob, words=10)
    screenshot(bob.page, "room-mid-run-bob")

    bob.stop_button.click()
    for room in (alice, bob):
        expect(room.run_status).to_contain_text(STOPPED_BY_BOB)
        print(f"{room.who}: #run-status {room.run_status.inner_text()!r}, reply stopped at "
              f"{len(room.body_text(0).split())} of 200 words")
    assert alice.body_text(0) != LONG, "the reply ran to its end: the stop came too late"


def test_alice_reloads_mid_stream_and_the_text_continues_without_a_duplicate(
        people: People, conversation: int) -> None:
    alice = people.room("alice", conversation)
    alice.send(script({"text": LONG}))
    streaming(alice, words=20)
    so_far = alice.body_text(0)
    assert LONG.startswith(so_far) and so_far != LONG, so_far

    alice.reload()
    expect(alice.assistant_bodies().first).to_contain_text(so_far)  # the text so far is there
    back = alice.body_text(0)
    print(f"before the reload: {len(so_far.split())} words; right after it: "
          f"{len(back.split())} words")
    assert LONG.startswith(back), f"after the reload the text is not a prefix of the reply:\n{back}"
    assert back != LONG, "the run ended before the page came back: nothing was left to stream"

    expect(alice.assistant_bodies().first).to_have_text(LONG)
    assert alice.body_text(0) == LONG  # no duplicated and no missing character
    expect(alice.assistant_bodies()).to_have_count(1)


# The page loses the run's last event on its way in, as a frame the channel layer dropped
# would be lost (the server repairs its own sockets; this is the page's own safety net).
LOSE_RUN_ENDED = """() => {
  const socket = window.confabRoom.socket;
  const receive = socket.receive.bind(socket);
  window.confabLost = 0;
  socket.receive = (frame) => {
    if (frame.type === "event" && frame.event.kind === "run_ended" && !window.confabLost) {
      window.confabLost = frame.seq;
      return;
    }
    receive(frame);
  };
}"""


def test_a_lost_last_event_is_fetched_after_the_next_high_water_mark(
        people: People, conversation: int) -> None:
    alice = people.room("alice", conversation)
    alice.page.evaluate(LOSE_RUN_ENDED)
    alice.send(script({"text": "A short reply."}))
    expect(alice.assistant_bodies().first).to_have_text("A short reply.")
    # The host's mark an interval after the end shows the page it lacks the last seq: it
    # reconnects with after_seq and the run's end arrives.
    expect(alice.run_status).to_contain_text("Completed")
    assert alice.page.evaluate("window.confabLost") > 0  # it was lost, and fetched again
    expect(alice.page.locator("#connection")).to_have_attribute("data-state", "open")


def test_a_tool_that_needs_approval_waits_until_bob_approves_it(
        confab_server: ConfabServer, people: People, conversation: int,
        screenshot: Callable[[Page, str], Path]) -> None:
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    ids = confab_server.user_id("alice"), confab_server.user_id("bob")
    alice.wait_until_present(*ids)
    bob.wait_until_present(*ids)
    done = "I wrote hi to out.txt."
    alice.send(script(
        {"tool_call": {"name": "Bash", "arguments": {"command": "echo hi > out.txt"}}},
        {"text": done}))

    for room in (alice, bob):
        card = room.tool_cards()
        expect(card).to_have_count(1)
        expect(card.locator(".tool-name")).to_have_text("Bash")
        expect(card.locator(".tool-args")).to_contain_text("echo hi > out.txt")
        expect(card.locator(".tool-status")).to_contain_text("waiting for approval")
        expect(card.locator('button[data-action="approve"]')).to_be_visible()
        expect(card.locator('button[data-action="deny"]')).to_be_visible()
    # it waits: nothing ran and the model has not gone on
    expect(bob.tool_cards().locator(".tool-status")).to_contain_text("waiting for approval")
    expect(bob.assistant_bodies().filter(has_text=done)).to_have_count(0)
    screenshot(bob.page, "room-waiting-for-approval-bob")

    bob.tool_cards().locator('button[data-action="approve"]').click()
    for room in (alice, bob):
        card = room.tool_cards()
        expect(card.locator(".decided-by")).to_contain_text("Bob")
        expect(card.locator(".tool-status")).to_contain_text("done")
        expect(room.assistant_bodies().last).to_contain_text(done)
        print(f"{room.who}: tool card {room.tool_cards().inner_text()!r}")


def test_carol_watches_without_a_composer_and_charlie_of_another_team_gets_not_found(
        confab_server: ConfabServer, people: People, conversation: int) -> None:
    carol = people.room("carol", conversation)
    alice = people.room("alice", conversation)
    carol.wait_until_present(confab_server.user_id("alice"), confab_server.user_id("carol"))
    expect(carol.transcript).to_be_visible()
    expect(carol.page.locator("form#composer")).to_have_count(0)
    expect(alice.composer).to_be_visible()  # the page does have one for a member

    thinking = "Carol is only watching."
    text = "Hello to everyone watching this room."
    alice.send(script({"thinking": thinking}, {"text": text}))
    expect(carol.transcript.locator("details.thinking")).to_contain_text(thinking)
    expect(carol.assistant_bodies().first).to_contain_text(text)
    expect(carol.page.locator("form#composer")).to_have_count(0)

    confab_server.create_outsider("charlie", team="Charlie's team")
    page = people.page("charlie")
    response = page.goto(conversation_path(conversation))
    assert response is not None and response.status == 404, (
        f"charlie got HTTP {response and response.status} for another team's conversation")
    print(f"charlie: HTTP {response.status}, {page.locator('body').inner_text()[:80]!r}")
    expect(page.locator("body")).to_contain_text(re.compile("not found", re.IGNORECASE))
    expect(page.locator("body")).not_to_contain_text(text)
