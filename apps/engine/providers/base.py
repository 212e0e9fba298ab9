"""What every provider is, and the HTTP streaming machinery the three adapters share.

An adapter has three seams (DESIGN 2.3): map the request (``build_call``), translate the stream
(``new_translator``: a pure object fed SSE events, so the replay command and the fixtures drive
it without HTTP), and map errors (``classify_error`` on the error body). :class:`HttpProvider`
owns everything else: one ``httpx2.AsyncClient`` per configuration (on aiohttp's client:
:mod:`~apps.engine.providers.aiohttp_transport`), explicit connect and
idle-read timeouts, the response closed in ``finally`` (and so on cancellation), transport
failures mapped to ``network`` before the first byte and ``stream_interrupted`` after it.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar, Protocol, runtime_checkable

import httpx2

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import ChatStreamEvent, MessageEnd, ReasoningDelta
from apps.engine.messages import ChatRequest
from apps.engine.providers.aiohttp_transport import AiohttpTransport
from apps.engine.providers.classify import classify_error
from apps.engine.providers.sse import SSEDecoder, SSEEvent
from apps.engine.providers.wellformed import translated

__all__ = [
    "AiProvider",
    "HttpCall",
    "HttpProvider",
    "ModelInfo",
    "ProviderSettings",
    "StreamTranslator",
    "new_tool_call_id",
    "parse_tool_arguments",
]


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """One provider configuration, as the engine sees it.

    ``base_url`` follows the vendor SDK's convention (Anthropic and Gemini without a version,
    OpenAI-compatible with ``/v1``). ``profile``: the OpenAI-compatible quirk profile name (None =
    derived from the host). Timeouts in seconds: ``read_timeout_s`` is the longest silence
    allowed between two reads of a stream. Hashable, so a host can keep one provider (and so
    one connection pool) per configuration.
    """

    protocol: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)  # never in a log line
    profile: str | None = None
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 120.0
    write_timeout_s: float = 30.0
    headers: tuple[tuple[str, str], ...] = ()  # extra request headers; a tuple keeps it hashable


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A model a provider offers: ``id`` and, when known, its display name and token limits."""

    id: str
    display_name: str | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class HttpCall:
    """One request to send: absolute ``url``, ``headers`` and the JSON ``body``."""

    url: str
    headers: dict[str, str]
    body: dict[str, Any]


@runtime_checkable
class StreamTranslator(Protocol):
    """Turns one response's SSE events into ChatStreamEvents.

    ``feed`` returns the events one SSE event completes and raises ProviderError for an error
    inside the stream; ``finish`` is called at end of stream, flushes what is pending and raises
    ``stream_interrupted`` when the protocol says the response was cut short.
    """

    def feed(self, event: SSEEvent) -> list[ChatStreamEvent]: ...

    def finish(self) -> list[ChatStreamEvent]: ...


@runtime_checkable
class AiProvider(Protocol):
    """A model provider: ``stream_chat`` yields ChatStreamEvents and raises ProviderError."""

    protocol: str

    def stream_chat(self, request: ChatRequest) -> AsyncIterator[ChatStreamEvent]: ...

    async def list_models(self) -> list[ModelInfo]: ...

    async def aclose(self) -> None: ...


class HttpProvider:
    """Base of the three HTTP adapters; subclasses fill the three seams and ``DEFAULT_MODELS``."""

    protocol: ClassVar[str]
    DEFAULT_MODELS: ClassVar[tuple[ModelInfo, ...]] = ()

    def __init__(
        self, settings: ProviderSettings, *, transport: httpx2.AsyncBaseTransport | None = None
    ) -> None:
        self.settings = settings
        self._client = httpx2.AsyncClient(
            timeout=httpx2.Timeout(
                connect=settings.connect_timeout_s,
                read=settings.read_timeout_s,
                write=settings.write_timeout_s,
                pool=settings.connect_timeout_s,
            ),
            transport=transport or AiohttpTransport(),
            trust_env=False,  # proxy variables of the host must not reroute API keys
            follow_redirects=False,
        )

    # -- the three seams -------------------------------------------------------------------
    def build_call(self, request: ChatRequest) -> HttpCall:
        """Map a ChatRequest to the provider's HTTP request."""
        raise NotImplementedError

    def new_translator(self) -> StreamTranslator:
        """A fresh translator for one response."""
        raise NotImplementedError

    def classify_error(
        self, body: bytes, *, status: int | None, headers: Mapping[str, str]
    ) -> ProviderError:
        """Map an HTTP error response to a ProviderError."""
        return classify_error(body, provider=self.protocol, status=status, headers=headers)

    # -- shared machinery ------------------------------------------------------------------
    async def stream_chat(self, request: ChatRequest) -> AsyncIterator[ChatStreamEvent]:
        """Send ``request`` and yield its normalized events; raises ProviderError.

        Cancelling the consumer or closing the generator closes the HTTP response, which
        releases (and, mid-stream, drops) the connection.
        """
        call = self.build_call(request)
        started = False
        reasoning = _ReasoningClock()
        try:
            async with self._client.stream(
                "POST", call.url, json=call.body, headers=call.headers
            ) as response:
                if response.status_code >= 400 or _json_body(response):
                    # A gateway may answer 200 with a JSON error body instead of a stream.
                    body = await response.aread()
                    raise self.classify_error(
                        body, status=response.status_code, headers=response.headers
                    )
                translator = self.new_translator()
                decoder = SSEDecoder()
                chunks = response.aiter_bytes()
                async for chunk in chunks:
                    started = True
                    for sse in decoder.feed(chunk):
                        for event in translated(self.protocol, partial(translator.feed, sse)):
                            yield reasoning.observe(event)
                    # A translator may expose ``done`` (its terminal marker was seen): stop
                    # reading, so a server that keeps the connection open cannot hang the turn.
                    if getattr(translator, "done", False):
                        await _drain(chunks)
                        break
                for sse in decoder.close():
                    for event in translated(self.protocol, partial(translator.feed, sse)):
                        yield reasoning.observe(event)
                for event in translated(self.protocol, translator.finish):
                    yield reasoning.observe(event)
        except (httpx2.UnsupportedProtocol, httpx2.InvalidURL) as exc:
            raise ProviderError(  # a configuration mistake: retrying cannot help
                ErrorKind.INVALID_REQUEST,
                f"{self.protocol}: the base URL {self.settings.base_url!r} is not usable: {exc}",
                provider=self.protocol) from exc
        except httpx2.TimeoutException as exc:
            kind = ErrorKind.STREAM_INTERRUPTED if started else ErrorKind.NETWORK
            raise ProviderError(
                kind, f"{self.protocol}: timed out ({type(exc).__name__})", provider=self.protocol
            ) from exc
        except httpx2.TransportError as exc:
            kind = ErrorKind.STREAM_INTERRUPTED if started else ErrorKind.NETWORK
            raise ProviderError(
                kind, f"{self.protocol}: {type(exc).__name__}: {exc}", provider=self.protocol
            ) from exc

    async def get_json(self, url: str, headers: dict[str, str]) -> Any:
        """GET a JSON document; raises ProviderError on an HTTP or transport failure."""
        try:
            response = await self._client.get(url, headers=headers)
        except httpx2.TransportError as exc:
            raise ProviderError(
                ErrorKind.NETWORK, f"{type(exc).__name__}: {exc}", provider=self.protocol
            ) from exc
        if response.status_code >= 400:
            raise self.classify_error(
                response.content, status=response.status_code, headers=response.headers
            )
        return response.json()

    async def list_models(self) -> list[ModelInfo]:
        """The provider's models, or ``DEFAULT_MODELS`` when the call fails for any reason."""
        try:
            models = await self.fetch_models()
        except (ProviderError, ValueError, KeyError, TypeError):
            return list(self.DEFAULT_MODELS)
        return models or list(self.DEFAULT_MODELS)

    async def fetch_models(self) -> list[ModelInfo]:
        """Ask the provider's model-list endpoint; raises ProviderError."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def __aenter__(self) -> HttpProvider:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


DRAIN_GRACE_S = 2.0


def _json_body(response: httpx2.Response) -> bool:
    """A JSON (not event-stream) answer to a streaming request: an error by construction."""
    return response.headers.get("content-type", "").split(";")[0].strip() == "application/json"


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what follows a terminal marker for a moment (normally just the end of the body),
    so the connection goes back to the pool; a silent or broken tail is let go."""
    try:
        async with asyncio.timeout(DRAIN_GRACE_S):
            async for _ in chunks:
                pass
    except (TimeoutError, httpx2.TransportError):
        pass


class _ReasoningClock:
    """Fills ``MessageEnd.reasoning_ms``: first reasoning delta to first other output."""

    __slots__ = ("_start", "_elapsed")

    def __init__(self) -> None:
        self._start: float | None = None
        self._elapsed: float | None = None

    def observe(self, event: ChatStreamEvent) -> ChatStreamEvent:
        if isinstance(event, ReasoningDelta):
            if self._start is None:
                self._start = time.monotonic()
        elif isinstance(event, MessageEnd):
            if self._start is not None and self._elapsed is None:
                self._elapsed = (time.monotonic() - self._start) * 1000.0
            if self._elapsed is not None and event.reasoning_ms is None:
                return MessageEnd(event.usage, event.stop_reason, event.stop_sequence,
                                  self._elapsed)
        elif self._start is not None and self._elapsed is None:
            self._elapsed = (time.monotonic() - self._start) * 1000.0
        return event


def parse_tool_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """A streamed tool call's arguments text as ``(object, None)``; blank text is ``{}``
    (zero-argument tools); anything that is not a JSON object is ``({}, why)`` — never run
    with guessed arguments, but reported to the model as a failed call it can retry
    (shared/cases/provider README, TOOLCALL-ARGS)."""
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except ValueError as exc:
        return {}, f"the arguments are not valid JSON ({exc.msg}): {text[:300]!r}"
    if value is None:
        return {}, None
    if not isinstance(value, dict):
        return {}, f"the arguments are not a JSON object: {text[:300]!r}"
    return value, None


def new_tool_call_id() -> str:
    """A fresh id for a tool call the provider sent without one (vLLM, Gemini before 3).

    Minted once when the call completes and stored with it, so the call and its result always
    carry the same id when the history is sent back.
    """
    return f"call_{uuid.uuid4().hex[:24]}"
