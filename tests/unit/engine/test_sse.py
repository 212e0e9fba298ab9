"""The SSE decoder, from raw bytes: one test per rule of the WHATWG event-stream format
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation),
the one deliberate deviation (DESIGN 2.2), and split-invariance over every recorded stream."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.providers.sse import (
    LINES_AFTER_BYTES,
    SSEDecoder,
    SSEEvent,
    aiter_sse,
    iter_sse,
)
from tests.conftest import FIXTURES


def decode(*chunks: bytes) -> list[SSEEvent]:
    return list(iter_sse(chunks))


def datas(*chunks: bytes) -> list[str]:
    return [e.data for e in decode(*chunks)]


# -- line terminators ---------------------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_lines_end_in_lf_crlf_or_cr(eol: bytes) -> None:
    stream = b"data: a" + eol + b"data: b" + eol + eol + b"data: c" + eol + eol
    assert datas(stream) == ["a\nb", "c"]


def test_mixed_terminators_in_one_stream() -> None:
    assert datas(b"data: a\r\n\ndata: b\r\rdata: c\n\r\n") == ["a", "b", "c"]


def test_crlf_split_between_reads_is_one_terminator() -> None:
    # shared/cases/provider/003: the LF opening the next read belongs to the CR before it.
    chunks = [b"data: A\r\n", b"data: B\r", b"\n", b"data: C\r\n", b"\n"]
    assert datas(*chunks) == ["A\nB\nC"]


def test_cr_then_lf_in_separate_reads_after_blank_line() -> None:
    assert datas(b"data: A\r\r", b"\ndata: B\r\n\r\n") == ["A", "B"]


def test_lone_cr_inside_a_read_does_not_swallow_a_later_lf() -> None:
    # "\r" then "x" in one read: the next read's leading LF is a line of its own (blank line).
    assert datas(b"data: A\rdata: B", b"\n", b"\n") == ["A\nB"]


# -- fields -------------------------------------------------------------------------------------


def test_data_lines_join_with_lf() -> None:
    # shared/cases/provider/005
    stream = (b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,\n'
              b'data: "delta":{"type":"text_delta","text":"Hi"}}\n\n')
    [event] = decode(stream)
    assert event.event == "content_block_delta"
    assert event.data == ('{"type":"content_block_delta","index":0,\n'
                          '"delta":{"type":"text_delta","text":"Hi"}}')


def test_exactly_one_space_after_the_colon_is_removed() -> None:
    assert datas(b"data:x\n\n", b"data: x\n\n", b"data:  x \n\n") == ["x", "x", " x "]


def test_comment_lines_are_ignored() -> None:
    # shared/cases/provider/007: OpenRouter keep-alives
    stream = b": OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\ndata: {}\n\n"
    assert decode(stream) == [SSEEvent(data="{}")]


def test_event_type_defaults_to_message_and_resets_after_dispatch() -> None:
    events = decode(b"event: ping\ndata: 1\n\ndata: 2\n\n")
    assert [(e.event, e.data) for e in events] == [("ping", "1"), ("message", "2")]


def test_blank_line_without_data_dispatches_nothing_and_resets_the_type() -> None:
    events = decode(b"event: ping\n\ndata: 2\n\n")
    assert [(e.event, e.data) for e in events] == [("message", "2")]


def test_line_without_colon_is_a_field_with_empty_value() -> None:
    assert datas(b"data\n\n") == [""]
    assert datas(b"data\ndata\n\n") == ["\n"]


def test_empty_data_value_still_dispatches() -> None:
    assert datas(b"data:\n\n") == [""]


def test_id_persists_across_events_and_ignores_nul() -> None:
    events = decode(b"id: 7\ndata: a\n\ndata: b\n\nid: x\x00y\ndata: c\n\nid\ndata: d\n\n")
    assert [e.id for e in events] == ["7", "7", "7", ""]


def test_retry_takes_ascii_digits_only() -> None:
    events = decode(b"retry: 1500\ndata: a\n\nretry: 10a\ndata: b\n\nretry: \xd9\xa3\ndata: c\n\n")
    assert [e.retry for e in events] == [1500, 1500, 1500]


def test_llama_cpp_error_field_becomes_an_error_event() -> None:
    # A deviation: llama.cpp writes `error: {...}` where every other server writes data.
    [event] = decode(b'data: {"a":1}\n\nerror: {"code":500,"message":"oops"}\n\n')[1:]
    assert (event.event, event.data) == ("error", '{"code":500,"message":"oops"}')


def test_unknown_fields_and_wrong_case_are_ignored() -> None:
    assert datas(b"foo: bar\nData: no\ndata: yes\n\n") == ["yes"]


def test_leading_byte_order_mark_is_skipped_once() -> None:
    assert datas(b"\xef\xbb\xbfdata: a\n\n") == ["a"]
    assert datas(b"\xef\xbb", b"\xbfdata: a\n\n") == ["a"]
    # A second BOM is part of the field name, so that line is an unknown field.
    assert datas(b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n") == ["b"]


# -- end of stream (the deviation) -------------------------------------------------------------


def test_final_event_without_blank_line_is_delivered_at_end_of_stream() -> None:
    assert datas(b"data: a\n\ndata: last") == ["a", "last"]
    assert datas(b"data: a\n\ndata: last\n") == ["a", "last"]


def test_trailing_fields_without_data_are_not_an_event() -> None:
    assert datas(b"data: a\n\nevent: x\n") == ["a"]


def test_feed_alone_never_dispatches_an_unterminated_event() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n") == []
    assert decoder.close() == [SSEEvent(data="a")]


# -- how the decoder reads (its fast paths must follow the same rules) ---------------------------


def test_an_event_longer_than_the_line_threshold_decodes_the_same_in_any_reads() -> None:
    lines = b"".join(b"data: %d\n" % i for i in range(LINES_AFTER_BYTES // 4))
    stream = b"id: 7\n" + lines + b"event: big\n\ndata: after\n\n"
    whole = decode(stream)
    assert [(e.event, e.id) for e in whole] == [("big", "7"), ("message", "7")]
    assert whole[0].data.count("\n") == LINES_AFTER_BYTES // 4 - 1
    for size in (1000, 4096, 65536):
        assert decode(*[stream[i : i + size] for i in range(0, len(stream), size)]) == whole


def test_comment_lines_past_the_threshold_then_an_event() -> None:
    stream = b": keep-alive\n" * (LINES_AFTER_BYTES // 8) + b"event: x\ndata: y\n\n"
    assert [(e.event, e.data) for e in decode(*[stream[i : i + 512]
                                                for i in range(0, len(stream), 512)])] == \
        [("x", "y")]


@pytest.mark.parametrize("stream", [
    b"event: a\ndata: 1\n\ndata: 2\n\nevent:\ndata:3\n\n",  # the two shapes, empty type
    b"event: a\ndata: 1\ndata: 2\n\nevent: b\nid: 9\ndata: 3\n\n",  # not the shapes
    b"data: 1\n\n\n\n\ndata: 2\n\n\n",  # blank lines after blank lines
    b"\n\ndata: 1\n\n",  # a blank line first
], ids=["shapes", "other-shapes", "blank-runs", "blank-first"])
def test_one_read_per_event_and_one_read_for_all_give_the_same_events(stream: bytes) -> None:
    per_event = [part + b"\n\n" for part in stream.split(b"\n\n")[:-1]]
    assert decode(*per_event) == decode(stream) == decode(*[stream[i : i + 1]
                                                             for i in range(len(stream))])


def test_a_crlf_split_across_reads_after_plain_reads_is_still_one_terminator() -> None:
    # The LF only belongs to the CR when nothing came between them.
    assert datas(b"data: A\r", b"", b"\ndata: B\r\n\r\n") == ["A\nB"]
    assert datas(b"data: A\r", b"data: B", b"\n\n") == ["A\nB"]


# -- UTF-8 --------------------------------------------------------------------------------------


def test_multibyte_character_split_across_reads_is_intact() -> None:
    # shared/cases/provider/001
    chunks = [
        b'data: {"choices":[{"index":0,"delta":{"content":"'
        b"\xe8\xaf\xb4\xe2\x80\x94\xe2\x80\x94\xe9",
        b'\x82\xa3\xe4\xb8\xaa"},"finish_reason":null}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
        b"data: [DONE]\n\n",
    ]
    first = decode(*chunks)[0].data
    assert "说——那个" in first and "\ufffd" not in first


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_four_byte_emoji_split_anywhere(cut: int) -> None:
    emoji = "😀".encode()
    assert datas(b"data: " + emoji[:cut], emoji[cut:] + b"\n\n") == ["😀"]


def test_split_inside_the_field_name() -> None:
    assert datas(b"da", b"ta: x\n", b"\n") == ["x"]


def test_invalid_utf8_becomes_replacement_character() -> None:
    assert datas(b"data: a\xffb\n\n") == ["a\ufffdb"]


def test_incomplete_sequence_at_end_of_stream_is_one_replacement_at_the_end() -> None:
    assert datas(b"data: ok\xe9\x82") == ["ok\ufffd"]


async def test_async_form_gives_the_same_events() -> None:
    async def chunks():
        for piece in (b"data: a\r", b"\n\r\n", b"data: b"):
            yield piece

    assert [e async for e in aiter_sse(chunks())] == decode(b"data: a\r\n\r\ndata: b")


# -- split invariance over the real recordings --------------------------------------------------


def recordings() -> list[Path]:
    return sorted(FIXTURES.glob("*/*.sse"))


def split_at(body: bytes, cuts: list[int]) -> list[bytes]:
    edges = [0, *sorted(set(cuts)), len(body)]
    return [body[a:b] for a, b in zip(edges, edges[1:], strict=False)]


def tricky_cuts(body: bytes) -> list[int]:
    """Offsets inside a UTF-8 sequence or between a CR and its LF."""
    cuts = []
    for i in range(1, len(body)):
        if 0x80 <= body[i] < 0xC0 or (body[i - 1] == 0x0D and body[i] == 0x0A):
            cuts.append(i)
    return cuts


@pytest.mark.parametrize("path", recordings(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_recording_decodes_the_same_in_one_byte_reads(path: Path) -> None:
    body = path.read_bytes()
    whole = decode(body)
    assert whole, "a recording with no events"
    assert decode(*[body[i : i + 1] for i in range(len(body))]) == whole


@pytest.mark.parametrize("path", recordings(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_recording_decodes_the_same_split_at_each_tricky_offset(path: Path) -> None:
    body = path.read_bytes()
    whole = decode(body)
    for cut in tricky_cuts(body)[:300]:
        assert decode(body[:cut], body[cut:]) == whole, cut


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_split_of_any_recording_yields_the_unsplit_events(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(recordings()))
    body = path.read_bytes()
    tricky = tricky_cuts(body)
    offsets = st.integers(min_value=0, max_value=len(body))
    if tricky:
        offsets = offsets | st.sampled_from(tricky)
    cuts = data.draw(st.lists(offsets, max_size=40))
    assert decode(*split_at(body, cuts)) == decode(body)
