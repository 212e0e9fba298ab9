"""Errors inside a 200 stream are read right: a full context window in any server's words, a
stream cut inside its last payload, and a finish reason that came before the error.

Each context-overflow body is what the named server sends, quoted from the public report
beside it; each is served as the first payload of a real SSE stream, so it also reaches the
HTTP adapter and the retry layer the way a run meets it.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.messages import ChatRequest, Message
from apps.engine.providers.base import ProviderSettings
from apps.engine.providers.openai_compat import OpenAICompatProvider
from apps.engine.providers.retry import RetryingProvider
from apps.engine.replay import chunked, replay, replay_events
from tests.unit.engine import anthropic_sse as anthropic

CHUNK_SIZES = [None, 1, 7]


def frames(*chunks: Any, done: bool = False) -> bytes:
    """``data:`` events: dicts as JSON, strings verbatim."""
    body = "".join(c if isinstance(c, str) else f"data: {json.dumps(c)}\n\n" for c in chunks)
    return (body + ("data: [DONE]\n\n" if done else "")).encode()


def text(content: str, finish: str | None = None) -> dict[str, Any]:
    return {"id": "c1", "model": "m", "choices": [
        {"index": 0, "delta": {"content": content}, "finish_reason": finish}]}


# (server, the error chunk it streams, the counts it states: input, limit)
OVERFLOWS: list[tuple[str, dict[str, Any], tuple[int | None, int | None]]] = [
    # https://github.com/ggml-org/llama.cpp/issues/19774: a generic 500 server_error
    ("llama.cpp, server_error", {"error": {
        "code": 500, "message": "Context size has been exceeded.", "type": "server_error"}},
     (None, None)),
    # https://github.com/gpustack/gpustack/issues/852 (llama-box, llama.cpp before #15780)
    ("llama.cpp, older wording", {"error": {
        "code": 500, "message": "the request exceeds the available context size. try "
        "increasing the context size or enable context shift", "type": "server_error"}},
     (None, None)),
    # https://github.com/ggml-org/llama.cpp/issues/19774: the counts in the message and beside it
    ("llama.cpp, exceed_context_size_error", {"error": {
        "code": 400, "message": "request (4390 tokens) exceeds the available context size "
        "(4096 tokens), try increasing it", "type": "exceed_context_size_error",
        "n_prompt_tokens": 4390, "n_ctx": 4096}}, (4390, 4096)),
    # https://github.com/ggml-org/llama.cpp/pull/15780: message without counts, fields with
    ("llama.cpp, counts only in fields", {"error": {
        "code": 500, "message": "the request exceeds the available context size. try "
        "increasing the context size or enable context shift",
        "type": "exceed_context_size_error", "n_prompt_tokens": 1407, "n_ctx": 256}},
     (1407, 256)),
    # https://github.com/anomalyco/opencode/issues/11141 (LM Studio's llama.cpp engine)
    ("LM Studio, n_keep", {"error": "Cannot truncate prompt with n_keep (15028) >= n_ctx "
                                    "(7424)"}, (15028, 7424)),
    # https://github.com/Gitlawb/openclaude/issues/353
    ("LM Studio, tokens to keep", {"error": "The number of tokens to keep from the initial "
     "prompt is greater than the context length (n_keep: 13055>= n_ctx: 4096). Try to load the "
     "model with a larger context length, or provide a shorter input."}, (13055, 4096)),
    # https://github.com/dyad-sh/dyad/issues/925 (LM Studio, while streaming)
    ("LM Studio, context overflows", {"error": "Trying to keep the first 14538 tokens when "
     "context the overflows. However, the model is loaded with context length of only 2048 "
     "tokens, which is not enough. Try to load the model with a larger context length, or "
     "provide a shorter input"}, (14538, 2048)),
    # https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/2339 (LM Studio MLX engine)
    ("LM Studio MLX", {"error": {"message": "Context size has been exceeded.",
                                 "type": "internal_error"}}, (None, None)),
    # Ollama's OpenAI-compatible error object: type api_error, code null
    ("Ollama", {"error": {"message": "prompt too long; exceeded max context length by 4 "
                          "tokens", "type": "api_error", "param": None, "code": None}},
     (None, None)),
    ("Ollama, truncate off", {"error": {"message": "the input length exceeds the context "
                                        "length", "type": "api_error", "code": None}},
     (None, None)),
    # vLLM's in-stream error object (a BadRequestError with a bare 400)
    ("vLLM, decoder prompt", {"error": {
        "object": "error", "message": "The decoder prompt (length 9254) is longer than the "
        "maximum model length of 4096. Make sure that `max_model_len` is no smaller than the "
        "number of text tokens.", "type": "BadRequestError", "param": None, "code": 400}},
     (9254, 4096)),
    ("vLLM, maximum context length", {"error": {
        "object": "error", "message": "This model's maximum context length is 8192 tokens. "
        "However, you requested 9000 tokens (8000 in the messages, 1000 in the completion). "
        "Please reduce the length of the messages or completion.", "type": "BadRequestError",
        "param": None, "code": 400}}, (9000, 8192)),
    # llama-cpp-python's server
    ("llama-cpp-python", {"error": {"message": "Requested tokens (2285) exceed context window "
                                               "of 2048", "type": "internal_server_error"}},
     (2285, 2048)),
    # Together
    ("Together", {"error": {"message": "The input (516368 tokens) is longer than the model's "
                            "context length (262144 tokens).", "type": "invalid_request_error",
                            "code": None}}, (516368, 262144)),
    # Moonshot (Kimi) and DashScope (Qwen)
    ("Moonshot", {"error": {"message": "Invalid request: Your request exceeded model token "
                            "limit: 262144", "type": "invalid_request_error"}}, (None, None)),
    ("DashScope", {"error": {"message": "Range of input length should be [1, 129024]",
                             "type": "InvalidParameter", "code": "InvalidParameter"}},
     (None, None)),
]


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
@pytest.mark.parametrize(("server", "chunk", "counts"), OVERFLOWS,
                         ids=[name for name, _, _ in OVERFLOWS])
def test_a_full_context_window_in_a_200_stream_is_context_length_exceeded(
        server: str, chunk: dict[str, Any], counts: tuple[int | None, int | None],
        chunk_size: int | None) -> None:
    error = replay("openai", chunked(frames(chunk), chunk_size))["error"]
    assert error is not None and error["kind"] == "context_length_exceeded", (server, error)


@pytest.mark.parametrize(("server", "chunk", "counts"), OVERFLOWS,
                         ids=[name for name, _, _ in OVERFLOWS])
def test_the_counts_a_server_states_are_kept(server: str, chunk: dict[str, Any],
                                             counts: tuple[int | None, int | None]) -> None:
    _, error = replay_events("openai", [frames(chunk)])
    assert error is not None
    assert (error.input_tokens, error.limit_tokens) == counts


@pytest.mark.parametrize(("chunk", "kind"), [
    ({"error": {"code": 500, "message": "Internal server error", "type": "server_error"}},
     "server"),
    # a tokens-per-minute rate limit is about tokens but not about the context window
    ({"error": {"message": "Rate limit reached for model in organization on tokens per min "
                "(TPM): Limit 6000, Used 5000, Requested 2000. Too many tokens.",
                "type": "tokens", "code": "rate_limit_exceeded"}}, "rate_limited"),
    ({"error": {"message": "Invalid 'messages[1].content': expected a string, got null.",
                "type": "invalid_request_error", "code": None}}, "invalid_request"),
])
def test_generic_errors_that_do_not_name_the_context_keep_their_kind(chunk: dict[str, Any],
                                                                      kind: str) -> None:
    assert replay("openai", [frames(chunk)])["error"]["kind"] == kind


async def test_the_overflow_reaches_the_run_at_once_not_after_five_retries() -> None:
    served: list[int] = []
    waits: list[float] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        served.append(1)
        return httpx2.Response(200, content=frames(OVERFLOWS[0][1]),
                               headers={"content-type": "text/event-stream"})

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    settings = ProviderSettings(protocol="openai", base_url="http://localhost:8080/v1")
    inner = OpenAICompatProvider(settings, transport=httpx2.MockTransport(handler))
    request = ChatRequest(model="local", messages=[Message(role="user", content="hi")])
    async with inner:
        retrying = RetryingProvider(inner, sleep=sleep)
        with pytest.raises(ProviderError) as raised:
            async for _ in retrying.stream_chat(request):
                pass
    assert raised.value.kind is ErrorKind.CONTEXT_LENGTH_EXCEEDED
    assert (len(served), waits) == (1, [])  # compaction's business, not the retry ladder's


# -- a stream cut inside its last payload -------------------------------------------------------

CUT = 'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"hel'


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
@pytest.mark.parametrize("ending", ["", "\n", "\n\n"], ids=["bare", "one-newline", "dispatched"])
def test_a_stream_cut_inside_its_last_json_payload_is_interrupted(chunk_size: int | None,
                                                                  ending: str) -> None:
    body = frames(text("Hello, ")) + (CUT + ending).encode()
    result = replay("openai", chunked(body, chunk_size))
    assert result["error"]["kind"] == "stream_interrupted"
    assert result["text"] == "Hello, "  # what arrived whole is kept


def test_a_broken_payload_with_more_after_it_is_a_server_fault() -> None:
    body = frames(text("a")) + (CUT + "\n\n").encode() + frames(text("b", "stop"), done=True)
    assert replay("openai", [body])["error"]["kind"] == "server"


def test_an_html_error_page_as_the_last_payload_is_a_server_fault() -> None:
    body = frames(text("a"), "data: <html><body>502 Bad Gateway</body></html>\n\n")
    assert replay("openai", [body])["error"]["kind"] == "server"


def test_a_cut_trailing_usage_payload_after_the_finish_reason_ends_normally() -> None:
    body = frames(text("done", "stop")) + b'data: {"choices":[],"usage":{"prompt_tok'
    result = replay("openai", [body])
    assert (result["error"], result["finish_reason"], result["text"]) == (None, "stop", "done")


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_gemini_and_anthropic_streams_cut_inside_their_last_payload_are_interrupted(
        chunk_size: int | None) -> None:
    gemini = (b'data: {"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"}}]}'
              b'\r\n\r\ndata: {"candidates":[{"content":{"parts":[{"text":"lo')
    assert replay("gemini", chunked(gemini, chunk_size))["error"]["kind"] == \
        "stream_interrupted"
    claude = anthropic.start() + anthropic.text_block(0, "Hel") + b'event: message_delta\n' \
        b'data: {"type":"message_delta","delta":{"stop_re'
    assert replay("anthropic", chunked(claude, chunk_size))["error"]["kind"] == \
        "stream_interrupted"


# -- a finish reason sent before an error chunk -------------------------------------------------


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_a_finish_reason_sent_before_an_error_chunk_is_kept(chunk_size: int | None) -> None:
    body = frames(text("Partial answer"), text("", "length"),
                  {"error": {"message": "upstream connection reset", "code": 502}})
    result = replay("openai", chunked(body, chunk_size))
    assert result["finish_reason"] == "length"
    assert result["error"]["kind"] == "server"
    assert result["error"]["stop_reason"] == "length"
    assert result["text"] == "Partial answer"


def test_a_finish_reason_before_an_error_event_is_kept() -> None:
    body = frames(text("ok", "stop"), 'event: error\ndata: {"error": {"message": "Rate limit '
                  'reached", "type": "tokens", "code": "rate_limit_exceeded"}}\n\n')
    result = replay("openai", [body])
    assert (result["finish_reason"], result["error"]["kind"]) == ("stop", "rate_limited")


def test_anthropic_and_gemini_keep_a_stop_reason_sent_before_an_error() -> None:
    message_delta = anthropic.frame("message_delta", {
        "type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {}})
    claude = (anthropic.start() + anthropic.text_block(0, "Hi") + message_delta
              + anthropic.frame("error", json.loads(anthropic.error_body("overloaded_error",
                                                                          "Overloaded"))))
    result = replay("anthropic", [claude])
    assert (result["finish_reason"], result["error"]["kind"]) == ("max_tokens", "overloaded")
    gemini = (b'data: {"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},'
              b'"finishReason":"MAX_TOKENS"}]}\r\n\r\n'
              b'data: {"error":{"code":503,"message":"The model is overloaded.",'
              b'"status":"UNAVAILABLE"}}\r\n\r\n')
    result = replay("gemini", [gemini])
    assert (result["finish_reason"], result["error"]["kind"]) == ("MAX_TOKENS", "overloaded")


def test_an_error_chunk_before_any_finish_reason_has_none() -> None:
    body = frames(text("a"), {"error": {"message": "boom", "type": "server_error"}},
                  text("", "stop"))
    result = replay("openai", [body])
    assert result["finish_reason"] is None and result["error"]["stop_reason"] is None
