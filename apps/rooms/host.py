"""Hosting one run in a worker: the engine's AgentRunner with the room's ports and projector.

The host loads what the run needs (history, team policy, model, MCP servers, the team wiki: its
port for the wiki tools, its read-only ``wiki/`` mount and the system prompt's wiki section,
:mod:`apps.rooms.wiki`), takes the team's MCP servers from the worker's warm pool (their tools
join the run's registry; one that fails is a ``warning`` event and the run goes on; Stop cancels
the run's calls and gives the servers back open), says in a ``warning`` when Bash
runs without the sandbox, runs the agent (or, for a ``compact`` run, only compacts the history:
no model turn, no MCP servers), feeds every runtime event to the projector (a sub-agent's
``wiki_changed`` is lifted to the top level), has the worker's pulse (:mod:`apps.rooms.pulse`)
beat its heartbeat, tick its projector and send the log's high-water marks to the room
(:mod:`apps.rooms.tail`), and ends the run in the database; a notes agent
still working then finishes after the end (:mod:`apps.rooms.notes`). Stop, decisions and
answers arrive from the worker consumer (the run's group) and are delivered here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet

from apps.common.compiled import CompiledQuery
from apps.common.errors import ApplicationError
from apps.engine.clock import MONOTONIC, Clock
from apps.engine.compaction.auto_compact import CompactionState, Compactor
from apps.engine.compaction.session_memory import SessionMemory, SessionMemoryState
from apps.engine.events import ErrorEvent, RunEnded, SubagentEvent, WarningEvent, WikiChanged
from apps.engine.mcp import McpManager, McpServerSpec, ServerKey
from apps.engine.messages import Message as EngineMessage
from apps.engine.providers.base import ProviderSettings
from apps.engine.runtime.runner import AgentRunner, RunConfig
from apps.engine.tools.base import ToolEnvironment
from apps.engine.tools.builtin.bash import BashTool
from apps.engine.tools.builtin.wiki import WIKI_SERVICE
from apps.engine.tools.defaults import default_tools
from apps.engine.tools.registry import ToolRegistry
from apps.integrations.builders import (
    TEAM_CHOICE,
    provider_pool,
    provider_settings,
    run_settings,
)
from apps.integrations.crypto import DecryptionError
from apps.integrations.mcp_builders import mcp_pool_servers
from apps.integrations.mcp_pool import mcp_pools
from apps.integrations.mcp_selectors import mcp_server_candidates
from apps.integrations.models import ModelConfig
from apps.realtime.publish import database_call
from apps.rooms.models import AgentMode, Conversation, Run, RunPurpose, RunStatus
from apps.rooms.notes import notes_previous_run, notes_release, notes_settle
from apps.rooms.ports import (
    PendingMessages,
    RoomAnswers,
    RoomApprovals,
    RoomElicitations,
    pending_rows,
)
from apps.rooms.projector import Projector
from apps.rooms.pulse import pulse
from apps.rooms.services.configure import reasoning_record, run_model
from apps.rooms.services.events import event_append
from apps.rooms.services.runs import run_claim, run_finish, run_finish_locked
from apps.rooms.titles import DEFAULT_TITLE, title_after_end
from apps.rooms.transcript import history_of
from apps.rooms.wiki import RunWiki, wiki_mounts, wiki_prompt
from apps.rooms.workspaces import ensure_workspace
from apps.wiki.stores import store_for

__all__ = ["RunHost"]

logger = logging.getLogger(__name__)
_FINAL = {"completed": RunStatus.COMPLETED, "cancelled": RunStatus.CANCELLED,
          "failed": RunStatus.FAILED}


class SetupError(Exception):
    """The run cannot start (no model configured, conversation gone...)."""


@dataclass(slots=True)
class _Setup:
    conversation: Conversation
    run: Run
    history: list[EngineMessage]
    policy: dict[str, Any]
    model: str
    config: RunConfig
    provider: ProviderSettings
    context_window: int
    max_output: int
    workspace: Path
    previous_run: int | None  # the conversation's run before this one (its notes agent ends)
    none_waiting: bool  # no pending message to inject at the run's start
    mcp_servers: list[tuple[ServerKey, McpServerSpec]] = field(default_factory=list)
    mcp_problems: list[WarningEvent] = field(default_factory=list)  # servers left out
    wiki: RunWiki | None = None


def system_prompt(conversation: Conversation, wiki: str = "") -> str:
    """What the agent is told about where it is; ``wiki``: the wiki section
    (:func:`apps.rooms.wiki.wiki_prompt`)."""
    room = conversation.room
    prompt = (
        f"You are the AI agent of the team \"{room.team.name}\", working in its room "
        f"\"{room.name}\". Several people talk with you in this conversation; each of their "
        "messages starts with the author's name in square brackets, like [alice]. People may "
        "send messages while you work: they join at your next step, so read them and adapt. "
        "Your files and commands live in this conversation's workspace directory. Tools that "
        "change things may wait for a team member's approval."
    )
    if conversation.agent_mode == AgentMode.MENTION:
        prompt += (
            " Here the people also talk among themselves: you are called when someone writes "
            f"@{room.team.agent_handle} or asks you, and you then see everything said since your "
            "last turn. Answer what was asked of you; the rest is context."
        )
    return f"{prompt}\n\n{wiki}" if wiki else prompt


def _setup_runs() -> QuerySet[Run]:
    """Runs with what a run's setup reads beside each: its conversation, room, team (with the
    team's chosen model and its provider: :func:`~apps.integrations.builders.model_for_team`
    then needs no query of its own while that is usable) and starter, the conversation's run
    before it, whether a message waits and whether an MCP server may apply to the team (most
    teams have none: their runs skip reading the list, a query of its own)."""
    return (Run.objects.select_related(f"conversation__room__team__{TEAM_CHOICE}", "started_by")
            .annotate(previous_run=notes_previous_run(),
                      messages_waiting=Exists(pending_rows(OuterRef("conversation_id"))),
                      mcp_candidates=Exists(mcp_server_candidates(
                          OuterRef("conversation__room__team_id")))))


_setup_run = CompiledQuery(lambda pk: _setup_runs().filter(pk=pk))
"""The run ``pk`` with :func:`_setup_runs`'s, compiled once: building the joins and compiling
them was most of the query's CPU (issue 20: 0.8 ms of 1.1 ms idle; 3 ms per run under load)."""


def _provider_settings(model: ModelConfig) -> ProviderSettings:
    """The engine's settings for ``model``'s provider, its API key decrypted. Raises
    SetupError when no configured key decrypts it."""
    try:
        return provider_settings(model.provider)
    except DecryptionError as exc:
        raise SetupError(f"The model's provider cannot be used: {exc}. A site admin enters "
                         "its API key again.") from exc


def _workspace(conversation: Conversation) -> Path:
    """The conversation's workspace, made if missing. Raises SetupError when it cannot be."""
    try:
        return ensure_workspace(conversation)
    except OSError as exc:
        raise SetupError(f"The conversation's workspace cannot be made: {exc}") from exc


class RunHost:
    """One hosted run; ``host()`` runs it to its end (never raises). ``clock`` times the
    high-water marks (tests give theirs)."""

    clock: Clock = MONOTONIC

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.runner: AgentRunner | None = None
        self.approvals: RoomApprovals | None = None
        self.answers = RoomAnswers()
        self.elicitations = RoomElicitations(settings.CONFAB["ELICITATION_TIMEOUT_S"])
        self.ended: RunEnded | None = None
        self._compaction: CompactionState | None = None
        self._memory: SessionMemory | None = None
        self._stop_requested = False
        self._stopped_by: dict[str, Any] | None = None
        self._streaming = True  # whether a message of the run may still be being written

    def stop(self, stopped_by: dict[str, Any] | None = None) -> None:
        """Stop the run wherever it is (``stopped_by``: who asked, ``{id, name}``, named by
        its ``run_ended``). Without ``stopped_by``, after its end: cancel its notes agent (the
        conversation's next run has started: :mod:`apps.rooms.notes`); a person's stop sent
        again after the end leaves the notes be."""
        self._stop_requested = True
        self._stopped_by = self._stopped_by or stopped_by
        if self.runner is not None:
            self.runner.cancel()
        if stopped_by is None and self.ended is not None and self._memory is not None:
            self._memory.cancel()

    def decide(self, tool_call_id: str, approved: bool, by: str,
               arguments: dict[str, Any] | None = None) -> None:
        if self.approvals is not None:
            self.approvals.decide(tool_call_id, approved, by, arguments)

    def answer(self, question_id: str, text: str, by: str) -> None:
        self.answers.answer(question_id, text, by)

    def elicit(self, elicitation_id: str, action: Literal["accept", "decline", "cancel"],
               content: dict[str, Any] | None, by: str) -> None:
        self.elicitations.answer(elicitation_id, action, content, by)

    async def host(self, worker: str) -> None:
        """Claim the queued run for ``worker`` (nothing more when another worker won it or it
        ended), run the agent and end the run in the database, whatever happens; one high-water
        mark of the log follows the end (:meth:`~apps.rooms.pulse.Pulse.mark_after_end`), and a
        completed first exchange gets its title (:mod:`apps.rooms.titles`)."""
        after_end: list[Coroutine[Any, Any, None]] = []
        try:
            setup = await database_sync_to_async(self._begin)(worker)
        except SetupError as exc:
            conversation_id = await database_call(self._fail_setup, str(exc))
        else:
            if setup is None:
                return  # not ours
            conversation_id = setup.conversation.pk
            try:
                status, error_kind, error_message = await self._run(setup)
            except Exception as exc:  # e.g. the MCP pool broke: the run still ends
                logger.exception("run %s could not run", self.run_id)
                status, error_kind, error_message = (RunStatus.FAILED, "internal",
                                                     f"{type(exc).__name__}: {exc}")
            await database_call(self._finish, setup, status, error_kind, error_message)
            if (status == RunStatus.COMPLETED and setup.run.purpose == RunPurpose.REPLY
                    and setup.conversation.title == DEFAULT_TITLE):  # titled: nothing to do
                after_end.append(title_after_end(provider_pool.get(setup.provider),
                                                 setup.model, conversation_id))
        if conversation_id is not None:
            pulse(self.clock).mark_after_end(conversation_id)
            await asyncio.gather(self._settle_notes(conversation_id), *after_end)

    def _begin(self, worker: str) -> _Setup | None:
        """:meth:`_setup`, then the claim, which also records the run's model (one UPDATE),
        in one thread hop; None when another worker won the run or it ended (what was read is
        dropped). A run that cannot be set up is claimed first, then SetupError is raised."""
        try:
            setup = self._setup()
        except SetupError:
            if not run_claim(self.run_id, worker):
                return None
            raise
        reasoning = reasoning_record(setup.config.reasoning)
        if not run_claim(self.run_id, worker, model=setup.model, reasoning=reasoning):
            return None
        return setup

    def _setup(self) -> _Setup:
        """Everything the run needs from the database and the disk (reads only, and the
        workspace made). Raises SetupError."""
        run = next(iter(_setup_run(self.run_id)), None)
        if run is None:
            raise SetupError("the run is gone")
        conversation = run.conversation
        # the conversation's choice, else the team's (read with the run: _setup_runs)
        model, chosen = run_model(conversation, loaded=True)
        if model is None:
            raise SetupError("No model is configured: a site admin adds a provider and a "
                             "model, and the team chooses its default.")
        provider = _provider_settings(model)  # first: a key no key opens stops the rest
        try:
            params = run_settings(model, chosen)
        except ApplicationError as exc:
            raise SetupError(exc.message) from exc
        team = conversation.room.team
        wiki = RunWiki(team=team, user=run.started_by, conversation_id=conversation.pk,
                       run_id=run.pk, store=store_for(team))
        config = RunConfig(**params, system=system_prompt(conversation, wiki_prompt(wiki.store)),
                           max_iterations=settings.CONFAB["MAX_ITERATIONS"])
        mcp_problems: list[WarningEvent] = []
        mcp_servers = (mcp_pool_servers(team, run.started_by, problems=mcp_problems)
                       if run.purpose == RunPurpose.REPLY and run.mcp_candidates
                       else [])  # compacting needs no tools
        return _Setup(conversation=conversation, run=run, history=history_of(conversation.pk),
                      policy=dict(conversation.room.team.tool_policy or {}), model=params["model"],
                      config=config, provider=provider,
                      context_window=params["context_window"],
                      max_output=params["max_tokens"], workspace=_workspace(conversation),
                      previous_run=run.previous_run, none_waiting=not run.messages_waiting,
                      mcp_servers=mcp_servers, mcp_problems=mcp_problems, wiki=wiki)

    def _fail_setup(self, message: str) -> int | None:
        """End a run that could not start; its conversation's id (None: the run is gone)."""
        run = Run.objects.filter(pk=self.run_id).first()
        if run is None:
            return None
        event_append(run.conversation_id, "error", {"kind": "error", "error_kind": "setup",
                                                    "message": message}, run_id=run.pk)
        event_append(run.conversation_id, "run_ended", {
            "kind": "run_ended", "status": "failed", "error_kind": "setup", "turns": 0,
            "stopped_by": self._stopped_by}, run_id=run.pk)
        run_finish(self.run_id, RunStatus.FAILED, error_kind="setup", error_message=message)
        return run.conversation_id

    async def _run(self, setup: _Setup) -> tuple[RunStatus, str, str]:
        conf = settings.CONFAB
        conversation = setup.conversation
        await notes_release(setup.previous_run)
        provider = provider_pool.get(setup.provider)  # per event loop: here, not in a thread
        inbox = PendingMessages(conversation.pk, self.run_id, none_waiting=setup.none_waiting)
        projector = Projector(conversation.pk, self.run_id, inbox,
                              coalesce_ms=conf["COALESCE_MS"],
                              coalesce_bytes=conf["COALESCE_BYTES"])
        self.approvals = RoomApprovals(setup.policy, conf["APPROVAL_TIMEOUT_S"])
        workspace = setup.workspace
        compaction = CompactionState(consecutive_failures=conversation.compaction_failures,
                                     paused_until=conversation.compaction_paused_until)
        memory = SessionMemory(provider, setup.model, workspace,
                               state=SessionMemoryState(extracted_upto=conversation.memory_upto),
                               min_tokens=conf["NOTES_MIN_TOKENS"],
                               min_tool_calls=conf["NOTES_MIN_TOOL_CALLS"])
        tools = default_tools()  # the MCP manager adds the team's MCP tools to it
        wiki = setup.wiki
        assert wiki is not None
        self.runner = runner = AgentRunner(
            provider, tools, setup.config, setup.history,
            run_id=str(self.run_id), workspace=workspace, inbox=inbox,
            approvals=self.approvals, inputs=self.answers,
            env=ToolEnvironment(allow_private_network=conf["ALLOW_PRIVATE_NETWORK"],
                                sandbox=conf["SANDBOX"], ask_timeout_s=conf["ASK_TIMEOUT_S"]),
            compactor=Compactor(provider, setup.model, context_window=setup.context_window,
                                max_output=setup.max_output, state=compaction,
                                notes=memory.read, cooldown_s=conf["COMPACTION_COOLDOWN_S"]),
            hooks=memory, services={WIKI_SERVICE: wiki},
            mounts=wiki_mounts(lambda: wiki.store))
        if self._stop_requested:
            runner.cancel()
        self._compaction, self._memory = compaction, memory
        mcp = McpManager([spec for _, spec in setup.mcp_servers], registry=tools,
                         keys=[key for key, _ in setup.mcp_servers], pool=mcp_pools.get(),
                         on_warning=projector.handle, elicitation=self.elicitations,
                         on_event=projector.handle)
        timers = pulse(self.clock)
        with timers.beating(self.run_id):  # starting servers may take their connect timeouts
            async with AsyncExitStack() as servers:
                await servers.enter_async_context(mcp)
                for problem in setup.mcp_problems:
                    await projector.handle(problem)
                compact_only = setup.run.purpose == RunPurpose.COMPACT
                if not compact_only:
                    await self._warn_if_unconfined(tools, projector)
                with timers.watching(projector):
                    return await self._drive(runner, projector, compact_only=compact_only)

    async def _warn_if_unconfined(self, tools: ToolRegistry, projector: Projector) -> None:
        """Tell the room when this run's Bash commands run without the sandbox (DESIGN 4)."""
        bash = tools.get(BashTool.spec.name)
        if isinstance(bash, BashTool):
            notice = await bash.unconfined_notice(settings.CONFAB["SANDBOX"])
            if notice is not None:
                await projector.handle(WarningEvent(message=notice))

    async def _drive(self, runner: AgentRunner, projector: Projector, *, compact_only: bool
                     ) -> tuple[RunStatus, str, str]:
        error_kind, error_message = "", ""
        try:
            async for event in runner.events(compact_only=compact_only,
                                             take_now=projector.take_now):
                if isinstance(event, ErrorEvent):
                    error_kind, error_message = event.error_kind, event.message
                if isinstance(event, RunEnded):
                    self.ended = event  # stored with the run's end, in one transaction
                    continue
                if isinstance(event, SubagentEvent) and isinstance(event.event, WikiChanged):
                    event = event.event  # a sub-agent's wiki change is the room's like any
                await projector.handle(event)
        except Exception as exc:  # the projector failed (database down): end the run visibly
            logger.exception("run %s: projector failed", self.run_id)
            error_kind, error_message = "internal", f"{type(exc).__name__}: {exc}"
            self.ended = RunEnded(status="failed", error_kind="internal", turns=runner.turns)
            return RunStatus.FAILED, error_kind, error_message
        finally:
            await projector.close()
            self._streaming = projector.streaming
        return _FINAL.get(runner.status or "failed", RunStatus.FAILED), error_kind, error_message

    async def _settle_notes(self, conversation_id: int) -> None:
        if self._memory is not None:
            await notes_settle(self._memory, conversation_id=conversation_id,
                               run_id=self.run_id, clock=self.clock)

    def _finish(self, setup: _Setup, status: RunStatus, error_kind: str,
                error_message: str) -> None:
        """The run's end: ``run_ended`` and the run's final status in one transaction, so a
        client that sees the event finds the run over. The run is the one read at its setup;
        the conversation's compaction and notes state is written only when the run changed
        it."""
        ended = self.ended or RunEnded(status="failed", error_kind="internal")
        payload = {**ended.model_dump(mode="json"), "stopped_by": self._stopped_by}
        with transaction.atomic():
            if self._compaction is not None and self._memory is not None:
                self._save_compaction(setup.conversation)
            event_append(setup.conversation.pk, "run_ended", payload, run_id=self.run_id)
            run_finish_locked(setup.run, status, error_kind=error_kind,
                              error_message=error_message, streaming=self._streaming)

    def _save_compaction(self, conversation: Conversation) -> None:
        assert self._compaction is not None and self._memory is not None
        state = {"compaction_failures": self._compaction.consecutive_failures,
                 "compaction_paused_until": self._compaction.paused_until,
                 "memory_upto": self._memory.state.extracted_upto}
        if any(getattr(conversation, name) != value for name, value in state.items()):
            Conversation.objects.filter(pk=conversation.pk).update(**state)
