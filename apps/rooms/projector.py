"""The projector: a run's runtime events into the transcript and the event log (DESIGN 3.3).

Every event is stored with its ``seq`` before it is broadcast. Deltas (text, reasoning, tool-call
arguments) are coalesced first — up to ``coalesce_ms`` or ``coalesce_bytes`` per message, the
server-side twin of the browser's per-frame rendering — so the channel layer carries a few
messages per second per stream instead of one per token; anything else flushes them first, so
order is kept. A message's first delta is not held back: it is what tells the room the agent
has started answering (issue 22: send -> first ``text_delta``). Deltas that waited their window
are flushed by the worker's pulse (:mod:`apps.rooms.pulse`), which ticks every projector
together a few times per window, not by the delta that happens to arrive after the window: the
flushes of every run due at a tick then share one write of the log writer (on PostgreSQL one
statement, one broadcast round trip: a write costs several flushes' worth on its own), where
each run's own flush was mostly a write of its own (issue 20: 112 flushes of a 400-token run
in 31 writes at 64 conversations). A flush also checkpoints the
message being written when its last checkpoint is :data:`~apps.rooms.drafts.CHECKPOINT_S`
old, so a client connecting mid-stream sees the text so far (the checkpoint plus the log after
it, :mod:`apps.rooms.drafts`). Flushes go through the worker's :mod:`apps.rooms.log_writer`:
the runs' flushes that wait meanwhile share one transaction. So do the events whose storing
changes nothing but the log and the drafts (a turn's start and end, a tool call's start, a
tool's result, a warning...): the waiting deltas and the event in one write, beside the other
runs' flushes, instead of a transaction, a thread hop and a broadcast round trip of their own
each (issue 20). The rest (a message's start and end, usage, injected messages, compaction, a
wait for people) also change rows of the transcript or the run, in one transaction with the
event.
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.db import transaction

from apps.engine.clock import MONOTONIC, Clock
from apps.engine.compaction.auto_compact import SUMMARY_PREFIX
from apps.engine.events import (
    ApprovalDecided,
    AwaitingApproval,
    AwaitingElicitation,
    AwaitingInput,
    Compacted,
    ElicitationAnswered,
    InputReceived,
    MessageEnded,
    MessagesInjected,
    MessageStarted,
    ReasoningDeltaEvent,
    RuntimeEvent,
    SubagentEvent,
    TextDelta,
    ToolCallArgumentsDelta,
)
from apps.engine.sources import sources
from apps.realtime.publish import database_call
from apps.rooms.drafts import CHECKPOINT_S, Draft
from apps.rooms.log_writer import log_writer
from apps.rooms.models import Message, MessageStatus, RunStatus
from apps.rooms.ports import PendingMessages
from apps.rooms.services.events import events_append, positions_allocate
from apps.rooms.services.runs import run_set_status
from apps.rooms.transcript import history_rows, message_fields

__all__ = ["Projector"]

Delta = TextDelta | ReasoningDeltaEvent | ToolCallArgumentsDelta
_STATUS_AFTER = {
    AwaitingApproval: RunStatus.AWAITING_APPROVAL,
    AwaitingInput: RunStatus.AWAITING_INPUT,
    AwaitingElicitation: RunStatus.AWAITING_INPUT,
    ApprovalDecided: RunStatus.RUNNING,
    InputReceived: RunStatus.RUNNING,
    ElicitationAnswered: RunStatus.RUNNING,
}

_TRANSCRIPT_EFFECTS = (MessageStarted, MessageEnded, MessagesInjected, Compacted)
"""Events whose storing changes transcript rows too (:meth:`Projector._apply`)."""


class _Drafted:
    """A message being written: its row, its draft, and when it was last checkpointed."""

    __slots__ = ("row_id", "draft", "checkpointed")

    def __init__(self, now: float) -> None:
        self.row_id = 0  # set once its row is made
        self.draft = Draft()
        self.checkpointed = now  # its row is made with its draft so far


class _Turns:
    """The projector's lock, counting the tasks that hold it or wait for it: ``take_now``
    takes nothing while one does. A lock that reads free is not enough: when a flush releases
    it, a task that waited for it with an event in hand only takes it at its next step, and a
    delta taken before that step would be stored ahead of that event (found by review)."""

    __slots__ = ("count", "_lock")

    def __init__(self) -> None:
        self.count = 0
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> None:
        self.count += 1
        try:
            await self._lock.acquire()
        except BaseException:  # cancelled while waiting
            self.count -= 1
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        self._lock.release()
        self.count -= 1


class Projector:
    """Stores and broadcasts one run's events. ``handle`` each event in order; call ``tick``
    often (the worker's :mod:`~apps.rooms.pulse` does, a few times per ``coalesce_ms``): it
    flushes the deltas that waited ``coalesce_ms``; ``close`` at the end. ``clock`` times
    coalescing and checkpoints (tests give theirs)."""

    def __init__(self, conversation_id: int, run_id: int, inbox: PendingMessages, *,
                 coalesce_ms: float, coalesce_bytes: int, clock: Clock = MONOTONIC) -> None:
        self.clock = clock
        self.conversation_id = conversation_id
        self.run_id = run_id
        self.inbox = inbox
        self.coalesce_s = coalesce_ms / 1000.0
        self.coalesce_bytes = coalesce_bytes
        # Deltas waiting, each with the texts of the later deltas it absorbs (joined once, at
        # the flush: a pydantic copy per streamed token was a tenth of the projector's cost).
        self._buffer: list[tuple[Delta, list[str]]] = []
        self._buffered_bytes = 0
        self._since = 0.0
        self._drafts: dict[str, _Drafted] = {}
        self._started: set[str] = set()  # messages whose first delta has gone out
        self._starting: MessageStarted | None = None  # stored with its first deltas
        self._turns = _Turns()
        self._failed_tick: Exception | None = None  # a tick's flush failed: raised next
        self.stored = 0  # events stored, for tests and benchmarks

    async def handle(self, event: RuntimeEvent) -> None:
        """Store (and broadcast) one runtime event, coalescing deltas. Raises what storing
        raised, also for a tick's flush since the last event (the run then ends visibly:
        deltas of the failed flush are not in the log)."""
        async with self._turns:
            self._raise_failed_tick()
            if isinstance(event, Delta):
                first = event.message_id not in self._started
                self._started.add(event.message_id)
                text = _delta_text(event)
                self._add(event, text, _size(text))
                if first or self._buffered_bytes >= self.coalesce_bytes:
                    await self._flush()  # older ones wait for a tick (see the module's doc)
                return
            if isinstance(event, MessageStarted):
                await self._flush()
                self._starting = event  # its first delta follows at once: one write for both
            elif _log_only(event):
                await self._flush((event,))  # with the waiting deltas, in one write
            else:
                await self._flush()
                await database_call(self._store, event)  # broadcast from the loop, in order

    def take_now(self, event: RuntimeEvent) -> bool:
        """Do what :meth:`handle` would do with ``event``, at once, when that is only to add
        it to the waiting deltas: a delta of a message whose first delta went out, that leaves
        the buffer under ``coalesce_bytes``, while no task holds or waits for the projector
        (a flush, an event being stored: one waiting holds an event this one must not
        overtake) and no tick has failed. Whether it took the event; when not, pass it to
        :meth:`handle`, in order. The run's runner offers it every event that finds none
        waiting before it (``AgentRunner.events(take_now=...)``): most of a message's deltas
        then skip the queue to the host's task and that task's wake-up (issue 20: 4 % of the
        worker's CPU per token at 64 x 5)."""
        if (self._turns.count or self._failed_tick is not None
                or not isinstance(event, Delta) or event.message_id not in self._started):
            return False
        text = _delta_text(event)
        size = _size(text)
        if self._buffered_bytes + size >= self.coalesce_bytes:
            return False  # handle flushes it with the rest
        self._add(event, text, size)
        return True

    @property
    def streaming(self) -> bool:
        """Whether a message it began storing has not ended (its row is still streaming)."""
        return bool(self._drafts)

    def tick_due(self) -> bool:
        """Whether deltas have waited ``coalesce_ms`` (what :meth:`tick` would flush)."""
        return bool(self._buffer) and self.clock.now() - self._since >= self.coalesce_s

    async def tick(self) -> None:
        """Flush deltas that have waited ``coalesce_ms``; a failure is raised here and again
        by the next :meth:`handle` or :meth:`close`, where the run sees it."""
        async with self._turns:
            if self.tick_due():
                try:
                    await self._flush()
                except Exception as exc:
                    self._failed_tick = exc
                    raise

    async def close(self) -> None:
        """Flush what is left; raises like :meth:`handle`."""
        async with self._turns:
            self._raise_failed_tick()
            await self._flush()

    def _raise_failed_tick(self) -> None:
        if self._failed_tick is not None:
            failed, self._failed_tick = self._failed_tick, None
            raise failed

    # -- deltas -----------------------------------------------------------------------------
    def _add(self, event: Delta, text: str, size: int) -> None:
        """Add ``event`` (its ``text``, ``size`` bytes in UTF-8) to the waiting deltas."""
        if not self._buffer:
            self._since = self.clock.now()
        if self._buffer and _extends(self._buffer[-1][0], event):
            self._buffer[-1][1].append(text)
        else:
            self._buffer.append((event, [text]))
        self._buffered_bytes += size

    async def _flush(self, logged: tuple[RuntimeEvent, ...] = ()) -> None:
        """Store the waiting deltas, then ``logged`` (events that change only the log and the
        drafts): a message's start with its first deltas in one transaction, the rest in one
        write of the log writer, where several runs' flushes share one transaction."""
        if self._starting is not None:
            started, self._starting = self._starting, None
            await database_call(self._store_start, started, self._take())
        events = [(e.kind, e.model_dump(mode="json")) for e in (*self._take(), *logged)]
        if not events:
            return
        for kind, payload in events:
            self._draft_apply(kind, payload)
        await log_writer().write(self.conversation_id, self.run_id, events,
                                 self._checkpoints({p.get("message_id") for _, p in events}))
        self.stored += len(events)

    def _take(self) -> list[Delta]:
        """The waiting deltas, each one joined with those it absorbed; the buffer emptied."""
        buffer, self._buffer, self._buffered_bytes = self._buffer, [], 0
        return [_joined(delta, texts) for delta, texts in buffer]

    def _draft_apply(self, kind: str, payload: dict[str, Any]) -> None:
        """A stored event's change to the draft of the message it belongs to, if any."""
        drafted = self._drafts.get(payload.get("message_id", ""))
        if drafted is not None:
            drafted.draft.apply(kind, payload)

    def _checkpoints(self, message_ids: set[str | None]) -> dict[int, list[dict[str, Any]]]:
        """The content to store now of the messages whose checkpoint is due."""
        now, due = self.clock.now(), {}
        for message_id in message_ids:
            drafted = self._drafts.get(message_id)
            if drafted is not None and now - drafted.checkpointed >= CHECKPOINT_S:
                drafted.checkpointed = now
                due[drafted.row_id] = drafted.draft.blocks()
        return due

    def _store_start(self, started: MessageStarted, deltas: list[Delta]) -> None:
        """A message's start with the deltas that followed it (its first one: run start's
        ``text_delta``) in one transaction, so the room sees the answer begin one commit (and
        the log writer's write) sooner than through ``_store`` and then the log writer. The
        message's row is made holding them."""
        with transaction.atomic():  # events_append's seq UPDATE locks the conversation first
            rows = events_append(self.conversation_id,
                                 [(e.kind, e.model_dump(mode="json")) for e in (started, *deltas)],
                                 run_id=self.run_id)
            self._start(started.message_id, rows[-1].seq, deltas)
        self.stored += len(rows)

    def _start(self, message_id: str, seq: int, deltas: list[Delta]) -> None:
        """The row and the draft of a message that starts, holding ``deltas``; the log after
        ``seq`` has the rest."""
        drafted = _Drafted(self.clock.now())
        self._drafts[message_id] = drafted
        for delta in deltas:
            drafted.draft.apply(delta.kind, delta.model_dump(mode="json"))
        drafted.row_id = Message.objects.create(
            conversation_id=self.conversation_id, run_id=self.run_id, role="assistant",
            status=MessageStatus.STREAMING, engine_id=message_id,
            content=drafted.draft.blocks(), checkpoint_seq=seq).pk

    # -- everything else ---------------------------------------------------------------------
    def _store(self, event: RuntimeEvent) -> None:
        with transaction.atomic():  # events_append's seq UPDATE locks the conversation first
            payload = event.model_dump(mode="json")
            if isinstance(event, MessageEnded):  # the answer's sources, as message_json has them
                payload["sources"] = sources(event.message.content)
            (row,) = events_append(self.conversation_id, [(event.kind, payload)],
                                   run_id=self.run_id)
            self._apply(event, row.seq)
            waited = event.event if isinstance(event, SubagentEvent) else event
            status = _STATUS_AFTER.get(type(waited))  # a sub-agent's waits are the run's
            if status is not None:
                run_set_status(self.run_id, status)
        if isinstance(event, MessageEnded):  # its row is final now, not before the commit
            self._drafts.pop(event.message_id, None)
        self.stored += 1

    def _apply(self, event: RuntimeEvent, seq: int) -> None:
        """What ``event`` (stored as ``seq``) changes in the transcript."""
        match event:
            case MessageStarted(message_id=message_id):
                self._start(message_id, seq, [])
            case MessageEnded():
                self._message_ended(event)
            case MessagesInjected(messages=messages):
                self._injected(len(messages))
            case Compacted():
                self._compacted(event)
            case _:
                pass

    def _message_ended(self, event: MessageEnded) -> None:
        message = event.message
        in_history = bool(message.content or message.reasoning_content)
        fields = message_fields(message)
        if event.usage is not None:
            fields["usage"] = event.usage.model_dump(mode="json", exclude_none=True)
        if in_history:
            fields["position"] = positions_allocate(self.conversation_id, 1)
        drafted = self._drafts.get(event.message_id)
        if drafted is not None:
            Message.objects.filter(pk=drafted.row_id).update(**fields)
        elif in_history:  # a tool-results message: it was never streamed
            Message.objects.create(conversation_id=self.conversation_id, run_id=self.run_id,
                                   engine_id=event.message_id, **fields)

    def _injected(self, count: int) -> None:
        first = positions_allocate(self.conversation_id, count)
        for offset in range(count):
            row_id = self.inbox.taken_ids.popleft()
            Message.objects.filter(pk=row_id).update(position=first + offset)

    def _compacted(self, event: Compacted) -> None:
        rows = list(history_rows(self.conversation_id)
                    .values_list("pk", "position")[: event.messages_removed])
        if not rows:
            return
        Message.objects.filter(pk__in=[pk for pk, _ in rows]).update(compacted=True)
        Message.objects.create(conversation_id=self.conversation_id, run_id=self.run_id,
                               role="user", position=rows[-1][1], status=MessageStatus.COMPLETE,
                               content=[{"type": "text", "text": SUMMARY_PREFIX + event.summary}])


def _log_only(event: RuntimeEvent) -> bool:
    """Whether storing ``event`` changes nothing but the log and the drafts (no transcript
    row, no run status): the log writer stores it then, as it does deltas."""
    waited = event.event if isinstance(event, SubagentEvent) else event
    return not isinstance(event, _TRANSCRIPT_EFFECTS) and type(waited) not in _STATUS_AFTER


def _size(text: str) -> int:
    """``text``'s bytes in UTF-8, for the coalescing limit; a lone surrogate (JSON can carry
    one) counts as its three bytes instead of raising here: storing it fails, in the host's
    task, where a failed write ends the run."""
    return len(text.encode("utf-8", "surrogatepass"))


def _delta_text(event: Delta) -> str:
    return event.arguments_delta if isinstance(event, ToolCallArgumentsDelta) else event.text


def _extends(last: Delta, event: Delta) -> bool:
    """Whether ``event`` continues the stream ``last`` belongs to (one delta can carry both)."""
    return (type(last) is type(event) and last.message_id == event.message_id
            and (not isinstance(event, ToolCallArgumentsDelta)
                 or last.index == event.index))  # type: ignore[union-attr]


def _joined(delta: Delta, texts: list[str]) -> Delta:
    """``delta`` carrying ``texts`` (its own first) as one text."""
    if len(texts) == 1:
        return delta
    field = "arguments_delta" if isinstance(delta, ToolCallArgumentsDelta) else "text"
    return delta.model_copy(update={field: "".join(texts)})
