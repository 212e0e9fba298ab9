"""AgentRunner: one agent run as an async iterator of runtime events (DESIGN 2.4).

Each iteration: build the request -> stream the model's answer (tools start as their calls
complete) -> the assistant message joins the history -> the tool results join it -> messages
people sent meanwhile are injected -> compaction if the history is over the threshold -> go on
while there were tool calls or injected messages, else finish.

The run happens in its own task and reports through a queue (or, for an event the consumer
can take at once, to the consumer directly: ``events(take_now=...)``), so events from tools
running beside the stream (approvals, questions, todos) interleave in the order they happened.
:meth:`AgentRunner.cancel` stops it anywhere — streaming, running tools, waiting for approval —
and the run still closes its history properly and ends with ``run_ended(cancelled)``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from apps.engine.compaction.auto_compact import CompactionError, Compactor
from apps.engine.compaction.tokens import usage_tokens
from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import (
    Compacted,
    CompactionFailed,
    CompactionStarted,
    ErrorEvent,
    MessagesInjected,
    RunEnded,
    RunStarted,
    RuntimeEvent,
    ToolResultEvent,
    ToolStarted,
    TurnEnded,
    TurnStarted,
    UsageUpdated,
)
from apps.engine.messages import (
    ChatRequest,
    Message,
    ReasoningParams,
    ToolCall,
    ToolResultBlock,
)
from apps.engine.ports import ApprovalGate, InputPort, PendingInbox
from apps.engine.providers.base import AiProvider
from apps.engine.runtime.hooks import RunHooks
from apps.engine.runtime.incremental import ModelView, TokenCounter
from apps.engine.runtime.loop import StepRun
from apps.engine.tools.base import ToolCategory, ToolContext, ToolEnvironment
from apps.engine.tools.executor import StreamingToolExecutor
from apps.engine.tools.mounts import ReadOnlyMounts
from apps.engine.tools.registry import ToolRegistry

__all__ = ["AgentRunner", "RunConfig", "RunStatus"]

RunStatus = Literal["completed", "cancelled", "failed"]
_DONE = object()
SHARED_SERVICES = ("wiki",)
"""Services a sub-agent gets from its parent (the others, like the task list, are its own)."""
SUBAGENT_SYSTEM = (
    "You are a sub-agent working for another agent. Do the task you are given with the tools "
    "you have, then answer with a concise report of what you found or did: that report is all "
    "the other agent will see."
)


@dataclass(frozen=True, slots=True)
class RunConfig:
    """How to call the model and how long to go on.

    ``context_window`` / ``max_tokens``: the model's limits (tokens), for the context gauge and
    the compaction threshold; ``max_iterations``: hard cap on model calls per run;
    ``tool_loop_limit``: consecutive all-failed tool iterations before ``tool_loop_detected``.
    """

    model: str
    system: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    reasoning: ReasoningParams | None = None
    server_tools: tuple[str, ...] = ()
    context_window: int | None = None
    max_iterations: int = 50
    tool_loop_limit: int = 10


class _RunFailed(Exception):
    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class AgentRunner:
    """One run over ``history`` (a list the run appends to in place).

    Ports: ``inbox`` (people's pending messages), ``approvals``, ``inputs`` (AskUser); ``env``
    and ``workspace`` for tools; ``compactor`` (None: never compact); ``hooks``; ``services``
    handed to tools (e.g. the sub-agent factory of Task, the wiki port); ``mounts``: read-only
    directories the file tools and Bash see in the workspace (the wiki's snapshot).
    """

    def __init__(self, provider: AiProvider, tools: ToolRegistry, config: RunConfig,
                 history: list[Message], *, run_id: str, workspace: Path,
                 inbox: PendingInbox | None = None, approvals: ApprovalGate | None = None,
                 inputs: InputPort | None = None, env: ToolEnvironment | None = None,
                 compactor: Compactor | None = None, hooks: RunHooks | None = None,
                 services: dict[str, Any] | None = None,
                 mounts: ReadOnlyMounts | None = None) -> None:
        self.provider = provider
        self.tools = tools
        self.config = config
        self.history = history
        self.run_id = run_id
        self.workspace = workspace
        self.inbox = inbox
        self.approvals = approvals
        self.inputs = inputs
        self.env = env or ToolEnvironment()
        self.compactor = compactor
        self.hooks = hooks or RunHooks()
        self.services = services if services is not None else {}
        self.services.setdefault("subagent", self.subagent)
        self.mounts = mounts
        self.status: RunStatus | None = None
        self.turns = 0
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._take_now: Callable[[RuntimeEvent], bool] | None = None  # see events()
        self._task: asyncio.Task[None] | None = None
        self._running = False
        self._cancel_requested = False
        self._step: StepRun | None = None
        self._anchor: tuple[int, int] | None = None  # (tokens of the last call, history index)
        self._tokens = TokenCounter()
        self._view = ModelView()

    # -- the public surface ---------------------------------------------------------------
    async def events(self, *, compact_only: bool = False,
                     take_now: Callable[[RuntimeEvent], bool] | None = None
                     ) -> AsyncIterator[RuntimeEvent]:
        """Run, yielding every runtime event until ``run_ended``. Call once.

        ``compact_only``: no model turn, only a compaction of the history ("compact now": reason
        "manual", tried whatever the breaker says); the run ends ``completed``, or ``failed``
        with error kind ``compaction_failed``.

        ``take_now``: the consumer's own synchronous taker, offered each event as it is emitted
        when every earlier one has been yielded; an event it takes (returns True) is not
        yielded. It spares the run's task handing such an event to the consumer's through a
        queue, and the consumer's task a wake-up, per streamed token. "Yielded" is not
        "handled": order holds only if it refuses while the consumer is not done with what it
        was given (the room's projector refuses while any task holds or waits for its lock:
        ``Projector.take_now``)."""
        if self._task is not None:
            raise RuntimeError("AgentRunner.events() may be called once")
        self._take_now = take_now
        self._task = asyncio.create_task(self._main(compact_only), name=f"run:{self.run_id}")
        try:
            while (item := await self._queue.get()) is not _DONE:
                yield item  # type: ignore[misc]
        finally:
            if not self._task.done():  # the consumer went away: stop the run with it
                self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def cancel(self) -> None:
        """Stop the run wherever it is — also before it has begun; it closes its history and
        ends ``cancelled``."""
        self._cancel_requested = True
        # A task cancelled before its first step would never run its own clean-up, so it is
        # only cancelled once it runs; until then the flag is enough (``_main`` reads it).
        if self._running and self._task is not None and not self._task.done():
            self._task.cancel()

    async def run(self, *, compact_only: bool = False) -> list[RuntimeEvent]:
        """Run to the end and return every event (for tests and one-shot callers)."""
        return [event async for event in self.events(compact_only=compact_only)]

    def subagent(self, prompt: str) -> AgentRunner:
        """A sub-agent for Task: same provider, workspace, mounts and ports (the wiki's among
        them); a fresh history holding ``prompt``; every tool except the agent ones (no
        sub-agents of sub-agents)."""
        shared = {name: self.services[name] for name in SHARED_SERVICES
                  if name in self.services}
        return AgentRunner(
            self.provider, self.tools.subset(exclude_categories=[ToolCategory.AGENT]),
            replace(self.config, system=SUBAGENT_SYSTEM), [Message(role="user", content=prompt)],
            run_id=f"{self.run_id}/sub", workspace=self.workspace, approvals=self.approvals,
            inputs=self.inputs, env=self.env, services=shared, mounts=self.mounts)

    # -- the run ----------------------------------------------------------------------------
    async def emit(self, event: RuntimeEvent) -> None:
        """Report ``event`` (tools call this through their context)."""
        take_now = self._take_now
        if take_now is None or not self._queue.empty() or not take_now(event):
            self._queue.put_nowait(event)
        if isinstance(event, ToolStarted):
            await self.hooks.tool_start(event.call_id, event.name)
        elif isinstance(event, ToolResultEvent):
            await self.hooks.tool_end(event.call_id, event.result)

    async def _main(self, compact_only: bool) -> None:
        error_kind: str | None = None
        self._running = True
        try:
            await self.emit(RunStarted(run_id=self.run_id, model=self.config.model))
            if self._cancel_requested:
                raise asyncio.CancelledError  # stopped before it began
            if compact_only:
                self.status, error_kind = await self._compact_now()
            else:
                self.status, error_kind = await self._loop()
        except asyncio.CancelledError:
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            await self._close_cancelled()
            self.status = "cancelled"
        except Exception as exc:  # a bug must still end the run visibly
            await self.emit(ErrorEvent(error_kind="internal",
                                       message=f"{type(exc).__name__}: {exc}"))
            self.status, error_kind = "failed", "internal"
        finally:
            await self.hooks.run_end(self.status or "failed", self.history)
            self._queue.put_nowait(RunEnded(status=self.status or "failed",
                                            error_kind=error_kind, turns=self.turns))
            self._queue.put_nowait(_DONE)

    async def _close_cancelled(self) -> None:
        if self._step is not None:
            await self._step.close_interrupted("cancelled")

    async def _loop(self) -> tuple[RunStatus, str | None]:
        failing = 0
        await self._inject()
        while self.turns < self.config.max_iterations:
            self.turns += 1
            await self.emit(TurnStarted(turn=self.turns))
            await self.hooks.turn_start(self.turns, self.history)
            try:
                calls, results = await self._turn()
            except _RunFailed as failed:
                return "failed", failed.kind
            injected = await self._inject()
            await self._maybe_compact()
            await self.hooks.turn_end(self.turns, self.history)
            await self.emit(TurnEnded(turn=self.turns))
            if not calls and not injected:
                return "completed", None
            failing = failing + 1 if calls and all(r.is_error for r in results) else 0
            if failing >= self.config.tool_loop_limit:
                await self.emit(ErrorEvent(
                    error_kind="tool_loop_detected",
                    message=f"Every tool call failed in {failing} consecutive steps; stopped."))
                return "failed", "tool_loop_detected"
        await self.emit(ErrorEvent(error_kind="max_iterations", message=(
            f"Stopped after {self.config.max_iterations} model calls (the run's limit).")))
        return "failed", "max_iterations"

    async def _turn(self, reactive_done: bool = False
                    ) -> tuple[list[ToolCall], list[ToolResultBlock]]:
        step = self._step = StepRun(provider=self.provider, executor=self._executor(),
                                    history=self.history, emit=self.emit)
        try:
            await step.stream(self._request())
        except ProviderError as error:
            if self._can_retry_reactively(error, step, reactive_done):
                await step.executor.abort()
                if await self._compact("reactive"):
                    return await self._turn(reactive_done=True)
            await step.close_interrupted("error")
            await self.emit(ErrorEvent(error_kind=str(error.kind), message=error.message))
            raise _RunFailed(str(error.kind)) from error
        await step.append_message()
        await self._note_usage(step)
        results = await step.executor.results() if step.calls else []
        await step.append_results(results)
        self._step = None
        return step.calls, results

    def _can_retry_reactively(self, error: ProviderError, step: StepRun, done: bool) -> bool:
        return (error.kind is ErrorKind.CONTEXT_LENGTH_EXCEEDED and not done
                and not step.started and self.compactor is not None
                and not self.compactor.paused())

    def _executor(self) -> StreamingToolExecutor:
        return StreamingToolExecutor(self.tools, make_context=self._tool_context,
                                     emit=self.emit, approvals=self.approvals)

    def _tool_context(self, call: ToolCall, arguments: dict[str, Any]) -> ToolContext:
        return ToolContext(call_id=call.id, arguments=arguments, workspace=self.workspace,
                           emit=self.emit, inputs=self.inputs, env=self.env,
                           services=self.services, mounts=self.mounts)

    def _request(self) -> ChatRequest:
        config = self.config
        # model_construct: every part is already a validated model; re-validating thousands of
        # history messages at every step would be the loop's largest cost.
        return ChatRequest.model_construct(
            model=config.model, messages=self._view.messages(self.history),
            system=config.system, tools=self.tools.definitions(), max_tokens=config.max_tokens,
            temperature=config.temperature, reasoning=config.reasoning,
            server_tools=list(config.server_tools),
        )

    async def _note_usage(self, step: StepRun) -> None:
        if step.usage is None:
            return
        tokens = usage_tokens(step.usage, self.provider.protocol)
        if tokens is not None:
            self._anchor = (tokens, len(self.history))
        await self.emit(UsageUpdated(
            usage=step.usage, context_tokens=self.context_tokens(),
            context_window=self.config.context_window or 200_000))

    def context_tokens(self) -> int:
        """Estimated tokens the history uses now (DESIGN 2.6)."""
        if self._anchor is None:
            return self._tokens.tokens(self.history)
        tokens, index = self._anchor
        return self._tokens.tokens(self.history, tokens, index)

    async def _inject(self) -> bool:
        """People's pending messages join the history; whether one of them steers (asks for
        another model call: chat in a ``mention`` room only waits for the next one)."""
        if self.inbox is None:
            return False
        taken = await self.inbox.take()
        if not taken.messages:
            return False
        self.history.extend(taken.messages)
        await self.emit(MessagesInjected(messages=taken.messages))
        return taken.steer

    async def _compact_now(self) -> tuple[RunStatus, str | None]:
        """One manual compaction ("compact now"): the breaker does not hold it."""
        if self.compactor is None:
            await self.emit(ErrorEvent(error_kind="compaction_failed",
                                       message="This run has no compactor."))
        elif await self._compact("manual"):
            return "completed", None
        return "failed", "compaction_failed"

    async def _maybe_compact(self) -> None:
        if self.compactor is not None and self.compactor.due(self.context_tokens()):
            await self._compact("auto")

    async def _compact(self, reason: Literal["auto", "reactive", "manual"]) -> bool:
        assert self.compactor is not None
        before = self.context_tokens()
        await self.emit(CompactionStarted(reason=reason, tokens_before=before))
        try:
            result = await self.compactor.compact(self.history)
        except CompactionError as exc:
            state = self.compactor.state
            await self.emit(CompactionFailed(
                message=str(exc), consecutive_failures=state.consecutive_failures,
                paused_until=state.paused_until if self.compactor.paused() else None))
            return False
        self.history[:] = result.history
        self._anchor = None
        await self.emit(Compacted(reason=reason, messages_removed=result.messages_removed,
                                  tokens_before=before, tokens_after=self.context_tokens(),
                                  summary=result.summary))
        return True


