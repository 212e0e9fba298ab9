"""Rooms, conversations, their transcripts, runs and event logs (DESIGN 3.2, 3.3)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from apps.accounts.models import Team
from apps.common.models import TimeStampedModel
from apps.integrations.models import ModelConfig
from apps.rooms.plain_text import plain_text


class Room(TimeStampedModel):
    """A team's chat room; it holds conversations."""

    team = models.ForeignKey(Team, verbose_name=_("team"), on_delete=models.CASCADE,
                             related_name="rooms")
    name = models.CharField(verbose_name=_("name"), max_length=100)
    archived = models.BooleanField(verbose_name=_("archived"), default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("created by"),
                                   null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        verbose_name = _("room")
        verbose_name_plural = _("rooms")

    def __str__(self) -> str:
        return self.name


class AgentMode(models.TextChoices):
    """When the agent answers (DESIGN 3.2): every message, or when it is called."""

    ALWAYS = "always", _("Always (every message starts a run or steers it)")
    MENTION = "mention", _("When mentioned (@agent) or asked")


class Conversation(TimeStampedModel):
    """One transcript with at most one active run.

    ``agent_mode``: :class:`AgentMode` (``always`` unless someone switches it).
    ``model`` / ``reasoning``: the model a member chose for the next runs (None: the team's)
    and the ReasoningParams fields they set for it (:mod:`apps.rooms.services.configure`).

    ``last_seq``: the last event number allocated; allocation happens under a row lock, so
    two writers never get the same number and none is skipped. ``compaction_failures`` and
    ``compaction_paused_until`` are the compaction breaker (DESIGN 2.6: after three failures in
    a row automatic compaction waits until then); ``memory_upto`` how far the session notes go.
    ``forked_from``: for a fork, the message of the other conversation it was made at (its
    history up to and including that message was copied); the message's ``forks`` the other way.
    """

    room = models.ForeignKey(Room, verbose_name=_("room"), on_delete=models.CASCADE,
                             related_name="conversations")
    title = models.CharField(verbose_name=_("title"), max_length=200, default="New conversation")
    archived = models.BooleanField(verbose_name=_("archived"), default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("created by"),
                                   null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    last_seq = models.BigIntegerField(verbose_name=_("last sequence number"), default=0)
    # keeps counting past 3
    compaction_failures = models.PositiveIntegerField(verbose_name=_("compaction failures"),
                                                      default=0)
    compaction_paused_until = models.DateTimeField(verbose_name=_("compaction paused until"),
                                                   null=True, blank=True)
    memory_upto = models.PositiveIntegerField(verbose_name=_("memory up to"), default=0)
    agent_mode = models.CharField(verbose_name=_("agent mode"), max_length=10,
                                  choices=AgentMode.choices, default=AgentMode.ALWAYS)
    forked_from = models.ForeignKey("Message", verbose_name=_("forked from"), null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="forks")
    model = models.ForeignKey(ModelConfig, verbose_name=_("model"), null=True, blank=True,
                              on_delete=models.SET_NULL, related_name="+")
    reasoning = models.JSONField(verbose_name=_("reasoning settings"), default=dict, blank=True)

    class Meta:
        verbose_name = _("conversation")
        verbose_name_plural = _("conversations")

    @property
    def team_id(self) -> int:
        return self.room.team_id

    def __str__(self) -> str:
        return self.title


class MessageStatus(models.TextChoices):
    PENDING = "pending", _("Pending (joins at the next step)")
    STREAMING = "streaming", _("Streaming")
    COMPLETE = "complete", _("Complete")
    CANCELLED = "cancelled", _("Cancelled")
    ERROR = "error", _("Error")


class Message(TimeStampedModel):
    """One message of the transcript, in the engine's form (``content`` is the list of content
    blocks of :class:`apps.engine.messages.Message`).

    ``position`` orders the history the model sees (messages are positioned when they join
    it: a pending message gets its position when it is injected). ``compacted`` messages were
    replaced by a summary (which takes the position of the last of them): kept for the export,
    left out of the model's history. ``client_id`` makes a person's resend idempotent (unique
    per author: two people may pick the same one). ``wakes_agent``: the person's message asks
    for the agent (every message in ``always`` mode; one that mentions it in ``mention`` mode):
    it starts a run or steers the active one, where the others are only the people's chat.
    ``superseded_by``: the run that replaced this message with a new version (an edit of the
    person's last message, or a regenerated answer): the message keeps its place in the
    transcript and the exports as an earlier version, left out of the model's history; the
    new version is that run's messages. ``superseded_by_message``: the same for a chat edit (an
    edited message that asks nothing of the agent in a ``mention`` conversation starts no run):
    the message that replaced this one is the new version. ``search_text``: the words of
    ``content`` as plain text (:func:`apps.rooms.plain_text.plain_text`), for search;
    :meth:`save` keeps it, and so must any ``update()`` of ``content``.
    """

    conversation = models.ForeignKey(Conversation, verbose_name=_("conversation"),
                                     on_delete=models.CASCADE, related_name="messages")
    run = models.ForeignKey("Run", verbose_name=_("run"), null=True, blank=True,
                            on_delete=models.SET_NULL, related_name="messages")
    position = models.PositiveIntegerField(verbose_name=_("position"), null=True, blank=True)
    role = models.CharField(verbose_name=_("role"), max_length=10)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("author"), null=True,
                               blank=True, on_delete=models.SET_NULL, related_name="+")
    author_name = models.CharField(verbose_name=_("author name"), max_length=150, blank=True)
    content = models.JSONField(verbose_name=_("content"), default=list)
    # a message being written: the last event its content includes (apps.rooms.drafts)
    checkpoint_seq = models.BigIntegerField(verbose_name=_("checkpoint sequence number"),
                                            null=True, blank=True)
    reasoning_content = models.TextField(verbose_name=_("reasoning content"), null=True, blank=True)
    provider = models.CharField(verbose_name=_("provider"), max_length=20, blank=True)
    model = models.CharField(verbose_name=_("model"), max_length=200, blank=True)
    status = models.CharField(verbose_name=_("status"), max_length=10,
                              choices=MessageStatus.choices, default=MessageStatus.COMPLETE)
    client_id = models.CharField(verbose_name=_("client ID"), max_length=100, null=True, blank=True)
    # the runtime's message_id
    engine_id = models.CharField(verbose_name=_("engine ID"), max_length=64, blank=True)
    compacted = models.BooleanField(verbose_name=_("compacted"), default=False)
    usage = models.JSONField(verbose_name=_("token usage"), null=True, blank=True)
    wakes_agent = models.BooleanField(verbose_name=_("wakes the agent"), default=True)
    superseded_by = models.ForeignKey("Run", verbose_name=_("superseded by"), null=True, blank=True,
                                      on_delete=models.SET_NULL, related_name="superseded")
    superseded_by_message = models.ForeignKey(
        "self", verbose_name=_("superseded by message"), null=True, blank=True,
        on_delete=models.SET_NULL, related_name="+")
    search_text = models.TextField(verbose_name=_("search text"), blank=True, default="")

    class Meta:
        verbose_name = _("message")
        verbose_name_plural = _("messages")
        ordering = ["position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "author", "client_id"],
                                    condition=Q(client_id__isnull=False),
                                    name="one_message_per_client_id"),
            models.UniqueConstraint(fields=["conversation", "position"],
                                    condition=Q(position__isnull=False, compacted=False),
                                    name="one_message_per_position"),
        ]
        # Pages of the transcript, newest first (apps.rooms.history).
        indexes = [models.Index(fields=["conversation", "position", "id"],
                                name="message_page_order")]

    @property
    def earlier_version(self) -> bool:
        """Replaced by a newer version (a run's messages or an edited chat message)."""
        return self.superseded_by_id is not None or self.superseded_by_message_id is not None

    def save(self, *args: object, **kwargs: object) -> None:
        self.search_text = plain_text(self.content)
        super().save(*args, **kwargs)  # type: ignore[arg-type]


CURRENT_VERSION = Q(superseded_by__isnull=True, superseded_by_message__isnull=True)
"""The messages no newer version replaced (what the model sees, search finds, a fork copies)."""


class RunStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    AWAITING_APPROVAL = "awaiting_approval", _("Awaiting approval")
    AWAITING_INPUT = "awaiting_input", _("Awaiting input")
    COMPLETED = "completed", _("Completed")
    CANCELLED = "cancelled", _("Cancelled")
    FAILED = "failed", _("Failed")
    INTERRUPTED = "interrupted", _("Interrupted")


class RunPurpose(models.TextChoices):
    REPLY = "reply", _("Reply (the agent's turn)")
    COMPACT = "compact", _("Compact the conversation (a member's “compact now”)")


ACTIVE_RUN_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.AWAITING_APPROVAL,
                       RunStatus.AWAITING_INPUT)


class Run(TimeStampedModel):
    """One agent run. At most one active run per conversation: a partial unique constraint,
    so two messages arriving at two server processes at once cannot start two runs.
    ``purpose``: the agent's turn, or only a compaction of the history ("compact now").
    ``model`` / ``reasoning``: the model id and the ReasoningParams (its set fields) it ran with."""

    conversation = models.ForeignKey(Conversation, verbose_name=_("conversation"),
                                     on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(verbose_name=_("status"), max_length=20, choices=RunStatus.choices,
                              default=RunStatus.QUEUED)
    purpose = models.CharField(verbose_name=_("purpose"), max_length=10, choices=RunPurpose.choices,
                               default=RunPurpose.REPLY)
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("started by"),
                                   null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    stopped_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("stopped by"),
                                   null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    model = models.CharField(verbose_name=_("model"), max_length=200, blank=True)
    reasoning = models.JSONField(verbose_name=_("reasoning settings"), null=True, blank=True)
    error_kind = models.CharField(verbose_name=_("error kind"), max_length=50, blank=True)
    error_message = models.TextField(verbose_name=_("error message"), blank=True)
    worker = models.CharField(verbose_name=_("worker"), max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(verbose_name=_("last heartbeat"), null=True, blank=True)
    dispatches = models.PositiveSmallIntegerField(verbose_name=_("dispatches"), default=0)
    started_at = models.DateTimeField(verbose_name=_("started at"), null=True, blank=True)
    ended_at = models.DateTimeField(verbose_name=_("ended at"), null=True, blank=True)

    class Meta:
        verbose_name = _("run")
        verbose_name_plural = _("runs")
        constraints = [
            models.UniqueConstraint(fields=["conversation"],
                                    condition=Q(status__in=ACTIVE_RUN_STATUSES),
                                    name="one_active_run_per_conversation"),
        ]

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_RUN_STATUSES


class ToolDecision(TimeStampedModel):
    """A member's decision on a tool call that waited for approval (who decided is recorded);
    ``arguments``: what the call ran with when the decider edited them before approving (null:
    as the model sent them, in the call's ``tool_use`` block)."""

    run = models.ForeignKey(Run, verbose_name=_("run"), on_delete=models.CASCADE,
                            related_name="decisions")
    tool_call_id = models.CharField(verbose_name=_("tool call ID"), max_length=100)
    tool_name = models.CharField(verbose_name=_("tool name"), max_length=200)
    approved = models.BooleanField(verbose_name=_("approved"))
    arguments = models.JSONField(verbose_name=_("arguments"), null=True, blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("decided by"),
                                   null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        verbose_name = _("tool decision")
        verbose_name_plural = _("tool decisions")
        constraints = [models.UniqueConstraint(fields=["run", "tool_call_id"],
                                               name="one_decision_per_call")]


class ConversationEvent(models.Model):
    """The conversation's event log: every broadcast event with its ``seq`` (1, 2, 3, ...).
    Stored before it is broadcast, so a client repairs any gap from here."""

    conversation = models.ForeignKey(Conversation, verbose_name=_("conversation"),
                                     on_delete=models.CASCADE, related_name="events")
    seq = models.BigIntegerField(verbose_name=_("sequence number"))
    kind = models.CharField(verbose_name=_("kind"), max_length=40)
    payload = models.JSONField(verbose_name=_("payload"))
    run = models.ForeignKey(Run, verbose_name=_("run"), null=True, blank=True,
                            on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("conversation event")
        verbose_name_plural = _("conversation events")
        ordering = ["seq"]
        constraints = [models.UniqueConstraint(fields=["conversation", "seq"],
                                               name="one_event_per_seq")]
        # The last event of a kind (todos, usage, ...) without reading the log's tail.
        indexes = [models.Index(fields=["conversation", "kind", "seq"],
                                name="event_kind_order")]


def _image_id() -> str:
    return uuid.uuid4().hex


class ConversationImage(models.Model):
    """An image a member uploaded to a conversation, to attach to a message (issue 18).

    ``id``: 32 hex digits (random: an id says nothing about others). The bytes live in
    ``settings.IMAGES_DIR/<team id>/<id>`` (:mod:`apps.rooms.images`); ``media_type``,
    ``width`` and ``height`` (pixels) are what the bytes turned out to be, ``size`` in bytes.
    """

    id = models.CharField(verbose_name=_("ID"), primary_key=True, max_length=32, default=_image_id,
                          editable=False)
    conversation = models.ForeignKey(Conversation, verbose_name=_("conversation"),
                                     on_delete=models.CASCADE, related_name="images")
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("uploaded by"),
                                    null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    media_type = models.CharField(verbose_name=_("media type"), max_length=20)
    width = models.PositiveIntegerField(verbose_name=_("width"))
    height = models.PositiveIntegerField(verbose_name=_("height"))
    size = models.PositiveIntegerField(verbose_name=_("size in bytes"))
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("image")
        verbose_name_plural = _("images")
