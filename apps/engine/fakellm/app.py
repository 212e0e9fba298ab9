"""The fakellm HTTP application (Starlette): routes, script selection and pacing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from apps.engine.fakellm.faults import FAULTS, play_fault
from apps.engine.fakellm.requests import anthropic_messages, gemini_messages, openai_messages
from apps.engine.fakellm.wire import ENCODERS, Frame, error_body, stamp_frame
from apps.engine.messages import Message
from apps.engine.providers.script import ScriptPlayer, Step
from apps.engine.providers.scripted import OFFLINE_REPLY
from apps.engine.titles import offline_title

__all__ = ["MODEL", "create_app"]

MODEL = "confab-offline"
Reader = Callable[[dict[str, Any]], list[Message]]


def create_app(rate: float = 50.0, *, stamp: bool = False) -> Starlette:
    """The ASGI app; ``rate``: streamed tokens per second (0 = no pacing); ``stamp``: each
    streamed text piece starts with its send time, ``⟦1732950000.123456⟧`` (see
    :mod:`apps.engine.fakellm.wire`), for latency benchmarks."""
    player = ScriptPlayer()

    async def reply(request: Request, protocol: str, read: Reader, model: str) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return JSONResponse(error_body(protocol, 400, "the body is not JSON"), 400)
        if not isinstance(body, dict):
            return JSONResponse(error_body(protocol, 400, "the body is not an object"), 400)
        messages = read(body)
        played = player.play(messages)
        offline = [{"text": offline_title(messages) or OFFLINE_REPLY}]
        steps, error = played if played is not None else (offline, None)
        fault = error["error"].get("fault") if error is not None else None
        if fault is not None and fault not in FAULTS:
            return JSONResponse(error_body(protocol, 400, f"unknown fault {fault!r}; expected "
                                           f"one of {', '.join(sorted(FAULTS))}"), 400)
        if error is not None and fault is None and not error["error"].get("in_stream", False):
            return _http_error(protocol, error)
        frames = ENCODERS[protocol](steps, error, model, len(json.dumps(body)) // 4,
                                   stamp=stamp)
        stream = _paced(frames, rate, stamp) if fault is None else _faulted(frames, fault, rate)
        return StreamingResponse(stream, media_type="text/event-stream",
                                 headers={"cache-control": "no-cache"})

    async def anthropic(request: Request) -> Response:
        return await reply(request, "anthropic", anthropic_messages, await _model(request))

    async def openai(request: Request) -> Response:
        return await reply(request, "openai", openai_messages, await _model(request))

    async def gemini(request: Request) -> Response:
        model, _, method = request.path_params["target"].partition(":")
        if method not in ("streamGenerateContent", "generateContent"):
            return JSONResponse(error_body("gemini", 404, f"unknown method {method!r}"), 404)
        return await reply(request, "gemini", gemini_messages, model)

    return Starlette(routes=[
        Route("/v1/messages", anthropic, methods=["POST"]),
        Route("/v1/chat/completions", openai, methods=["POST"]),
        Route("/v1beta/models/{target:path}", gemini, methods=["POST"]),
        Route("/v1/models", _models, methods=["GET"]),
        Route("/v1beta/models", _gemini_models, methods=["GET"]),
        Route("/health", lambda request: JSONResponse({"ok": True}), methods=["GET"]),
    ])


async def _model(request: Request) -> str:
    try:
        return str(json.loads(await request.body()).get("model") or MODEL)
    except (ValueError, AttributeError):
        return MODEL


def _http_error(protocol: str, step: Step) -> Response:
    spec = step["error"]
    status = int(spec.get("status", 500))
    message = str(spec.get("message") or f"fakellm scripted error {status}")
    headers = {}
    if "retry_after" in spec:
        headers["retry-after"] = str(spec["retry_after"])
    return JSONResponse(error_body(protocol, status, message), status, headers=headers)


async def _paced(frames: Any, rate: float, stamp: bool = False) -> AsyncIterator[bytes]:
    delay = 1.0 / rate if rate > 0 else 0.0
    for frame in frames:
        assert isinstance(frame, Frame)
        if frame.token and delay:
            await asyncio.sleep(delay)
        # Stamped after the pause, so the stamp is the moment the frame leaves.
        yield stamp_frame(frame.data) if stamp and frame.token else frame.data


async def _faulted(frames: Iterator[Frame], fault: str, rate: float) -> AsyncIterator[bytes]:
    # The encoder ends an error segment with the provider's error event: the fault replaces it.
    *before, _error_event = list(frames)
    async for data in _paced(before, rate):
        yield data
    await play_fault(fault)


async def _models(request: Request) -> Response:
    # One body serves both Anthropic's and OpenAI's model list shapes.
    return JSONResponse({"object": "list", "has_more": False, "data": [
        {"id": MODEL, "object": "model", "type": "model", "owned_by": "confab",
         "display_name": "confab offline scripted model", "created_at": "2026-01-01T00:00:00Z"}]})


async def _gemini_models(request: Request) -> Response:
    return JSONResponse({"models": [{
        "name": f"models/{MODEL}", "displayName": "confab offline scripted model",
        "inputTokenLimit": 200_000, "outputTokenLimit": 8_192,
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent"]}]})
