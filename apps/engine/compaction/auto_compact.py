"""Automatic and reactive compaction (DESIGN 2.6).

Older messages are replaced by one summary written by the same model through the same provider.
The cut never separates a tool call from its result, and everything after the cut is kept
verbatim, so the active tool loop keeps its reasoning artefacts (Anthropic needs the thinking
block of the assistant turn whose tool results it is sent). The summary is asked for over a
plain-text transcript, so the summarizing request carries no tool blocks or artefacts that a
provider could reject.

After :data:`MAX_FAILURES` consecutive failures automatic and reactive compaction pause for a
cooldown (:class:`CompactionState`), then try again; a member's "compact now" tries at any time
(DESIGN 2.6: a cooldown with a visible notice, never for good).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from apps.engine.compaction.tokens import compaction_threshold, estimate_message
from apps.engine.errors import EngineError, ProviderError
from apps.engine.events import ContentDelta
from apps.engine.messages import (
    ChatRequest,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from apps.engine.providers.base import AiProvider

__all__ = ["COOLDOWN_S", "MAX_FAILURES", "CompactionError", "CompactionResult",
           "CompactionState", "Compactor", "split_point"]

MAX_FAILURES = 3
COOLDOWN_S = 600.0
"""How long (seconds) automatic compaction pauses after :data:`MAX_FAILURES` failures."""
SUMMARY_PREFIX = "[Summary of the earlier conversation, written when it was compacted]\n\n"
SUMMARY_SYSTEM = (
    "You summarize a conversation between people and an AI agent so the agent can continue it "
    "without the full transcript. Keep: what the people asked for and decided, who said what "
    "when it matters, files and commands touched and their outcomes, open tasks and the next "
    "steps, facts the agent learned. Be concise and concrete; write in the transcript's "
    "language; no preamble."
)


class CompactionError(EngineError):
    """Compaction could not be done (nothing to cut, or the summary call failed)."""


@dataclass(slots=True)
class CompactionState:
    """Per-conversation breaker. ``consecutive_failures`` counts failures since the last
    success; from the :data:`MAX_FAILURES`-th on, each one pauses automatic compaction until
    ``paused_until`` (an aware datetime). Once that has passed the next attempt is made: a
    success closes the breaker, a failure pauses it again. The host keeps both fields with the
    conversation."""

    consecutive_failures: int = 0
    paused_until: datetime | None = None

    def paused(self, now: datetime) -> bool:
        """Whether automatic (and reactive) compaction waits at ``now``."""
        return self.paused_until is not None and now < self.paused_until

    def failed(self, now: datetime, cooldown_s: float) -> None:
        """Count a failure at ``now``; at the limit, pause for ``cooldown_s`` seconds."""
        self.consecutive_failures += 1
        if self.consecutive_failures >= MAX_FAILURES:
            self.paused_until = now + timedelta(seconds=cooldown_s)

    def succeeded(self) -> None:
        """A compaction worked: the breaker closes."""
        self.consecutive_failures, self.paused_until = 0, None


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """The new ``history``, how many messages the summary replaced, and the ``summary``."""

    history: list[Message]
    messages_removed: int
    summary: str


def _cuts(messages: list[Message]) -> list[int]:
    """Indexes ``i`` where a cut before ``messages[i]`` separates no tool call from its result
    and the kept part starts with a person's or the assistant's message."""
    cuts: list[int] = []
    open_calls: set[str] = set()
    for i, message in enumerate(messages):
        if i and not open_calls and message.role in ("user", "assistant"):
            cuts.append(i)
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                open_calls.add(block.id)
            elif isinstance(block, ToolResultBlock):
                open_calls.discard(block.tool_use_id)
    return cuts


def split_point(messages: list[Message], keep_tokens: int) -> int | None:
    """Where to cut: the earliest valid cut whose kept tail fits ``keep_tokens``, else the
    latest valid cut (the tail is then just the last step). None when no cut exists."""
    cuts = _cuts(messages)
    if not cuts:
        return None
    valid = set(cuts)
    tail = 0
    fitting = None
    for i in range(len(messages) - 1, 0, -1):
        tail += estimate_message(messages[i])
        if tail > keep_tokens:
            break
        if i in valid:
            fitting = i
    return fitting if fitting is not None else cuts[-1]


def transcript(messages: list[Message]) -> str:
    """The messages as readable text for the summarizer."""
    lines: list[str] = []
    for message in messages:
        who = message.author.name if message.author else message.role
        for block in message.content:
            if isinstance(block, TextBlock) and block.text:
                lines.append(f"{who}: {block.text}")
            elif isinstance(block, ThinkingBlock) and block.thinking:
                lines.append(f"{who} (thinking): {block.thinking}")
            elif isinstance(block, ToolUseBlock):
                lines.append(f"{who} called {block.name}({json.dumps(block.input)[:2000]})")
            elif isinstance(block, ToolResultBlock):
                status = "error" if block.is_error else "result"
                lines.append(f"tool {status} for {block.name or block.tool_use_id}: "
                             f"{block.text()[:4000]}")
    return "\n".join(lines)


def _fit(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters: its start (the goals) and its end (the latest)."""
    if len(text) <= limit:
        return text
    head = limit // 3
    gap = "\n[... the middle of the transcript is omitted ...]\n"
    return text[:head] + gap + text[head - limit :]


class Compactor:
    """Summarizes older history through ``provider`` with ``model``.

    ``threshold`` follows DESIGN 2.6 from ``context_window`` and ``max_output``; the kept tail
    aims at ``keep_ratio`` of it. ``state`` is the conversation's failure breaker, which pauses
    for ``cooldown_s`` seconds after :data:`MAX_FAILURES` failures; ``clock`` gives the time
    (aware datetimes; injectable for tests). ``notes`` (e.g. ``SessionMemory.read``) adds the
    session notes to each summary.
    """

    def __init__(self, provider: AiProvider, model: str, *, context_window: int | None,
                 max_output: int | None, state: CompactionState | None = None,
                 keep_ratio: float = 0.25, notes: Callable[[], str | None] | None = None,
                 cooldown_s: float = COOLDOWN_S,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.provider = provider
        self.notes = notes  # session memory: its notes ride along in the summary
        self.model = model
        self.threshold = compaction_threshold(context_window, max_output)
        self.state = state or CompactionState()
        self.cooldown_s = cooldown_s
        self.clock = clock
        self._keep_tokens = int(self.threshold * keep_ratio)

    def paused(self) -> bool:
        """Whether the breaker holds automatic and reactive compaction now."""
        return self.state.paused(self.clock())

    def due(self, tokens: int) -> bool:
        """Whether ``tokens`` of history call for automatic compaction."""
        return not self.paused() and tokens >= self.threshold

    async def compact(self, history: list[Message]) -> CompactionResult:
        """Summarize the older part of ``history`` (whatever the breaker says: callers ask
        :meth:`due` or :meth:`paused` first); raises CompactionError, and counts the failure,
        when there is nothing to cut or the summary call fails."""
        try:
            result = await self._compact(history)
        except (CompactionError, ProviderError) as exc:
            self.state.failed(self.clock(), self.cooldown_s)
            raise CompactionError(str(exc)) from exc
        self.state.succeeded()
        return result

    async def _compact(self, history: list[Message]) -> CompactionResult:
        cut = split_point(history, self._keep_tokens)
        if cut is None:
            raise CompactionError("nothing to compact: the history is one step")
        summary = await self._summarize(history[:cut])
        notes = await asyncio.to_thread(self.notes) if self.notes else None
        if notes:
            summary += "\n\n[Session notes]\n" + notes.strip()
        head = Message(role="user", content=SUMMARY_PREFIX + summary)
        return CompactionResult(history=[head, *history[cut:]], messages_removed=cut,
                                summary=summary)

    async def _summarize(self, messages: list[Message]) -> str:
        text = _fit(transcript(messages), self.threshold * 3)  # ~3 chars a token: fits
        request = ChatRequest(
            model=self.model, system=SUMMARY_SYSTEM, max_tokens=4096,
            messages=[Message(role="user", content="Summarize this conversation:\n\n" + text)],
        )
        pieces: list[str] = []
        async with aclosing(self.provider.stream_chat(request)) as stream:
            async for event in stream:
                if isinstance(event, ContentDelta):
                    pieces.append(event.text)
        summary = "".join(pieces).strip()
        if not summary:
            raise CompactionError("the model returned an empty summary")
        return summary
