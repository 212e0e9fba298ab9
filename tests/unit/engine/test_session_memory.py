"""Session memory: a forked agent keeps the notes file, in the background, between steps."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.engine.compaction.auto_compact import Compactor
from apps.engine.compaction.session_memory import (
    MEMORY_FILE,
    TEMPLATE,
    SessionMemory,
    SessionMemoryState,
)
from apps.engine.compaction.tokens import estimate_message
from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.messages import Message
from apps.engine.providers.scripted import ScriptedProvider
from apps.engine.runtime import incremental
from tests.unit.engine.runtime_kit import Echo, call_turn, runner, text_turn, user

NOTE_EDIT = {"file_path": MEMORY_FILE, "old_string": "## Goal\n",
             "new_string": "## Goal\nShip the parser (alice asked).\n"}


def main_turns() -> list[list[object]]:
    return [call_turn(("Echo", {"text": "x"})), text_turn("done")]


async def test_the_notes_are_extracted_after_a_busy_step(tmp_path: Path) -> None:
    notes_model = ScriptedProvider([call_turn(("Edit", NOTE_EDIT), tag="m"),
                                    text_turn("notes updated")])
    memory = SessionMemory(notes_model, "scripted", tmp_path, min_tool_calls=1)
    history = [user("ship the parser")]
    await runner(ScriptedProvider(main_turns()), [Echo()], history, tmp_path,
                 hooks=memory).run()
    await memory.wait()
    notes = (tmp_path / MEMORY_FILE).read_text()
    assert "Ship the parser (alice asked)." in notes and notes.startswith("# Session notes")
    assert memory.state.extracted_upto == 3  # user, assistant(tool call), tool results
    prompt = notes_model.requests[0].messages[0].text()
    assert "ship the parser" in prompt and "called Echo" in prompt
    assert [t.name for t in notes_model.requests[0].tools] == ["Read", "Edit"]


async def test_a_quiet_step_does_not_start_an_extraction(tmp_path: Path) -> None:
    notes_model = ScriptedProvider([])
    memory = SessionMemory(notes_model, "scripted", tmp_path, min_tool_calls=5,
                           min_tokens=10_000)
    await runner(ScriptedProvider(main_turns()), [Echo()], [user("hi")], tmp_path,
                 hooks=memory).run()
    await memory.wait()
    assert notes_model.requests == [] and memory.read() is None


async def test_a_failed_extraction_releases_the_flag_for_the_next_step(tmp_path: Path) -> None:
    state = SessionMemoryState()
    broken = ScriptedProvider([[ProviderError(ErrorKind.SERVER, "down")]])
    memory = SessionMemory(broken, "scripted", tmp_path, state=state, min_tool_calls=1)
    history = [user("go")]
    await runner(ScriptedProvider(main_turns()), [Echo()], history, tmp_path,
                 hooks=memory).run()
    await memory.wait()
    assert (state.running, state.failures, state.extracted_upto) == (False, 1, 0)
    retry = SessionMemory(ScriptedProvider([call_turn(("Edit", NOTE_EDIT), tag="m"),
                                            text_turn("ok")]), "scripted", tmp_path,
                          state=state, min_tool_calls=1)
    await retry.turn_end(2, history)
    await retry.wait()
    assert state.failures == 0 and state.extracted_upto == len(history)


async def test_a_planted_link_does_not_lead_the_notes_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".confab").symlink_to(outside, target_is_directory=True)
    memory = SessionMemory(ScriptedProvider([]), "scripted", workspace, min_tool_calls=1)
    assert memory.read() is None
    await memory.turn_end(1, [Message(role="assistant", content=[
        {"type": "tool_use", "id": "c", "name": "Echo", "input": {}}])])
    await memory.wait()
    assert list(outside.iterdir()) == [] and memory.state.failures == 1


async def test_compaction_carries_the_notes_into_the_summary(tmp_path: Path) -> None:
    (tmp_path / ".confab").mkdir()
    (tmp_path / MEMORY_FILE).write_text(TEMPLATE.replace("## Goal\n", "## Goal\nShip it\n"))
    memory = SessionMemory(ScriptedProvider([]), "scripted", tmp_path)
    provider = ScriptedProvider([text_turn("the summary")])
    compactor = Compactor(provider, "scripted", context_window=200_000, max_output=8_000,
                          notes=memory.read)
    history = [user("a"), Message(role="assistant", content="b"), user("c")]
    result = await compactor.compact(history)
    head = result.history[0].text()
    assert "the summary" in head and "[Session notes]" in head and "Ship it" in head


def test_due_counts_the_tokens_since_the_last_extraction_estimating_each_message_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose notes wait (below ``min_tokens``) asks at every turn's end: each asks about
    the messages since the last extraction, but estimates only those it has not seen."""
    estimated: list[Message] = []

    def counting(message: Message) -> int:  # pass-through: the real estimate, counted
        estimated.append(message)
        return estimate_message(message)

    monkeypatch.setattr(incremental, "estimate_message", counting)
    memory = SessionMemory(ScriptedProvider([]), "scripted", tmp_path, min_tool_calls=100)
    history = [user("x" * 400), Message(role="assistant", content="y" * 400)]
    memory.min_tokens = sum(map(estimate_message, history)) + 1
    assert not memory.due(history)
    history.append(user("z" * 40))
    assert memory.due(history)  # the new message tips it over
    assert estimated == history  # each one estimated once
    memory.state.extracted_upto = 2  # the notes go up to the assistant's message
    assert not memory.due(history)
    assert len(estimated) == 3
    compacted = [Message(role="user", content="summary"), *history[1:]]
    memory.state.extracted_upto = 0
    memory.min_tokens = sum(map(estimate_message, compacted))
    assert memory.due(compacted)  # a rewritten history is estimated anew, whole
    assert estimated[3:] == compacted
