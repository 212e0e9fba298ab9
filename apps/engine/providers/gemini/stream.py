"""Gemini ``streamGenerateContent?alt=sse`` chunks -> ChatStreamEvents (DESIGN 2.3).

Each SSE event carries one ``GenerateContentResponse``
(https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse). Every chunk is read
field by field, never gated on ``content`` (shared/cases/provider README, CHUNK-SHAPE):

1. ``error`` (an error object inside the 200 stream) -> classified ProviderError, raised.
2. ``promptFeedback.blockReason`` (the prompt was refused: 200, no candidates) ->
   ``content_blocked``, raised (case 046).
3. ``usageMetadata``: cumulative, the last one wins; absent counters are 0 (case 045).
4. ``candidates[0]``: ``content.parts`` in order, then ``groundingMetadata`` (every non-empty one
   is emitted; the last wins), then ``finishReason``.

Parts (https://ai.google.dev/api/caching#Part):

- ``text``: ``thought: true`` is reasoning, anything else is answer text; only the flag decides
  (case 037). A ``thoughtSignature`` on the part follows its delta as ThoughtSignature, also for
  an empty text (https://ai.google.dev/gemini-api/docs/thought-signatures).
- ``functionCall``: ``args`` is a complete object and every *named* part is a new call, even
  with the name of the previous one (case 043). A call with arguments is ready at once; a call
  with empty arguments stays open until the next part that is not a nameless ``functionCall``,
  because Gemini may send the arguments in a nameless part after it (case 044). Vertex AI's
  streamed arguments (a named part with ``willContinue``, ``partialArgs`` parts, an empty
  ``functionCall`` terminator) are assembled into one call. The part's signature goes on the
  ToolCall; a call Gemini sent without ``id`` gets a minted one (``provider_id`` None).
- ``executableCode``/``codeExecutionResult``/``toolCall``/``toolResponse`` (run by Google) ->
  ServerToolBlockEvent with the whole part, signature included, to be sent back verbatim.

Finish reasons (https://ai.google.dev/api/generate-content#FinishReason): ``SAFETY``,
``RECITATION``, ``BLOCKLIST``, ``PROHIBITED_CONTENT``, ``SPII`` and the image variants raise
``content_blocked``. ``MALFORMED_FUNCTION_CALL`` (and ``UNEXPECTED_TOOL_CALL``,
``TOO_MANY_TOOL_CALLS``, ``MALFORMED_RESPONSE``) raise ``server``: the model failed to produce a
usable call, which a fresh attempt usually fixes, and ending "successfully" with no call would
read as an empty answer. Other reasons (STOP, MAX_TOKENS, OTHER, ...) end normally with the raw
value as ``stop_reason``. At end of stream: ToolCallsRequested (once, if there were calls), then
MessageEnd; no ``finishReason`` at all means the stream was cut: ``stream_interrupted``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import (
    ChatStreamEvent,
    ContentDelta,
    GroundingMetadata,
    MessageEnd,
    MessageStart,
    ReasoningDelta,
    ServerToolBlockEvent,
    ThoughtSignature,
    ToolCallReady,
    ToolCallsRequested,
    ToolCallStart,
)
from apps.engine.messages import ToolCall, Usage
from apps.engine.providers.base import new_tool_call_id
from apps.engine.providers.classify import classify_error
from apps.engine.providers.sse import SSEEvent

__all__ = ["BLOCKED_FINISH_REASONS", "FAILED_CALL_FINISH_REASONS", "GeminiTranslator"]

PROVIDER = "gemini"
BLOCKED_FINISH_REASONS = frozenset({
    "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
    "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION",
})
FAILED_CALL_FINISH_REASONS = frozenset({
    "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS", "MALFORMED_RESPONSE",
})
SERVER_PART_KEYS = ("executableCode", "codeExecutionResult", "toolCall", "toolResponse")
_USAGE_FIELDS = {
    "input_tokens": "promptTokenCount",
    "output_tokens": "candidatesTokenCount",
    "reasoning_tokens": "thoughtsTokenCount",
    "cached_input_tokens": "cachedContentTokenCount",
    "tool_use_prompt_tokens": "toolUsePromptTokenCount",
    "total_tokens": "totalTokenCount",
}


@dataclass
class _OpenCall:
    """A call whose arguments may still arrive: ``streamed`` (Vertex partialArgs, closed by its
    terminator) or split (named with empty args, closed by the next structural part)."""

    index: int
    name: str
    id: str | None
    args: dict[str, Any]
    signature: str | None
    streamed: bool
    continuing: set[str] = field(default_factory=set)  # partialArgs paths still being appended


class GeminiTranslator:
    """A pure translator for one response: ``feed(SSEEvent)`` returns the events it completes,
    ``finish()`` ends the response. Raises ProviderError (never yields one)."""

    def __init__(self) -> None:
        self._started = False
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self._calls: list[ToolCall] = []
        self._open: _OpenCall | None = None
        self._call_count = 0
        self._finished = False

    @property
    def done(self) -> bool:
        """A finishReason was seen: Gemini's only end marker, after which nothing follows by
        protocol, so the HTTP layer may stop reading (STREAM-TERMINATION)."""
        return self._finish_reason is not None

    def feed(self, event: SSEEvent) -> list[ChatStreamEvent]:
        """Translate one SSE event (one response chunk; a JSON array of chunks is accepted).
        A ProviderError raised after a finishReason carries it as ``stop_reason``."""
        try:
            payload = _decode(event)
            out: list[ChatStreamEvent] = []
            for chunk in payload if isinstance(payload, list) else [payload]:
                if chunk is not None:
                    self._chunk(chunk, out)
            return out
        except ProviderError as error:
            error.stop_reason = error.stop_reason or self._finish_reason
            raise

    def finish(self) -> list[ChatStreamEvent]:
        """End of stream: ToolCallsRequested (if calls) and MessageEnd, or raise
        ``stream_interrupted`` when no finishReason ever came."""
        if self._finished:
            return []
        if self._finish_reason is None:
            raise ProviderError(ErrorKind.STREAM_INTERRUPTED,
                                "gemini: the stream ended before a finishReason",
                                provider=PROVIDER, in_stream=True)
        self._finished = True
        out: list[ChatStreamEvent] = []
        self._close_open(out)
        if self._calls:
            out.append(ToolCallsRequested(list(self._calls)))
        out.append(MessageEnd(usage=self._usage or Usage(), stop_reason=self._finish_reason))
        return out

    # -- one chunk -------------------------------------------------------------------------
    def _chunk(self, chunk: Any, out: list[ChatStreamEvent]) -> None:
        if not isinstance(chunk, dict):
            message = f"gemini: unexpected stream payload {chunk!r}"[:300]
            raise ProviderError(ErrorKind.SERVER, message, provider=PROVIDER, raw=chunk,
                                in_stream=True)
        if chunk.get("error") is not None:
            raise classify_error(chunk, provider=PROVIDER, in_stream=True)
        _check_prompt_feedback(chunk.get("promptFeedback"))
        if not self._started:
            self._started = True
            out.append(MessageStart(id=chunk.get("responseId"), model=chunk.get("modelVersion")))
        if isinstance(chunk.get("usageMetadata"), dict):
            self._usage = _usage(chunk["usageMetadata"])
        candidates = chunk.get("candidates")
        if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
            self._candidate(candidates[0], out)  # confab never asks for more than one

    def _candidate(self, candidate: dict[str, Any], out: list[ChatStreamEvent]) -> None:
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict):
                self._part(part, out)
        grounding = candidate.get("groundingMetadata")
        if isinstance(grounding, dict) and grounding:
            out.append(GroundingMetadata(grounding))
        if isinstance(reason := candidate.get("finishReason"), str) and reason:
            self._finish(reason, candidate, out)

    def _finish(self, reason: str, candidate: dict[str, Any], out: list[ChatStreamEvent]) -> None:
        self._finish_reason = reason
        if reason in BLOCKED_FINISH_REASONS:
            self._open = None  # a partial call of a blocked answer is never dispatched
            raise ProviderError(ErrorKind.CONTENT_BLOCKED, _finish_message(reason, candidate),
                                provider=PROVIDER, raw=candidate, in_stream=True)
        if reason in FAILED_CALL_FINISH_REASONS:
            self._open = None
            raise ProviderError(ErrorKind.SERVER, _finish_message(reason, candidate),
                                provider=PROVIDER, raw=candidate, in_stream=True)
        # a streamed call whose terminator never came was cut off (MAX_TOKENS): not dispatched
        if self._open is not None and self._open.streamed and reason != "STOP":
            self._open = None
        self._close_open(out)

    # -- parts -----------------------------------------------------------------------------
    def _part(self, part: dict[str, Any], out: list[ChatStreamEvent]) -> None:
        if "functionCall" in part:
            self._function_call(part, out)
            return
        self._close_open(out)  # any other part ends a call that was waiting for arguments
        if any(key in part for key in SERVER_PART_KEYS):
            out.append(ServerToolBlockEvent(dict(part)))
        elif "text" in part or "thought" in part or set(part) == {"thoughtSignature"}:
            self._text(part, out)
        # other parts (inlineData, fileData, ...) carry nothing confab streams

    @staticmethod
    def _text(part: dict[str, Any], out: list[ChatStreamEvent]) -> None:
        text = part.get("text") if isinstance(part.get("text"), str) else ""
        signature = part.get("thoughtSignature")
        if text or signature:
            # the empty delta of a signed empty part keeps the part's kind (thought or text)
            out.append(ReasoningDelta(text) if part.get("thought") is True else ContentDelta(text))
        if isinstance(signature, str) and signature:
            out.append(ThoughtSignature(signature))

    def _function_call(self, part: dict[str, Any], out: list[ChatStreamEvent]) -> None:
        call = part["functionCall"] if isinstance(part["functionCall"], dict) else {}
        signature = part.get("thoughtSignature") or None
        if isinstance(call.get("name"), str) and call["name"]:
            self._start_call(call, signature, out)
        else:
            self._continue_call(call, signature, out)

    def _start_call(self, call: dict[str, Any], signature: str | None,
                    out: list[ChatStreamEvent]) -> None:
        self._close_open(out)
        args = call.get("args")
        provider_id = call.get("id") if isinstance(call.get("id"), str) and call["id"] else None
        pending = _OpenCall(index=self._call_count, name=call["name"], id=provider_id,
                            args=dict(args) if isinstance(args, dict) else {},
                            signature=signature, streamed=call.get("willContinue") is True)
        self._call_count += 1
        _apply_partial_args(pending, call.get("partialArgs"))
        out.append(ToolCallStart(pending.index, provider_id, pending.name))
        if pending.streamed or not pending.args:
            self._open = pending
        else:
            self._ready(pending, out)

    def _continue_call(self, call: dict[str, Any], signature: str | None,
                       out: list[ChatStreamEvent]) -> None:
        """A nameless functionCall: arguments (or the terminator) of the open call. With no
        open call there is nothing it could belong to, and it is never a call of its own."""
        pending = self._open
        if pending is None:
            return
        pending.signature = pending.signature or signature
        if isinstance(call.get("args"), dict):
            pending.args.update(call["args"])
        _apply_partial_args(pending, call.get("partialArgs"))
        if pending.streamed and call.get("willContinue") is not True:
            self._close_open(out)

    def _close_open(self, out: list[ChatStreamEvent]) -> None:
        if self._open is not None:
            pending, self._open = self._open, None
            self._ready(pending, out)

    def _ready(self, pending: _OpenCall, out: list[ChatStreamEvent]) -> None:
        call = ToolCall(id=pending.id or new_tool_call_id(), name=pending.name,
                        arguments=pending.args, provider_id=pending.id,
                        thought_signature=pending.signature, index=pending.index)
        self._calls.append(call)
        out.append(ToolCallReady(call))


# -- helpers ---------------------------------------------------------------------------------
def _decode(event: SSEEvent) -> Any:
    """The event's JSON payload; None for a keep-alive (empty data). Non-JSON data is an error:
    a truncated object means the stream was cut, anything else is not Gemini's format."""
    data = event.data.strip()
    if not data or data == "[DONE]":
        return None
    try:
        payload = json.loads(data)
    except ValueError:
        cut = data.startswith(("{", "["))
        raise ProviderError(
            ErrorKind.STREAM_INTERRUPTED if cut else ErrorKind.SERVER,
            f"gemini: {'incomplete' if cut else 'non-JSON'} stream payload: {data[:200]}",
            provider=PROVIDER, raw=data, in_stream=True) from None
    if event.event == "error":
        raise classify_error(payload, provider=PROVIDER, in_stream=True)
    return payload


def _check_prompt_feedback(feedback: Any) -> None:
    """Raise ``content_blocked`` when Gemini refused the prompt itself (case 046)."""
    if isinstance(feedback, dict) and feedback.get("blockReason"):
        reason = feedback["blockReason"]
        detail = feedback.get("blockReasonMessage")
        message = f"gemini: the prompt was blocked ({reason})" + (f": {detail}" if detail else "")
        raise ProviderError(ErrorKind.CONTENT_BLOCKED, message, provider=PROVIDER,
                            raw=feedback, in_stream=True)


def _finish_message(reason: str, candidate: dict[str, Any]) -> str:
    detail = candidate.get("finishMessage")
    text = {
        "MALFORMED_FUNCTION_CALL": "the model produced a malformed function call",
        "UNEXPECTED_TOOL_CALL": "the model called a tool that was not offered",
        "TOO_MANY_TOOL_CALLS": "the model made too many tool calls",
        "MALFORMED_RESPONSE": "the model produced a malformed response",
    }.get(reason, "the response was blocked")
    return f"gemini: {text} ({reason})" + (f": {detail}" if isinstance(detail, str) else "")


def _usage(metadata: dict[str, Any]) -> Usage:
    """Normalized usage from one ``usageMetadata`` (Gemini leaves zero counters out)."""
    def count(key: str) -> int:
        value = metadata.get(key)
        return value if isinstance(value, int) else 0
    return Usage(**{ours: count(theirs) for ours, theirs in _USAGE_FIELDS.items()})


# Vertex AI streamed arguments: ``partialArgs[]`` entries name a JSONPath and carry one value
# (https://cloud.google.com/vertex-ai/generative-ai/docs/multimodal/function-calling, streaming
# function call arguments). A string's pieces share a path while ``willContinue`` is true.
_PATH_TOKEN = re.compile(
    r"\.([^.\[\]]+)"  # .name
    r"|\[(\d+)\]"  # [0]
    r"|\['((?:[^'\\]|\\.)*)'\]"  # ['name']
    r"|\[\"((?:[^\"\\]|\\.)*)\"\]"  # ["name"]
)
_VALUE_KEYS = ("stringValue", "numberValue", "boolValue", "nullValue", "structValue", "listValue")


def _apply_partial_args(pending: _OpenCall, partial: Any) -> None:
    for fragment in partial if isinstance(partial, list) else []:
        if not isinstance(fragment, dict) or not isinstance(fragment.get("jsonPath"), str):
            continue
        path = fragment["jsonPath"]
        tokens = _path_tokens(path)
        key = next((k for k in _VALUE_KEYS if k in fragment), None)
        if tokens is None or key is None:
            continue
        value = None if key == "nullValue" else fragment[key]
        if key == "stringValue" and path in pending.continuing:
            value = str(_get(pending.args, tokens) or "") + str(value)
        _set(pending.args, tokens, value)
        if fragment.get("willContinue") is True:
            pending.continuing.add(path)
        else:
            pending.continuing.discard(path)


def _path_tokens(path: str) -> list[str | int] | None:
    """``$.a.b[0]['c d']`` -> ``["a", "b", 0, "c d"]``; None for a path this cannot read."""
    if not path.startswith("$"):
        return None
    tokens: list[str | int] = []
    position = 1
    while position < len(path):
        match = _PATH_TOKEN.match(path, position)
        if match is None:
            return None
        name, index, single, double = match.groups()
        tokens.append(int(index) if index is not None else (name or single or double or ""))
        position = match.end()
    return tokens or None


def _get(container: Any, tokens: list[str | int]) -> Any:
    for token in tokens:
        try:
            container = container[token]
        except (KeyError, IndexError, TypeError):
            return None
    return container


def _set(root: dict[str, Any], tokens: list[str | int], value: Any) -> None:
    container: Any = root
    for token, following in zip(tokens, [*tokens[1:], None], strict=True):
        if following is None:
            _put(container, token, value)
            return
        child = _child(container, token)
        if not isinstance(child, (dict, list)):
            child = [] if isinstance(following, int) else {}
            _put(container, token, child)
        container = child


def _child(container: Any, token: str | int) -> Any:
    if isinstance(container, dict):
        return container.get(token)
    if isinstance(container, list) and isinstance(token, int) and token < len(container):
        return container[token]
    return None


def _put(container: Any, token: str | int, value: Any) -> None:
    if isinstance(container, list) and isinstance(token, int):
        container.extend([None] * (token + 1 - len(container)))
        container[token] = value
    elif isinstance(container, dict):
        container[token] = value
