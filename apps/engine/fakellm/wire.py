"""The three wire formats fakellm speaks: a script segment becomes SSE frames or an error body.

Each encoder turns steps into :class:`Frame` s; ``token`` frames are the ones the server paces.

With ``stamp=True`` (``--stamp``) every streamed text and thinking piece starts with a
placeholder marker that :func:`stamp_frame` turns into the wall-clock time the frame is sent,
``⟦1732950000.123456⟧`` (seconds since the epoch, ``time.time()``), so a client on the same
machine can measure how long a token took from the provider's byte to its screen;
:func:`stamps` reads them back.

The shapes follow the providers' streaming references:

- Anthropic: https://docs.anthropic.com/en/docs/build-with-claude/streaming
- OpenAI: https://platform.openai.com/docs/api-reference/chat-streaming
- Gemini: https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from apps.engine.providers.script import Step, pieces

__all__ = ["ENCODERS", "STAMP_RE", "Frame", "error_body", "stamp_frame", "stamps"]

# --stamp: a text piece "word" is streamed as "⟦<send time>⟧word". The encoders write a
# placeholder (plain ASCII, so it survives JSON escaping unchanged) that the pacer replaces
# with the time at which the frame is actually sent.
_STAMP_PLACEHOLDER = "@fakellm-stamp@"
STAMP_RE = re.compile(r"⟦(\d+\.\d+)⟧")
"""A stamp in streamed text; group 1 is the send time in seconds since the epoch."""


def _pieces(text: str, stamp: bool) -> list[str]:
    return [f"⟦{_STAMP_PLACEHOLDER}⟧{p}" for p in pieces(text)] if stamp else pieces(text)


def stamp_frame(data: bytes, now: float | None = None) -> bytes:
    """``data`` with its stamp placeholders set to ``now`` (default: ``time.time()``)."""
    if _STAMP_PLACEHOLDER.encode() not in data:
        return data
    when = time.time() if now is None else now
    return data.replace(_STAMP_PLACEHOLDER.encode(), f"{when:.6f}".encode())


def stamps(text: str) -> list[float]:
    """The send times stamped in ``text`` (a streamed piece, or several joined)."""
    return [float(m) for m in STAMP_RE.findall(text)]

# status -> (Anthropic error.type, OpenAI code, Gemini status)
_ERRORS: dict[int, tuple[str, str, str]] = {
    400: ("invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"),
    401: ("authentication_error", "invalid_api_key", "UNAUTHENTICATED"),
    403: ("permission_error", "permission_denied", "PERMISSION_DENIED"),
    404: ("not_found_error", "model_not_found", "NOT_FOUND"),
    429: ("rate_limit_error", "rate_limit_exceeded", "RESOURCE_EXHAUSTED"),
    500: ("api_error", "server_error", "INTERNAL"),
    503: ("overloaded_error", "service_unavailable", "UNAVAILABLE"),
    529: ("overloaded_error", "overloaded", "UNAVAILABLE"),
}


@dataclass(frozen=True, slots=True)
class Frame:
    data: bytes
    token: bool = False


def _sse(payload: dict[str, Any], event: str | None = None, token: bool = False) -> Frame:
    head = f"event: {event}\n" if event else ""
    return Frame(f"{head}data: {json.dumps(payload)}\n\n".encode(), token)


def _codes(status: int) -> tuple[str, str, str]:
    return _ERRORS.get(status, _ERRORS[500] if status >= 500 else _ERRORS[400])


def error_body(protocol: str, status: int, message: str) -> dict[str, Any]:
    """The JSON error body each provider sends with HTTP ``status``."""
    anthropic, openai, gemini = _codes(status)
    if protocol == "anthropic":
        return {"type": "error", "error": {"type": anthropic, "message": message}}
    if protocol == "openai":
        return {"error": {"message": message, "type": openai, "code": openai}}
    return {"error": {"code": status, "message": message, "status": gemini}}


def _message(step: Step) -> str:
    error = step["error"]
    return str(error.get("message") or f"fakellm scripted error {error.get('status', 500)}")


def anthropic_frames(steps: list[Step], error: Step | None, model: str, usage_in: int,
                     *, stamp: bool = False) -> Iterator[Frame]:
    """Anthropic Messages stream events for ``steps``."""
    yield _sse({"type": "message_start", "message": {
        "id": f"msg_fake_{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant",
        "model": model, "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": usage_in, "output_tokens": 1}}}, "message_start")
    out, calls = 0, 0
    for index, step in enumerate(steps):
        kind, value = next(iter(step.items()))
        if kind == "tool_call":
            calls += 1
            start = {"type": "tool_use", "id": f"toolu_fake_{uuid.uuid4().hex[:16]}",
                     "name": value["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p}
                      for p in _split(json.dumps(value.get("arguments", {})))]
        elif kind == "sources":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "citations_delta", "citation": _web_result(s)} for s in value]
        elif kind == "thinking":
            start = {"type": "thinking", "thinking": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(value, stamp)]
            deltas.append({"type": "signature_delta", "signature": f"fake-sig-{index}"})
        else:
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(value, stamp)]
        yield _sse({"type": "content_block_start", "index": index, "content_block": start},
                   "content_block_start")
        for delta in deltas:
            out += 1
            yield _sse({"type": "content_block_delta", "index": index, "delta": delta},
                       "content_block_delta", token=True)
        yield _sse({"type": "content_block_stop", "index": index}, "content_block_stop")
    if error is not None:
        anthropic, _, _ = _codes(int(error["error"].get("status", 500)))
        yield _sse({"type": "error", "error": {"type": anthropic, "message": _message(error)}},
                   "error")
        return
    yield _sse({"type": "message_delta", "delta": {
        "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": out}}, "message_delta")
    yield _sse({"type": "message_stop"}, "message_stop")


def openai_frames(steps: list[Step], error: Step | None, model: str, usage_in: int,
                  *, stamp: bool = False) -> Iterator[Frame]:
    """OpenAI Chat Completions chunks for ``steps``, usage chunk and ``[DONE]``."""
    base = {"id": f"chatcmpl-fake{uuid.uuid4().hex[:20]}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None, token: bool = False) -> Frame:
        return _sse({**base, "choices": [{"index": 0, "delta": delta,
                                          "finish_reason": finish}]}, token=token)

    yield chunk({"role": "assistant", "content": ""})
    out, calls = 0, 0
    for step in steps:
        kind, value = next(iter(step.items()))
        if kind == "tool_call":
            call = {"index": calls, "id": f"call_fake{uuid.uuid4().hex[:16]}",
                    "type": "function", "function": {"name": value["name"], "arguments": ""}}
            yield chunk({"tool_calls": [call]})
            for part in _split(json.dumps(value.get("arguments", {}))):
                out += 1
                yield chunk({"tool_calls": [{"index": calls, "function": {"arguments": part}}]},
                            token=True)
            calls += 1
            continue
        if kind == "sources":  # OpenRouter / OpenAI web search annotations
            yield chunk({"annotations": [{"type": "url_citation", "url_citation": {
                "url": s["url"], "title": s.get("title", "")}} for s in value]})
            continue
        field = "reasoning_content" if kind == "thinking" else "content"
        for piece in _pieces(value, stamp):
            out += 1
            yield chunk({field: piece}, token=True)
    if error is not None:
        _, openai, _ = _codes(int(error["error"].get("status", 500)))
        yield _sse({"error": {"message": _message(error), "type": openai, "code": openai}})
        return
    yield chunk({}, "tool_calls" if calls else "stop")
    yield _sse({**base, "choices": [], "usage": {
        "prompt_tokens": usage_in, "completion_tokens": out, "total_tokens": usage_in + out}})
    yield Frame(b"data: [DONE]\n\n")


def gemini_frames(steps: list[Step], error: Step | None, model: str, usage_in: int,
                  *, stamp: bool = False) -> Iterator[Frame]:
    """Gemini streamGenerateContent (alt=sse) chunks for ``steps``."""
    response_id = uuid.uuid4().hex[:16]
    out, calls = 0, 0

    grounding: list[dict[str, Any]] = []

    def chunk(parts: list[dict[str, Any]], finish: str | None = None, token: bool = False
              ) -> Frame:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
            if grounding:  # Gemini sends the response's grounding with its last chunk
                candidate["groundingMetadata"] = {"groundingChunks": grounding}
        return _sse({"candidates": [candidate], "usageMetadata": {
            "promptTokenCount": usage_in, "candidatesTokenCount": out,
            "totalTokenCount": usage_in + out}, "modelVersion": model,
            "responseId": response_id}, token=token)

    for step in steps:
        kind, value = next(iter(step.items()))
        if kind == "sources":
            grounding += [{"web": {"uri": s["url"], "title": s.get("title", "")}} for s in value]
            continue
        if kind == "tool_call":
            part: dict[str, Any] = {"functionCall": {
                "name": value["name"], "args": value.get("arguments", {}),
                "id": f"fc_{uuid.uuid4().hex[:12]}"}}
            if calls == 0:  # Gemini 3 signs the first call of a response
                part["thoughtSignature"] = f"fake-thought-signature-{uuid.uuid4().hex[:8]}"
            calls += 1
            out += 1
            yield chunk([part], token=True)
            continue
        for piece in _pieces(value, stamp):
            out += 1
            yield chunk([{"text": piece, **({"thought": True} if kind == "thinking" else {})}],
                        token=True)
    if error is not None:
        _, _, gemini = _codes(status := int(error["error"].get("status", 500)))
        yield _sse({"error": {"code": status, "message": _message(error), "status": gemini}})
        return
    yield chunk([{"text": ""}], "STOP")


def _web_result(source: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic web search citation of ``source`` (``{"url", "title"}``)."""
    return {"type": "web_search_result_location", "url": source["url"],
            "title": source.get("title", ""), "cited_text": "", "encrypted_index": "fake"}


def _split(text: str, size: int = 12) -> list[str]:
    """JSON arguments in small pieces, as providers stream them."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


ENCODERS = {"anthropic": anthropic_frames, "openai": openai_frames, "gemini": gemini_frames}
