"""The message being written: what its stream has said so far (DESIGN 3.3, "the in-progress
assistant message is checkpointed often enough that a reconnect mid-stream shows the text so
far").

The projector builds a :class:`Draft` from the runtime's events as they stream and stores it as
the message's ``content`` at most every :data:`CHECKPOINT_S` seconds (a checkpoint per flush
rewrote the whole text so far every 50 ms: quadratic in the message's length), with
``checkpoint_seq``, the last event it includes. Between checkpoints the log holds the rest:
:func:`content_so_far` is the checkpoint plus the message's draft events after it, so the state
frame, a history page and an interrupted run's message lose nothing that was stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apps.rooms.models import ConversationEvent, Message, MessageStatus

__all__ = ["CHECKPOINT_S", "DRAFT_KINDS", "Draft", "being_written", "content_so_far"]

CHECKPOINT_S = 1.0
"""Seconds between two checkpoints of a message being written (its end is always stored)."""

DRAFT_KINDS = ("text_delta", "reasoning_delta", "tool_call_started", "tool_call_delta",
               "tool_call_ready")
"""The event kinds that change a message being written."""


@dataclass(slots=True)
class Draft:
    """A message's thinking, text and tool calls (by stream index) so far."""

    thinking: str = ""
    text: str = ""
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_blocks(cls, blocks: list[dict[str, Any]]) -> Draft:
        """The draft a checkpoint (:meth:`blocks`) stored."""
        draft = cls()
        for block in blocks:
            if block.get("type") == "thinking":
                draft.thinking = block.get("thinking", "")
            elif block.get("type") == "text":
                draft.text = block.get("text", "")
            elif block.get("type") == "tool_use" and "index" in block:
                draft.calls[block["index"]] = block
        return draft

    def blocks(self) -> list[dict[str, Any]]:
        """The content blocks so far: thinking, text, then the calls in stream order (each
        with its ``index``; a call still streaming has ``partial_arguments``)."""
        out: list[dict[str, Any]] = []
        if self.thinking:
            out.append({"type": "thinking", "thinking": self.thinking})
        if self.text:
            out.append({"type": "text", "text": self.text})
        out.extend(self.calls[i] for i in sorted(self.calls))
        return out

    def start_call(self, index: int, name: str) -> None:
        self.calls[index] = {"type": "tool_use", "name": name, "partial_arguments": "",
                             "index": index}

    def add_arguments(self, index: int, delta: str) -> None:
        call = self.calls.setdefault(index, {"type": "tool_use", "name": "",
                                             "partial_arguments": "", "index": index})
        call["partial_arguments"] = call.get("partial_arguments", "") + delta

    def ready_call(self, index: int, call: dict[str, Any]) -> None:
        """``call``: ``{"id", "name", "arguments"}`` (the runtime's ToolCall)."""
        self.calls[index] = {"type": "tool_use", "id": call["id"], "name": call["name"],
                             "input": call["arguments"], "index": index}

    def apply(self, kind: str, payload: dict[str, Any]) -> None:
        """One stored draft event (a :data:`DRAFT_KINDS` payload)."""
        if kind == "text_delta":
            self.text += payload["text"]
        elif kind == "reasoning_delta":
            self.thinking += payload["text"]
        elif kind == "tool_call_started":
            self.start_call(payload["index"], payload["name"])
        elif kind == "tool_call_delta":
            self.add_arguments(payload["index"], payload["arguments_delta"])
        elif kind == "tool_call_ready":
            self.ready_call(payload["index"], payload["call"])


def being_written(row: Message) -> bool:
    """Whether ``row``'s content so far is its checkpoint plus the log after it (so reading it
    is a query: async callers take a thread for it)."""
    return row.status == MessageStatus.STREAMING and row.checkpoint_seq is not None


def content_so_far(row: Message) -> list[dict[str, Any]]:
    """``row.content``, and for a message still being written its checkpoint plus what the
    log says after it (one query)."""
    if not being_written(row):
        return row.content
    draft = Draft.from_blocks(row.content)
    events = (ConversationEvent.objects
              .filter(conversation_id=row.conversation_id, kind__in=DRAFT_KINDS,
                      seq__gt=row.checkpoint_seq, payload__message_id=row.engine_id)
              .order_by("seq").values_list("kind", "payload"))
    for kind, payload in events:
        draft.apply(kind, payload)
    return draft.blocks()
