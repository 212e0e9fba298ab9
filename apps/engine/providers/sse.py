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

One deliberate deviation (DESIGN 2.2): at end of stream a final event that was not followed by
a blank line is still delivered; the provider layer decides whether its payload is complete.

Lines are split as bytes and decoded only once complete, so a multi-byte UTF-8 character split
across network reads is never damaged. Each byte is scanned a bounded number of times whatever
the chunking: an incomplete line is kept as a list of pieces and joined once.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass

__all__ = ["SSEEvent", "SSEDecoder", "aiter_sse", "iter_sse"]

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: ``event`` type, ``data`` text, last event ``id``, ``retry`` in ms."""

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Incremental decoder: ``feed(bytes) -> list[SSEEvent]``, then ``close()`` at end of stream.

    Invalid UTF-8 inside a complete line becomes U+FFFD, as the spec's UTF-8 decode step says.
    """

    __slots__ = ("_pending", "_skip_lf", "_at_start", "_data", "_event", "_last_id", "_retry")

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # pieces of the line not yet terminated
        self._skip_lf = False  # the previous read ended in CR: a leading LF belongs to it
        self._at_start = True
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume one network read; return the events it completed, in order."""
        events: list[SSEEvent] = []
        if not chunk:
            return events
        if self._skip_lf:
            self._skip_lf = False
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
                if not chunk:
                    return events
        for piece in chunk.splitlines(keepends=True):
            last = piece[-1]
            if last == 0x0A:  # LF or CRLF
                cut = 2 if piece.endswith(b"\r\n") else 1
            elif last == 0x0D:  # CR alone, perhaps the first half of a CRLF split across reads
                cut = 1
            else:  # only the final piece can be unterminated
                self._pending.append(piece)
                break
            line = piece[:-cut]
            if self._pending:
                self._pending.append(line)
                line = b"".join(self._pending)
                self._pending.clear()
            self._line(line, events)
        self._skip_lf = chunk[-1] == 0x0D
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: deliver a final unterminated event that has data (the deviation)."""
        events: list[SSEEvent] = []
        if self._pending:
            line = b"".join(self._pending)
            self._pending.clear()
            self._line(line, events)
        if self._data:
            events.append(self._dispatch())
        return events

    def _line(self, line: bytes, events: list[SSEEvent]) -> None:
        if self._at_start:
            self._at_start = False
            if line.startswith(_BOM):
                line = line[3:]
        if not line:
            if self._data:
                events.append(self._dispatch())
            else:
                self._event = ""
            return
        colon = line.find(b":")
        if colon == 0:
            return  # comment (keep-alives such as ": OPENROUTER PROCESSING")
        if colon < 0:
            name, value = line, b""
        else:
            name = line[:colon]
            value = line[colon + 2 :] if line[colon + 1 : colon + 2] == b" " else line[colon + 1 :]
        if name == b"data":
            self._data.append(value.decode("utf-8", "replace"))
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\x00" not in value:
                self._last_id = value.decode("utf-8", "replace")
        elif name == b"retry":
            if value and value.isdigit():
                self._retry = int(value)

    def _dispatch(self) -> SSEEvent:
        event = SSEEvent(
            event=self._event or "message",
            data="\n".join(self._data),
            id=self._last_id,
            retry=self._retry,
        )
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
    """Async form of :func:`iter_sse`, for ``httpx2.Response.aiter_raw()`` and the like."""
    decoder = SSEDecoder()
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.close():
        yield event
