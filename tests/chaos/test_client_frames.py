"""10,000 generated client frames over one real socket (issue 26): every bad one gets an
``error`` frame, the socket stays open, nothing is stored from it.

Daphne against PostgreSQL and Redis (no run worker: no frame here may start a run). Hypothesis
generates frames that are bad by construction (docs/protocol.md, Client frames): bytes and text
that are not JSON, JSON that is not an object, unknown types, each known type with one field
broken (missing, extra, wrong type, blank, too long, outside its pattern or enum), text with a
NUL or a lone surrogate, and well-formed ``decide``/``answer`` frames naming a call or a question
that does not exist. Each frame is answered before the next is sent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.sync.client import connect

from tests.chaos.live import deploy, export
from tests.chaos.table import Row
from tests.e2e.harness import ProcessStack

pytestmark = pytest.mark.e2e

FRAMES = 10_000
REPLY_S = 10.0

VALID: dict[str, dict[str, Any]] = {
    "send": {"type": "send", "client_id": "c1", "text": "hello"},
    "decide": {"type": "decide", "tool_call_id": "toolu_1", "decision": "approve"},
    "answer": {"type": "answer", "question_id": "q1", "text": "yes"},
    "set_agent_mode": {"type": "set_agent_mode", "agent_mode": "mention"},
    "history": {"type": "history", "before": "p1.1"},
    "stop": {"type": "stop"}, "compact": {"type": "compact"}, "ask_agent": {"type": "ask_agent"},
    "typing": {"type": "typing"},
}
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=10),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=5)
NOT_STRINGS = JSON.filter(lambda v: not isinstance(v, str))
BAD_TEXT = st.sampled_from(["", "   ", "\n\t", "a\x00b", "\x00", "x\ud800y", "\udfff"])


def _broken(draw: st.DrawFn) -> dict[str, Any]:
    """A known frame with one field broken."""
    frame = dict(VALID[draw(st.sampled_from(sorted(VALID)))])
    fields = sorted(k for k in frame if k != "type")
    how = draw(st.sampled_from(["extra", "type"] + (["drop", "retype", "value"] if fields
                                                     else [])))
    if how == "extra":
        frame[draw(st.text(min_size=1, max_size=8).filter(lambda k: k not in frame))] = \
            draw(JSON)
    elif how == "type":
        frame["type"] = draw(NOT_STRINGS | st.text(max_size=12).filter(
            lambda t: t not in VALID))
    else:
        field = draw(st.sampled_from(fields))
        if how == "drop":
            del frame[field]
        elif how == "retype":
            frame[field] = draw(NOT_STRINGS)
        else:
            frame[field] = draw(_bad_value(field))
    return frame


def _bad_value(field: str) -> st.SearchStrategy[str]:
    return {
        "client_id": st.sampled_from(["", "x" * 101, "a b", "é", "a/b", "<x>"]),
        "text": BAD_TEXT,
        "decision": st.text(max_size=10).filter(lambda d: d not in ("approve", "deny")),
        "agent_mode": st.text(max_size=10).filter(lambda m: m not in ("always", "mention")),
        "before": st.sampled_from(["", "x" * 41]) | st.text(min_size=1, max_size=40),
        "tool_call_id": st.sampled_from(["", "t" * 101]) | st.text(min_size=1, max_size=100),
        "question_id": st.sampled_from(["", "q" * 101]) | st.text(min_size=1, max_size=100),
    }[field]


@st.composite
def bad_frames(draw: st.DrawFn) -> str | bytes:
    """One frame no server may act on (see the module docstring)."""
    match draw(st.sampled_from(["bytes", "text", "json", "broken", "broken", "broken",
                                "unknown-id"])):
        case "bytes":
            return draw(st.binary(max_size=200))
        case "text":
            return draw(st.text(max_size=200).filter(_not_an_object))
        case "json":
            return json.dumps(draw(JSON.filter(lambda v: not isinstance(v, dict))))
        case "broken":
            return json.dumps(_broken(draw))
        case _:  # well-formed, but naming a call, a question or a page that does not exist
            kind = draw(st.sampled_from(["decide", "answer"]))
            return json.dumps(VALID[kind])


def _not_an_object(text: str) -> bool:
    try:
        return not isinstance(json.loads(text), dict)
    except ValueError:
        return True


def test_every_bad_frame_is_refused_and_stores_nothing(e2e_stack: ProcessStack,
                                                       chaos_row: Callable[..., Row]) -> None:
    app = deploy(e2e_stack, servers=1, workers=0)
    server = app.servers[0]
    row = chaos_row("10,000 generated client frames", f"{FRAMES} bad frames on 1 socket")
    row.sockets = 1
    before = _stored(app)
    url = server.ws_url(f"/ws/conversations/{app.conversation}/")
    refused: list[str] = []
    with connect(url, additional_headers={"Authorization": f"Bearer {app.token()}"},
                 max_size=None) as ws:
        assert json.loads(ws.recv(REPLY_S))["type"] == "state"

        @settings(max_examples=FRAMES, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(frame=bad_frames())
        def refused_in_turn(frame: str | bytes) -> None:
            ws.send(frame)
            reply = _reply(ws)
            if reply.get("type") != "error":
                row.failed += 1
            assert reply.get("type") == "error", (frame, reply)
            refused.append(reply["code"])

        try:
            refused_in_turn()
        finally:
            row.completed = len(refused)
            after = _stored(app)
            row.messages_lost = max(0, len(after) - len(before))  # here: stored from a bad frame
            # the socket still answers a good frame (a page before a cursor of the right form)
            ws.send(json.dumps({"type": "history", "before": "p1.1"}))
            alive = _reply(ws).get("type") == "history"
            row.sockets_repaired = int(alive)
    row.notes.append("runs column: frames refused with an error frame / - / frames not refused; "
                     "msgs lost: messages stored from bad frames; codes: "
                     + ", ".join(f"{c} {refused.count(c)}" for c in sorted(set(refused))))
    assert len(refused) >= FRAMES
    assert after == before, "a bad frame stored something"
    assert alive, "the socket did not answer a good frame after the flood"


def _reply(ws: Any) -> dict[str, Any]:
    """The next frame that answers a frame: not presence (people coming and going) nor
    ``hwm`` (the tail check's high-water mark, sent on its own schedule)."""
    while True:
        frame = json.loads(ws.recv(REPLY_S))
        if frame.get("type") not in ("presence", "hwm") or "typing" in frame:
            return frame


def _stored(app: Any) -> list[Any]:
    exported = asyncio.run(export(app.servers[0], app.conversation, app.token()))
    return [(m["id"], m["role"], m["status"]) for m in exported["messages"]]
