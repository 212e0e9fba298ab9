"""What every confab WebSocket shares at its door: the close codes and the Origin rule
(docs/protocol.md, "Connecting"; DESIGN 4)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from django.conf import settings
from django.http.request import validate_host

__all__ = ["CLOSE_NOT_AUTHENTICATED", "CLOSE_NOT_FOUND", "CLOSE_SERVER_ERROR", "origin_allowed"]

# Codes of the application's range, 4000-4999 (RFC 6455 7.4.2): Daphne's autobahn refuses to
# send any other but 1000, so 1011 (internal error) raised instead of closing the socket.
CLOSE_NOT_AUTHENTICATED = 4401  # not signed in, or the credentials ended while connected
CLOSE_NOT_FOUND = 4404  # no such object, or not the person's: one answer for both
CLOSE_SERVER_ERROR = 4011  # the server could not deliver to this socket: reconnect and repair


def origin_allowed(scope: dict[str, Any]) -> bool:
    """Whether a socket's ``Origin`` may use its credentials: cookie sessions need an allowed
    host (CSRF does not protect WebSockets); token clients may omit the header."""
    if scope.get("auth_method") == "token":
        return True
    origin = dict(scope.get("headers", [])).get(b"origin")
    if not origin:
        return False
    host = urlparse(origin.decode("latin-1")).hostname or ""
    return validate_host(host, settings.ALLOWED_HOSTS)
