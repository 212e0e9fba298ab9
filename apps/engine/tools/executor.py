"""The streaming tool executor (DESIGN 2.5): a call starts the moment it is ready.

The loop hands each ``ToolCallReady`` to :meth:`StreamingToolExecutor.add` while the model may
still be streaming later calls. Calls are admitted in the order they were made:

- a concurrency-safe call starts when every running call is concurrency-safe too;
- an unsafe call (``never``, or ``input_dependent`` and unsafe for its arguments) starts only
  when nothing runs, and nothing after it starts until it ends;
- a call never overtakes an earlier one that is still waiting to start.

Results come back in call order whatever order the tools finish in; a text result longer than
the environment's ``max_result_chars`` is stored in the workspace and the model gets a preview
and the path (``tools/results.py``). Each call is validated
(unknown tool, schema) and, when the policy asks, approved before it runs; every failure becomes
an error result the model can read, so a tool never crashes the run. :meth:`abort` cancels
what runs (the tools kill their child processes on cancellation) and gives every unfinished call
a "cancelled" result, so the history stays sendable.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from apps.engine.errors import ToolError
from apps.engine.events import (
    ApprovalDecided,
    AwaitingApproval,
    RuntimeEvent,
    ToolResultEvent,
    ToolStarted,
)
from apps.engine.messages import TextBlock, ToolCall, ToolResultBlock
from apps.engine.ports import ApprovalGate
from apps.engine.tools.base import Tool, ToolContext, ToolOutput
from apps.engine.tools.registry import ToolRegistry
from apps.engine.tools.results import store_if_large

__all__ = ["StreamingToolExecutor"]

Emit = Callable[[RuntimeEvent], Awaitable[None]]
ContextFactory = Callable[[ToolCall, dict[str, Any]], ToolContext]


@dataclass(slots=True)
class _Slot:
    call: ToolCall
    tool: Tool | None
    arguments: dict[str, Any]
    safe: bool
    task: asyncio.Task[ToolResultBlock] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    result: ToolResultBlock | None = None
    edited_by: str | None = None  # who changed the arguments before approving


class StreamingToolExecutor:
    """Runs one model response's tool calls as they arrive.

    ``registry``: the run's tools; ``make_context(call, arguments)``: the ToolContext of a call;
    ``emit``: where tool_started / tool_result / approval events go; ``approvals``: the approval
    port (None: nothing needs approval).
    """

    def __init__(self, registry: ToolRegistry, *, make_context: ContextFactory, emit: Emit,
                 approvals: ApprovalGate | None = None) -> None:
        self._registry = registry
        self._make_context = make_context
        self._emit = emit
        self._approvals = approvals
        self._slots: list[_Slot] = []
        self._next = 0  # index of the first call not started yet

    @property
    def calls(self) -> list[ToolCall]:
        """Every call added so far, in order."""
        return [slot.call for slot in self._slots]

    def add(self, call: ToolCall) -> None:
        """Queue ``call`` and start whatever the concurrency rules now allow."""
        tool = self._registry.get(call.name)
        arguments = call.arguments
        safe = False
        if tool is not None:
            try:
                arguments = tool.prepare_arguments(dict(call.arguments))
                safe = tool.is_concurrency_safe(arguments)
            except Exception:  # a bad argument shape: validation reports it, unsafely alone
                arguments, safe = call.arguments, False
        self._slots.append(_Slot(call=call, tool=tool, arguments=arguments, safe=safe))
        self._admit()

    def _admit(self) -> None:
        while self._next < len(self._slots):
            slot = self._slots[self._next]
            running = [s for s in self._slots[: self._next] if not s.done.is_set()]
            if running and not (slot.safe and all(s.safe for s in running)):
                return
            self._next += 1
            slot.task = asyncio.create_task(self._run(slot), name=f"tool:{slot.call.name}")
            if not slot.safe:
                return  # an unsafe call runs alone: nothing after it starts until it ends

    async def _run(self, slot: _Slot) -> ToolResultBlock:
        try:
            slot.result = await self._execute(slot)
            return slot.result
        finally:
            slot.done.set()
            self._admit()

    async def results(self) -> list[ToolResultBlock]:
        """Wait for every call added so far; their results in call order."""
        for slot in self._slots:
            await slot.done.wait()
        return [self._result_of(slot) for slot in self._slots]

    async def abort(self, reason: str = "cancelled") -> list[ToolResultBlock]:
        """Cancel every running call, wait until they are gone, and return one result per call
        (a cancelled call's result says so). Safe to call more than once."""
        self._next = len(self._slots)  # nothing more starts
        tasks = [s.task for s in self._slots if s.task is not None and not s.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for slot in self._slots:
            if slot.result is None:
                slot.result = _error(slot.call, f"Tool call {reason} before it finished.")
            slot.done.set()
        return [self._result_of(slot) for slot in self._slots]

    def _result_of(self, slot: _Slot) -> ToolResultBlock:
        assert slot.result is not None
        return slot.result

    async def _execute(self, slot: _Slot) -> ToolResultBlock:
        call, tool = slot.call, slot.tool
        if tool is None:
            known = ", ".join(sorted(t.spec.name for t in self._registry)) or "none"
            return await self._finish(call, _error(call, f"Unknown tool {call.name!r}. "
                                                         f"Available tools: {known}."), 0.0)
        if call.arguments_error is not None:
            return await self._finish(call, _error(call, (
                f"The call to {call.name} did not run: {call.arguments_error}. Send the call "
                "again with its arguments as one complete JSON object.")), 0.0)
        problem = self._registry.validate(call.name, slot.arguments)
        if problem is not None:
            return await self._finish(call, _error(call, problem), 0.0)
        denial = await self._approve(slot, tool)
        if denial is not None:
            return await self._finish(call, denial, 0.0)
        await self._emit(ToolStarted(call_id=call.id, name=call.name))
        started = time.monotonic()
        result = await self._invoke(call, tool, slot.arguments)
        if slot.arguments is not call.arguments and slot.edited_by is not None:
            result = _with_edit_note(result, slot.edited_by, slot.arguments)
        return await self._finish(call, result, (time.monotonic() - started) * 1000.0)

    async def _approve(self, slot: _Slot, tool: Tool) -> ToolResultBlock | None:
        """None when the call may run (with ``slot.arguments`` as a member edited them, if
        they did), else its denial as a result."""
        call, arguments, gate = slot.call, slot.arguments, self._approvals
        if gate is None or not gate.needs_approval(call, tool.needs_approval(arguments)):
            return None
        reason = f"{call.name} needs a member's approval under the team's tool policy."
        await self._emit(AwaitingApproval(call_id=call.id, name=call.name, arguments=arguments,
                                          reason=reason, parameters=tool.spec.parameters))
        decision = await gate.request(call, reason)
        edited = decision.arguments if decision.approved else None
        await self._emit(ApprovalDecided(
            call_id=call.id, approved=decision.approved, decided_by=decision.decided_by,
            arguments=arguments, edited_arguments=edited,
            edited_by=decision.decided_by if edited is not None else None))
        if not decision.approved:
            who = decision.decided_by or "nobody (the approval wait timed out)"
            note = f" Their note: {decision.note}" if decision.note else ""
            return _error(call, f"The tool call was denied by {who}; it did not run.{note}")
        if edited is not None:
            return await self._take_edit(slot, tool, edited, decision.decided_by)
        return None

    async def _take_edit(self, slot: _Slot, tool: Tool, edited: dict[str, Any],
                         by: str | None) -> ToolResultBlock | None:
        """Run the call with the arguments ``by`` edited: checked against the schema again
        (the host already did; a port may not), and when they make a call that was admitted
        beside others unsafe, it waits until it runs alone."""
        try:
            edited = tool.prepare_arguments(dict(edited))
        except Exception as exc:  # the shape prepare_arguments expects is not there
            return _error(slot.call, f"The edited arguments did not run: {exc}")
        problem = self._registry.validate(slot.call.name, edited)
        if problem is not None:
            return _error(slot.call, f"The edited arguments did not run: {problem}")
        slot.arguments, slot.edited_by = edited, by
        if slot.safe and not tool.is_concurrency_safe(edited):
            slot.safe = False  # nothing more is admitted beside it (``_admit``)
            await self._others_done(slot)
        return None

    async def _others_done(self, slot: _Slot) -> None:
        """Wait until every other started call has ended, except a later one whose edit made
        it unsafe too: it waits for this one (the earlier call goes first, no deadlock)."""
        mine = self._slots.index(slot)
        for index, other in enumerate(self._slots):
            if other is slot or other.task is None or (index > mine and not other.safe):
                continue
            await other.done.wait()

    async def _invoke(self, call: ToolCall, tool: Tool, arguments: dict[str, Any]
                      ) -> ToolResultBlock:
        ctx = self._make_context(call, arguments)
        timeout = tool.spec.timeout_s
        try:
            async with asyncio.timeout(timeout):
                output = await tool.invoke(ctx)
        except TimeoutError:
            return _error(call, f"{call.name} timed out after {timeout:g} s and was stopped.")
        except ToolError as exc:
            return _error(call, str(exc))
        except Exception as exc:  # a tool bug must not end the run: the model is told
            return _error(call, f"{call.name} failed: {type(exc).__name__}: {exc}")
        if isinstance(output.content, str):
            content = await store_if_large(ctx.workspace, call.id, output.content,
                                           ctx.env.max_result_chars)
            output = ToolOutput(content=content, is_error=output.is_error)
        return _block(call, output)

    async def _finish(self, call: ToolCall, result: ToolResultBlock, duration_ms: float
                      ) -> ToolResultBlock:
        await self._emit(ToolResultEvent(call_id=call.id, name=call.name, result=result,
                                         duration_ms=duration_ms))
        return result


def _error(call: ToolCall, message: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=call.id, name=call.name, content=_shown(message),
                           is_error=True)


def _with_edit_note(result: ToolResultBlock, by: str, arguments: dict[str, Any]
                    ) -> ToolResultBlock:
    """``result`` told as the model must read it: the call ran with other arguments than it
    sent (otherwise it would reason about a result of arguments it never chose)."""
    note = (f"[{by} edited the arguments before approving; the call ran with "
            f"{json.dumps(arguments, ensure_ascii=False)}]\n")
    if isinstance(result.content, str):
        return result.model_copy(update={"content": note + result.content})
    return result.model_copy(update={"content": [TextBlock(text=note), *result.content]})


def _block(call: ToolCall, output: ToolOutput) -> ToolResultBlock:
    content = output.content
    if isinstance(content, str):
        content = _shown(content)
    else:
        content = [b.model_copy(update={"text": _shown(b.text)})
                   if isinstance(b, TextBlock) and _NUL in b.text else b for b in content]
    return ToolResultBlock(tool_use_id=call.id, name=call.name, content=content,
                           is_error=output.is_error)


_NUL = "\x00"
_NUL_SHOWN = "\u2400"  # SYMBOL FOR NULL


def _shown(text: str) -> str:
    """``text`` with each NUL as ␀: what a shell prints with ``-print0`` or a binary file
    holds, which no model needs as a control character and a transcript cannot keep (a host
    storing results in PostgreSQL, whose ``text`` and ``jsonb`` refuse U+0000)."""
    return text.replace(_NUL, _NUL_SHOWN) if _NUL in text else text
