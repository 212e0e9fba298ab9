"""Who is calling: personal API tokens for WebSockets and HTTP, beside cookie sessions.

WebSockets: :class:`TokenAuthMiddleware` wraps Channels' ``AuthMiddlewareStack``. With an
``Authorization: Bearer <token>`` header the token decides (a bad token gives an anonymous user;
it never falls back to the cookie); without one the session cookie decides. Either way the scope
gets ``user`` and ``auth_method``:

- ``"token"``: the header was present. Browsers cannot set headers on a WebSocket, so such a
  connection is a script, and the Origin check (which exists against cross-site cookie use)
  does not apply to it.
- ``"session"``: no header; the user comes from the session cookie (possibly anonymous). These
  connections must pass the Origin check.

Tokens are never read from the query string: URLs end up in logs.

HTTP (Django views, django-ninja): :func:`bearer_user`.
"""

from __future__ import annotations

from typing import Any

from channels.auth import AuthMiddlewareStack
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest

from apps.accounts.models import User
from apps.accounts.services import aapi_token_authenticate, api_token_authenticate

__all__ = ["TokenAuthMiddleware", "bearer_token", "bearer_user"]


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization`` header value ``Bearer <token>`` (scheme in any case,
    RFC 9110 11.1), or None when the value is missing or another scheme."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def bearer_user(request: HttpRequest) -> User | None:
    """The user of the request's bearer token, or None (no header, or a bad token)."""
    return api_token_authenticate(bearer_token(request.headers.get("Authorization")))


class TokenAuthMiddleware:
    """ASGI middleware: ``scope["user"]`` from a bearer token or else the session cookie, and
    ``scope["auth_method"]`` ("token" or "session"). Use it in place of
    ``AuthMiddlewareStack(inner)``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.session_stack = AuthMiddlewareStack(inner)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        authorization = _header(scope, b"authorization")
        if authorization is None:
            return await self.session_stack({**scope, "auth_method": "session"}, receive, send)
        user = await aapi_token_authenticate(bearer_token(authorization))
        scope = {**scope, "user": user or AnonymousUser(), "auth_method": "token"}
        return await self.inner(scope, receive, send)


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    """The first value of header ``name`` (lower case, as ASGI gives them)."""
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None
