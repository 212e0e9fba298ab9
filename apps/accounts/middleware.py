"""The language of each page: the person's own setting when they are signed in and made one.

Django's LocaleMiddleware (earlier in the stack) has already picked the language cookie, else
the browser's ``Accept-Language``, else ``LANGUAGE_CODE``; it runs before authentication, so it
cannot see the person. This one runs after it and lets ``User.language`` win; LocaleMiddleware's
response half then names the language that was used (``Content-Language``, ``Vary``).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils import translation

__all__ = ["PersonLanguageMiddleware"]


class PersonLanguageMiddleware:
    """Activate ``request.user.language`` (a code of ``settings.LANGUAGES``) when it is set."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        chosen = getattr(user, "language", "") if user is not None else ""
        if chosen and user.is_authenticated:
            translation.activate(chosen)
            request.LANGUAGE_CODE = translation.get_language()
        return self.get_response(request)
