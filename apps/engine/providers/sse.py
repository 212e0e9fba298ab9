"""A byte-level Server-Sent Events decoder shared by every provider adapter.

Rules follow the WHATWG HTML Living Standard, section 9.2.6 "Interpreting an event stream"
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):

- lines end in CRLF, LF or CR; a CRLF whose CR and LF arrive in different reads is one terminator;
- one leading UTF-8 byte order mark is skipped;
- a line starting with ``:`` is a comment;
- ``field:value`` with at most one space stripped after the colon; a line without a colon is a
  field with an empty value;
- ``data`` lines join with ``\\n``; ``event`` sets the type (default ``message``); ``id`` sets the
  last event id unless it contains NUL, and it persists across events; ``retry`` takes ASCII
  digits only; other fields are ignored;
- a blank line dispatches the event, unless no ``data`` line was seen (then the buffers reset).

Two deliberate deviations:

- (DESIGN 2.2) at end of stream a final event that was not followed by a blank line is still
  delivered; the provider layer decides whether its payload is complete;
- llama.cpp's server reports failures with a non-standard ``error:`` field instead of ``data:``
  (shared/cases/provider README, STREAM-ERROR). The spec would ignore the line and the failure
  would vanish; here it becomes an ``error`` event whose data is the field's value.

Bytes are decoded only up to the last line terminator of what has arrived, so a multi-byte
UTF-8 character split across network reads is never damaged (terminators are ASCII and never
occur inside a multi-byte sequence). Each byte is copied and scanned a bounded number of times
whatever the chunking: an incomplete line waits in a bytearray that only grows at its end.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import NamedTuple

__all__ = ["SSEEvent", "SSEDecoder", "aiter_sse", "iter_sse"]


class SSEEvent(NamedTuple):
    """One dispatched event: ``event`` type, ``data`` text, last event ``id``, ``retry`` in ms.

    A NamedTuple because a stream makes one per event and tuples are the cheapest to build.
    """

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Incremental decoder: ``feed(bytes) -> list[SSEEvent]``, then ``close()`` at end of stream.

    Invalid UTF-8 becomes U+FFFD, as the spec's decode step says.
    """

    __slots__ = ("_pending", "_skip_lf", "_at_start", "_data", "_event", "_last_id", "_retry")

    def __init__(self) -> None:
        self._pending = bytearray()  # the start of a line whose terminator has not arrived
        self._skip_lf = False  # the previous read ended in CR: a leading LF belongs to it
        self._at_start = True
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume one network read; return the events it completed, in order."""
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
        if not chunk:
            return []
        cut = max(chunk.rfind(b"\n"), chunk.rfind(b"\r")) + 1
        if not cut:
            self._pending += chunk
            return []
        self._skip_lf = chunk[-1] == 0x0D
        if self._pending:
            self._pending += memoryview(chunk)[:cut]
            text = self._pending.decode("utf-8", "replace")
            self._pending = bytearray(memoryview(chunk)[cut:])
        else:
            text = str(memoryview(chunk)[:cut], "utf-8", "replace")
            if cut < len(chunk):
                self._pending += memoryview(chunk)[cut:]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        lines.pop()  # the text ends with a terminator: the last piece is empty
        return self._lines(lines)

    def close(self) -> list[SSEEvent]:
        """End of stream: deliver a final unterminated event that has data (the deviation)."""
        lines = [self._pending.decode("utf-8", "replace")] if self._pending else []
        self._pending = bytearray()
        events = self._lines(lines)
        if self._data:
            events.append(self._dispatch())
        return events

    def _lines(self, lines: list[str]) -> list[SSEEvent]:
        if self._at_start and lines:
            self._at_start = False
            lines[0] = lines[0].removeprefix("\ufeff")
        events: list[SSEEvent] = []
        for line in lines:
            if not line:
                if self._data:
                    events.append(self._dispatch())
                else:
                    self._event = ""
            elif line.startswith("data:"):  # the hot path: most lines are data lines
                self._data.append(line[6:] if line.startswith(" ", 5) else line[5:])
            elif line[0] != ":":  # a colon first is a comment (": OPENROUTER PROCESSING")
                self._field(line)
        return events

    def _field(self, line: str) -> None:
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "error":  # llama.cpp: see the module docstring
            self._event = "error"
            self._data.append(value)
        elif name == "id" and "\x00" not in value:
            self._last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)

    def _dispatch(self) -> SSEEvent:
        event = SSEEvent(self._event or "message", "\n".join(self._data), self._last_id,
                         self._retry)
        self._data = []
        self._event = ""
        return event


def iter_sse(chunks: Iterable[bytes]) -> Iterator[SSEEvent]:
    """Decode a whole stream of byte chunks into events (end-of-stream rule included)."""
    decoder = SSEDecoder()
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.close()


async def aiter_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[SSEEvent]:
    """Async form of :func:`iter_sse`, for ``httpx2.Response.aiter_bytes()`` and the like."""
    decoder = SSEDecoder()
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.close():
        yield event
