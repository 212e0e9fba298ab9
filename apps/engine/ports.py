"""What the host implements for a run (DESIGN 1, "ports"): the engine calls these, never Django.

The run's history flows out as runtime events (``message_ended`` for every message appended,
``messages_injected``, ``compacted``), so the host persists from the event stream; what flows
*in* while a run is busy comes through these ports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from apps.engine.messages import Message, ToolCall

__all__ = ["ApprovalDecision", "ApprovalGate", "InputPort", "PendingInbox", "Taken",
           "UserAnswer"]


@dataclass(frozen=True, slots=True)
class Taken:
    """What :meth:`PendingInbox.take` found: ``messages`` join the history now, in arrival
    order; ``steer``: at least one of them asks for the agent, so the run calls the model again
    (False when they are only the people's chat: they wait as context for the next call)."""

    messages: list[Message]
    steer: bool


@runtime_checkable
class PendingInbox(Protocol):
    """Messages people sent while the run was busy (DESIGN 3.2)."""

    async def take(self) -> Taken:
        """Every pending message not taken yet, in arrival order, each with its author; the
        host marks them injected. No messages (and ``steer`` False) when there are none."""
        ...


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """A member's decision on a tool call: ``approved``, ``decided_by`` (a display name; None
    when the wait timed out, which counts as a denial), optional ``note`` for the model, and
    ``arguments``: the call's arguments as the member edited them before approving (None: run
    as the model sent them). The host validates edited arguments against the tool's schema
    before it delivers them; the executor checks them again."""

    approved: bool
    decided_by: str | None = None
    note: str = ""
    arguments: dict[str, Any] | None = None


@runtime_checkable
class ApprovalGate(Protocol):
    """Asks the room whether a risky tool call may run (DESIGN 2.5)."""

    def needs_approval(self, call: ToolCall, default: bool) -> bool:
        """Whether ``call`` must wait: the team's tool policy, given the tool's own
        ``default`` (writes, non-read-only shell commands, destructive MCP tools)."""
        ...

    async def request(self, call: ToolCall, reason: str) -> ApprovalDecision:
        """Wait for a member's decision; the host times the wait out as a denial."""
        ...


@dataclass(frozen=True, slots=True)
class UserAnswer:
    """An answer to an AskUser question: ``text``, ``answered_by`` (None: timed out)."""

    text: str
    answered_by: str | None = None


@runtime_checkable
class InputPort(Protocol):
    """Carries AskUser questions to the room and answers back."""

    async def ask(self, question_id: str, question: str) -> UserAnswer:
        """Wait for someone in the room to answer ``question``."""
        ...
