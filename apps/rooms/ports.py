"""The Django side of the engine's ports (``apps/engine/ports.py``) for one hosted run."""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from typing import Any, Literal

from channels.db import database_sync_to_async
from django.db import connection, transaction
from django.db.models import OuterRef, QuerySet

from apps.engine.mcp import ElicitationAnswer, ElicitationRequest
from apps.engine.messages import Message as EngineMessage
from apps.engine.messages import ToolCall
from apps.engine.ports import ApprovalDecision, Taken, UserAnswer
from apps.integrations.policy import needs_approval
from apps.rooms.images import with_image_data
from apps.rooms.models import Message, MessageStatus
from apps.rooms.transcript import engine_message

__all__ = ["PendingMessages", "RoomAnswers", "RoomApprovals", "RoomElicitations",
           "messages_waiting", "pending_rows"]


def pending_rows(conversation_id: int | OuterRef) -> QuerySet[Message]:
    """The conversation's pending messages, oldest first (``OuterRef``: in a subquery)."""
    return Message.objects.filter(conversation_id=conversation_id,
                                  status=MessageStatus.PENDING).order_by("id")


def messages_waiting(conversation_id: int) -> bool:
    """Whether a message of the conversation is pending (:func:`pending_rows` has a row). The
    statement is written out: the ORM's ``exists()`` took longer to compile than to run, after
    every step of every run (issue 20)."""
    with connection.cursor() as cursor:
        cursor.execute(_waiting_sql(connection.vendor), [conversation_id, MessageStatus.PENDING])
        return cursor.fetchone() is not None


@functools.cache
def _waiting_sql(vendor: str) -> str:
    """The statement, once per database vendor (quoting is the vendor's)."""
    meta, quote = Message._meta, connection.ops.quote_name
    conversation, status = (quote(meta.get_field(name).column)
                            for name in ("conversation", "status"))
    return (f"SELECT 1 FROM {quote(meta.db_table)} WHERE {conversation} = %s "
            f"AND {status} = %s LIMIT 1")


class PendingMessages:
    """People's messages that waited while the run was busy (oldest first): those that
    ask for the agent steer the run, the people's chat (``mention`` mode) joins as context.

    ``take`` marks them taken (status complete, attached to the run) and remembers their row
    ids in order; the projector gives them their history positions when the run reports them
    injected, so positions follow the history's real order. ``none_waiting``: the host has just
    seen that no message was pending (in its setup's thread hop), so the run's first take, at
    its start, answers at once; a message sent since then waits for the next step boundary, as
    one sent just after a take does.
    """

    def __init__(self, conversation_id: int, run_id: int, *, none_waiting: bool = False) -> None:
        self.conversation_id = conversation_id
        self.run_id = run_id
        self.taken_ids: deque[int] = deque()
        self._none_waiting = none_waiting

    async def take(self) -> Taken:
        """Every pending message; they steer when one of them asks for the agent
        (``Message.wakes_agent``: always so in an ``always`` conversation)."""
        if self._none_waiting:
            self._none_waiting = False
            return Taken(messages=[], steer=False)
        rows, messages = await database_sync_to_async(self._take)()
        self.taken_ids.extend(row.pk for row in rows)
        return Taken(messages=messages, steer=any(row.wakes_agent for row in rows))

    def _take(self) -> tuple[list[Message], list[EngineMessage]]:
        """The pending rows, marked taken, and their engine messages with their images'
        bytes (one thread hop for both). Mostly none waits: a look without a transaction
        first (one statement, not three); one posted just after it waits for the next step,
        as one posted just after a take does."""
        if not messages_waiting(self.conversation_id):
            return [], []
        with transaction.atomic():
            rows = list(pending_rows(self.conversation_id).select_for_update())
            if rows:
                Message.objects.filter(pk__in=[r.pk for r in rows]).update(
                    status=MessageStatus.COMPLETE, run_id=self.run_id)
        if not rows:
            return rows, []
        return rows, with_image_data(self.conversation_id, [engine_message(r) for r in rows])


class RoomApprovals:
    """Risky tool calls wait here for a member's decision; an unanswered wait times out as a
    denial after ``timeout_s``. ``policy`` is the team's tool policy."""

    def __init__(self, policy: dict[str, object], timeout_s: float) -> None:
        self.policy = policy
        self.timeout_s = timeout_s
        self._waiting: dict[str, asyncio.Future[ApprovalDecision]] = {}

    def needs_approval(self, call: ToolCall, default: bool) -> bool:
        return needs_approval(self.policy, call.name, default)

    async def request(self, call: ToolCall, reason: str) -> ApprovalDecision:
        future = asyncio.get_running_loop().create_future()
        self._waiting[call.id] = future
        try:
            async with asyncio.timeout(self.timeout_s):
                return await future
        except TimeoutError:
            return ApprovalDecision(approved=False, decided_by=None,
                                    note=f"Nobody decided within {self.timeout_s:g} s.")
        finally:
            self._waiting.pop(call.id, None)

    def decide(self, call_id: str, approved: bool, by: str,
               arguments: dict[str, Any] | None = None) -> bool:
        """Deliver a decision (``arguments``: edited by ``by``, already validated); False
        when no call of that id waits."""
        future = self._waiting.get(call_id)
        if future is None or future.done():
            return False
        future.set_result(ApprovalDecision(approved=approved, decided_by=by,
                                           arguments=arguments))
        return True


class RoomAnswers:
    """AskUser questions wait here for the first answer from the room."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[UserAnswer]] = {}

    async def ask(self, question_id: str, question: str) -> UserAnswer:
        future = asyncio.get_running_loop().create_future()
        self._waiting[question_id] = future
        try:
            return await future
        finally:
            self._waiting.pop(question_id, None)

    def answer(self, question_id: str, text: str, by: str) -> bool:
        """Deliver an answer; False when no such question waits (or it was answered)."""
        future = self._waiting.get(question_id)
        if future is None or future.done():
            return False
        future.set_result(UserAnswer(text=text, answered_by=by))
        return True


class RoomElicitations:
    """MCP servers' elicitations wait here for the first answer from the room (an
    :class:`~apps.engine.mcp.ElicitationPort`); a wait nobody answers within ``timeout_s`` is
    declined (``answered_by`` None). Content is validated by the service before it comes."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._waiting: dict[str, asyncio.Future[ElicitationAnswer]] = {}

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        future = asyncio.get_running_loop().create_future()
        self._waiting[request.elicitation_id] = future
        try:
            async with asyncio.timeout(self.timeout_s):
                return await future
        except TimeoutError:
            return ElicitationAnswer(action="decline")
        finally:
            self._waiting.pop(request.elicitation_id, None)

    def answer(self, elicitation_id: str, action: Literal["accept", "decline", "cancel"],
               content: dict[str, Any] | None, by: str) -> bool:
        """Deliver an answer; False when no such elicitation waits (or it was answered)."""
        future = self._waiting.get(elicitation_id)
        if future is None or future.done():
            return False
        future.set_result(ElicitationAnswer(action=action, content=content, answered_by=by))
        return True
