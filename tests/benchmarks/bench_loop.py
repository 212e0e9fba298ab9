"""Per-iteration overhead of the agent loop, next to pydantic-ai's Agent; and the executor.

Run with ``make bench`` or ``.venv/bin/python -m tests.benchmarks.bench_loop``.

1. Loop overhead: a model that answers instantly calls one no-op tool per iteration, 1,000
   iterations, then answers. Ours: AgentRunner over ScriptedProvider (the full streaming path:
   events, assembler, executor, runtime events). Peer: pydantic-ai's ``Agent.run`` over its
   ``FunctionModel`` doing the same. Prints microseconds per iteration and the ratio.
2. Executor: five concurrency-safe tools of 50 ms each in one response (serial would take
   250 ms), and how soon a tool starts after its call is ready while the model still streams.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from apps.engine.events import (
    ContentDelta,
    MessageEnd,
    MessageStart,
    ToolCallReady,
    ToolCallsRequested,
    ToolCallStart,
)
from apps.engine.messages import Message, ToolCall
from apps.engine.providers.scripted import ScriptedProvider
from apps.engine.runtime.runner import AgentRunner, RunConfig
from apps.engine.tools.base import BaseTool, Concurrency, ToolContext, ToolOutput, ToolSpec
from apps.engine.tools.registry import ToolRegistry

ITERATIONS = 1_000
REPEAT = 5


class Noop(BaseTool):
    spec = ToolSpec(name="noop", description="does nothing",
                    parameters={"type": "object", "properties": {}},
                    concurrency=Concurrency.ALWAYS)

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(content="ok")


class Sleeper(BaseTool):
    spec = ToolSpec(name="sleep", description="sleeps 50 ms",
                    parameters={"type": "object", "properties": {}},
                    concurrency=Concurrency.ALWAYS)

    def __init__(self) -> None:
        self.started: list[float] = []
        self.ended: list[float] = []

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        self.started.append(time.perf_counter())
        await asyncio.sleep(0.05)
        self.ended.append(time.perf_counter())
        return ToolOutput(content="slept")


def _call_turn(n: int, tool: str = "noop", count: int = 1) -> list[Any]:
    calls = [ToolCall(id=f"c{n}_{i}", name=tool, arguments={}, index=i) for i in range(count)]
    items: list[Any] = [MessageStart()]
    for call in calls:
        items += [ToolCallStart(index=call.index, id=call.id, name=tool), ToolCallReady(call=call)]
    return [*items, ToolCallsRequested(calls=calls), MessageEnd(stop_reason="tool_use")]


async def ours() -> float:
    turns = [_call_turn(n) for n in range(ITERATIONS)]
    turns.append([MessageStart(), ContentDelta(text="done"), MessageEnd(stop_reason="end_turn")])
    with tempfile.TemporaryDirectory() as workspace:
        runner = AgentRunner(ScriptedProvider(turns), ToolRegistry([Noop()]),
                             RunConfig(model="scripted", max_iterations=ITERATIONS + 1),
                             [Message(role="user", content="go")], run_id="bench",
                             workspace=Path(workspace))
        start = time.perf_counter()
        async for _ in runner.events():
            pass
        elapsed = time.perf_counter() - start
    assert runner.status == "completed", runner.status
    return elapsed


async def pydantic_ai_peer() -> float:
    from pydantic_ai import Agent, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    count = 0

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        nonlocal count
        count += 1
        if count <= ITERATIONS:
            return ModelResponse(parts=[ToolCallPart("noop", {}, tool_call_id=f"c{count}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    def noop() -> str:
        return "ok"

    start = time.perf_counter()
    result = await agent.run("go", usage_limits=UsageLimits(request_limit=None))
    elapsed = time.perf_counter() - start
    assert result.output == "done"
    return elapsed


async def executor_figures() -> tuple[float, float]:
    """(ms from the first tool's start to the last one's end, for five 50 ms tools; ms from
    the first call being ready to its tool starting, while the stream is still open)."""
    sleeper = Sleeper()
    ready_at: list[float] = []
    turn = _call_turn(0, "sleep", 5)
    # Mark when the first call is ready, and keep the stream open 100 ms after the last call.
    turn.insert(2, lambda: ready_at.append(time.perf_counter()))
    turn.insert(-2, _Pause(0.1))
    turns = [turn, [MessageStart(), ContentDelta(text="ok"), MessageEnd()]]
    with tempfile.TemporaryDirectory() as workspace:
        runner = AgentRunner(ScriptedProvider(turns), ToolRegistry([sleeper]),
                             RunConfig(model="scripted"), [Message(role="user", content="go")],
                             run_id="bench", workspace=Path(workspace))
        await runner.run()
    span = max(sleeper.ended) - min(sleeper.started)
    return span * 1000, (sleeper.started[0] - ready_at[0]) * 1000


class _Pause(asyncio.Event):
    """A turn item that resumes the stream after ``seconds`` (ScriptedProvider awaits Events)."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    async def wait(self) -> bool:  # type: ignore[override]
        await asyncio.sleep(self.seconds)
        return True


async def best(fn: Any) -> float:
    return min([await fn() for _ in range(REPEAT)])


async def main() -> None:
    mine = await best(ours)
    theirs = await best(pydantic_ai_peer)
    print(f"loop overhead, {ITERATIONS} iterations (best of {REPEAT}):")
    print(f"  confab AgentRunner   {mine / ITERATIONS * 1e6:8.1f} us/iteration")
    print(f"  pydantic-ai Agent    {theirs / ITERATIONS * 1e6:8.1f} us/iteration")
    print(f"  ratio (peer / ours)  {theirs / mine:8.2f}x")
    parallel, start_delay = await executor_figures()
    print("executor:")
    print(f"  5 concurrency-safe 50 ms tools in one response: {parallel:.1f} ms "
          "(serial: 250 ms)")
    print(f"  first tool started {start_delay:.2f} ms after its call was ready, "
          "while the stream stayed open another 100 ms")


if __name__ == "__main__":
    asyncio.run(main())
