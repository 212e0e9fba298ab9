"""ApplicationError: the one root of errors a service raises for a caller to show.

Every interface (view, consumer, API) maps it the same way: ``{"type": "error", "code",
"message"}`` on a socket, the HTTP ``status`` and :meth:`ApplicationError.body` in REST.
``not_found`` is also what "not yours" looks like (DESIGN 3.1).

The ``message`` is for people, in the active language (DESIGN 5): services mark it with
``gettext`` (or ``gettext_lazy`` for a module constant) and it is rendered when the error is
made, so a view or consumer that activated the person's language (the middleware does, for
requests and sockets alike) sends it in that language. The ``code`` is protocol and stays English.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy


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
    """A refusal with a ``code`` (ErrorCode) and a human ``message`` (a str, or a lazy
    translation rendered here, in the language active when the error is made)."""

    def __init__(self, code: ErrorCode, message: str | Promise) -> None:
        self.message = str(message)
        super().__init__(self.message)
        self.code = ErrorCode(code)

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


# One whole sentence per kind of object, so that each translates as a sentence.
NOT_FOUND_MESSAGES: dict[str, Promise] = {
    "object": gettext_lazy("No such object."),
    "conversation": gettext_lazy("No such conversation."),
    "file": gettext_lazy("No such file."),
    "image": gettext_lazy("No such image."),
    "invitation": gettext_lazy("No such invitation."),
    "MCP server": gettext_lazy("No such MCP server."),
    "member": gettext_lazy("No such member."),
    "message": gettext_lazy("No such message."),
    "page": gettext_lazy("No such page."),
    "room": gettext_lazy("No such room."),
    "team": gettext_lazy("No such team."),
    "token": gettext_lazy("No such token."),
    "wiki": gettext_lazy("No such wiki."),
}


def not_found(what: str = "object") -> ApplicationError:
    """The one answer for "does not exist" and "not yours": ``not_found``, "No such <what>."
    in the active language. ``what`` is a key of :data:`NOT_FOUND_MESSAGES`; any other kind
    answers as the generic "No such object." (tests/integration/i18n checks the literal ones)."""
    return ApplicationError(ErrorCode.NOT_FOUND,
                            NOT_FOUND_MESSAGES.get(what, NOT_FOUND_MESSAGES["object"]))
