"""The language of each page and socket: the person's own setting when they are signed in and
made one.

Django's LocaleMiddleware (earlier in the stack) has already picked the language cookie, else
the browser's ``Accept-Language``, else ``LANGUAGE_CODE``; it runs before authentication, so it
cannot see the person. This one runs after it and lets ``User.language`` win; LocaleMiddleware's
response half then names the language that was used (``Content-Language``, ``Vary``).

Sockets get the same rule from :class:`SocketLanguageMiddleware`: the language is chosen once,
at connect, and every message the consumer sends (an ``error`` frame's ``message``) is in it.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.http.cookie import parse_cookie
from django.utils import timezone, translation

__all__ = ["PersonLanguageMiddleware", "PersonTimeZoneMiddleware", "SocketLanguageMiddleware",
           "activate_person_language", "socket_language"]


class PersonLanguageMiddleware:
    """Activate ``request.user.language`` (a code of ``settings.LANGUAGES``) when it is set."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        activate_person_language(request, getattr(request, "user", None))
        return self.get_response(request)


def activate_person_language(request: HttpRequest, user: Any) -> None:
    """Activate ``user.language`` for ``request`` when ``user`` is signed in and has chosen one;
    otherwise leave the language LocaleMiddleware picked. The REST API's token auth calls it too:
    a token request has no session user when the middleware runs."""
    chosen = getattr(user, "language", "") if user is not None else ""
    if chosen and user.is_authenticated:
        translation.activate(chosen)
        request.LANGUAGE_CODE = translation.get_language()


class PersonTimeZoneMiddleware:
    """Activate ``request.user.time_zone`` (an IANA name) for the request, so templates and
    ``timezone.localtime`` show dates in it; the site's ``TIME_ZONE`` for everyone else."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        chosen = getattr(user, "time_zone", "") if user is not None else ""
        if chosen and user.is_authenticated:
            timezone.activate(zoneinfo.ZoneInfo(chosen))
        else:
            timezone.deactivate()
        return self.get_response(request)


def socket_language(scope: dict[str, Any]) -> str:
    """The language code (of ``settings.LANGUAGES``) for a socket's ``scope``: the signed-in
    person's ``User.language``, else Django's own rule for a request (the language cookie,
    else ``Accept-Language``, else ``LANGUAGE_CODE``) applied to the handshake's headers."""
    user = scope.get("user")
    chosen = getattr(user, "language", "") if user is not None and user.is_authenticated else ""
    if chosen:
        return chosen
    headers = {name.lower(): value.decode("latin-1") for name, value in scope.get("headers", [])}
    handshake = SimpleNamespace(  # what get_language_from_request reads of a request
        COOKIES=parse_cookie(headers.get(b"cookie", "")),
        META={"HTTP_ACCEPT_LANGUAGE": headers.get(b"accept-language", "")})
    return translation.get_language_from_request(handshake)  # type: ignore[arg-type]


class SocketLanguageMiddleware:
    """ASGI middleware for sockets, inside the authentication middleware (it reads
    ``scope["user"]``): the consumer runs with :func:`socket_language` active, so what it
    renders (``gettext``) is in the person's language. ``scope["language"]`` names it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        language = socket_language(scope)
        with translation.override(language):
            return await self.inner({**scope, "language": language}, receive, send)
