"""Inputs of shared/cases/provider, read from the case files, and Anthropic stream builders
shared by the Anthropic case tests."""

from __future__ import annotations

import json
import re
from typing import Any

from apps.engine.errors import ProviderError
from apps.engine.events import ChatStreamEvent
from apps.engine.messages import ChatRequest, Message
from apps.engine.providers.anthropic import build_body
from apps.engine.providers.assembler import MessageAssembler
from apps.engine.replay import chunked, replay_events
from tests.conftest import CASES


def case_text(number: str, which: int = 0) -> str:
    """The ``which``-th fenced ``text`` block of case ``number``."""
    path = next(CASES.glob(f"{number}-*.md"))
    return re.findall(r"```text\n(.*?)```", path.read_text(), re.S)[which]


def case_json(number: str, which: int = 0) -> Any:
    path = next(CASES.glob(f"{number}-*.md"))
    return json.loads(re.findall(r"```json\n(.*?)```", path.read_text(), re.S)[which])


def translate(body: str | bytes, chunk_size: int | None = None
              ) -> tuple[list[ChatStreamEvent], ProviderError | None]:
    raw = body.encode() if isinstance(body, str) else body
    return replay_events("anthropic", chunked(raw, chunk_size))


def assemble(events: list[ChatStreamEvent]) -> Message:
    assembler = MessageAssembler("anthropic")
    for event in events:
        assembler.feed(event)
    return assembler.message()


def frame(kind: str, payload: dict[str, Any]) -> str:
    return f"event: {kind}\ndata: {json.dumps(payload)}\n\n"


START = frame("message_start", {"type": "message_start", "message": {
    "id": "msg_01XXXX", "type": "message", "role": "assistant", "content": [],
    "model": "claude-sonnet-4-5", "stop_reason": None, "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 1}}})
TEXT_0 = (frame("content_block_start", {"type": "content_block_start", "index": 0,
                                        "content_block": {"type": "text", "text": ""}})
          + frame("content_block_delta", {"type": "content_block_delta", "index": 0,
                                          "delta": {"type": "text_delta", "text": "Hi."}})
          + frame("content_block_stop", {"type": "content_block_stop", "index": 0}))


def finish(stop_reason: str = "end_turn") -> str:
    return (frame("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": stop_reason, "stop_sequence": None}, "usage": {"output_tokens": 9}})
            + frame("message_stop", {"type": "message_stop"}))


def request(history: list[Message]) -> dict[str, Any]:
    return build_body(ChatRequest(model="claude-sonnet-5", messages=history))
