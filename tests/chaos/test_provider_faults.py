"""Provider faults from fakellm through the real stack (issue 26): two Daphne, a run worker,
Redis, PostgreSQL, fakellm (its scripted error steps, :mod:`apps.engine.providers.script`).

One run per fault, watched by two sockets on the two servers: 429 with ``Retry-After`` in
seconds and as an HTTP date, 529, 500, a connection reset and a truncated body (before any
output: retried, a ``retrying`` event shown, then the run completes with its text said once),
and an error event, a reset, a truncation and a silent stream mid-stream after text (not
retried, since a retry would say that text twice: the run fails with the text kept). Then
every socket is seq-exact with the store and the streamed text matches the stored text.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from tests.chaos.live import (
    Deployment,
    Socket,
    catch_up,
    count_sockets,
    deploy,
    export,
    script,
    store_seq,
    stored_text,
    streamed_text,
)
from tests.chaos.table import Row
from tests.e2e.harness import ProcessStack

pytestmark = pytest.mark.e2e

READ_TIMEOUT_S = 5.0
"""The providers' read timeout in the stack (``CONFAB_PROVIDER_READ_TIMEOUT_S``; 120 s by
default): the silent stream ends after it, well above the gaps of a stream at 200 tokens/s."""


def faults() -> list[tuple[str, dict[str, Any], str]]:
    """(name, the error step, the run's expected end)."""
    in_two_s = format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)
    return [
        ("429 Retry-After: 1", {"status": 429, "retry_after": 1}, "completed"),
        ("429 Retry-After: <HTTP date>", {"status": 429, "retry_after": in_two_s}, "completed"),
        ("529", {"status": 529}, "completed"),
        ("500", {"status": 500}, "completed"),
        ("error event mid-stream", {"status": 500, "in_stream": True}, "failed"),
        # fakellm's transport faults (apps.engine.fakellm.faults): stream_interrupted, retried
        # before any text, not after it.
        ("connection reset", {"fault": "reset"}, "completed"),
        ("truncated body", {"fault": "truncate"}, "completed"),
        ("connection reset mid-stream", {"fault": "reset", "in_stream": True}, "failed"),
        ("truncated body mid-stream", {"fault": "truncate", "in_stream": True}, "failed"),
        # ends at the provider's read timeout (READ_TIMEOUT_S here)
        ("silent stream mid-stream", {"fault": "silent", "in_stream": True}, "failed"),
    ]


def run_timeout_s(error: dict[str, Any]) -> float:
    """How long a run with ``error`` may take: a silent stream lasts the read timeout."""
    return READ_TIMEOUT_S + 60 if error.get("fault") == "silent" else 90


def test_provider_faults_end_right_and_say_nothing_twice(e2e_stack: ProcessStack,
                                                         chaos_row: Callable[..., Row]) -> None:
    e2e_stack.env["CONFAB_PROVIDER_READ_TIMEOUT_S"] = str(READ_TIMEOUT_S)
    app = deploy(e2e_stack, servers=2, workers=1, rate=200)
    cases = faults()
    row = chaos_row("provider faults (fakellm)", ", ".join(name for name, _, _ in cases))
    asyncio.run(_scenario(app, cases, row))


async def _scenario(app: Deployment, cases: list[tuple[str, dict[str, Any], str]],
                    row: Row) -> None:
    sockets = [Socket(server, app.conversation, app.token()) for server in app.servers]
    for socket in sockets:
        await socket.open()
    watcher, other = sockets
    wrong: list[str] = []
    for n, (name, error, expected) in enumerate(cases):
        before = f"before {name} ({n})"
        after = f"after {name}"
        steps = [{"text": before}, {"error": error}, {"text": after}] if error.get(
            "in_stream") else [{"error": error}, {"text": f"{before} {after}"}]
        await watcher.send({"type": "send", "client_id": f"fault{n}",
                            "text": script(*steps)})
        began = len(watcher.events)
        # Both read at once: a socket left unread for a long silent stream (120 s by default)
        # fills its client's queue, stops reading and misses the keepalive pong (1011).
        ended, _ = await asyncio.gather(
            watcher.until("run_ended", timeout=run_timeout_s(error)),
            other.until("run_ended", timeout=run_timeout_s(error) + 30))
        run_events = [f["event"] for f in watcher.events[began:]]
        retries = [e for e in run_events if e["kind"] == "retrying"]
        ok = ended["status"] == expected and (bool(retries) == (expected == "completed"))
        if not ok:
            wrong.append(f"{name}: {ended['status']} ({ended.get('error_kind')}), "
                         f"{len(retries)} retrying events")
        elif expected == "completed":
            row.completed += 1
        else:
            row.failed += 1  # failed, as expected
    began = time.monotonic()
    last = await store_seq(app.servers[0], app.conversation, app.token())
    await catch_up(sockets, last)
    row.recover_s = time.monotonic() - began
    count_sockets(row, sockets, last)
    exported = await export(app.servers[1], app.conversation, app.token())
    streamed, stored = streamed_text(watcher.events), stored_text(exported)
    said_twice = [text for text in streamed.values() if _repeats(text)]
    row.messages_lost = sum(1 for n in range(len(cases)) if not any(
        m.get("client_id") == f"fault{n}" for m in exported["messages"]))
    row.notes.append("runs column: completed after retries / - / failed as expected (the "
                     "mid-stream faults)" + (f"; ended wrong: {wrong}" if wrong else ""))
    for socket in sockets:
        await socket.close()
    assert not wrong
    assert row.sockets_repaired == len(sockets) and row.deltas_duplicated == 0
    assert row.deltas_missing == 0 and row.messages_lost == 0
    assert not said_twice, said_twice
    assert all(stored.get(mid, "").startswith(text) or text.startswith(stored.get(mid, ""))
               for mid, text in streamed.items()), (streamed, stored)


def _repeats(text: str) -> bool:
    """A scripted piece ("before ..."/"after ...") said twice in one message."""
    return any(text.count(piece) > 1 for piece in ("before ", "after "))
