"""Runtime events as readable terminal text (the engine command's default output)."""

from __future__ import annotations

import json
from typing import TextIO

from apps.engine.events import (
    AwaitingApproval,
    Compacted,
    CompactionFailed,
    ErrorEvent,
    MessageEnded,
    MessagesInjected,
    ReasoningDeltaEvent,
    RetryingEvent,
    RunEnded,
    RuntimeEvent,
    SubagentEvent,
    TextDelta,
    TodosUpdated,
    ToolCallReadyEvent,
    ToolResultEvent,
    WarningEvent,
)

__all__ = ["TextView"]

PREVIEW_LINES = 6


class TextView:
    """Writes answer text to ``out`` as it streams and everything else, marked, to ``err``."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self._thinking = False
        self._mid_line = False  # the terminal cursor is after streamed text, not at a line start

    def show(self, event: RuntimeEvent, indent: str = "") -> None:
        """Render one event."""
        match event:
            case TextDelta(text=text):
                self._end_thinking()
                self._write(self.out, text.replace("\n", "\n" + indent))
            case ReasoningDeltaEvent(text=text):
                if not self._thinking:
                    self._thinking = True
                    self._write(self.err, ("\n" if self._mid_line else "") + f"{indent}(thinking) ")
                self._write(self.err, text)
            case ToolCallReadyEvent(call=call):
                self._line(f"{indent}→ {call.name} {json.dumps(call.arguments)[:300]}")
            case ToolResultEvent(result=result, duration_ms=ms):
                self._result(result.text(), result.is_error, ms, indent)
            case SubagentEvent(event=inner):
                self.show(inner, indent + "  │ ")
            case _:
                self._notice(event, indent)

    def _notice(self, event: RuntimeEvent, indent: str) -> None:
        match event:
            case MessageEnded():
                self._end_thinking()
            case RetryingEvent(error_kind=kind, delay_s=delay, attempt=n, max_attempts=m):
                self._line(f"{indent}! provider {kind.replace('_', ' ')}, retrying in "
                           f"{delay:.0f} s (attempt {n} of {m})", self.err)
            case Compacted(messages_removed=removed, tokens_before=a, tokens_after=b):
                self._line(f"{indent}! compacted {removed} messages ({a} -> {b} tokens)",
                           self.err)
            case CompactionFailed(message=message) | WarningEvent(message=message):
                self._line(f"{indent}! {message}", self.err)
            case ErrorEvent(error_kind=kind, message=message):
                self._line(f"{indent}✗ {kind}: {message}", self.err)
            case TodosUpdated(todos=todos):
                marks = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
                for todo in todos:
                    self._line(f"{indent}{marks.get(todo['status'], '[ ]')} {todo['content']}")
            case MessagesInjected(messages=messages):
                for message in messages:
                    who = message.author.name if message.author else "someone"
                    self._line(f"{indent}+ {who}: {message.text()}")
            case AwaitingApproval(name=name):
                self._line(f"{indent}? {name} waits for approval", self.err)
            case RunEnded(status=status, turns=turns):
                self._line(f"{indent}— run {status} after {turns} step(s)", self.err)
            case _:
                pass

    def _result(self, text: str, is_error: bool, ms: float, indent: str) -> None:
        lines = text.splitlines() or [""]
        head = "✗ error" if is_error else "✓"
        self._line(f"{indent}  {head} ({ms:.0f} ms)")
        for line in lines[:PREVIEW_LINES]:
            self._line(f"{indent}  │ {line[:200]}")
        if len(lines) > PREVIEW_LINES:
            self._line(f"{indent}  │ … {len(lines) - PREVIEW_LINES} more lines")

    def _end_thinking(self) -> None:
        if self._thinking:
            self._thinking = False
            self._write(self.err, "\n")

    def _line(self, text: str, stream: TextIO | None = None) -> None:
        self._end_thinking()
        if self._mid_line:
            self._write(self.out, "\n")
        self._write(stream or self.out, text + "\n")

    def _write(self, stream: TextIO, text: str) -> None:
        if text:
            stream.write(text)
            stream.flush()
            self._mid_line = not text.endswith("\n")
