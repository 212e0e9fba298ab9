"""Automatic titles (apps.engine.titles): the request, the cleaning of the model's reply, and
the offline model's first words."""

from __future__ import annotations

from apps.engine.events import ContentDelta
from apps.engine.messages import Message
from apps.engine.providers.scripted import OFFLINE_REPLY, ScriptedProvider
from apps.engine.titles import TITLE_MAX_CHARS, first_words, offline_title, propose_title


def test_first_words_are_six_words_on_one_line() -> None:
    assert first_words("Plan the\noffice   move to Berlin next spring") == (
        "Plan the office move to Berlin")


def test_first_words_of_unspaced_text_are_its_first_characters() -> None:
    asked = "帮我规划明年春天搬到柏林的办公室，还有预算和时间表"
    assert first_words(asked) == "帮我规划明年春天搬到柏林的办公室"


def test_a_long_word_run_is_cut_at_a_word() -> None:
    title = first_words(" ".join(["Mississippian"] * 6))
    assert len(title) <= TITLE_MAX_CHARS and title.endswith("Mississippian")


async def test_the_offline_model_titles_with_the_first_words_of_the_first_message() -> None:
    provider = ScriptedProvider()
    title = await propose_title(provider, "scripted", first="Why is the build red on main?",
                                answer=OFFLINE_REPLY)
    assert title == "Why is the build red on"
    request = provider.requests[0]
    assert request.tools == [] and request.max_tokens == 60 and request.system


async def test_quotes_and_a_final_full_stop_are_taken_off_the_reply() -> None:
    provider = ScriptedProvider([[ContentDelta(text='"Berlin office '),
                                  ContentDelta(text='move."\n')]])
    assert await propose_title(provider, "m", first="x", answer="y") == "Berlin office move"


async def test_an_empty_reply_is_no_title() -> None:
    provider = ScriptedProvider([[ContentDelta(text="  ")]])
    assert await propose_title(provider, "m", first="x", answer="y") is None


def test_other_requests_get_no_offline_title() -> None:
    assert offline_title([Message(role="user", content="Plan the move")]) is None
    assert offline_title([]) is None
