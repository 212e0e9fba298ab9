"""The room's partial-JSON reader (``apps/rooms/static/rooms/partial_json.js``), one rule per
test, run in node (the module has no DOM): what the start of a tool call's arguments shows while
the rest streams in, and which starts no continuation can make valid JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.rooms.node import run_js

# One result per text: {value, complete}, or {error: [name, message, position]}.
HARNESS = """
output(input.map((text) => {
  try {
    const { value, complete } = parsePartialJson(text);
    return { value: value === undefined ? "<nothing>" : value, complete };
  } catch (error) {
    return { error: [error.name, error.message, error.position] };
  }
}));
"""


def parse(*texts: str) -> list[dict[str, Any]]:
    """``parsePartialJson`` of each text, in one node process."""
    return run_js("partial_json.js", "{ parsePartialJson }", HARNESS, list(texts))


def shown(text: str) -> Any:
    (result,) = parse(text)
    assert "error" not in result, result
    return result["value"]


def test_nothing_is_shown_before_the_first_value_begins() -> None:
    assert parse("", "  \n") == [{"value": "<nothing>", "complete": False}] * 2


def test_an_open_object_shows_the_members_so_far() -> None:
    assert shown('{"path": "a.txt", "command": "ls -') == {"path": "a.txt", "command": "ls -"}


def test_a_key_still_arriving_or_without_a_value_yet_is_left_out() -> None:
    assert [r["value"] for r in parse('{"path": "a", "com', '{"path": "a", "command"',
                                      '{"path": "a", "command": ')] == [{"path": "a"}] * 3


def test_escapes_are_decoded_and_a_half_arrived_escape_waits() -> None:
    assert shown('{"a": "say \\"hi\\"\\n\\u00e9"}') == {"a": 'say "hi"\né'}
    assert shown('{"a": "x\\') == {"a": "x"}
    assert shown('{"a": "x\\u00') == {"a": "x"}
    assert shown('{"a": "\\ud83d\\ude00"}') == {"a": "😀"}  # a surrogate pair, as JSON writes it


def test_a_number_shows_its_valid_start_and_waits_for_a_sign_alone() -> None:
    assert [r["value"] for r in parse('{"n": 12', '{"n": 12.', '{"n": 12.5e', '{"n": -')] == [
        {"n": 12}, {"n": 12}, {"n": 12.5}, {}]
    assert shown('{"n": -12.5e2}') == {"n": -1250}


def test_a_literal_is_shown_once_it_is_whole() -> None:
    assert [r["value"] for r in parse('{"b": tr', '{"b": true', '{"b": nul', '{"b": null')] == [
        {}, {"b": True}, {}, {"b": None}]


def test_nested_arrays_and_objects_show_their_parts_so_far() -> None:
    assert shown('{"edits": [{"old": "a", "new": "b"}, {"old": "c') == {
        "edits": [{"old": "a", "new": "b"}, {"old": "c"}]}
    assert shown('[1, 2, ') == [1, 2]


def test_complete_says_whether_the_whole_value_has_arrived() -> None:
    assert [r["complete"] for r in parse('{"a": 1', '{"a": 1}', '{"a": 1} ', '"s', '"s"')] == [
        False, True, True, False, True]


@pytest.mark.parametrize(("text", "rule", "position"), [
    ('{"a": 1} {', "text_after_value", 9),
    ('{"a" 1', "expected_colon", 5),
    ("{1", "expected_key", 1),
    ('{"n": 01}', "bad_number", 6),
    ('{"n": 1.}', "bad_number", 6),
    ('{"s": "\\x"}', "bad_escape", 7),
    ('{"s": "\\u12g4"}', "bad_escape", 7),
    ('{"s": "a\nb"}', "control_character", 8),
    ('{"b": nope}', "unexpected_character", 6),
    ('{"a": 1 "b": 2}', "expected_comma", 8),
])
def test_text_no_continuation_can_make_valid_json_is_a_syntax_error(
        text: str, rule: str, position: int) -> None:
    assert parse(text) == [{"error": ["SyntaxError", rule, position]}]


ARGUMENTS = {"command": 'echo "hi"\n\t\\ é 😀 中文', "timeout": -12.5e3,
             "list": [1, True, None, {"x": "y"}, []], "empty": {}, "flag": False}


@pytest.mark.parametrize("indent", [None, 2])
def test_every_prefix_reads_and_each_grows_into_the_whole_arguments(indent: int | None) -> None:
    # Any split of the stream gives the same fields in the end, and never an error on the way.
    text = json.dumps(ARGUMENTS, indent=indent, ensure_ascii=indent is None)
    results = parse(*(text[:i] for i in range(len(text) + 1)))
    assert not [r for r in results if "error" in r]
    assert results[-1] == {"value": ARGUMENTS, "complete": True}
    assert not any(r["complete"] for r in results[:-1])
    strings = [r["value"].get("command") for r in results
               if isinstance(r["value"], dict) and "command" in r["value"]]
    assert all(ARGUMENTS["command"].startswith(s) for s in strings)  # a string only grows
