"""The streaming executor, proven by what fake tools record (start/end order, overlap) — never by
wall-clock thresholds."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from apps.engine.errors import ToolError
from apps.engine.events import (
    ApprovalDecided,
    AwaitingApproval,
    RuntimeEvent,
    ToolResultEvent,
    ToolStarted,
)
from apps.engine.messages import TextBlock, ToolCall
from apps.engine.ports import ApprovalDecision
from apps.engine.tools.base import BaseTool, Concurrency, ToolContext, ToolOutput, ToolSpec
from apps.engine.tools.executor import StreamingToolExecutor
from apps.engine.tools.registry import ToolRegistry

SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"],
          "additionalProperties": False}


class Journal:
    """What the fake tools did, in order, and gates the test opens."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.gates: dict[str, asyncio.Event] = {}
        self.changed = asyncio.Condition()

    def gate(self, key: str) -> asyncio.Event:
        return self.gates.setdefault(key, asyncio.Event())

    async def note(self, entry: str) -> None:
        self.log.append(entry)
        async with self.changed:
            self.changed.notify_all()

    async def wait_for(self, *entries: str) -> None:
        async with self.changed:
            await asyncio.wait_for(
                self.changed.wait_for(lambda: all(e in self.log for e in entries)), 5)


class GatedTool(BaseTool):
    """Records start, waits for its gate, records end."""

    def __init__(self, name: str, concurrency: Concurrency, journal: Journal,
                 timeout_s: float | None = 60.0) -> None:
        self.spec = ToolSpec(name=name, description="test", parameters=SCHEMA,
                             concurrency=concurrency, timeout_s=timeout_s)
        self.journal = journal

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        key = ctx.arguments["id"]
        await self.journal.note(f"start:{key}")
        try:
            await self.journal.gate(key).wait()
        except asyncio.CancelledError:
            await self.journal.note(f"cancelled:{key}")
            raise
        await self.journal.note(f"end:{key}")
        return ToolOutput(content=f"result of {key}")


class LoudTool(BaseTool):
    spec = ToolSpec(name="Loud", description="test", parameters=SCHEMA,
                    concurrency=Concurrency.ALWAYS)

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(content="".join(f"line {i}\n" for i in range(20_000)))


class RaisingTool(BaseTool):
    spec = ToolSpec(name="Broken", description="test", parameters=SCHEMA,
                    concurrency=Concurrency.ALWAYS)

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        if ctx.arguments["id"] == "tool-error":
            raise ToolError("the file is locked")
        raise RuntimeError("boom")


class NulTool(BaseTool):
    """Prints what ``find -print0`` does, as text or as a text block."""

    spec = ToolSpec(name="Nul", description="test", parameters=SCHEMA,
                    concurrency=Concurrency.ALWAYS)

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        if ctx.arguments["id"] == "blocks":
            return ToolOutput(content=[TextBlock(text="a\x00b\x00")])
        if ctx.arguments["id"] == "error":
            raise ToolError("bad name a\x00b")
        return ToolOutput(content="a\x00b\x00")


class Gate:
    """An approval port that answers from a table and records what it was asked."""

    def __init__(self, decisions: dict[str, ApprovalDecision]) -> None:
        self.decisions = decisions
        self.asked: list[str] = []

    def needs_approval(self, call: ToolCall, default: bool) -> bool:
        return call.name == "Risky"

    async def request(self, call: ToolCall, reason: str) -> ApprovalDecision:
        self.asked.append(call.id)
        return self.decisions[call.id]


def call(name: str, key: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=f"call_{key}", name=name, arguments={"id": key, **arguments})


def executor(journal: Journal, events: list[RuntimeEvent], gate: Gate | None = None,
             timeout_s: float | None = 60.0, workspace: Path = Path(".")
             ) -> StreamingToolExecutor:
    registry = ToolRegistry([
        GatedTool("Safe", Concurrency.ALWAYS, journal),
        GatedTool("Exclusive", Concurrency.NEVER, journal),
        GatedTool("Risky", Concurrency.NEVER, journal),
        GatedTool("Slow", Concurrency.ALWAYS, journal, timeout_s=timeout_s),
        RaisingTool(),
        LoudTool(),
        NulTool(),
    ])

    async def emit(event: RuntimeEvent) -> None:
        events.append(event)

    def make_context(c: ToolCall, arguments: dict[str, Any]) -> ToolContext:
        return ToolContext(call_id=c.id, arguments=arguments, workspace=workspace, emit=emit)

    return StreamingToolExecutor(registry, make_context=make_context, emit=emit, approvals=gate)


def open_all(journal: Journal, *keys: str) -> None:
    for key in keys:
        journal.gate(key).set()


async def test_five_concurrency_safe_tools_all_start_before_any_ends() -> None:
    journal, events = Journal(), []
    ex = executor(journal, events)
    keys = [f"s{i}" for i in range(5)]
    for key in keys:
        ex.add(call("Safe", key))
    await journal.wait_for(*(f"start:{k}" for k in keys))
    open_all(journal, *keys)
    results = await ex.results()
    assert journal.log[:5] == [f"start:{k}" for k in keys]
    assert sorted(journal.log[5:]) == sorted(f"end:{k}" for k in keys)
    assert [r.content for r in results] == [f"result of {k}" for k in keys]


async def test_a_never_tool_waits_for_the_running_ones_and_blocks_the_next() -> None:
    journal, events = Journal(), []
    ex = executor(journal, events)
    for c in (call("Safe", "a"), call("Safe", "b"), call("Exclusive", "x"), call("Safe", "c")):
        ex.add(c)
    await journal.wait_for("start:a", "start:b")
    await asyncio.sleep(0)
    assert "start:x" not in journal.log
    open_all(journal, "a", "b")
    await journal.wait_for("start:x")
    assert "start:c" not in journal.log  # blocked behind the exclusive call
    open_all(journal, "x")
    await journal.wait_for("start:c")
    open_all(journal, "c")
    await ex.results()
    log = journal.log
    assert log.index("start:x") > max(log.index("end:a"), log.index("end:b"))
    assert log.index("start:c") > log.index("end:x")


async def test_results_come_back_in_call_order_whatever_order_tools_finish() -> None:
    journal, events = Journal(), []
    ex = executor(journal, events)
    for key in ("first", "second", "third"):
        ex.add(call("Safe", key))
    await journal.wait_for("start:first", "start:second", "start:third")
    for key in ("third", "first", "second"):
        open_all(journal, key)
        await journal.wait_for(f"end:{key}")
    results = await ex.results()
    assert [r.tool_use_id for r in results] == ["call_first", "call_second", "call_third"]
    finished = [e.call_id for e in events if isinstance(e, ToolResultEvent)]
    assert finished == ["call_third", "call_first", "call_second"]


async def test_a_later_safe_call_does_not_overtake_a_waiting_unsafe_one() -> None:
    journal, events = Journal(), []
    ex = executor(journal, events)
    ex.add(call("Safe", "a"))
    ex.add(call("Exclusive", "x"))
    ex.add(call("Safe", "b"))
    await journal.wait_for("start:a")
    await asyncio.sleep(0)
    assert "start:b" not in journal.log
    open_all(journal, "a", "x", "b")
    await ex.results()
    assert journal.log.index("start:b") > journal.log.index("end:x")


async def test_unknown_tool_and_invalid_arguments_go_back_to_the_model() -> None:
    journal, events = Journal(), []
    ex = executor(journal, events)
    ex.add(ToolCall(id="c1", name="Nope", arguments={}))
    ex.add(ToolCall(id="c2", name="Safe", arguments={"id": 3, "extra": True}))
    unknown, invalid = await ex.results()
    assert unknown.is_error and "Unknown tool 'Nope'" in unknown.text()
    assert "Safe" in unknown.text()
    assert invalid.is_error and "Invalid arguments" in invalid.text()
    assert "3 is not of type 'string'" in invalid.text()
    assert "'extra' was unexpected" in invalid.text()
    assert journal.log == []  # nothing ran


async def test_tool_failures_become_error_results() -> None:
    journal, events = Journal(), []
    ex = executor(journal, events)
    ex.add(call("Broken", "tool-error"))
    ex.add(call("Broken", "crash"))
    locked, crashed = await ex.results()
    assert (locked.is_error, locked.text()) == (True, "the file is locked")
    assert crashed.is_error and crashed.text() == "Broken failed: RuntimeError: boom"


async def test_a_nul_in_a_result_is_shown_as_the_symbol_for_null() -> None:
    # find -print0, a binary file: no model needs the control character, and a transcript on
    # PostgreSQL cannot keep it (text and jsonb refuse U+0000): the run failed there.
    ex = executor(Journal(), [])
    for key in ("text", "blocks", "error"):
        ex.add(call("Nul", key))
    text, blocks, error = await ex.results()
    assert text.content == "a\u2400b\u2400"
    assert blocks.text() == "a\u2400b\u2400"
    assert error.is_error and error.text().endswith("bad name a\u2400b")


async def test_a_tool_past_its_timeout_is_stopped() -> None:
    journal, events = Journal(), []
    ex = executor(journal, events, timeout_s=0.01)
    ex.add(call("Slow", "forever"))
    [result] = await ex.results()
    assert result.is_error and "timed out after 0.01 s" in result.text()
    assert "cancelled:forever" in journal.log


async def test_denied_call_does_not_run_and_the_model_is_told_who_denied_it() -> None:
    journal, events = Journal(), []
    gate = Gate({"call_r": ApprovalDecision(approved=False, decided_by="bob", note="not now")})
    ex = executor(journal, events, gate)
    ex.add(call("Risky", "r"))
    [result] = await ex.results()
    assert result.is_error and "denied by bob" in result.text() and "not now" in result.text()
    assert journal.log == [] and gate.asked == ["call_r"]
    kinds = [type(e) for e in events]
    assert kinds == [AwaitingApproval, ApprovalDecided, ToolResultEvent]


async def test_approved_call_runs_after_the_decision() -> None:
    journal, events = Journal(), []
    gate = Gate({"call_r": ApprovalDecision(approved=True, decided_by="bob")})
    ex = executor(journal, events, gate)
    ex.add(call("Risky", "r"))
    ex.add(call("Safe", "s"))  # no approval needed
    open_all(journal, "r", "s")
    results = await ex.results()
    assert [r.is_error for r in results] == [False, False]
    assert gate.asked == ["call_r"]
    decided = next(e for e in events if isinstance(e, ApprovalDecided))
    assert (decided.approved, decided.decided_by) == (True, "bob")
    assert events.index(decided) < events.index(
        next(e for e in events if isinstance(e, ToolStarted) and e.call_id == "call_r"))


async def test_timed_out_approval_is_a_denial() -> None:
    journal, events = Journal(), []
    ex = executor(journal, events, Gate({"call_r": ApprovalDecision(approved=False)}))
    ex.add(call("Risky", "r"))
    [result] = await ex.results()
    assert "timed out" in result.text() and journal.log == []


async def test_abort_cancels_running_tools_and_gives_every_call_a_result() -> None:
    journal, events = Journal(), []
    ex = executor(journal, events)
    ex.add(call("Safe", "a"))
    ex.add(call("Exclusive", "x"))  # waits behind a, never starts
    await journal.wait_for("start:a")
    results = await ex.abort()
    assert "cancelled:a" in journal.log and "start:x" not in journal.log
    assert [r.tool_use_id for r in results] == ["call_a", "call_x"]
    assert all(r.is_error and "cancelled" in r.text() for r in results)
    open_all(journal, "x")
    await asyncio.sleep(0)
    assert "start:x" not in journal.log  # nothing starts after an abort


@pytest.mark.parametrize("concurrency", [Concurrency.ALWAYS, Concurrency.NEVER])
async def test_completed_results_survive_an_abort(concurrency: Concurrency) -> None:
    journal, events = Journal(), []
    ex = executor(journal, events)
    name = "Safe" if concurrency is Concurrency.ALWAYS else "Exclusive"
    ex.add(call(name, "done"))
    open_all(journal, "done")
    await ex.results()
    [result] = await ex.abort()
    assert result.content == "result of done" and not result.is_error


async def test_a_large_result_is_stored_and_the_model_gets_a_preview(tmp_path: Path) -> None:
    journal, events = Journal(), []
    ex = executor(journal, events, workspace=tmp_path)
    ex.add(call("Loud", "big"))
    [result] = await ex.results()
    stored = tmp_path / ".confab" / "results" / "call_big.txt"
    assert stored.read_text().count("\n") == 20_000
    assert ".confab/results/call_big.txt" in result.text()
    assert len(result.text()) < 5_000 and "line 0" in result.text()


async def test_a_call_whose_arguments_could_not_be_read_does_not_run() -> None:
    journal, events = Journal(), []
    ex = executor(journal, events)
    ex.add(ToolCall(id="c1", name="Safe", arguments={},
                    arguments_error="the arguments are not valid JSON: '{\"id\": \"a'"))
    [result] = await ex.results()
    assert result.is_error and "did not run" in result.text() and "JSON" in result.text()
    assert journal.log == []


class SwitchTool(GatedTool):
    """Concurrency-safe unless its ``id`` starts with ``w`` (a write), like Bash's analyzer."""

    def __init__(self, journal: Journal) -> None:
        super().__init__("Switch", Concurrency.INPUT_DEPENDENT, journal)

    def is_concurrency_safe(self, arguments: dict[str, Any]) -> bool:
        return not arguments["id"].startswith("w")


class SwitchGate(Gate):
    def needs_approval(self, call: ToolCall, default: bool) -> bool:
        return call.name in ("Risky", "Switch")


async def test_an_approval_with_edited_arguments_runs_the_edited_call_and_tells_the_model(
        ) -> None:
    journal, events = Journal(), []
    gate = Gate({"call_r": ApprovalDecision(approved=True, decided_by="bob",
                                            arguments={"id": "r2"})})
    ex = executor(journal, events, gate)
    ex.add(call("Risky", "r"))
    open_all(journal, "r2")
    [result] = await ex.results()
    assert journal.log == ["start:r2", "end:r2"]
    assert result.text() == ('[bob edited the arguments before approving; the call ran with '
                             '{"id": "r2"}]\nresult of r2')
    waiting = next(e for e in events if isinstance(e, AwaitingApproval))
    assert waiting.parameters == SCHEMA
    decided = next(e for e in events if isinstance(e, ApprovalDecided))
    assert (decided.arguments, decided.edited_arguments, decided.edited_by) == (
        {"id": "r"}, {"id": "r2"}, "bob")


async def test_an_approval_without_edits_names_no_editor() -> None:
    journal, events = Journal(), []
    ex = executor(journal, events, Gate({"call_r": ApprovalDecision(approved=True,
                                                                    decided_by="bob")}))
    ex.add(call("Risky", "r"))
    open_all(journal, "r")
    await ex.results()
    decided = next(e for e in events if isinstance(e, ApprovalDecided))
    assert (decided.arguments, decided.edited_arguments, decided.edited_by) == (
        {"id": "r"}, None, None)


async def test_edited_arguments_that_do_not_fit_the_schema_do_not_run() -> None:
    journal, events = Journal(), []
    gate = Gate({"call_r": ApprovalDecision(approved=True, decided_by="bob",
                                            arguments={"id": 5})})
    ex = executor(journal, events, gate)
    ex.add(call("Risky", "r"))
    [result] = await ex.results()
    assert result.is_error and journal.log == []
    assert result.text().startswith("The edited arguments did not run: Invalid arguments")


async def test_an_edit_that_makes_a_concurrent_call_unsafe_waits_until_it_runs_alone() -> None:
    journal, events = Journal(), []
    gate = SwitchGate({"call_a": ApprovalDecision(approved=True, decided_by="bob",
                                                  arguments={"id": "write"})})
    registry_tools = executor(journal, events)._registry
    registry_tools.register(SwitchTool(journal))
    ex = StreamingToolExecutor(registry_tools, make_context=lambda c, a: ToolContext(
        call_id=c.id, arguments=a, workspace=Path("."), emit=_ignore), emit=_record(events),
        approvals=gate)
    ex.add(call("Safe", "s"))  # safe, running
    ex.add(ToolCall(id="call_a", name="Switch", arguments={"id": "a"}))  # safe as sent
    await journal.wait_for("start:s")
    for _ in range(5):  # let the approved call go as far as it would (no clock involved)
        await asyncio.sleep(0)
    assert "start:write" not in journal.log  # it waits for Safe to end
    open_all(journal, "s", "write")
    await ex.results()
    assert journal.log.index("end:s") < journal.log.index("start:write")


async def _ignore(event: RuntimeEvent) -> None:
    return None


def _record(events: list[RuntimeEvent]) -> Any:
    async def emit(event: RuntimeEvent) -> None:
        events.append(event)
    return emit
