"""Run lifecycle: dispatch, claim, stop, decisions, answers, the end, and the sweeper.

Run state lives in the database (DESIGN 3.2). A run is dispatched to the ``agent-runs`` channel
after the transaction that created it commits; a worker claims it with a conditional UPDATE
(only one claim can win). Frames for a running run reach its worker through the run's group.
A worker that dies leaves a stale heartbeat: the sweeper marks such runs interrupted, keeping
every message persisted so far, and re-dispatches (or fails) queued runs nobody claimed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from apps.accounts.models import Membership
from apps.common.errors import ApplicationError, ErrorCode
from apps.engine.events import MessagesInjected
from apps.engine.mcp.elicitation import content_problem
from apps.engine.tools.registry import arguments_problem
from apps.realtime.groups import RUN_CHANNEL, run_group
from apps.realtime.publish import group_send_on_commit, send_on_commit
from apps.rooms.drafts import content_so_far
from apps.rooms.models import (
    ACTIVE_RUN_STATUSES,
    Conversation,
    ConversationEvent,
    Message,
    MessageStatus,
    Run,
    RunPurpose,
    RunStatus,
    ToolDecision,
)
from apps.rooms.ports import messages_waiting, pending_rows
from apps.rooms.services.access import require_writer
from apps.rooms.services.events import (
    conversation_lock,
    event_append,
    person,
    positions_allocate,
)
from apps.rooms.services.limits import require_fits, require_under_rate
from apps.rooms.transcript import engine_message

__all__ = [
    "active_run",
    "run_answer",
    "run_ask",
    "run_claim",
    "run_compact",
    "run_decide",
    "run_elicit",
    "run_dispatch_on_commit",
    "run_finish",
    "run_finish_locked",
    "run_queue",
    "require_turn_rate",
    "run_stop",
    "runs_heartbeat",
    "runs_sweep",
]


def _ask_to_stop(run: Run, stopper: dict[str, object]) -> None:
    """Send ``run.stop`` to the run's host once the transaction commits (at once outside
    one); ``stopper``: who stopped it first, a PERSON its ``run_ended`` names."""
    group_send_on_commit(run_group(run.pk), {
        "type": "run.stop", "run_id": run.pk, "stopped_by": stopper})


def active_run(conversation: Conversation) -> Run | None:
    """The conversation's active run, if any."""
    return Run.objects.filter(conversation=conversation,
                              status__in=ACTIVE_RUN_STATUSES).first()


_WAITING_KINDS = ("awaiting_approval", "approval_decided", "awaiting_input", "input_received",
                  "awaiting_elicitation", "elicitation_answered")
_WAITS = {  # kind -> (the list it opens or closes, its id field, opens)
    "awaiting_approval": ("approvals", "call_id", True),
    "approval_decided": ("approvals", "call_id", False),
    "awaiting_input": ("questions", "question_id", True),
    "input_received": ("questions", "question_id", False),
    "awaiting_elicitation": ("elicitations", "elicitation_id", True),
    "elicitation_answered": ("elicitations", "elicitation_id", False),
}


def waiting_for(run: Run | None) -> dict[str, list[dict[str, Any]]]:
    """``{"approvals": [...], "questions": [...], "elicitations": [...]}``: the run's tool
    calls waiting for a decision, AskUser questions and MCP servers' elicitations waiting for
    an answer (their ``awaiting_*`` events), read from the event log. A Task sub-agent's
    waits count the same: they arrive nested in ``subagent_event`` and are listed with the
    Task call's id as ``parent_call_id``."""
    open_: dict[str, dict[str, dict[str, Any]]] = {
        "approvals": {}, "questions": {}, "elicitations": {}}
    if run is not None:
        for kind, payload in _waiting_events(run):
            group, key, opens = _WAITS[kind]
            if opens:
                open_[group][payload[key]] = payload
            else:
                open_[group].pop(payload[key], None)
    return {group: list(waits.values()) for group, waits in open_.items()}


def _waiting_events(run: Run) -> Iterator[tuple[str, dict[str, Any]]]:
    """The run's wait events in order, a sub-agent's lifted out of their ``subagent_event``."""
    rows = (ConversationEvent.objects.filter(
        Q(kind__in=_WAITING_KINDS) | Q(kind="subagent_event",
                                       payload__event__kind__in=_WAITING_KINDS), run=run)
        .order_by("seq").values_list("kind", "payload"))
    for kind, payload in rows:
        if kind == "subagent_event":
            yield payload["event"]["kind"], {**payload["event"],
                                             "parent_call_id": payload["parent_call_id"]}
        else:
            yield kind, payload


def run_dispatch_on_commit(run: Run, *, counted: bool = False) -> None:
    """Hand the run to a worker once the transaction commits, counting the dispatch
    (``counted``: already counted, the run was created with ``dispatches=1``)."""
    if not counted:
        Run.objects.filter(pk=run.pk).update(dispatches=run.dispatches + 1)
    send_on_commit(RUN_CHANNEL, {"type": "run.start", "run_id": run.pk})


def run_claim(run_id: int, worker: str, **record: Any) -> bool:
    """Whether ``worker`` won the queued run (one conditional UPDATE: one winner); ``record``:
    more fields the same UPDATE sets (the run's ``model`` and ``reasoning``)."""
    now = timezone.now()
    return bool(Run.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(
        status=RunStatus.RUNNING, worker=worker, started_at=now, heartbeat_at=now, **record))


def runs_heartbeat(run_ids: list[int]) -> None:
    """The worker hosting these runs is alive (one UPDATE)."""
    Run.objects.filter(pk__in=run_ids).update(heartbeat_at=timezone.now())


def run_stop(*, conversation: Conversation, membership: Membership) -> Run:
    """Ask the active run to stop; the first stop is broadcast as ``run_stopping`` with who
    asked. A queued run (no worker has it) ends here, with its ``run_ended``. A later stop
    while the run winds down logs nothing more but asks its host again: the first request
    travels on the channel layer, which may have dropped it."""
    require_writer(membership)
    with transaction.atomic():
        conversation_lock(conversation.pk)
        run = active_run(conversation)
        if run is None:
            raise ApplicationError(ErrorCode.CONFLICT, _("Nothing is running."))
        if run.stopped_by_id is None:
            run.stopped_by = membership.user
            run.save(update_fields=["stopped_by"])
            event_append(conversation.pk, "run_stopping",
                         {"kind": "run_stopping", "run_id": run.pk, "by": person(membership.user)},
                         run_id=run.pk)
        stopper = person(run.stopped_by)
        if _unclaimed_cancelled(run):  # no worker has it, and now none will: it ends here
            event_append(conversation.pk, "run_ended", {
                "kind": "run_ended", "status": "cancelled", "error_kind": None, "turns": 0,
                "stopped_by": stopper}, run_id=run.pk)
            run_finish_locked(run, RunStatus.CANCELLED, streaming=False, follow_up=False)
        else:  # who stopped it first goes with it: its run_ended names them, unread again
            _ask_to_stop(run, stopper)
    return run


def _unclaimed_cancelled(run: Run) -> bool:
    """Whether the queued ``run`` is now cancelled before any worker claimed it: one
    conditional UPDATE, so a claim that won meanwhile (it does not take the conversation's
    lock) leaves the run to its worker, which is asked to stop instead."""
    return run.status == RunStatus.QUEUED and bool(
        Run.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(status=RunStatus.CANCELLED))


def run_compact(*, conversation: Conversation, membership: Membership) -> Run:
    """"Compact now": start a run that only compacts the conversation's history, at once and
    whatever the compaction breaker says (DESIGN 2.6). Broadcast as ``run_queued`` with who
    asked. ``forbidden`` for a viewer; ``conflict`` while a run is active (it compacts by
    itself when it has to; stop it to compact first); ``rate_limited`` past the person's
    agent turns a minute, as for ``ask_agent`` (each compaction is a model call)."""
    require_turn_rate(conversation, membership.user)
    return run_queue(conversation=conversation, membership=membership,
                     purpose=RunPurpose.COMPACT,
                     busy=_("The agent is working: compact when its run has ended, or stop it "
                            "first."))


def run_ask(*, conversation: Conversation, membership: Membership) -> Run:
    """"Ask the agent" (``ask_agent``): start its turn without a message, e.g. in a ``mention``
    conversation; the model sees everything said since its last turn. Broadcast as
    ``run_queued`` with who asked. ``forbidden`` for a viewer; ``conflict`` while a run is
    active (mention the agent to steer it)."""
    require_turn_rate(conversation, membership.user)
    return run_queue(conversation=conversation, membership=membership,
                     purpose=RunPurpose.REPLY,
                     busy=_("The agent is already working: mention it to steer its run."))


def require_turn_rate(conversation: Conversation, user: Any) -> None:
    """The runs a person started in the team count like messages: each is a model call
    (ApplicationError ``rate_limited``)."""
    require_under_rate(Run.objects.filter(
        conversation__room__team_id=conversation.room.team_id, started_by=user), "agent turns")


def run_queue(*, conversation: Conversation, membership: Membership, purpose: RunPurpose,
              busy: str) -> Run:
    """A queued run for ``purpose`` started by the member, broadcast as ``run_queued`` and
    dispatched after commit; ``busy`` is the ``conflict`` message when a run is active."""
    require_writer(membership)
    with transaction.atomic():
        conversation_lock(conversation.pk)
        try:
            with transaction.atomic():  # a savepoint: the refusal must not spoil the lock
                run = Run.objects.create(conversation=conversation, started_by=membership.user,
                                         status=RunStatus.QUEUED, purpose=purpose)
        except IntegrityError:  # one_active_run_per_conversation
            raise ApplicationError(ErrorCode.CONFLICT, busy) from None
        queued = {"kind": "run_queued", "run_id": run.pk, "started_by": person(membership.user)}
        if purpose == RunPurpose.COMPACT:
            queued["purpose"] = purpose.value
        event_append(conversation.pk, "run_queued", queued, run_id=run.pk)
        run_dispatch_on_commit(run)
    return run


def _require_not_stopping(run: Run | None) -> None:
    """Refuse (``conflict``) a decision or an answer for a run someone stopped: its host
    cancels what waits, so a decision recorded now would show a call approved that never
    ran. The stop is sent to the host again: if the layer dropped it, the run would otherwise
    wait, refusing every decision, until its wait timed out."""
    if run is not None and run.stopped_by_id is not None:
        _ask_to_stop(run, person(run.stopped_by))
        raise ApplicationError(ErrorCode.CONFLICT,
                               _("The run is stopping: what it waited for is cancelled."))


def run_decide(*, conversation: Conversation, membership: Membership, tool_call_id: str,
               approve: bool, arguments: dict[str, Any] | None = None) -> ToolDecision:
    """Record a member's decision on a tool call that waits for one (the first decision
    wins); a call that is not waiting — not yet, no more, or never — is refused
    (``conflict``). ``arguments``: the call's arguments as the member edited them before
    approving; ``invalid`` (and the call still waits) when they come with a denial or do not
    fit the tool's schema (the ``parameters`` of its ``awaiting_approval`` event)."""
    require_writer(membership)
    run = active_run(conversation)
    _require_not_stopping(run)
    waiting = {a["call_id"]: a for a in waiting_for(run)["approvals"]}
    if tool_call_id not in waiting:
        raise ApplicationError(ErrorCode.CONFLICT, _decided_already(conversation, tool_call_id)
                               or (_("Nothing is running.") if run is None else
                                   _("No tool call with that id is waiting for a decision.")))
    if arguments is not None:
        _require_fitting_edit(waiting[tool_call_id], approve, arguments)
    try:
        with transaction.atomic():
            conversation_lock(conversation.pk)  # run_stop's lock: a stop is in or not
            _require_not_stopping(Run.objects.get(pk=run.pk))
            decision = ToolDecision.objects.create(
                run=run, tool_call_id=tool_call_id, tool_name=waiting[tool_call_id]["name"],
                approved=approve, decided_by=membership.user, arguments=arguments)
    except IntegrityError:
        raise ApplicationError(ErrorCode.CONFLICT,
                               _decided_already(conversation, tool_call_id)
                               or _("Someone already decided.")) from None
    group_send_on_commit(run_group(run.pk), {
        "type": "run.decide", "run_id": run.pk, "tool_call_id": tool_call_id,
        "approved": approve, "by": membership.user.shown_name, "arguments": arguments})
    return decision


def _require_fitting_edit(waiting: dict[str, Any], approve: bool,
                          arguments: dict[str, Any]) -> None:
    """Refuse (``invalid``) edited arguments with a denial, or that do not fit the schema."""
    if not approve:
        raise ApplicationError(ErrorCode.INVALID, _("Edited arguments come with an approval; "
                                                    "a denied call does not run."))
    problem = arguments_problem(waiting["name"], waiting.get("parameters") or {}, arguments)
    if problem is not None:
        raise ApplicationError(ErrorCode.INVALID, _("The call still waits. %(problem)s")
                               % {"problem": problem})


def _decided_already(conversation: Conversation, tool_call_id: str) -> str | None:
    """Who already decided ``tool_call_id`` in ``conversation``, in words for the person who
    tried second (``"Bob already approved this tool call."``), or None if nobody did. A
    recorded decision comes first (its ``approval_decided`` event may not be logged yet);
    a timeout has only the event (``decided_by`` null)."""
    decision = (ToolDecision.objects.filter(run__conversation=conversation,
                                            tool_call_id=tool_call_id)
                .select_related("decided_by").first())
    if decision is not None:
        who = decision.decided_by.shown_name if decision.decided_by else _("A former member")
        done = (_("%(who)s already approved this tool call.") if decision.approved
                else _("%(who)s already denied this tool call."))
        return done % {"who": who}
    timed_out = ConversationEvent.objects.filter(
        Q(kind="approval_decided", payload__call_id=tool_call_id)
        | Q(kind="subagent_event", payload__event__kind="approval_decided",
            payload__event__call_id=tool_call_id), conversation=conversation).exists()
    return (_("This tool call already timed out waiting for a decision (it counts as denied).")
            if timed_out else None)


def run_answer(*, conversation: Conversation, membership: Membership, question_id: str,
               text: str) -> Run:
    """Pass an answer to the run's waiting AskUser question (the first answer wins; the worker
    ignores later ones, and a question that is not waiting is refused here)."""
    require_writer(membership)
    require_fits(text)
    run = active_run(conversation)
    _require_not_stopping(run)
    if run is None or question_id not in {q["question_id"]
                                          for q in waiting_for(run)["questions"]}:
        raise ApplicationError(ErrorCode.CONFLICT, _answered_already(conversation, question_id)
                               or (_("Nothing is running.") if run is None else
                                   _("No question with that id is waiting.")))
    group_send_on_commit(run_group(run.pk), {
        "type": "run.answer", "run_id": run.pk, "question_id": question_id, "text": text,
        "by": membership.user.shown_name})
    return run


def _answered_already(conversation: Conversation, question_id: str) -> str | None:
    """Who already answered ``question_id`` in ``conversation`` (its ``input_received``
    event, also a sub-agent's), in words for the person who tried second, or None."""
    payload = (ConversationEvent.objects.filter(
        Q(kind="input_received", payload__question_id=question_id)
        | Q(kind="subagent_event", payload__event__kind="input_received",
            payload__event__question_id=question_id), conversation=conversation)
        .values_list("payload", flat=True).first())
    if payload is None:
        return None
    who = (payload.get("event") or payload).get("answered_by")
    return (_("%(who)s already answered this question.") % {"who": who} if who else
            _("This question already timed out unanswered."))


def run_elicit(*, conversation: Conversation, membership: Membership, elicitation_id: str,
               action: str, content: dict[str, Any] | None) -> Run:
    """Pass an answer to an MCP server's waiting elicitation (the first answer wins; the
    worker ignores later ones). ``conflict`` when it is not waiting; ``invalid`` (it still
    waits) when ``accept`` comes without content that fits the requested schema, or another
    action comes with content."""
    require_writer(membership)
    run = active_run(conversation)
    _require_not_stopping(run)
    if run is None:
        raise ApplicationError(ErrorCode.CONFLICT, _("Nothing is running."))
    waiting = {e["elicitation_id"]: e for e in waiting_for(run)["elicitations"]}
    if elicitation_id not in waiting:
        raise ApplicationError(ErrorCode.CONFLICT,
                               _("No MCP server question with that id is waiting."))
    if action != "accept" and content is not None:
        raise ApplicationError(ErrorCode.INVALID, _("Content comes with accept, not %(action)s.")
                               % {"action": action})
    if action == "accept":
        require_fits(json.dumps(content or {}, ensure_ascii=False))
        problem = content_problem(waiting[elicitation_id]["schema"], content or {})
        if problem is not None:
            raise ApplicationError(ErrorCode.INVALID, _("The question still waits. %(problem)s")
                                   % {"problem": problem})
    group_send_on_commit(run_group(run.pk), {
        "type": "run.elicit", "run_id": run.pk, "elicitation_id": elicitation_id,
        "action": action, "content": content if action == "accept" else None,
        "by": membership.user.shown_name})
    return run


def run_set_status(run_id: int, status: RunStatus) -> None:
    """A transition between active states (running <-> awaiting approval / input)."""
    Run.objects.filter(pk=run_id, status__in=ACTIVE_RUN_STATUSES).update(status=status)


def run_finish(run_id: int, status: RunStatus, *, error_kind: str = "",
               error_message: str = "") -> Run | None:
    """End the run; when people's messages that ask for the agent still wait, start the next
    run for them in the same transaction (nothing a person sent is left behind); when only
    chat waits (``mention`` mode), it joins the history now. Returns that next run, if any."""
    with transaction.atomic():
        run = Run.objects.get(pk=run_id)
        conversation_lock(run.conversation_id)
        return run_finish_locked(run, status, error_kind=error_kind, error_message=error_message)


def run_finish_locked(run: Run, status: RunStatus, *, error_kind: str = "",
                      error_message: str = "", streaming: bool = True,
                      follow_up: bool = True) -> Run | None:
    """:func:`run_finish` of a run already read, inside a transaction that holds its
    conversation's :func:`~apps.rooms.services.events.conversation_lock` (or has written the
    conversation's row: the run's host, which appends ``run_ended`` in the same
    transaction). ``streaming``: whether a message of the run may still be being written
    (False: its host ended every message it began, so there is none to close).
    ``follow_up=False``: what waits joins the history as chat, in order, even messages that
    ask for the agent, instead of starting a run for them (a queued run someone stopped: a run
    started for them would undo the stop; left waiting, they would join a later run after
    newer messages)."""
    Run.objects.filter(pk=run.pk).update(
        status=status, ended_at=timezone.now(), error_kind=error_kind[:50],
        error_message=error_message[:2000])
    if streaming:
        _close_unfinished(run, MessageStatus.CANCELLED if status == RunStatus.CANCELLED
                          else MessageStatus.ERROR)
    # Mostly none waits: a cheap look first, the rows with their authors only then.
    pending = (list(pending_rows(run.conversation_id).select_related("author"))
               if messages_waiting(run.conversation_id) else [])
    waiting = next((message for message in pending if message.wakes_agent), None)
    if waiting is None or not follow_up:
        _chat_joins(run, pending)
        return None
    next_run = Run.objects.create(conversation_id=run.conversation_id,
                                  started_by=waiting.author, status=RunStatus.QUEUED)
    event_append(run.conversation_id, "run_queued", {
        "kind": "run_queued", "run_id": next_run.pk,
        "started_by": {"id": waiting.author_id, "name": waiting.author_name}},
        run_id=next_run.pk)
    run_dispatch_on_commit(next_run)
    return next_run


def _chat_joins(run: Run, chat: list[Message]) -> None:
    """People's chat that waited for a step the run did not take joins the history now, in
    arrival order, announced as ``messages_injected`` like chat a step took."""
    if not chat:
        return
    for message in chat:
        message.status = MessageStatus.COMPLETE
        message.position = positions_allocate(run.conversation_id, 1)
        message.save(update_fields=["status", "position"])
    joined = MessagesInjected(messages=[engine_message(m) for m in chat])
    event_append(run.conversation_id, joined.kind, joined.model_dump(mode="json"),
                 run_id=run.pk)


def _close_unfinished(run: Run, status: MessageStatus) -> None:
    """A message still being written when its run ended (its worker died) keeps what was
    said and takes its place in the history, as a stopped message does: its text and
    thinking (a half-streamed tool call is dropped: it never ran)."""
    for message in Message.objects.filter(run=run, status=MessageStatus.STREAMING).order_by("id"):
        message.content = [{k: v for k, v in block.items() if k in ("type", "text", "thinking")}
                           for block in content_so_far(message)
                           if block.get("type") in ("text", "thinking")]
        message.status = status
        if message.content:
            message.position = positions_allocate(run.conversation_id, 1)
        message.save(update_fields=["content", "status", "position"])


def runs_sweep() -> list[int]:
    """Mark runs whose worker stopped beating interrupted; re-dispatch queued runs nobody
    claimed (up to ``MAX_DISPATCHES`` times, then fail them). Returns the run ids touched."""
    conf = settings.CONFAB
    now = timezone.now()
    touched: list[int] = []
    stale = Run.objects.filter(status__in=ACTIVE_RUN_STATUSES[1:],
                               heartbeat_at__lt=now - timedelta(seconds=conf["STALE_AFTER_S"]))
    for run in stale:
        _interrupt(run)
        touched.append(run.pk)
    unclaimed = Run.objects.filter(status=RunStatus.QUEUED,
                                   updated_at__lt=now - timedelta(seconds=conf["CLAIM_TIMEOUT_S"]))
    for run in unclaimed:
        if run.dispatches >= conf["MAX_DISPATCHES"]:
            _end_with_event(run, RunStatus.FAILED, "unclaimed",
                            "No run worker picked the run up.")
        else:
            with transaction.atomic():
                Run.objects.filter(pk=run.pk).update(updated_at=now)
                run_dispatch_on_commit(run)
        touched.append(run.pk)
    return touched


def _interrupt(run: Run) -> None:
    _end_with_event(run, RunStatus.INTERRUPTED, "interrupted",
                    "The worker hosting the run stopped responding.")


def _end_with_event(run: Run, status: RunStatus, kind: str, message: str) -> None:
    with transaction.atomic():
        # the conversation first, then the run, in the order run_stop takes them: the other
        # order could deadlock with a stop on PostgreSQL
        conversation_lock(run.conversation_id)
        updated = Run.objects.filter(pk=run.pk, status__in=ACTIVE_RUN_STATUSES).update(
            status=status)
        if not updated:
            return  # it ended meanwhile
        run.refresh_from_db(fields=["stopped_by"])  # a stop may have committed as we waited
        event_append(run.conversation_id, "run_ended", {
            "kind": "run_ended", "status": str(status), "error_kind": kind, "turns": 0,
            "message": message, "run_id": run.pk,
            "stopped_by": person(run.stopped_by) if run.stopped_by_id is not None else None},
            run_id=run.pk)
        run_finish(run.pk, status, error_kind=kind, error_message=message)
