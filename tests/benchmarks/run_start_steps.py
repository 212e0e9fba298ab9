"""A timing harness for run start: ``perf_counter`` marks around each step from the consumer's
receive of a ``send`` to the provider's HTTP request, for ``bench_run_start --steps``.

:func:`install` wraps the named functions in place (pass-through: same arguments, same result,
also for sync functions that run on the database thread) and records ``(step, start, end)`` for
each call into the current run's :class:`Marks`; thread hops (asgiref's ``SyncToAsync``) and
SQL statements are counted too, in the whole process (a previous run's tail included). Only
one run at a time is measured, as the benchmark runs them.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import SyncToAsync
from django.db.backends.utils import CursorWrapper

STEPS = (
    # (module, attribute path, step); a few are older commits' names (credentials_hold, the
    # worker's run_claim, notes_release_before), so the code before a change times alike
    # the consumer, up to the ack
    ("apps.rooms.consumers", "ConversationConsumer.receive_json", "consumer.receive_json"),
    ("apps.rooms.consumers", "credentials_hold", "consumer.credentials_hold"),
    ("apps.rooms.consumers", "ConversationConsumer._frame_checks", "consumer._frame_checks"),
    ("apps.rooms.consumers", "member_conversation", "consumer.member_conversation"),
    ("apps.rooms.consumers", "message_post", "consumer.message_post"),
    # the worker: claim, setup
    ("apps.rooms.worker", "RunWorkerConsumer.run_start", "worker.run_start"),
    ("apps.rooms.worker", "run_claim", "worker.run_claim"),
    ("apps.rooms.host", "run_claim", "host.run_claim"),
    ("apps.rooms.host", "RunHost.host", "host.host"),
    ("apps.rooms.host", "RunHost._begin", "host._begin"),
    ("apps.rooms.host", "RunHost._setup", "host._setup"),
    ("apps.rooms.host", "run_model", "setup.run_model"),
    ("apps.rooms.host", "run_settings", "setup.run_settings"),
    ("apps.rooms.host", "store_for", "setup.store_for"),
    ("apps.rooms.host", "wiki_prompt", "setup.wiki_prompt"),
    ("apps.rooms.host", "mcp_pool_servers", "setup.mcp_pool_servers"),
    ("apps.rooms.host", "history_of", "setup.history_of"),
    ("apps.rooms.host", "provider_settings", "setup.provider_settings"),
    ("apps.rooms.host", "RunHost._run", "host._run"),
    ("apps.rooms.host", "notes_release_before", "run.notes_release_before"),
    ("apps.rooms.host", "notes_release", "run.notes_release"),
    ("apps.rooms.host", "ensure_workspace", "setup.ensure_workspace"),
    ("apps.rooms.host", "default_tools", "run.default_tools"),
    ("apps.rooms.host", "AgentRunner.__init__", "run.AgentRunner()"),
    ("apps.engine.mcp.manager", "McpManager.__aenter__", "run.mcp_enter"),
    ("apps.engine.mcp.pool", "McpPool.acquire", "run.mcp_pool_acquire"),
    ("apps.rooms.host", "RunHost._warn_if_unconfined", "run.warn_if_unconfined"),
    ("apps.rooms.host", "RunHost._drive", "host._drive"),
    # the runner up to the request
    ("apps.engine.runtime.runner", "AgentRunner._inject", "runner._inject"),
    ("apps.rooms.ports", "PendingMessages.take", "inbox.take"),
    ("apps.rooms.ports", "PendingMessages._take", "inbox._take"),
    ("apps.engine.runtime.runner", "AgentRunner._request", "runner._request"),
    ("apps.engine.runtime.loop", "StepRun.stream", "step.stream"),
    ("apps.engine.providers.anthropic", "AnthropicProvider.build_call", "provider.build_call"),
    ("httpx2", "AsyncClient.send", "httpx.send"),
    ("uvicorn.protocols.http.h11_impl", "H11Protocol.data_received", "model.data_received"),
    ("apps.rooms.projector", "Projector.handle", "projector.handle"),
    ("apps.rooms.projector", "Projector._store", "projector._store"),
)


@dataclass
class Marks:
    """One run's marks (``perf_counter`` seconds): steps, hops, queries; ``t0`` is the send."""

    t0: float = 0.0
    steps: list[tuple[str, float, float]] = field(default_factory=list)
    hops: list[tuple[str, float]] = field(default_factory=list)
    queries: list[tuple[str, float]] = field(default_factory=list)


class Harness:
    """The installed wrappers and the runs measured so far."""

    def __init__(self) -> None:
        self.current = Marks()
        self.runs: list[tuple[Marks, float]] = []  # (marks, the model's request arrival)

    def start(self) -> None:
        """A new run begins now (the send)."""
        self.current = Marks(t0=time.perf_counter())

    def done(self, arrived: float) -> None:
        """The run's request reached the model at ``arrived`` (perf_counter)."""
        self.runs.append((self.current, arrived))

    def record(self, step: str, start: float, end: float) -> None:
        self.current.steps.append((step, start, end))

    def report(self) -> str:
        """Per step: how many calls a run makes before the request, the median start (ms after
        the send) and the median time spent in it; then hops and queries before the request."""
        starts: dict[str, list[float]] = defaultdict(list)
        spent: dict[str, list[float]] = defaultdict(list)
        counts: dict[str, list[int]] = defaultdict(list)
        hops, queries, requests = [], [], []
        for marks, arrived in self.runs:
            per: dict[str, int] = defaultdict(int)
            first: dict[str, float] = {}
            total: dict[str, float] = defaultdict(float)
            for step, start, end in marks.steps:
                if start > arrived:
                    continue  # after the request: not run start
                per[step] += 1
                first.setdefault(step, start)
                total[step] += min(end, arrived) - start
            for step in per:
                starts[step].append((first[step] - marks.t0) * 1000)
                spent[step].append(total[step] * 1000)
                counts[step].append(per[step])
            hops.append(sum(1 for _, t in marks.hops if t <= arrived))
            queries.append(sum(1 for _, t in marks.queries if t <= arrived))
            requests.append((arrived - marks.t0) * 1000)
        lines = [f"{'step (before the model request)':<34} {'calls':>5} {'start':>8} "
                 f"{'spent':>8}  (medians over {len(self.runs)} runs, ms after the send)"]
        order = sorted(starts, key=lambda s: statistics.median(starts[s]))
        for step in order:
            lines.append(f"{step:<34} {statistics.median(counts[step]):5.0f} "
                         f"{statistics.median(starts[step]):8.2f} "
                         f"{statistics.median(spent[step]):8.2f}")
        lines.append(f"{'model request arrives':<34} {'':5} {statistics.median(requests):8.2f}")
        lines.append(f"thread hops from the send to the request (the whole process): "
                     f"{statistics.median(hops):.0f}; SQL statements: "
                     f"{statistics.median(queries):.0f}")
        return "\n".join(lines)


def _wrap(harness: Harness, function: Any, step: str) -> Any:
    if inspect.iscoroutinefunction(function):
        @functools.wraps(function)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await function(*args, **kwargs)
            finally:
                harness.record(step, start, time.perf_counter())
        return timed_async

    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            harness.record(step, start, time.perf_counter())
    return timed


def install() -> Harness:
    """Wrap every step of :data:`STEPS` the code has (so the harness also times older
    commits), ``SyncToAsync.__call__`` and ``CursorWrapper._execute``; for the life of the
    process."""
    harness = Harness()
    for module_name, path, step in STEPS:
        owner: Any = importlib.import_module(module_name)
        *outer, name = path.split(".")
        for part in outer:
            owner = getattr(owner, part, None)
        found = (owner.__dict__.get(name) if isinstance(owner, type)
                 else getattr(owner, name, None))
        if found is not None:  # an older commit may not have the step: time the others
            setattr(owner, name, _wrap(harness, found, step))
    call, execute = SyncToAsync.__call__, CursorWrapper._execute

    async def hop(self: Any, *args: Any, **kwargs: Any) -> Any:
        harness.current.hops.append((getattr(self.func, "__qualname__", "?"),
                                     time.perf_counter()))
        return await call(self, *args, **kwargs)

    def query(self: Any, sql: str, *args: Any) -> Any:
        harness.current.queries.append((sql, time.perf_counter()))
        return execute(self, sql, *args)

    SyncToAsync.__call__ = hop  # type: ignore[method-assign]
    CursorWrapper._execute = query  # type: ignore[method-assign]
    return harness
