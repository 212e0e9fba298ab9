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

An open socket asks :func:`credentials_hold` (or, beside its other lookups in one thread hop,
:func:`credentials_hold_now`) whether what signed it in still would, on every frame and when
``credentials_changed`` reaches it (``apps.accounts.signals``).

HTTP (Django views, django-ninja): :func:`bearer_user`.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from channels.auth import AuthMiddlewareStack, get_user
from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest

from apps.accounts.models import User
from apps.accounts.services import aapi_token_authenticate, api_token_authenticate
from apps.accounts.signals import session_digest

__all__ = ["TokenAuthMiddleware", "bearer_token", "bearer_user", "credentials_hold",
           "credentials_hold_now"]


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


def credentials_hold_now(scope: dict[str, Any], *, ended_session: str | None = None) -> bool:
    """Whether the credentials a socket connected with would still sign it in now, as the
    same user: its bearer token is live (not revoked, its user active), or its session still
    exists and verifies — Django's rule: the user is active and the session carries their
    current session auth hash, which a password change or "sign out everywhere" changes.
    ``ended_session``: the digest of a session that is signing out (``credentials_changed``
    comes before Django flushes it); that session's sockets fail at once.

    Sync: call it on a database thread, e.g. beside a frame's other lookups in one hop
    (:func:`credentials_hold` is the async form). The same lookups as at connect time: one
    query for a token, two for a session (as an HTTP request's own authentication). A session
    that no longer verifies is flushed, as Django does."""
    user = scope.get("user")
    if user is None or not user.is_authenticated:
        return False
    if scope.get("auth_method") == "token":
        again = api_token_authenticate(bearer_token(_header(scope, b"authorization")))
        return again is not None and again.pk == user.pk
    key = scope["session"].session_key
    if not key or (ended_session is not None and session_digest(key) == ended_session):
        return False
    store = import_module(settings.SESSION_ENGINE).SessionStore(key)  # fresh: not the cache
    again = get_user.__wrapped__({"session": store})  # channels' get_user, on this thread
    return again.is_authenticated and again.pk == user.pk


async def credentials_hold(scope: dict[str, Any], *, ended_session: str | None = None) -> bool:
    """:func:`credentials_hold_now` in one thread hop."""
    return await database_sync_to_async(credentials_hold_now)(scope,
                                                              ended_session=ended_session)


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    """The first value of header ``name`` (lower case, as ASGI gives them)."""
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None
