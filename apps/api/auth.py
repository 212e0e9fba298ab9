"""Who is calling the REST API: a personal API token, or the browser's session (DESIGN 3.5, 4).

As on the WebSocket (``apps.accounts.auth``), a request with ``Authorization: Bearer <token>``
is decided by the token alone: a bad token is refused and never falls back to the cookie.
Without that header the session cookie decides, and unsafe methods (POST, PATCH, DELETE) must
carry the CSRF token (``X-CSRFToken``), since a browser attaches the cookie to cross-site
requests. Token requests need no CSRF token: browsers never add the header on their own.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from django.utils.translation import gettext as _
from ninja.security.base import AuthBase
from ninja.utils import check_csrf

from apps.accounts.auth import bearer_token, bearer_user
from apps.accounts.middleware import activate_person_language
from apps.accounts.models import User
from apps.common.errors import ApplicationError, ErrorCode

__all__ = ["SessionAuth", "TokenAuth"]


class TokenAuth(AuthBase):
    """``Authorization: Bearer cf_...``: a personal API token. The token's owner's own
    language (``User.language``) then wins over ``Accept-Language``, as for a session."""

    openapi_type = "http"
    openapi_scheme = "bearer"

    def __call__(self, request: HttpRequest) -> User | None:
        user = bearer_user(request)
        activate_person_language(request, user)
        return user


class SessionAuth(AuthBase):
    """The Django session cookie, with Django's CSRF check on unsafe methods."""

    openapi_type = "apiKey"
    openapi_in = "cookie"
    openapi_name = settings.SESSION_COOKIE_NAME
    csrf = True  # django-ninja's docs page sends the CSRF token when an auth says so

    def __call__(self, request: HttpRequest) -> User | None:
        if bearer_token(request.headers.get("Authorization")) is not None:
            return None  # the token decides
        user = request.user
        if not user.is_authenticated:
            return None
        if check_csrf(request) is not None:
            raise ApplicationError(ErrorCode.FORBIDDEN,
                                   _("CSRF check failed: send the X-CSRFToken header."))
        return user
