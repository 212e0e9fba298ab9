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

How bytes become events, and why it costs little per read whatever the chunking:

- A read without a line terminator (most small reads) is only appended to a bytearray.
- Terminators become LF at the byte level (``CRLF`` and ``CR`` are ASCII and never occur inside
  a multi-byte UTF-8 sequence; a CR ending a read makes a leading LF of the next one part of it).
- Lines are read only once an event is complete. A read that completes the one event in the
  buffer (most small reads) has it sliced out of the bytes when it is a common shape, and only
  its value is decoded. Otherwise the bytes up to the last blank line (``\n\n``) are decoded
  in one go and split at the blank lines into whole events. The common shapes
  (one ``data`` line; an ``event`` line then a ``data`` line) are sliced out directly; any
  other event goes through the line-by-line rules. Only the new bytes are searched
  (``rfind`` from the end of the previous read); the rest waits in the bytearray, which grows
  at its end and is cut at its front, so each byte is copied and scanned a bounded number of
  times whatever the chunking. A multi-byte UTF-8 character split across reads is never
  damaged: bytes are decoded only up to a terminator. Past :data:`LINES_AFTER_BYTES` without
  a blank line (a long event, a flood of comments) the complete lines are read at once, so
  the buffer stays bounded.

Profiled with ``py-spy record -r 1000 -f raw -o sse.txt -- .venv/bin/python <loop>``, the
loop decoding the benchmark's stream (``tests/benchmarks/bench_sse.py``) with
:func:`iter_sse` in 64-byte and 4 KiB reads: at small reads the cost was the calls per read
and, for a read completing one event, copying and decoding the whole text then splitting it
(hence :meth:`SSEDecoder._one_event`: +15 % at 64-byte reads); at 4 KiB the per-event loop
(hence the shapes inline and ``tuple.__new__``). The search for the two-character separator
costs about 1 ns a byte (CPython searches it without ``memchr``) and is half of the 64 KiB
figure; walking the bytes event by event with single-byte searches instead was no faster.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import NamedTuple

__all__ = ["LINES_AFTER_BYTES", "SSEEvent", "SSEDecoder", "aiter_sse", "iter_sse"]

LINES_AFTER_BYTES = 64 * 1024
"""Bytes an open event may hold before its complete lines are read without waiting for the
blank line that ends it."""


class SSEEvent(NamedTuple):
    """One dispatched event: ``event`` type, ``data`` text, last event ``id``, ``retry`` in ms.

    A NamedTuple because a stream makes one per event and tuples are the cheapest to build.
    """

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None


_new = tuple.__new__  # builds an SSEEvent without the NamedTuple's Python-level __new__


class SSEDecoder:
    """Incremental decoder: ``feed(bytes) -> list[SSEEvent]``, then ``close()`` at end of stream.

    Invalid UTF-8 becomes U+FFFD, as the spec's decode step says.
    """

    __slots__ = ("_buffer", "_skip_lf_at", "_at_start", "_data", "_event", "_last_id", "_retry")

    def __init__(self) -> None:
        self._buffer = bytearray()  # LF-terminated lines (and a line's start) of an open event
        # The buffer's length after a read that ended in CR: while it still has that length
        # (nothing came since), a leading LF of the next read belongs to that CR.
        self._skip_lf_at = -1
        self._at_start = True
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume one network read; return the events it completed, in order."""
        # ``0x0A in`` (an int) is the fast membership test: ``b"\n" in`` costs about twenty
        # times as much on a short read (CPython 3.13).
        if 0x0A in chunk or 0x0D in chunk:
            return self._terminated(chunk)
        self._buffer += chunk
        return []

    def _terminated(self, chunk: bytes) -> list[SSEEvent]:
        """A read holding a terminator: keep it, decode up to the last blank line."""
        buffer = self._buffer
        if chunk[0] == 0x0A and len(buffer) == self._skip_lf_at:
            chunk = chunk[1:]
        ends_in_cr = False
        if 0x0D in chunk:
            ends_in_cr = chunk[-1] == 0x0D
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        start = len(buffer) - 1 if buffer else 0  # a blank line may start in the last read
        buffer += chunk
        end = buffer.rfind(b"\n\n", start)
        if end >= 0:
            event = self._one_event(end) if self._clean_at(end) else None
            if event is not None:
                events = [event]
            else:
                text = buffer[: end + 2].decode("utf-8", "replace")
                del buffer[: end + 2]  # at the front: CPython moves no bytes
                events = self._blocks(text)
        elif len(buffer) > LINES_AFTER_BYTES:
            events = self._complete_lines()
        else:
            events = []
        self._skip_lf_at = len(buffer) if ends_in_cr else -1
        return events

    def _clean_at(self, end: int) -> bool:
        """Whether the buffer holds at most two lines before the blank line at ``end``, no
        earlier read began an event and the stream's start (its byte order mark) is past."""
        buffer = self._buffer
        first = buffer.find(0x0A)
        return (first == end or buffer.find(0x0A, first + 1) == end) and not (
            self._at_start or self._data or self._event)

    def _one_event(self, end: int) -> SSEEvent | None:
        """The event of the buffer's lines before the blank line at ``end`` when they are a
        common shape (one ``data`` line; an ``event`` line then a ``data`` line), cut from
        the buffer; else None and the buffer is untouched (the line rules decide).

        The value is sliced out of the bytes, so only it is decoded: at small reads, where
        most reads complete one event, this is the cost of an event.
        """
        buffer = self._buffer
        kind, line = "message", 0
        if buffer.startswith(b"event:"):
            line = buffer.find(0x0A) + 1
            kind = (buffer[7 : line - 1] if buffer.startswith(b" ", 6)
                    else buffer[6 : line - 1]).decode("utf-8", "replace") or "message"
        elif buffer.find(0x0A) != end:
            return None
        if not buffer.startswith(b"data:", line):
            return None
        value = line + 6 if buffer.startswith(b" ", line + 5) else line + 5
        data = buffer[value:end].decode("utf-8", "replace")
        del buffer[: end + 2]
        return _new(SSEEvent, (kind, data, self._last_id, self._retry))

    def close(self) -> list[SSEEvent]:
        """End of stream: deliver a final unterminated event that has data (the deviation)."""
        text = self._decoded(self._buffer.decode("utf-8", "replace"))
        self._buffer = bytearray()
        lines = text.split("\n")
        if not lines[-1]:
            lines.pop()  # after the last terminator: no line
        events = self._lines(lines, [])
        if self._data:
            events.append(self._dispatch())
        return events

    def _complete_lines(self) -> list[SSEEvent]:
        """Read the buffer's complete lines now (no blank line among them)."""
        buffer = self._buffer
        cut = buffer.rfind(b"\n") + 1
        text = self._decoded(buffer[:cut].decode("utf-8", "replace"))
        del buffer[:cut]
        return self._lines(text.split("\n")[:-1], [])

    def _decoded(self, text: str) -> str:
        if self._at_start and text:
            self._at_start = False
            return text.removeprefix("\ufeff")
        return text

    def _blocks(self, text: str) -> list[SSEEvent]:
        """``text``: whole lines ending in a blank line -> the events they complete.

        ``text.split("\n\n")`` gives the lines of each event: the piece before each
        separator ends with the line the separator's first LF ends (the second LF is the blank
        line); an empty piece is a blank line of its own. The piece after the last separator
        is "" or "\n" (a blank line after a blank line): nothing to do.
        """
        if self._at_start:
            text = self._decoded(text)
        clean = not (self._data or self._event)  # no event begun by an earlier read
        pieces = text.split("\n\n")
        pieces.pop()
        events: list[SSEEvent] = []
        last_id, retry = self._last_id, self._retry
        for piece in pieces:
            if clean:  # _one_event's two shapes, inline: a call per event costs a fifth here
                if piece.startswith("data:"):
                    if "\n" not in piece:
                        events.append(_new(SSEEvent, ("message", piece[6:] if piece.startswith(
                            " ", 5) else piece[5:], last_id, retry)))
                        continue
                elif piece.startswith("event:"):
                    head, _, data = piece.partition("\n")
                    if data.startswith("data:") and "\n" not in data:
                        kind = (head[7:] if head.startswith(" ", 6) else head[6:]) or "message"
                        events.append(_new(SSEEvent, (kind, data[6:] if data.startswith(" ", 5)
                                                      else data[5:], last_id, retry)))
                        continue
            if piece:
                self._lines(piece.split("\n"), events)
            self._blank(events)
            last_id, retry = self._last_id, self._retry
            clean = True
        return events

    def _lines(self, lines: list[str], events: list[SSEEvent]) -> list[SSEEvent]:
        """Apply ``lines`` (no terminators) in order; completed events go to ``events``."""
        for line in lines:
            if not line:
                self._blank(events)
            elif line.startswith("data:"):  # the hot path: most lines are data lines
                self._data.append(_value(line, 5))
            elif line[0] != ":":  # a colon first is a comment (": OPENROUTER PROCESSING")
                self._field(line)
        return events

    def _blank(self, events: list[SSEEvent]) -> None:
        """A blank line: dispatch the event if it has data, else reset its type."""
        if self._data:
            events.append(self._dispatch())
        else:
            self._event = ""

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


def _value(line: str, start: int) -> str:
    """The value of a field line from ``start`` (just after the colon), one space removed."""
    return line[start + 1:] if line.startswith(" ", start) else line[start:]


def iter_sse(chunks: Iterable[bytes]) -> Iterator[SSEEvent]:
    """Decode a whole stream of byte chunks into events (end-of-stream rule included)."""
    decoder = SSEDecoder()
    buffer, terminated = decoder._buffer, decoder._terminated
    for chunk in chunks:
        if 0x0A in chunk or 0x0D in chunk:
            events = terminated(chunk)
            if events:
                yield from events
        else:  # feed() inline: at small reads the call itself would be most of the cost
            buffer += chunk
    yield from decoder.close()


async def aiter_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[SSEEvent]:
    """Async form of :func:`iter_sse`, for ``httpx2.Response.aiter_bytes()`` and the like."""
    decoder = SSEDecoder()
    buffer, terminated = decoder._buffer, decoder._terminated
    async for chunk in chunks:
        if 0x0A in chunk or 0x0D in chunk:
            for event in terminated(chunk):
                yield event
        else:  # as in iter_sse
            buffer += chunk
    for event in decoder.close():
        yield event
