"""What the offline model reads as a script: the whole text, after an author label and a
mention."""

from __future__ import annotations

from apps.engine.providers.script import parse_script

SCRIPT = '{"script": [{"text": "hi"}]}'


def test_a_script_after_the_mention_that_called_the_agent_is_read() -> None:
    assert parse_script(f"@agent {SCRIPT}") == [{"text": "hi"}]
    assert parse_script(f"[alice] @Robo {SCRIPT}") == [{"text": "hi"}]


def test_text_between_the_mention_and_the_script_makes_it_no_script() -> None:
    assert parse_script(f"@agent please {SCRIPT}") is None
    assert parse_script(f"bob@agent {SCRIPT}") is None
