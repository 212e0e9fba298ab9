"""Classify provider errors into the closed list of kinds (DESIGN 2.3).

One classifier serves HTTP error responses and errors inside a 200 stream (shared/cases/provider,
ERROR-CLASSIFY): the structured code first, then the context-overflow message patterns, then the
HTTP status. A context-overflow message outranks a generic code (``server_error``,
``api_error``, ``invalid_request_error``, a bare 400 or 500): local servers send exactly that
(llama.cpp ``{"code": 500, "type": "server_error", "message": "Context size has been
exceeded."}``, Ollama's ``api_error``, LM Studio's bare string), and only
``context_length_exceeded`` leads to compaction instead of five retries of the same request.
Sources of the codes:

- Anthropic: https://docs.anthropic.com/en/api/errors (``error.type``; 529 overloaded_error)
- OpenAI: https://platform.openai.com/docs/guides/error-codes (``error.code`` / ``error.type``)
- Gemini: https://ai.google.dev/gemini-api/docs/troubleshooting (``error.status``, google.rpc
  codes; ``RetryInfo.retryDelay`` in ``error.details``)
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

from apps.engine.errors import ErrorKind, ProviderError

__all__ = ["classify_error", "error_object", "parse_retry_after"]

K = ErrorKind

# Structured codes, across providers (their spellings do not collide).
_CODE_KINDS: dict[str, ErrorKind] = {
    # Anthropic error.type
    "authentication_error": K.AUTH,
    "permission_error": K.PERMISSION,
    "billing_error": K.PERMISSION,
    "not_found_error": K.NOT_FOUND,
    "rate_limit_error": K.RATE_LIMITED,
    "overloaded_error": K.OVERLOADED,
    "api_error": K.SERVER,
    "timeout_error": K.SERVER,
    "request_too_large": K.INVALID_REQUEST,
    "invalid_request_error": K.INVALID_REQUEST,
    # OpenAI and compatible error.code / error.type
    "context_length_exceeded": K.CONTEXT_LENGTH_EXCEEDED,
    "exceed_context_size_error": K.CONTEXT_LENGTH_EXCEEDED,
    "string_above_max_length": K.CONTEXT_LENGTH_EXCEEDED,
    "invalid_api_key": K.AUTH,
    "incorrect_api_key": K.AUTH,
    "unauthorized": K.AUTH,
    "insufficient_quota": K.PERMISSION,  # a 429 that waiting does not fix
    "rate_limit_exceeded": K.RATE_LIMITED,
    "tokens": K.RATE_LIMITED,
    "requests": K.RATE_LIMITED,
    "model_not_found": K.NOT_FOUND,
    "content_filter": K.CONTENT_BLOCKED,
    "content_policy_violation": K.CONTENT_BLOCKED,
    "server_error": K.SERVER,
    "internal_error": K.SERVER,
    "provider_unavailable": K.SERVER,
    "service_unavailable": K.OVERLOADED,
    "overloaded": K.OVERLOADED,
    # Gemini error.status (google.rpc.Code names)
    "INVALID_ARGUMENT": K.INVALID_REQUEST,
    "FAILED_PRECONDITION": K.INVALID_REQUEST,
    "OUT_OF_RANGE": K.INVALID_REQUEST,
    "UNAUTHENTICATED": K.AUTH,
    "PERMISSION_DENIED": K.PERMISSION,
    "NOT_FOUND": K.NOT_FOUND,
    "RESOURCE_EXHAUSTED": K.RATE_LIMITED,
    "UNAVAILABLE": K.OVERLOADED,
    "INTERNAL": K.SERVER,
    "DEADLINE_EXCEEDED": K.SERVER,
    "UNKNOWN": K.SERVER,
    # Google ErrorInfo.reason in error.details: more specific than the status (a bad key is a
    # 400 INVALID_ARGUMENT with reason API_KEY_INVALID)
    "API_KEY_INVALID": K.AUTH,
    "API_KEY_SERVICE_BLOCKED": K.PERMISSION,
    "SERVICE_DISABLED": K.PERMISSION,
    "CONSUMER_SUSPENDED": K.PERMISSION,
}

# Context overflow in each provider's words; each pattern may capture (input, limit) counts.
_CONTEXT_PATTERNS: tuple[tuple[re.Pattern[str], str | None], ...] = tuple(
    (re.compile(p, re.IGNORECASE), order)
    for p, order in (
        # Anthropic: "prompt is too long: 216868 tokens > 200000 maximum"
        (r"prompt is too long(?::\s*(\d+) tokens > (\d+))?", "il"),
        # Anthropic: "input length and `max_tokens` exceed context limit: 1 + 2 > 3"
        (r"input length and `?max_tokens`? exceed context limit", None),
        # Gemini: "The input token count (218152) exceeds the maximum number ... (65536)"
        (r"input token count\s*(?:\((\d+)\))?\s*exceeds the maximum number of tokens"
         r"(?: allowed)?\s*(?:\((\d+)\))?", "il"),
        # Vertex AI: "the input token count is 1200000 but model only supports up to 1048576"
        (r"input token count is (\d+) but (?:the )?model only supports up to (\d+)", "il"),
        # OpenAI: "maximum context length is 4097 tokens. However, you requested 4120 tokens",
        # older "..., however you requested 4322 tokens", "However, your messages resulted in
        # 7575 tokens"; OpenRouter: "However, you requested about 150000 tokens"
        (r"maximum context length is (\d+) tokens[.,] However,? (?:you requested|your messages "
         r"resulted in) (?:about )?(\d+)", "li"),
        # xAI: "This model's maximum prompt length is 131072 but the request contains 136973
        # tokens." (cline/cline#3120)
        (r"maximum prompt length is (\d+) but the request contains (\d+) tokens", "li"),
        # TGI (Hugging Face, Together): "`inputs` tokens + `max_new_tokens` must be <= 8193.
        # Given: 8000 `inputs` tokens and 1000 `max_new_tokens`"
        (r"`inputs` tokens \+ `max_new_tokens` must be <= (\d+)\. Given: (\d+) `inputs`", "li"),
        # vLLM: "maximum context length is 4096 tokens. However, your request has 5000 input"
        (r"maximum context length is (\d+) tokens.*?(\d+) input tokens", "li"),
        # Azure: "Input tokens exceed the configured limit of 272000 tokens. Your messages
        # resulted in 509178 tokens."
        (r"exceed the configured limit of (\d+) tokens\.\s*Your messages resulted in (\d+)", "li"),
        # Mistral: "Prompt contains 140000 tokens, too large for model with 131072 maximum"
        (r"prompt contains (\d+) tokens.{0,40}?too large for model with (\d+)", "il"),
        # llama.cpp server: "request (4390 tokens) exceeds the available context size (4096
        # tokens), try increasing it"; older "the request exceeds the available context size.
        # try increasing the context size or enable context shift" (ggml-org/llama.cpp#15780,
        # #19774); llama.cpp and LM Studio MLX: "Context size has been exceeded."
        (r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)", "il"),
        (r"exceeds the available context size", None),
        (r"context size has been exceeded", None),
        # llama.cpp / LM Studio: "Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)",
        # "The number of tokens to keep from the initial prompt is greater than the context
        # length (n_keep: 13055>= n_ctx: 4096)" (anomalyco/opencode#11141, Gitlawb/openclaude#353)
        (r"n_keep:? \(?(\d+)\)?\s*>=\s*n_ctx:? \(?(\d+)", "il"),
        # LM Studio: "Trying to keep the first 15857 tokens when context the overflows. However,
        # the model is loaded with context length of only 4096 tokens" (lmstudio-bug-tracker#237)
        (r"keep the first (\d+) tokens when context (?:the )?overflows.*?context length of only "
         r"(\d+)", "il"),
        # llama-cpp-python: "Requested tokens (2285) exceed context window of 2048"
        (r"requested tokens \((\d+)\) exceed context window of (\d+)", "il"),
        # vLLM: "The decoder prompt (length 9254) is longer than the maximum model length of
        # 4096", V1 "Prompt length of 9254 is longer than the maximum model length of 4096"
        (r"(?:prompt \(length|prompt length of) (\d+)\)? is longer than the maximum model "
         r"length of (\d+)", "il"),
        # Together: "The input (516368 tokens) is longer than the model's context length
        # (262144 tokens)."
        (r"input \((\d+) tokens\) is longer than the model's context length \((\d+)", "il"),
        # Ollama: "prompt too long; exceeded max context length by 4 tokens" (by how much, not
        # the count); embeddings and truncate=false: "the input length exceeds the context length"
        (r"exceeded max context length", None),
        (r"input length exceeds the (?:maximum )?context length", None),
        # Moonshot: "Your request exceeded model token limit: 262144"; DashScope (Qwen): "Range of
        # input length should be [1, 129024]"
        (r"exceeded model token limit", None),
        (r"range of input length should be", None),
        # Perplexity and others
        (r"total length of all messages is too long", None),
        (r"exceeds the (?:model's )?context (?:window|length)", None),
        (r"context window (?:is full|exceeded)", None),
        (r"context[ _]length[ _]exceeded", None),
        (r"reduce the length of the messages", None),
        (r"too many (?:input )?tokens", None),
    )
)
# Codes that say only "something failed": a context-overflow message outranks them.
_GENERIC = frozenset({None, K.SERVER, K.INVALID_REQUEST, K.CONTEXT_LENGTH_EXCEEDED})

_CONTENT_PATTERNS = re.compile(r"content (?:management )?policy|safety system|blocked", re.I)


def error_object(body: Any) -> dict[str, Any]:
    """The error object inside a provider error body: ``{"type":"error","error":{...}}``,
    ``{"error": {...}}``, ``[{"error": {...}}]`` (Gemini via some gateways) or a bare object."""
    if isinstance(body, list) and body:
        body = body[0]
    if not isinstance(body, dict):
        return {"message": str(body)} if body else {}
    inner = body.get("error")
    if isinstance(inner, dict):
        return inner
    if isinstance(inner, str):
        return {"message": inner, **{k: v for k, v in body.items() if k != "error"}}
    return body


def parse_retry_after(headers: Mapping[str, str], body: Any = None, *, now: float | None = None
                      ) -> float | None:
    """Seconds to wait as the provider asked, unclamped, or None.

    ``retry-after-ms`` (OpenAI), ``retry-after`` in delta-seconds or HTTP-date form (RFC 9110
    section 10.2.3), then Gemini's ``RetryInfo.retryDelay`` ("37s") in the body.
    ``now``: Unix time for the HTTP-date form (defaults to the clock).
    """
    lower = {k.lower(): v for k, v in headers.items()}
    if (ms := _seconds(lower.get("retry-after-ms"))) is not None:
        return ms / 1000.0
    if (value := lower.get("retry-after")) is not None:
        value = value.strip()
        if (seconds := _seconds(value)) is not None:
            return seconds
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            when = None
        if when is not None:
            return max(when.timestamp() - (time.time() if now is None else now), 0.0)
    return _retry_delay_from_body(body)


def _seconds(value: str | None) -> float | None:
    """A finite, non-negative number of seconds, or None ("nan", "inf" and junk are ignored)."""
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return max(number, 0.0) if math.isfinite(number) else None


def _retry_delay_from_body(body: Any) -> float | None:
    details = error_object(body).get("details")
    if not isinstance(details, list):
        return None
    for detail in details:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            match = re.fullmatch(r"\s*([\d.]+)s\s*", str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


def _kind_from_status(status: int | None) -> ErrorKind | None:
    if status is None:
        return None
    if status == 401:
        return K.AUTH
    if status == 403:
        return K.PERMISSION
    if status == 404:
        return K.NOT_FOUND
    if status == 413:
        return K.INVALID_REQUEST
    if status == 429:
        return K.RATE_LIMITED
    if status in (503, 529):
        return K.OVERLOADED
    if status >= 500:
        return K.SERVER
    if status >= 400:
        return K.INVALID_REQUEST
    return None


def _context_counts(message: str) -> tuple[bool, int | None, int | None]:
    for pattern, order in _CONTEXT_PATTERNS:
        match = pattern.search(message)
        if not match:
            continue
        if order is None or match.lastindex is None:
            return True, None, None
        groups = [int(g) if g else None for g in match.groups()]
        first, second = (groups + [None, None])[:2]
        return (True, first, second) if order == "il" else (True, second, first)
    return False, None, None


def _count_fields(err: dict[str, Any], limit: int | None) -> tuple[int | None, int | None]:
    """llama.cpp's counts beside its message: ``n_prompt_tokens`` and ``n_ctx``
    (ggml-org/llama.cpp#15780); ``(None, limit)`` without them."""
    prompt, context = _count(err.get("n_prompt_tokens")), _count(err.get("n_ctx"))
    if prompt is None:
        return None, limit
    return prompt, context if context is not None else limit


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _codes(err: dict[str, Any]) -> list[str]:
    details = err.get("details") if isinstance(err.get("details"), list) else []
    reasons = [d.get("reason") for d in details if isinstance(d, dict)
               and str(d.get("@type", "")).endswith("ErrorInfo")]
    codes = [*reasons, err.get("code"), err.get("type"), err.get("status")]
    meta = err.get("metadata")
    if isinstance(meta, dict):
        codes.append(meta.get("error_type"))
    return [c for c in codes if isinstance(c, str) and c]


def _numeric_status(err: dict[str, Any], status: int | None) -> int | None:
    if status is not None and status != 200:
        return status
    code = err.get("code")
    if isinstance(code, int) and 400 <= code < 600:
        return code
    return None


def classify_error(
    body: bytes | str | Any,
    *,
    provider: str,
    status: int | None = None,
    headers: Mapping[str, str] | None = None,
    in_stream: bool = False,
    now: float | None = None,
) -> ProviderError:
    """Turn an error response body (raw bytes/text, or already parsed JSON) into a ProviderError.

    ``status``: the HTTP status (None or 200 for an error inside a stream). Order: structured
    code, then context-overflow patterns over the message (they outrank a generic code, see the
    module docstring), then the numeric status; an in-stream error nobody classified is
    ``server``.
    """
    parsed = _parse_body(body)
    err = error_object(parsed)
    message = str(err.get("message") or "").strip() or _fallback_message(parsed, status)
    kind: ErrorKind | None = None
    for code in _codes(err):
        kind = _CODE_KINDS.get(code) or _CODE_KINDS.get(code.lower())
        if kind is not None:
            break
    is_context, input_tokens, limit = _context_counts(message)
    if is_context and kind in _GENERIC:
        kind = K.CONTEXT_LENGTH_EXCEEDED
    if kind is K.CONTEXT_LENGTH_EXCEEDED and input_tokens is None:
        input_tokens, limit = _count_fields(err, limit)
    if kind is None:
        kind = _kind_from_status(_numeric_status(err, status))
    if kind in (None, K.INVALID_REQUEST) and _CONTENT_PATTERNS.search(message) and status != 400:
        kind = K.CONTENT_BLOCKED
    if kind is None:
        kind = K.SERVER
    return ProviderError(
        kind,
        message,
        status=status if status != 200 else None,
        retry_after_s=parse_retry_after(headers or {}, parsed, now=now),
        provider=provider,
        raw=parsed,
        in_stream=in_stream,
        input_tokens=input_tokens,
        limit_tokens=limit,
    )


def _parse_body(body: bytes | str | Any) -> Any:
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            return json.loads(body)
        except ValueError:
            return body.strip()
    return body


def _fallback_message(parsed: Any, status: int | None) -> str:
    if isinstance(parsed, str) and parsed:
        return parsed[:500]
    return f"HTTP {status}" if status else "provider error"
