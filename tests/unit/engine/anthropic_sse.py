"""Builders for Anthropic Messages SSE bytes, shared by the Anthropic adapter tests."""

from __future__ import annotations

import json
from typing import Any


def frame(kind: str, payload: dict[str, Any] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"event: {kind}\ndata: {data}\n\n".encode()


def start(usage: dict[str, Any] | None = None) -> bytes:
    return frame("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [],
        "model": "claude-sonnet-5", "stop_reason": None, "stop_sequence": None,
        "usage": usage or {"input_tokens": 10, "output_tokens": 1}}})


def block_start(index: int, block: dict[str, Any]) -> bytes:
    return frame("content_block_start",
                 {"type": "content_block_start", "index": index, "content_block": block})


def delta(index: int, payload: dict[str, Any]) -> bytes:
    return frame("content_block_delta",
                 {"type": "content_block_delta", "index": index, "delta": payload})


def block_stop(index: int) -> bytes:
    return frame("content_block_stop", {"type": "content_block_stop", "index": index})


def end(stop_reason: str = "end_turn", usage: dict[str, Any] | None = None) -> bytes:
    return frame("message_delta", {
        "type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": usage or {"output_tokens": 5}}) + stop()


def stop() -> bytes:
    return frame("message_stop", {"type": "message_stop"})


def text_block(index: int, *pieces: str) -> bytes:
    body = block_start(index, {"type": "text", "text": ""})
    body += b"".join(delta(index, {"type": "text_delta", "text": p}) for p in pieces)
    return body + block_stop(index)


def tool_block(index: int, call_id: str, name: str, *pieces: str) -> bytes:
    body = block_start(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}})
    body += b"".join(delta(index, {"type": "input_json_delta", "partial_json": p})
                     for p in pieces)
    return body + block_stop(index)



def error_body(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message},
                       "request_id": "req_1"}).encode()
