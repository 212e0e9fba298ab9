"""Which messages are versions of one another (``apps/rooms/static/rooms/version_slots.js``),
run in node: the slots a transcript's ``run_id`` / ``superseded_by_run`` marks make, and what
each choice of versions hides."""

from __future__ import annotations

from typing import Any

from tests.unit.rooms.node import run_js

# input: {messages: [[key, runId, supersededBy, id?]], chosen: [[slotId, index]]}
HARNESS = """
const messages = input.messages.map(([key, runId, supersededBy, id]) => ({ key, runId,
                                                                          supersededBy, id }));
const slots = versionSlots(messages);
const chosen = new Map(input.chosen);
const hidden = hiddenMessages(slots, (slot) => chosen.get(slot.id) ?? slot.versions.length - 1);
output({ slots: slots.map((s) => [s.id, s.versions.map((v) => v.map((m) => m.key))]),
         shown: messages.filter((m) => !hidden.has(m)).map((m) => m.key) });
"""


def versions(messages: list[tuple[Any, ...]],
             chosen: dict[int | str, int] | None = None) -> dict[str, Any]:
    return run_js("version_slots.js", "{ hiddenMessages, versionSlots }", HARNESS,
                  {"messages": messages, "chosen": list((chosen or {}).items())})


def test_a_transcript_without_earlier_versions_has_no_slots() -> None:
    assert versions([("u0", None, None), ("a0", 1, None)]) == {"slots": [],
                                                               "shown": ["u0", "a0"]}


def test_regenerating_twice_makes_one_slot_of_three_versions() -> None:
    transcript = [("u0", None, None), ("a0", 1, 2), ("a1", 2, 3), ("a2", 3, None)]
    assert versions(transcript) == {"slots": [[2, [["a0"], ["a1"], ["a2"]]]],
                                    "shown": ["u0", "a2"]}
    assert versions(transcript, {2: 0})["shown"] == ["u0", "a0"]


def test_an_answer_not_written_yet_leaves_the_earlier_one_shown() -> None:
    # run 2 is queued: until its first message arrives there is one version only
    assert versions([("u0", None, None), ("a0", 1, 2)]) == {"slots": [],
                                                            "shown": ["u0", "a0"]}


def test_an_edit_makes_the_message_and_its_answer_one_version() -> None:
    transcript = [("u0", None, 2), ("a0", 1, 2), ("u1", 2, None), ("a1", 2, None)]
    assert versions(transcript) == {"slots": [[2, [["u0", "a0"], ["u1", "a1"]]]],
                                    "shown": ["u1", "a1"]}
    assert versions(transcript, {2: 0})["shown"] == ["u0", "a0"]


def test_an_answer_regenerated_after_an_edit_is_a_slot_inside_the_edit() -> None:
    transcript = [("u0", None, 2), ("a0", 1, 2), ("u1", 2, None), ("a1", 2, 3), ("a2", 3, None)]
    result = versions(transcript)
    assert result["slots"] == [[2, [["u0", "a0"], ["u1", "a1"]]], [3, [["a1"], ["a2"]]]]
    assert result["shown"] == ["u1", "a2"]
    assert versions(transcript, {2: 0})["shown"] == ["u0", "a0"]  # not u1's answers
    assert versions(transcript, {3: 0})["shown"] == ["u1", "a1"]


def test_a_message_edited_after_its_answer_was_regenerated_keeps_that_slot_inside() -> None:
    # regenerate (run 2), then edit (run 3): the edit's slot starts first and holds run 2's
    transcript = [("u0", None, 3), ("a0", 1, 2), ("a1", 2, 3), ("u1", 3, None), ("a2", 3, None)]
    result = versions(transcript)
    assert result["slots"] == [[3, [["u0", "a1"], ["u1", "a2"]]], [2, [["a0"], ["a1"]]]]
    assert result["shown"] == ["u1", "a2"]
    assert versions(transcript, {3: 0})["shown"] == ["u0", "a1"]
    assert versions(transcript, {3: 0, 2: 0})["shown"] == ["u0", "a0"]


def test_a_chat_edit_is_a_version_replaced_by_the_new_message() -> None:
    # a mention conversation: u0 edited as chat (u1, no run), then u1 edited mentioning the
    # agent (run 4 answers): one slot of three versions, keyed by the first replacement
    transcript = [("u0", None, "m11", 10), ("u1", None, 4, 11), ("u2", 4, None, 12),
                  ("a2", 4, None, 13)]
    result = versions(transcript)
    assert result["slots"] == [["m11", [["u0"], ["u1"], ["u2", "a2"]]]]
    assert result["shown"] == ["u2", "a2"]
    assert versions(transcript, {"m11": 0})["shown"] == ["u0"]
    assert versions(transcript, {"m11": 1})["shown"] == ["u1"]
