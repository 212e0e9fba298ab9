"""ApplicationError: the one root of errors a service raises for a caller to show.

Every interface (view, consumer, API) maps it the same way: ``{"type": "error", "code",
"message"}`` on a socket, the HTTP ``status`` and :meth:`ApplicationError.body` in REST.
``not_found`` is also what "not yours" looks like (DESIGN 3.1).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """The closed list of error codes clients see."""

    BAD_FRAME = "bad_frame"
    NOT_AUTHENTICATED = "not_authenticated"
    NOT_FOUND = "not_found"
    FORBIDDEN = "forbidden"
    CONFLICT = "conflict"
    INVALID = "invalid"
    RATE_LIMITED = "rate_limited"
    TOO_LARGE = "too_large"
    UNSUPPORTED_TYPE = "unsupported_type"
    UNAVAILABLE = "unavailable"


_STATUS = {
    ErrorCode.BAD_FRAME: 400,
    ErrorCode.NOT_AUTHENTICATED: 401,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.CONFLICT: 409,
    ErrorCode.INVALID: 400,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.TOO_LARGE: 413,
    ErrorCode.UNSUPPORTED_TYPE: 415,
    ErrorCode.UNAVAILABLE: 503,
}


class ApplicationError(Exception):
    """A refusal with a ``code`` (ErrorCode) and a human ``message``."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message

    @property
    def status(self) -> int:
        """The HTTP status for this code."""
        return _STATUS[self.code]

    def body(self) -> dict[str, Any]:
        """The REST body: ``{"code", "message"}``, plus whatever a subclass carries (a wiki
        conflict adds the current page and the merged text)."""
        return {"code": str(self.code), "message": self.message}

    def as_frame(self) -> dict[str, str]:
        """The wire form: ``{"type": "error", "code", "message"}``."""
        return {"type": "error", "code": str(self.code), "message": self.message}


def not_found(what: str = "object") -> ApplicationError:
    """The one answer for "does not exist" and "not yours"."""
    return ApplicationError(ErrorCode.NOT_FOUND, f"No such {what}.")
