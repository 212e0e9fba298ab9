"""The conversation socket: ``/ws/conversations/<id>/?after_seq=N`` (docs/protocol.md).

Thin: authenticate, authorize on connect *and on every frame*, validate the frame, call one
service, send what it says. The client gets either the conversation's state (no ``after_seq``)
or every logged event after ``after_seq``, then live events — no gap (the store fills any hole,
also one the channel layer made by dropping a message) and no duplicate (events at or below
the last ``seq`` sent are skipped). Past ``CONFAB["REPLAY_MAX_EVENTS"]`` missing events a
fresh state frame replaces the replay: it costs what a connect costs, however long the gap.
The tail is repaired too (:mod:`apps.rooms.tail`): a high-water mark from the run's host, or
the socket's own look at the store when its group has been quiet, fetches a last event the
layer dropped; either ends in an ``hwm`` frame.

The conversation's and the room's broadcasts reach the socket through this process's fanouts
(:mod:`apps.rooms.fanout`), not through its own channel: they land in the socket's inbox, which
one task of the socket's reads in order. The socket's own channel (the default layer) hears only
what concerns its person (a membership or credentials change).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Literal
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.utils.translation import gettext

from apps.accounts.auth import credentials_hold, credentials_hold_now
from apps.accounts.models import Membership
from apps.accounts.selectors import membership_of
from apps.common.errors import ApplicationError, ErrorCode, not_found
from apps.engine.clock import MONOTONIC, Clock
from apps.realtime.broadcast import broadcast_layer
from apps.realtime.event_frame import event_frame
from apps.realtime.frames import (
    CLIENT_FRAME_TYPES,
    WRITE_FRAMES,
    AnswerFrame,
    AskAgentFrame,
    CompactFrame,
    ConfigureFrame,
    DecideFrame,
    ElicitFrame,
    HistoryFrame,
    ImageAttachment,
    McpResourceAttachment,
    PromptsFrame,
    RenameFrame,
    SendFrame,
    SetAgentModeFrame,
    SidebarFrame,
    StopFrame,
    TypingFrame,
    ValidationError,
    describe,
    parse_client_frame,
)
from apps.realtime.groups import conversation_group, user_group
from apps.realtime.publish import database_call
from apps.realtime.sockets import (
    CLOSE_NOT_AUTHENTICATED,
    CLOSE_NOT_FOUND,
    CLOSE_SERVER_ERROR,
    origin_allowed,
)
from apps.rooms.attachments import read_attachments
from apps.rooms.fanout import ConversationFanout, Fanout, fanouts
from apps.rooms.history import messages_page
from apps.rooms.images import images_attached
from apps.rooms.models import Conversation
from apps.rooms.presence import Throttle
from apps.rooms.prompts import expand_prompt, team_prompts
from apps.rooms.selectors import conversation_for, member_conversation
from apps.rooms.services.configure import conversation_configure
from apps.rooms.services.events import events_after, events_last_seq
from apps.rooms.services.messages import message_post
from apps.rooms.services.rooms import conversation_rename, conversation_set_agent_mode
from apps.rooms.services.runs import (
    active_run,
    run_answer,
    run_ask,
    run_compact,
    run_decide,
    run_elicit,
    run_stop,
)
from apps.rooms.sidebar_socket import SidebarHandlers, SidebarWatch
from apps.rooms.state import conversation_state
from apps.rooms.sweeper import ensure_sweeper
from apps.rooms.tail import TailWatch

__all__ = ["CLOSE_NOT_AUTHENTICATED", "CLOSE_NOT_FOUND", "ConversationConsumer",
           "NotFoundConsumer"]

logger = logging.getLogger(__name__)

REPLAY_BATCH = 500


class ConversationConsumer(SidebarHandlers, AsyncJsonWebsocketConsumer):
    """One watcher of one conversation. ``clock`` times the tail checks (tests give theirs)."""

    clock: Clock = MONOTONIC
    conversation_id: int
    team_id: int
    last_seq: int = 0
    joined: bool = False
    tail: TailWatch
    fanout: Fanout | None = None
    _watching: asyncio.Task[None] | None = None
    _reading: asyncio.Task[None] | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        try:
            await super().__call__(scope, receive, send)
        finally:  # however the socket ended
            for task in (self._watching, self._reading):
                if task is not None:
                    task.cancel()
            await self._leave()

    # -- the fanouts' messages (apps.rooms.fanout.Watcher) -------------------------------------
    def deliver(self, message: dict[str, Any]) -> None:
        """A broadcast for this socket: queued for :meth:`_read_inbox`."""
        self._inbox.put_nowait(message)

    async def deliver_at_once(self, message: dict[str, Any]) -> bool:
        """Send a logged event now, from the fanout's task, when nothing of this socket's is
        queued or under way and it is the next seq (or one sent already), so it waits for
        nothing and order holds; False: queue it with :meth:`deliver`. A task switch fewer
        per frame and socket (issue 20); a send that fails closes the socket (4011)."""
        if (message["type"] != "conv.event" or self._reading is None or not self._turn.free()
                or not self._log_lock.free() or not self._inbox.empty()
                or message["seq"] > self.last_seq + 1):
            return False
        async with self._turn:
            try:
                await self.conv_event(message)
            except Exception:
                logger.exception("conversation %s: a broadcast could not be sent",
                                 self.conversation_id)
                await self.close(code=CLOSE_SERVER_ERROR)
        return True

    def lost(self) -> None:
        """The process's channel in a group failed: close, so the client reconnects and
        repairs from the store."""
        self._inbox.put_nowait({"type": "local.lost"})

    async def _read_inbox(self) -> None:
        """Handle the inbox in order, until the socket ends (a failure closes it: 4011)."""
        try:
            while True:
                message = await self._inbox.get()
                async with self._turn:
                    if not await self._handle(message):
                        return
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("conversation %s: a broadcast could not be sent",
                             self.conversation_id)
            await self.close(code=CLOSE_SERVER_ERROR)

    async def _handle(self, message: dict[str, Any]) -> bool:
        """Handle one inbox message; False when the socket closes."""
        kind = message["type"]
        if kind == "conv.event":
            await self.conv_event(message)
        elif kind == "conv.hwm":
            await self.conv_hwm(message)
        elif kind == "local.frame":  # presence or typing: text encoded once
            self.tail.heard_other()
            await self.send(text_data=message["text"])
        elif kind == "room.conversation":
            await self.room_conversation(message)
        elif kind == "room.conversation_removed":
            await self.room_conversation_removed(message)
        elif kind == "local.lost":
            await self.close(code=CLOSE_SERVER_ERROR)
            return False
        return True

    async def _leave(self) -> None:
        """Stop watching the conversation's and the room's groups (idempotent)."""
        fanout, self.fanout = self.fanout, None
        if fanout is not None:
            await fanouts().unwatch(fanout, self)
        if self.joined:
            await self.sidebar.stop()

    # -- connect / disconnect ----------------------------------------------------------------
    async def connect(self) -> None:
        await self.accept()  # accept first: only then can we close with our own codes
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not origin_allowed(self.scope):
            await self.close(code=CLOSE_NOT_AUTHENTICATED)
            return
        try:
            conversation, membership = await database_sync_to_async(conversation_for)(
                user, int(self.scope["url_route"]["kwargs"]["conversation_id"]))
        except ApplicationError:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.conversation_id, self.team_id = conversation.pk, conversation.room.team_id
        self.me = {"id": user.pk, "name": user.shown_name}
        conf = settings.CONFAB
        interval_s = conf["PRESENCE_INTERVAL_S"]
        self.typing = Throttle(self.clock, conf["TYPING_INTERVAL_S"])
        self.tail = TailWatch(self.clock, settings.CONFAB["TAIL_CHECK_S"], run_open=False)
        self._log_lock = _Lock()  # live events, marks and tail checks send in turn
        self._turn = _Lock()  # the client's frames and the inbox take turns
        await self.channel_layer.group_add(user_group(user.pk), self.channel_name)
        # Credentials that changed between the handshake's sign-in and the join above were
        # announced before this socket could hear it: look once more, now that it would.
        if not await credentials_hold(self.scope):
            await self.channel_layer.group_discard(user_group(user.pk), self.channel_name)
            await self.close(code=CLOSE_NOT_AUTHENTICATED)
            return
        self.sidebar = SidebarWatch(
            self, room_id=conversation.room_id, conversation_id=conversation.pk, me=self.me,
            clock=self.clock, interval_s=interval_s, send_json=self.send_json)
        self.joined = True
        # Watching starts before the catch-up reads the store, and the inbox is read after
        # it: an event stored meanwhile is in one or the other (seqs drop the doubles).
        self.fanout = await fanouts().watch(
            conversation_group(self.conversation_id),
            lambda: ConversationFanout(broadcast_layer(), conversation_group(self.conversation_id),
                                       clock=self.clock, interval_s=interval_s), self, self.me)
        await self.sidebar.start()
        after_seq = self._after_seq()
        if after_seq is not None:  # nobody has seen beyond the log: a higher value is a mistake
            after_seq = min(after_seq, conversation.last_seq)
        await self._catch_up(after_seq, membership, conversation)
        self._reading = asyncio.create_task(self._read_inbox(), name="conversation-inbox")
        self._watching = asyncio.create_task(self._watch_tail(), name="conversation-tail")
        ensure_sweeper()

    async def disconnect(self, code: int) -> None:
        if not self.joined:
            return
        await self._leave()
        await self.channel_layer.group_discard(user_group(self.me["id"]), self.channel_name)

    def _after_seq(self) -> int | None:
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        values = query.get("after_seq")
        try:
            return max(int(values[0]), 0) if values else None
        except ValueError:
            return None

    async def _catch_up(self, after_seq: int | None, membership: Membership,
                        conversation: Conversation) -> None:
        if after_seq is None or self._too_far(after_seq, conversation.last_seq):
            await self._send_state(membership)
        else:  # the replay below updates run_open with what it sends
            self.tail.run_open = await database_sync_to_async(active_run)(conversation) is not None
            self.last_seq = after_seq
            await self._replay(until=None)

    @staticmethod
    def _too_far(seen: int, until: int) -> bool:
        return until - seen > settings.CONFAB["REPLAY_MAX_EVENTS"]

    async def _send_state(self, membership: Membership | None = None) -> None:
        """A fresh ``state`` frame; the socket goes on from its ``seq``."""
        if membership is None:
            membership = await database_sync_to_async(membership_of)(  # not async ORM:
                self.scope["user"], self.team_id)  # live messages skip channels' hop
            if membership is None:  # removed from the team meanwhile
                await self.close(code=CLOSE_NOT_FOUND)
                return
        state = await database_sync_to_async(conversation_state)(self.conversation_id,
                                                                 membership)
        self.last_seq = state["seq"]
        self.tail.run_open = state["run"] is not None
        await self.send_json(state)

    async def _fill(self, until: int) -> None:
        """Send what is missing up to ``until``: the stored events, or a fresh state frame
        when more than ``REPLAY_MAX_EVENTS`` are missing."""
        if self._too_far(self.last_seq, until):
            await self._send_state()
        else:
            await self._replay(until=until)

    async def _replay(self, until: int | None) -> None:
        """Send stored events after ``last_seq`` (up to ``until`` included, if given)."""
        while True:
            batch = await database_sync_to_async(events_after)(
                self.conversation_id, self.last_seq, REPLAY_BATCH)
            for row in batch:
                if until is not None and row.seq > until:
                    return
                await self._send_event(row.seq, row.kind, event_frame(row.seq, row.payload))
            if len(batch) < REPLAY_BATCH:
                return

    async def _send_event(self, seq: int, kind: str, frame: str) -> None:
        await self.send(text_data=frame)  # encoded once for every socket (event_frame)
        self.last_seq = seq
        self.tail.saw(kind)

    async def _catch_up_to(self, seq: int) -> None:
        """The log reaches ``seq``: send what is missing up to it from the store, then an
        ``hwm`` frame with the last seq sent."""
        async with self._log_lock:
            if seq > self.last_seq:
                await self._fill(seq)
            self.tail.heard_log()
            await self.send_json({"type": "hwm", "seq": self.last_seq})

    async def _watch_tail(self) -> None:
        """Read the log's last seq from the store whenever the group has been quiet while
        the tail may be missing (:mod:`apps.rooms.tail`); until the socket ends."""
        while True:
            await self.clock.sleep(self.tail.due_in())
            if self.tail.due_in() > 0:
                continue  # the log was heard meanwhile
            if not self.tail.wants_check():
                self.tail.heard_log()  # nothing can be missing: look again later
                continue
            try:
                await self._catch_up_to(
                    await database_sync_to_async(events_last_seq)(self.conversation_id))
            except Exception:  # the database is down: try again after the next quiet
                logger.exception("conversation %s: the tail check failed", self.conversation_id)
                self.tail.heard_log()

    # -- frames from the client ---------------------------------------------------------------
    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None
                      ) -> None:
        try:
            content = json.loads(text_data if text_data is not None else bytes_data or b"")
        except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
            await self._error(ApplicationError(ErrorCode.BAD_FRAME,
                                               gettext("Frames are JSON objects.")))
            return
        await self.receive_json(content)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not self.joined:
            return
        async with self._turn:  # a frame's answer (an ack) goes out before what it caused
            await self._frame(content)

    async def _frame(self, content: Any) -> None:
        try:
            frame = parse_client_frame(content)
        except (ValidationError, ValueError) as exc:
            await self._error(ApplicationError(ErrorCode.BAD_FRAME, describe(exc)), content)
            return
        if isinstance(frame, TypingFrame) and not self.typing.ready():
            return  # throttled: dropped before any database work, or a flood delays our sends
        checked = await database_sync_to_async(self._frame_checks)()
        if checked is None:  # e.g. the password changed since connecting
            await self.close(code=CLOSE_NOT_AUTHENTICATED)
            return
        membership, conversation = checked
        if membership is None:  # removed from the team since connecting
            await self.close(code=CLOSE_NOT_FOUND)
            return
        if isinstance(frame, WRITE_FRAMES) and not membership.role_enum.can_write:
            await self._error(ApplicationError(ErrorCode.FORBIDDEN, gettext(
                "Viewers can watch but not take part.")), content)
            return
        try:
            if conversation is None:  # deleted since connecting
                raise not_found("conversation")
            await self._dispatch(frame, membership, conversation)
        except ApplicationError as error:
            await self._error(error, content)

    def _frame_checks(self) -> tuple[Membership | None, Conversation | None] | None:
        """A frame's lookups in one thread hop: None when the socket's credentials no longer
        sign it in (:func:`credentials_hold_now`), else the membership and conversation
        (:func:`member_conversation`)."""
        if not credentials_hold_now(self.scope):
            return None
        return member_conversation(self.scope["user"], self.team_id, self.conversation_id)

    async def _dispatch(self, frame: Any, membership: Membership,
                        conversation: Conversation) -> None:
        match frame:
            case SendFrame(client_id=client_id, text=text, attachments=attachments,
                           prompt=prompt):
                team, user = conversation.room.team, membership.user
                blocks = (await expand_prompt(team, user, prompt) if prompt else [])
                blocks += await read_attachments(team, user, [
                    a for a in attachments if isinstance(a, McpResourceAttachment)])
                if images := [a.id for a in attachments if isinstance(a, ImageAttachment)]:
                    blocks += await database_sync_to_async(images_attached)(
                        conversation=conversation, ids=images)  # a thread hop: only with images
                result = await database_call(
                    message_post, conversation=conversation, membership=membership,
                    text=text, client_id=client_id, attachments=blocks)
                await self.send_json({"type": "ack", "client_id": client_id,
                                      "message_id": result.message.pk,
                                      "queued": result.queued, "run": result.run})
            case StopFrame():
                await database_call(run_stop, conversation=conversation,
                                    membership=membership)
            case DecideFrame(tool_call_id=call_id, decision=decision, arguments=arguments):
                await database_call(
                    run_decide, conversation=conversation, membership=membership,
                    tool_call_id=call_id, approve=decision == "approve", arguments=arguments)
            case AnswerFrame(question_id=question_id, text=text):
                await database_call(
                    run_answer, conversation=conversation, membership=membership,
                    question_id=question_id, text=text)
            case ElicitFrame(elicitation_id=elicitation_id, action=action, content=content):
                await database_call(
                    run_elicit, conversation=conversation, membership=membership,
                    elicitation_id=elicitation_id, action=action, content=content)
            case CompactFrame():
                await database_call(run_compact, conversation=conversation,
                                    membership=membership)
            case HistoryFrame(before=before):
                run = await database_sync_to_async(active_run)(conversation)
                page = await database_sync_to_async(messages_page)(conversation.pk, before,
                                                                  run=run)
                await self.send_json({"type": "history", **page.as_json()})
            case SetAgentModeFrame(agent_mode=mode):
                await database_call(conversation_set_agent_mode, conversation=conversation,
                                    agent_mode=mode, by=membership.user)
            case RenameFrame(title=title):
                await database_call(conversation_rename, conversation=conversation,
                                    title=title, by=membership.user)
            case ConfigureFrame(model=model, reasoning=reasoning):
                await database_call(
                    conversation_configure, conversation=conversation, model=model,
                    reasoning=reasoning, membership=membership)
            case AskAgentFrame():
                await database_call(run_ask, conversation=conversation,
                                    membership=membership)
            case PromptsFrame():
                await self.send_json({"type": "prompts", "prompts": await team_prompts(
                    conversation.room.team, membership.user)})
            case SidebarFrame():
                await self.sidebar.subscribe()
            case TypingFrame():  # past the throttle in receive_json
                await broadcast_layer().group_send(conversation_group(self.conversation_id),
                                                   {"type": "presence.typing", "user": self.me})

    async def _error(self, error: ApplicationError, content: Any = None) -> None:
        """The refusal of ``content`` (the client's frame, as parsed JSON; None: not JSON) as
        an ``error`` frame naming the frame's ``type`` as ``refused`` (one of
        :data:`CLIENT_FRAME_TYPES`), and for a ``send`` its ``client_id``, so the client knows
        which of its frames was refused (docs/protocol.md)."""
        frame: dict[str, Any] = error.as_frame()
        if (refused := _frame_type(content)) is not None:
            frame["refused"] = refused
        if (client_id := _send_client_id(content)) is not None:
            frame["client_id"] = client_id
        await self.send_json(frame)

    # -- from the channel layer ---------------------------------------------------------------
    async def conv_event(self, message: dict[str, Any]) -> None:
        async with self._log_lock:
            self.tail.heard_log()
            seq = message["seq"]
            if seq <= self.last_seq:
                return  # already sent from the store
            if seq > self.last_seq + 1:
                await self._fill(seq - 1)  # a message the layer dropped: from the store
            if seq > self.last_seq:  # (a fresh state may hold it already)
                await self._send_event(seq, message["kind"], message["frame"])

    async def conv_hwm(self, message: dict[str, Any]) -> None:
        """The log's last seq, from the run's host: fetch what the layer dropped before it."""
        await self._catch_up_to(message["seq"])

    async def member_changed(self, message: dict[str, Any]) -> None:
        """The person's membership changed: close the socket if it is gone."""
        if message["team_id"] == self.team_id and message.get("role") is None:
            await self.close(code=CLOSE_NOT_FOUND)

    async def credentials_changed(self, message: dict[str, Any]) -> None:
        """The person's credentials changed: close if this socket's no longer sign it in."""
        if not await credentials_hold(self.scope, ended_session=message["ended_session"]):
            await self.close(code=CLOSE_NOT_AUTHENTICATED)


class _Lock(asyncio.Lock):
    """An ``asyncio.Lock`` that says whether it can be taken without waiting (:meth:`free`).
    ``locked()`` cannot: from a release until the next step of the task woken to take the
    lock, it is False though the lock is that task's, and a taker would wait behind it."""

    def __init__(self) -> None:
        super().__init__()
        self._wanting = 0  # acquire() calls under way (waiting, or woken and not yet run)

    async def acquire(self) -> Literal[True]:
        """Take the lock (``async with`` takes it here too)."""
        self._wanting += 1
        try:
            return await super().acquire()
        finally:
            self._wanting -= 1

    def free(self) -> bool:
        """Whether :meth:`acquire` would take the lock at once (no task holds or awaits it)."""
        return not self.locked() and not self._wanting


def _frame_type(content: Any) -> str | None:
    """The ``type`` a client frame names, even one that fails validation, when it is one of
    :data:`CLIENT_FRAME_TYPES`; None otherwise."""
    kind = content.get("type") if isinstance(content, dict) else None
    return kind if isinstance(kind, str) and kind in CLIENT_FRAME_TYPES else None


def _send_client_id(content: Any) -> str | None:
    """The ``client_id`` of a ``send`` frame, even one that fails validation (a string of at
    most 100 characters, as the frame allows); None for any other frame."""
    if _frame_type(content) != "send":
        return None
    client_id = content.get("client_id")
    return client_id if isinstance(client_id, str) and 0 < len(client_id) <= 100 else None


class NotFoundConsumer(AsyncJsonWebsocketConsumer):
    """Any other socket path (``/ws/conversations/abc/``...): the same answer as a conversation
    that does not exist, instead of a server error."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)
