"""Replay a captured provider response body through the real decoder and translator.

Usage::

    python -m apps.engine.replay --provider anthropic|openai|gemini [--chunk-size N] FILE

Prints one JSON object with the keys of ``shared/fixtures/providers/*.expected.json``: ``text``,
``reasoning``, ``reasoning_signatures``, ``thought_signatures``, ``redacted_thinking``,
``tool_calls`` (``{id, name, arguments}``; ``id`` as the provider sent it, null when it sent
none), ``usage``, ``finish_reason`` (the provider's raw value), ``error`` (null or
``{kind, message, ...}``), ``citations``, ``grounding_metadata``, plus ``server_tool_calls``.
Exits 0 whenever FILE could be read (an error inside the stream is reported under ``error``),
2 with a message on stderr when it could not.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

from apps.engine.errors import ProviderError
from apps.engine.events import ChatStreamEvent
from apps.engine.messages import RedactedThinkingBlock, ServerToolBlock, ThinkingBlock
from apps.engine.providers import PROTOCOLS, translator_class
from apps.engine.providers.assembler import MessageAssembler
from apps.engine.providers.sse import SSEDecoder
from apps.engine.providers.wellformed import translated

__all__ = ["chunked", "replay", "main"]


def chunked(body: bytes, size: int | None) -> Iterable[bytes]:
    """``body`` in ``size``-byte pieces (one piece when ``size`` is None)."""
    if not size:
        yield body
        return
    for start in range(0, len(body), size):
        yield body[start : start + size]


def replay_events(protocol: str, chunks: Iterable[bytes]) -> tuple[list[ChatStreamEvent],
                                                                   ProviderError | None]:
    """Decode and translate ``chunks``; return the events and the error that ended the stream."""
    translator = translator_class(protocol)()
    decoder = SSEDecoder()
    events: list[ChatStreamEvent] = []
    try:
        for chunk in chunks:
            for sse in decoder.feed(chunk):
                events.extend(translated(protocol, partial(translator.feed, sse)))
        for sse in decoder.close():
            events.extend(translated(protocol, partial(translator.feed, sse)))
        events.extend(translated(protocol, translator.finish))
    except ProviderError as error:
        return events, error
    return events, None


def replay(protocol: str, chunks: Iterable[bytes]) -> dict[str, Any]:
    """The fixture-shaped summary of one response body."""
    events, error = replay_events(protocol, chunks)
    assembler = MessageAssembler(protocol)  # type: ignore[arg-type]
    for event in events:
        assembler.feed(event)
    blocks = assembler.blocks
    thinking = [b for b in blocks if isinstance(b, ThinkingBlock)]
    reasoning = ("".join(assembler.reasoning_content) if protocol == "openai"
                 else "".join(b.thinking for b in thinking))
    return {
        "text": "".join(getattr(b, "text", "") for b in blocks if b.type == "text"),
        "reasoning": reasoning,
        "reasoning_signatures": [b.signature for b in thinking if b.signature is not None],
        "thought_signatures": _thought_signatures(blocks, assembler),
        "redacted_thinking": [b.data for b in blocks if isinstance(b, RedactedThinkingBlock)],
        "tool_calls": [
            {"id": c.provider_id, "name": c.name, "arguments": c.arguments}
            for c in assembler.tool_calls
        ],
        "server_tool_calls": [b.raw for b in blocks if isinstance(b, ServerToolBlock)
                              and b.raw.get("type") == "server_tool_use"],
        "usage": assembler.usage.model_dump() if assembler.usage else None,
        # a finish reason sent before an error chunk is still the provider's finish reason
        "finish_reason": assembler.stop_reason or (error.stop_reason if error else None),
        "error": _error(error),
        "citations": assembler.citations,
        "grounding_metadata": assembler.grounding_metadata,
    }


def _thought_signatures(blocks: list[Any], assembler: MessageAssembler) -> list[str]:
    if assembler.provider != "gemini":
        return []
    # a server-tool part (toolCall, executableCode, ...) keeps its signature inside its raw part
    signatures = [b.raw.get("thoughtSignature") if isinstance(b, ServerToolBlock)
                  else getattr(b, "thought_signature", None) for b in blocks]
    return [s for s in signatures if isinstance(s, str)]


def _error(error: ProviderError | None) -> dict[str, Any] | None:
    return None if error is None else error.to_dict()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m apps.engine.replay",
        description="Replay a raw SSE response body through confab's provider adapters.",
    )
    parser.add_argument("--provider", required=True, choices=sorted(PROTOCOLS))
    parser.add_argument("--chunk-size", type=int, default=None,
                        help="feed the body in N-byte pieces (default: as read)")
    parser.add_argument("file", type=Path)
    args = parser.parse_args(argv)
    if args.chunk_size is not None and args.chunk_size <= 0:
        parser.error("--chunk-size must be a positive number of bytes")
    try:
        body = args.file.read_bytes()
    except OSError as exc:
        print(f"replay: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    result = replay(args.provider, chunked(body, args.chunk_size))
    json.dump(result, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
