"""The engine's error tree: one root, errors that carry data.

``ProviderError.kind`` is one closed list (DESIGN 2.3); an error inside a 200 stream is
classified into the same kinds as an HTTP error. Adapters raise, they never yield errors, so a
consumer cannot overlook one; events already yielded before the error stay valid.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

__all__ = ["EngineError", "ErrorKind", "ProviderError", "RunCancelled", "ToolError"]


class ErrorKind(StrEnum):
    """Why a provider call failed."""

    AUTH = "auth"
    PERMISSION = "permission"
    NOT_FOUND = "not_found"
    RATE_LIMITED = "rate_limited"
    OVERLOADED = "overloaded"
    CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
    INVALID_REQUEST = "invalid_request"
    CONTENT_BLOCKED = "content_blocked"
    SERVER = "server"
    NETWORK = "network"
    STREAM_INTERRUPTED = "stream_interrupted"

    @property
    def retryable(self) -> bool:
        """Transient kinds: worth the same request again after a wait."""
        return self in _RETRYABLE


_RETRYABLE = frozenset(
    {
        ErrorKind.RATE_LIMITED,
        ErrorKind.OVERLOADED,
        ErrorKind.SERVER,
        ErrorKind.NETWORK,
        ErrorKind.STREAM_INTERRUPTED,
    }
)


class EngineError(Exception):
    """Root of every error the engine raises on purpose."""


class ProviderError(EngineError):
    """A provider call failed.

    ``kind``: the class of failure; ``message``: the provider's words (or ours);
    ``status``: HTTP status, or None for in-stream and network errors;
    ``retry_after_s``: seconds the provider asked to wait (header or body), unclamped;
    ``provider``: the protocol ("anthropic", "openai", "gemini"); ``raw``: the provider's error
    object as parsed JSON (or text); ``in_stream``: raised from inside a 200 stream;
    ``input_tokens`` / ``limit_tokens``: for ``context_length_exceeded``, the counts the
    provider's message gave, when it gave them; ``stop_reason``: the finish reason the provider
    had already sent when the error came (its raw value), else None.
    """

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
        provider: str | None = None,
        raw: Any = None,
        in_stream: bool = False,
        input_tokens: int | None = None,
        limit_tokens: int | None = None,
        stop_reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = ErrorKind(kind)
        self.message = message
        self.status = status
        self.retry_after_s = retry_after_s
        self.provider = provider
        self.raw = raw
        self.in_stream = in_stream
        self.input_tokens = input_tokens
        self.limit_tokens = limit_tokens
        self.stop_reason = stop_reason

    @property
    def retryable(self) -> bool:
        """Whether the same request may succeed after a wait."""
        return self.kind.retryable

    def to_dict(self) -> dict[str, Any]:
        """``{"kind", "message", "status", "retry_after_s", "provider", "in_stream",
        "stop_reason"}``."""
        return {
            "kind": str(self.kind),
            "message": self.message,
            "status": self.status,
            "retry_after_s": self.retry_after_s,
            "provider": self.provider,
            "in_stream": self.in_stream,
            "stop_reason": self.stop_reason,
        }

    def __repr__(self) -> str:
        return f"ProviderError({self.kind.value!r}, {self.message!r}, status={self.status})"


class ToolError(EngineError):
    """A tool failed; the message goes back to the model as an error tool result."""


class RunCancelled(EngineError):
    """The run was stopped (by a person, or because its host is shutting down)."""
