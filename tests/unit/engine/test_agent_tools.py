"""TodoWrite, AskUser and Task inside real runs of the loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

from apps.engine.events import SubagentEvent, TodosUpdated
from apps.engine.ports import UserAnswer
from apps.engine.providers.scripted import ScriptedProvider
from apps.engine.tools.base import ToolEnvironment
from apps.engine.tools.builtin.ask_user import AskUserTool
from apps.engine.tools.builtin.task import TaskTool
from apps.engine.tools.builtin.todo_write import TodoWriteTool
from tests.unit.engine.runtime_kit import (
    Echo,
    call_turn,
    kinds,
    runner,
    text_turn,
    user,
)


class Room:
    """An InputPort whose answers the test gives."""

    def __init__(self) -> None:
        self.questions: list[tuple[str, str]] = []
        self.answer: asyncio.Future[UserAnswer] | None = None
        self.asked = asyncio.Event()

    async def ask(self, question_id: str, question: str) -> UserAnswer:
        self.questions.append((question_id, question))
        self.answer = asyncio.get_running_loop().create_future()
        self.asked.set()
        return await self.answer


async def test_todo_write_shows_the_list_to_the_room(tmp_path: Path) -> None:
    todos = [{"content": "read the code", "status": "completed"},
             {"content": "fix the bug", "status": "in_progress"},
             {"content": "write a test", "status": "pending"}]
    provider = ScriptedProvider([call_turn(("TodoWrite", {"todos": todos})), text_turn("ok")])
    history = [user("plan it")]
    events = await runner(provider, [TodoWriteTool()], history, tmp_path).run()
    [update] = [e for e in events if isinstance(e, TodosUpdated)]
    assert update.todos == todos
    assert history[2].content[0].content == (
        "Task list updated (1 pending, 1 in progress, 1 completed).")


async def test_todo_write_rejects_an_unknown_status(tmp_path: Path) -> None:
    bad = [{"content": "x", "status": "maybe"}]
    provider = ScriptedProvider([call_turn(("TodoWrite", {"todos": bad})), text_turn("ok")])
    history = [user("plan it")]
    events = await runner(provider, [TodoWriteTool()], history, tmp_path).run()
    assert "todos_updated" not in kinds(events)
    result = history[2].content[0]
    assert result.is_error and "'maybe' is not one of" in result.text()


async def test_ask_user_waits_for_an_answer_from_the_room(tmp_path: Path) -> None:
    room = Room()
    provider = ScriptedProvider([call_turn(("AskUser", {"question": "Which branch?"})),
                                 text_turn("main it is")])
    history = [user("deploy")]
    run = runner(provider, [AskUserTool()], history, tmp_path, inputs=room)

    async def answer() -> None:
        await room.asked.wait()
        room.answer.set_result(UserAnswer(text="main", answered_by="bob"))

    helper = asyncio.create_task(answer())
    events = await run.run()
    await helper
    assert room.questions == [("call_t0", "Which branch?")]
    order = kinds(events)
    assert order.index("awaiting_input") < order.index("input_received")
    received = next(e for e in events if e.kind == "input_received")
    assert (received.answer, received.answered_by) == ("main", "bob")
    assert history[2].content[0].content == "bob answered: main"


async def test_ask_user_without_an_answer_times_out_softly(tmp_path: Path) -> None:
    room = Room()
    provider = ScriptedProvider([call_turn(("AskUser", {"question": "Anyone?"})),
                                 text_turn("going on")])
    history = [user("go")]
    env = ToolEnvironment(ask_timeout_s=0.01)
    events = await runner(provider, [AskUserTool()], history, tmp_path, inputs=room, env=env).run()
    result = history[2].content[0]
    assert not result.is_error and "No one answered within 0.01 s" in result.text()
    assert events[-1].status == "completed"


async def test_ask_user_without_a_room_is_an_error_for_the_model(tmp_path: Path) -> None:
    provider = ScriptedProvider([call_turn(("AskUser", {"question": "?"})), text_turn("ok")])
    history = [user("go")]
    await runner(provider, [AskUserTool()], history, tmp_path).run()
    assert history[2].content[0].is_error


async def test_task_runs_a_sub_agent_with_its_own_history(tmp_path: Path) -> None:
    echo = Echo()
    provider = ScriptedProvider([
        call_turn(("Task", {"description": "look", "prompt": "echo hi then report"})),
        call_turn(("Echo", {"text": "hi"}), tag="sub"),  # the sub-agent's first step
        text_turn("sub-agent report"),                    # the sub-agent's answer
        text_turn("the parent's answer"),
    ])
    history = [user("delegate")]
    events = await runner(provider, [TaskTool(), echo], history, tmp_path).run()
    assert echo.calls == ["hi"]
    assert history[2].content[0].content == "sub-agent report"
    assert history[-1].text() == "the parent's answer"
    nested = [e for e in events if isinstance(e, SubagentEvent)]
    assert nested and all(e.parent_call_id == "call_t0" for e in nested)
    assert [e.event.kind for e in nested][0] == "run_started"
    assert nested[-1].event.kind == "run_ended" and nested[-1].event.status == "completed"
    sub_request = provider.requests[1]
    assert [m.text() for m in sub_request.messages] == ["echo hi then report"]
    assert "Task" not in [t.name for t in sub_request.tools]  # no sub-agents of sub-agents


async def test_a_failed_sub_agent_is_reported_as_an_error(tmp_path: Path) -> None:
    provider = ScriptedProvider([
        call_turn(("Task", {"description": "x", "prompt": "p"})),
        *[call_turn(("Missing", {}), tag=f"s{i}") for i in range(10)],
        text_turn("handled"),
    ])
    history = [user("delegate")]
    await runner(provider, [TaskTool()], history, tmp_path).run()
    result = history[2].content[0]
    assert result.is_error and "stopped before finishing (failed)" in result.text()
