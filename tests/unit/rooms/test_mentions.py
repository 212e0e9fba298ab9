"""The mention rules of a ``mention`` conversation: who calls the agent, and what does not."""

from __future__ import annotations

import pytest

from apps.rooms.mentions import mentions_agent


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
