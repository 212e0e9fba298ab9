"""The mention rules of a ``mention`` conversation: who calls the agent, and what does not."""

from __future__ import annotations

import pytest

from apps.rooms.mentions import mentions_agent
from tests.unit.rooms.node import run_js


@pytest.mark.parametrize("text", [
    "@agent what do you think?",
    "what do you think, @agent?",
    "thanks @agent.",
    "(@agent) please",
    "@Agent look",
    "@AGENT look",
    "hey\n@agent",
    '@agent {"script": [{"text": "hi"}]}',
    "请@agent 帮我看看",  # Chinese puts a mention right after a word, with no space
    "@agent帮我看看",
    "café@agent ?",
    "＠agent 帮我看看",  # the full-width at sign of a Chinese or Japanese keyboard
    "请＠agent帮我看看",
])
def test_at_agent_at_a_word_boundary_mentions_it(text: str) -> None:
    assert mentions_agent(text)


@pytest.mark.parametrize("text", [
    "agent, what do you think?",  # no @
    "@agents are people too",  # a longer word
    "@agent_smith",
    "@agent-two",
    "mail bob@agent.com",  # an e-mail address
    "write to ops@agent",
    "first.last@agent",
    "see @agent.io for the docs",  # a domain after the handle
    "run `@agent` to call it",  # a code span
    "run ``say `@agent` here`` twice",
    "```\n@agent in a fenced block\n```",
    "~~~python\nprint('@agent')\n~~~",
    "```\nan unclosed fence runs to the end\n@agent",
    "@@agent",
    "＠＠agent",
    "bob＠agent.com",
])
def test_what_is_not_a_mention(text: str) -> None:
    assert not mentions_agent(text)


def test_text_after_a_code_span_still_mentions() -> None:
    assert mentions_agent("`x = 1` looks wrong, @agent")
    assert mentions_agent("an unclosed ` is literal, @agent")
    assert mentions_agent("``a`` then ` alone @agent")
    assert mentions_agent("```\ncode\n```\n@agent explain that")


def test_the_teams_handle_mentions_it_case_insensitively_and_agent_still_works() -> None:
    assert mentions_agent("@Robo please", handle="robo")
    assert mentions_agent("@ROBO please", handle="Robo")
    assert mentions_agent("@agent please", handle="robo")
    assert not mentions_agent("@robot please", handle="robo")
    assert not mentions_agent("robo@example.org", handle="robo")


def test_a_handle_with_regex_characters_is_taken_literally() -> None:
    assert mentions_agent("@ops-bot now", handle="ops-bot")
    assert not mentions_agent("@opsXbot now", handle="ops.bot")


@pytest.mark.parametrize(("text", "handle"), [
    ("@助手 帮我看看", "助手"),
    ("@助手帮我看看", "助手"),  # Chinese writes on right after the name
    ("请＠助手总结一下", "助手"),
    ("@Ассистент, посмотри", "ассистент"),
    ("@सहायक देखो", "सहायक"),
    ("@Cafe\u0301 look", "Café"),  # the text's decomposed é is the handle's composed one
])
def test_a_handle_in_any_script_mentions_the_agent(text: str, handle: str) -> None:
    assert mentions_agent(text, handle=handle)


def test_a_cjk_handle_in_code_or_an_address_does_not_mention() -> None:
    assert not mentions_agent("`@助手` 是智能体的名字", handle="助手")
    assert not mentions_agent("写信到 ops@助手.com", handle="助手")
    assert not mentions_agent("@助理 在吗", handle="助手")


def test_the_composer_finds_a_full_width_at_sign_as_the_server_does() -> None:
    found = run_js("mentions.js", "{ mentionAt }",
                   "output(input.map((text) => mentionAt(text, text.length)))",
                   ["请＠助", "hi ＠ag", "mail x＠y", "＠"])
    assert found == [{"start": 1, "query": "助"}, {"start": 3, "query": "ag"}, None,
                     {"start": 0, "query": ""}]
