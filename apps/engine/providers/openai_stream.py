"""Translate an OpenAI Chat Completions stream into ChatStreamEvents.

The wire format (https://platform.openai.com/docs/api-reference/chat-streaming) is a series of
``data: {chunk}`` events ending in ``data: [DONE]``; each chunk has ``choices[].delta`` (text in
``content``, tool calls as fragments in ``tool_calls``) and ``finish_reason``, and with
``stream_options.include_usage`` a last chunk with ``choices: []`` carries ``usage``.
Compatible servers bend every part of it; each bend is handled here as a rule of the shape, not
of the vendor, so one translator serves every profile:

- Each chunk is read field by field: a top-level ``error`` first (it ends the turn, whatever
  else the chunk holds), then ``usage`` (the last one wins; ``x_groq.usage`` when there is no
  top-level one), Perplexity's top-level ``citations``, then every choice. Chunks with empty or
  missing ``choices`` are normal (shared/cases/provider 013, 027).
- Reasoning is ``delta.reasoning_content`` (DeepSeek, xAI, Qwen, Z.ai) or ``delta.reasoning``
  (Groq, OpenRouter, Ollama, vLLM), read once; OpenRouter's ``reasoning_details`` repeats the
  text and only contributes signatures. Mistral's list-valued ``content`` carries ``thinking``
  and ``text`` parts (shared/fixtures/providers README).
- Tool calls accumulate in :class:`ToolCallAccumulator`; a call is complete when the protocol
  structure says so (another call starts, ``finish_reason``, ``[DONE]``), never when its text
  happens to parse as JSON.
- The turn is complete at ``finish_reason`` or ``[DONE]``; end of stream before either is a cut
  stream (``stream_interrupted``, case 017), also when the last payload stops inside its JSON.
  A payload that is not JSON with more after it is a broken stream (``server``).
  ``finish_reason: "error"`` or an ``event: error`` ends it with the classified error, and a
  half-streamed tool call is never reported ready; a finish_reason sent before the error stays
  on it (``ProviderError.stop_reason``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import (
    ChatStreamEvent,
    Citation,
    ContentDelta,
    MessageEnd,
    MessageStart,
    ReasoningDelta,
    ThinkingSignature,
    ToolCallDelta,
    ToolCallReady,
    ToolCallsRequested,
    ToolCallStart,
)
from apps.engine.messages import ToolCall, Usage
from apps.engine.providers.base import new_tool_call_id, parse_tool_arguments
from apps.engine.providers.classify import classify_error
from apps.engine.providers.sse import SSEEvent

__all__ = ["OpenAITranslator", "ToolCallAccumulator", "normalize_usage"]

PROVIDER = "openai"
_DONE = "[DONE]"


class OpenAITranslator:
    """One response's translator: ``feed`` each SSE event, then ``finish`` at end of stream.

    Pure (no I/O), constructible with no arguments. Emits, in order: MessageStart (once, with the
    first response id/model seen), content/reasoning/citation/tool-call events as they arrive,
    then ToolCallsRequested (when there were calls) and MessageEnd at ``[DONE]``, or at end of
    stream when a ``finish_reason`` was seen. Raises ProviderError for in-stream errors.
    """

    def __init__(self) -> None:
        self._started = False
        self._ended = False
        self._finish_reason: str | None = None
        self._finished = False  # a choice reported its finish_reason
        self._usage: Usage | None = None
        self._tools = ToolCallAccumulator()
        self._seen_citations: set[str] = set()
        self._garbled: str | None = None  # a payload that did not parse, held for the verdict

    def feed(self, event: SSEEvent) -> list[ChatStreamEvent]:
        """Events completed by one SSE event; raises ProviderError for an error in the stream."""
        try:
            return self._event(event)
        except ProviderError as error:
            error.stop_reason = error.stop_reason or self._finish_reason
            raise

    def _event(self, event: SSEEvent) -> list[ChatStreamEvent]:
        if self._ended:
            return []  # nothing follows [DONE] by protocol
        if event.event == "error":
            # Groq and others: `event: error` whose data is {"error": {...}}, classified from
            # the body like an HTTP error (cases 058, groq-error-event fixture).
            raise classify_error(event.data, provider=PROVIDER, in_stream=True)
        data = event.data.strip()
        if not data or data.startswith(":"):
            return []  # keep-alive payloads (SSE-NONDATA class): liveness only
        if self._garbled is not None:  # more followed it: the payload itself was broken
            raise _not_a_chunk(self._garbled)
        if data == _DONE:
            return self._with_start(None, self._end())
        chunk = _load_chunk(data)
        if chunk is None:
            # Only what comes next can tell a payload cut by the end of the stream from a
            # broken one (DESIGN 2.2): decided at the next event or in finish().
            self._garbled = data
            return []
        return self._chunk(chunk)

    def finish(self) -> list[ChatStreamEvent]:
        """Flush at end of stream; raises ``stream_interrupted`` if the turn never finished.

        ``[DONE]`` is an OpenAI convention several servers omit, so end of stream after a
        ``finish_reason`` is a normal end (case 017); before one, the answer may be cut anywhere
        and the pending tool call is not emitted.
        """
        if self._ended:
            return []
        if not self._finished:
            if self._garbled is not None and not self._garbled.startswith(("{", "[")):
                raise _not_a_chunk(self._garbled)  # an HTML error page, not a cut chunk
            where = " inside its last payload" if self._garbled is not None else ""
            raise ProviderError(
                ErrorKind.STREAM_INTERRUPTED,
                f"openai: the stream ended{where} before a finish_reason or [DONE]",
                provider=PROVIDER,
                raw=self._garbled,
                in_stream=True,
            )
        return self._with_start(None, self._end())

    # -- one chunk, field by field ----------------------------------------------------------
    def _chunk(self, chunk: dict[str, Any]) -> list[ChatStreamEvent]:
        _raise_on_error(chunk)
        self._take_usage(chunk)
        events = self._citations(chunk.get("citations"))
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if isinstance(choice, dict):
                events += self._choice(choice)
        return self._with_start(chunk, events)

    def _choice(self, choice: dict[str, Any]) -> list[ChatStreamEvent]:
        # confab never asks for n > 1, so every choice is the one answer; a missing or odd
        # choice index is tolerated rather than dropped.
        events: list[ChatStreamEvent] = []
        delta = choice.get("delta")
        if isinstance(delta, dict):
            events += reasoning_events(delta)
            events += content_events(delta)
            events += self._annotations(delta.get("annotations"))
            events += self._tools.feed(delta.get("tool_calls"))
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            if reason == "error":
                raise _finish_error(choice)
            self._finish_reason, self._finished = reason, True
            events += self._tools.complete_all()
        return events

    def _take_usage(self, chunk: dict[str, Any]) -> None:
        raw = chunk.get("usage")
        if not isinstance(raw, dict):
            groq = chunk.get("x_groq")  # Groq: usage only inside x_groq on some models
            raw = groq.get("usage") if isinstance(groq, dict) else None
        if isinstance(raw, dict):
            self._usage = normalize_usage(raw)  # cumulative where repeated: the last one wins

    def _citations(self, urls: Any) -> list[ChatStreamEvent]:
        # Perplexity repeats the whole top-level citations array in every chunk
        # (https://docs.perplexity.ai/api-reference/chat-completions-post): new URLs only.
        events: list[ChatStreamEvent] = []
        for url in urls if isinstance(urls, list) else ():
            if isinstance(url, str) and url not in self._seen_citations:
                self._seen_citations.add(url)
                events.append(Citation(citation=url))
        return events

    def _annotations(self, items: Any) -> list[ChatStreamEvent]:
        # OpenAI web search and OpenRouter: delta.annotations[] of type url_citation
        # (https://openrouter.ai/docs/features/web-search), surfaced once each.
        events: list[ChatStreamEvent] = []
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict) and item.get("type") == "url_citation":
                key = json.dumps(item, sort_keys=True)
                if key not in self._seen_citations:
                    self._seen_citations.add(key)
                    events.append(Citation(citation=item))
        return events

    def _end(self) -> list[ChatStreamEvent]:
        self._ended = True
        events = self._tools.complete_all()
        if calls := self._tools.calls:
            events.append(ToolCallsRequested(calls=list(calls)))
        events.append(MessageEnd(usage=self._usage or Usage(), stop_reason=self._finish_reason))
        return events

    def _with_start(
        self, chunk: dict[str, Any] | None, events: list[ChatStreamEvent]
    ) -> list[ChatStreamEvent]:
        """Put MessageStart first, once, with the first non-empty response id and model
        (Azure's first chunk has empty ones and only prompt_filter_results)."""
        if self._started:
            return events
        response_id = _text((chunk or {}).get("id"))
        model = _text((chunk or {}).get("model"))
        if not (response_id or model or events):
            return events
        self._started = True
        return [MessageStart(id=response_id, model=model), *events]


# -- deltas -----------------------------------------------------------------------------------
def reasoning_events(delta: dict[str, Any]) -> list[ChatStreamEvent]:
    """Reasoning text of one delta, read once, and OpenRouter reasoning signatures."""
    events: list[ChatStreamEvent] = []
    for key in ("reasoning_content", "reasoning"):  # prefer reasoning_content (case 029)
        if text := _text(delta.get(key)):
            events.append(ReasoningDelta(text=text))
            break
    # https://openrouter.ai/docs/use-cases/reasoning-tokens#reasoning-details : the details
    # repeat the text above; their signature (Anthropic models) is kept, the text is not.
    details = delta.get("reasoning_details")
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, dict) and (signature := _text(detail.get("signature"))):
            events.append(ThinkingSignature(signature=signature))
    return events


def content_events(delta: dict[str, Any]) -> list[ChatStreamEvent]:
    """Answer text of one delta: a string, or Mistral's list of typed parts; plus a refusal."""
    content = delta.get("content")
    events: list[ChatStreamEvent] = []
    if isinstance(content, str) and content:
        events.append(ContentDelta(text=content))
    elif isinstance(content, list):
        for part in content:
            events += _part_events(part)
    if refusal := _text(delta.get("refusal")):  # OpenAI: a refusal is the visible answer
        events.append(ContentDelta(text=refusal))
    return events


def _part_events(part: Any) -> list[ChatStreamEvent]:
    # https://docs.mistral.ai/capabilities/reasoning : {"type": "thinking", "thinking": [
    # {"type": "text", "text": ...}]} and {"type": "text", "text": ...} parts.
    if isinstance(part, str):
        return [ContentDelta(text=part)] if part else []
    if not isinstance(part, dict):
        return []
    if part.get("type") == "text" and (text := _text(part.get("text"))):
        return [ContentDelta(text=text)]
    if part.get("type") == "thinking":
        inner = part.get("thinking")
        pieces = [inner] if isinstance(inner, str) else inner if isinstance(inner, list) else []
        texts = [p if isinstance(p, str) else _text(p.get("text")) if isinstance(p, dict)
                 else None for p in pieces]
        return [ReasoningDelta(text=t) for t in texts if t]
    return []


# -- tool calls -------------------------------------------------------------------------------
@dataclass(slots=True)
class _Slot:
    """One tool call being assembled."""

    position: int  # order of appearance
    index: int | None  # the provider's index, None when it sends none (Mistral)
    provider_id: str | None = None
    name: str = ""
    text: list[str] = field(default_factory=list)
    obj: dict[str, Any] | None = None  # arguments sent as an object
    started: bool = False
    ready: bool = False

    @property
    def call_index(self) -> int:
        return self.index if self.index is not None else self.position


class ToolCallAccumulator:
    """Assembles streamed tool calls (shared/cases/provider README, TOOLCALL-ASSEMBLY/-ARGS).

    - With ``index``: the index names the call. Without (Mistral, some gateways): a delta with
      a name and a new id (or, with no id, a new name) opens a call, anything else continues the
      latest one; two entries of one ``tool_calls`` array are never the same call.
    - The first non-empty id is kept ("" and later different ids never overwrite it); a call
      with none gets ``provider_id`` None and an id minted once, when it completes.
    - A name equal to the one collected is a resend and ignored; a different one is a fragment
      and appended (never "BashBash").
    - Arguments: text fragments are concatenated; an object is taken as complete; empty or
      blank text is ``{}``; any other text that is not a JSON object is an error, never ``{}``.
    - A call is complete when another call opens, at ``finish_reason`` and at ``[DONE]``.
    """

    def __init__(self) -> None:
        self._slots: list[_Slot] = []
        self._by_index: dict[int, _Slot] = {}
        self.calls: list[ToolCall] = []  # completed calls, in order

    def feed(self, deltas: Any) -> list[ChatStreamEvent]:
        """Apply one ``delta.tool_calls`` array."""
        events: list[ChatStreamEvent] = []
        touched: set[int] = set()
        for delta in deltas if isinstance(deltas, list) else ():
            if not isinstance(delta, dict):
                continue
            slot, opened = self._slot_for(delta, touched)
            if opened:
                events += self._complete_all(but=slot)
            touched.add(slot.position)
            events += self._apply(slot, delta)
        return events

    def complete_all(self) -> list[ChatStreamEvent]:
        """Complete every pending call, in order (finish_reason, [DONE], end of stream)."""
        return self._complete_all(but=None)

    def _slot_for(self, delta: dict[str, Any], touched: set[int]) -> tuple[_Slot, bool]:
        index = delta.get("index")
        if isinstance(index, int) and not isinstance(index, bool):
            slot = self._by_index.get(index)
            return (slot, False) if slot is not None else (self._open(index), True)
        current = self._slots[-1] if self._slots else None
        if current is None or current.position in touched or _opens_call(current, delta):
            return self._open(None), True
        return current, False

    def _open(self, index: int | None) -> _Slot:
        slot = _Slot(position=len(self._slots), index=index)
        self._slots.append(slot)
        if index is not None:
            self._by_index[index] = slot
        return slot

    def _apply(self, slot: _Slot, delta: dict[str, Any]) -> list[ChatStreamEvent]:
        function = delta.get("function")
        function = function if isinstance(function, dict) else {}
        name, arguments = _text(function.get("name")), function.get("arguments")
        if slot.ready:
            if _has_arguments(arguments) or (name and name != slot.name):
                raise _stream_fault(f"tool call {slot.call_index} ({slot.name!r}) continued "
                                    "after it was complete")
            return []  # a resend of id or name after completion changes nothing
        if (call_id := _text(delta.get("id"))) and slot.provider_id is None:
            slot.provider_id = call_id
        if name and name != slot.name:
            slot.name += name
        return self._arguments(slot, arguments)

    def _arguments(self, slot: _Slot, arguments: Any) -> list[ChatStreamEvent]:
        if isinstance(arguments, dict):
            if arguments == slot.obj:
                return []
            slot.obj = arguments
            return self._delta(slot, json.dumps(arguments, ensure_ascii=False))
        if isinstance(arguments, str) and arguments:
            slot.text.append(arguments)
            return self._delta(slot, arguments)
        return []

    def _delta(self, slot: _Slot, text: str) -> list[ChatStreamEvent]:
        return [*self._start(slot), ToolCallDelta(index=slot.call_index, arguments_delta=text)]

    def _start(self, slot: _Slot) -> list[ChatStreamEvent]:
        # Started at the first argument text, by when a fragmented name is complete.
        if slot.started:
            return []
        slot.started = True
        return [ToolCallStart(index=slot.call_index, id=slot.provider_id, name=slot.name)]

    def _complete_all(self, *, but: _Slot | None) -> list[ChatStreamEvent]:
        events: list[ChatStreamEvent] = []
        for slot in self._slots:
            if slot is not but and not slot.ready:
                events += self._complete(slot)
        return events

    def _complete(self, slot: _Slot) -> list[ChatStreamEvent]:
        slot.ready = True
        if not slot.name:
            raise _stream_fault(f"tool call {slot.call_index} has no function name")
        arguments, problem = _parse_arguments(slot)
        call = ToolCall(
            id=slot.provider_id or new_tool_call_id(),
            name=slot.name,
            arguments=arguments,
            provider_id=slot.provider_id,
            index=slot.call_index,
            arguments_error=problem,
        )
        self.calls.append(call)
        return [*self._start(slot), ToolCallReady(call=call)]


def _opens_call(current: _Slot, delta: dict[str, Any]) -> bool:
    """Whether an index-less delta starts a new call rather than continuing ``current``."""
    function = delta.get("function")
    name = _text(function.get("name")) if isinstance(function, dict) else None
    if not name:
        return False  # no name: a continuation, even if its id changed
    call_id = _text(delta.get("id"))
    if call_id and current.provider_id:
        return call_id != current.provider_id
    return bool(current.name) and name != current.name


def _has_arguments(arguments: Any) -> bool:
    return bool(arguments) and not (isinstance(arguments, str) and not arguments.strip())


def _parse_arguments(slot: _Slot) -> tuple[dict[str, Any], str | None]:
    text = "".join(slot.text)
    if slot.obj is not None:
        if text.strip():
            return {}, "the arguments came both as an object and as text"
        return slot.obj, None
    return parse_tool_arguments(text)  # "" or nothing: a zero-argument tool (case 024)


# -- errors and helpers -----------------------------------------------------------------------
def _raise_on_error(chunk: dict[str, Any]) -> None:
    # OpenRouter and other gateways report upstream failures after HTTP 200 as a chunk with a
    # top-level "error" (https://openrouter.ai/docs/api-reference/errors#streaming-errors).
    if chunk.get("error"):
        raise classify_error(chunk, provider=PROVIDER, in_stream=True)


def _finish_error(choice: dict[str, Any]) -> ProviderError:
    if inner := choice.get("error"):  # some gateways put the error object on the choice
        return classify_error({"error": inner}, provider=PROVIDER, in_stream=True)
    native = _text(choice.get("native_finish_reason"))
    detail = f" (native finish reason {native!r})" if native and native != "error" else ""
    return classify_error(
        {"error": {"message": f"the provider ended the response with finish_reason "
                              f"'error'{detail}"}},
        provider=PROVIDER,
        in_stream=True,
    )


def _stream_fault(message: str) -> ProviderError:
    """The provider broke the stream's structure: a server-side fault worth a retry."""
    return ProviderError(ErrorKind.SERVER, f"openai: {message}", provider=PROVIDER,
                         in_stream=True)


def _load_chunk(data: str) -> dict[str, Any] | None:
    """The chunk in ``data``; None when it does not parse (maybe cut short); ProviderError
    for JSON that is not an object."""
    try:
        chunk = json.loads(data)
    except ValueError:
        return None
    if not isinstance(chunk, dict):
        raise _not_a_chunk(data)
    return chunk


def _not_a_chunk(data: str) -> ProviderError:
    # Not a keep-alive and not a chunk: fail loudly rather than skip content.
    return ProviderError(ErrorKind.SERVER, f"openai: the stream sent a payload that is not "
                         f"a JSON object: {data[:200]!r}", provider=PROVIDER, raw=data,
                         in_stream=True)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def normalize_usage(raw: dict[str, Any]) -> Usage:
    """Usage from an OpenAI-style usage object (shared/fixtures/providers README).

    ``input_tokens`` = prompt_tokens (cache reads included), ``output_tokens`` =
    completion_tokens, ``cached_input_tokens`` = prompt_tokens_details.cached_tokens or
    DeepSeek's prompt_cache_hit_tokens, ``reasoning_tokens`` =
    completion_tokens_details.reasoning_tokens; None where not reported.
    """
    prompt_details = raw.get("prompt_tokens_details")
    prompt_details = prompt_details if isinstance(prompt_details, dict) else {}
    completion_details = raw.get("completion_tokens_details")
    completion_details = completion_details if isinstance(completion_details, dict) else {}
    cached = _count(prompt_details.get("cached_tokens"))
    return Usage(
        input_tokens=_count(raw.get("prompt_tokens")),
        output_tokens=_count(raw.get("completion_tokens")),
        total_tokens=_count(raw.get("total_tokens")),
        cached_input_tokens=cached if cached is not None
        else _count(raw.get("prompt_cache_hit_tokens")),
        reasoning_tokens=_count(completion_details.get("reasoning_tokens")),
    )
