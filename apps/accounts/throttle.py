"""Throttles in Django's cache: sign-in against password guessing, and sign-up and password
reset against floods (mass sign-ups, name probing, mail bombing).

Sign-in counts failures, in two counters, each over a fixed window of
``CONFAB["LOGIN_WINDOW_S"]`` seconds that starts at its first failure: failures for one username
from one address (``LOGIN_FAILURES``, 5 by default), and failures from one address whatever the
username (``LOGIN_ADDRESS_FAILURES``, 50: a slower brake on trying one password against many
accounts). At either limit the password is not even checked until the window ends. A success
clears the username's counter for that address. Counting the username alone would let anyone
lock a person out; the address is ``REMOTE_ADDR`` (behind a proxy, configure the proxy to pass
the client's address there).

The counting lives in the authentication backend, so every form that signs people in (ours and
the admin's) is throttled; :func:`login_locked` lets a form say why it refuses.

Sign-up and password reset count every attempt (:func:`attempt_allowed`), refused ones too,
over the same window: per email address (``SIGNUP_ATTEMPTS``, ``PASSWORD_RESET_ATTEMPTS``: 5)
and per client (``SIGNUP_CLIENT_ATTEMPTS``, ``PASSWORD_RESET_CLIENT_ATTEMPTS``: 20). Past
either limit the form refuses with :data:`THROTTLED` and does nothing — no account, no mail;
the answer is the same whether the address has an account or not.

With Redis the cache, and so the counters, are shared by every process (``config/settings.py``).
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.core.cache import cache
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from apps.accounts.models import User

__all__ = ["THROTTLED", "ThrottledModelBackend", "attempt_allowed", "login_failed",
           "login_locked", "login_succeeded"]

THROTTLED = _("Wait a few minutes and try again.")
"""How every throttled form ends its refusal (after what it refused: sign-ins, sign-ups...)."""
_LIMITS = {"signup": ("SIGNUP_ATTEMPTS", "SIGNUP_CLIENT_ATTEMPTS"),
           "password_reset": ("PASSWORD_RESET_ATTEMPTS", "PASSWORD_RESET_CLIENT_ATTEMPTS")}


def _address(request: HttpRequest) -> str:
    return request.META.get("REMOTE_ADDR") or "unknown"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _pair_key(request: HttpRequest, username: str) -> str:
    return "login-failures:pair:" + _digest(username.strip().lower(), _address(request))


def _address_key(request: HttpRequest) -> str:
    return "login-failures:address:" + _digest(_address(request))


def login_locked(request: HttpRequest, username: str) -> bool:
    """Whether sign-ins for ``username`` from this request's address wait for the window."""
    limits = {_pair_key(request, username): settings.CONFAB["LOGIN_FAILURES"],
              _address_key(request): settings.CONFAB["LOGIN_ADDRESS_FAILURES"]}
    counts = cache.get_many(list(limits))
    return any(counts.get(key, 0) >= limit for key, limit in limits.items())


def login_failed(request: HttpRequest, username: str) -> None:
    """Count one failed sign-in for ``username`` and for the address."""
    for key in (_pair_key(request, username), _address_key(request)):
        _count(key)


def login_succeeded(request: HttpRequest, username: str) -> None:
    """Forget the failures of ``username`` from this address (the address counter stays)."""
    cache.delete(_pair_key(request, username))


def attempt_allowed(request: HttpRequest, action: Literal["signup", "password_reset"],
                    email: str) -> bool:
    """Count one attempt at ``action`` for the email address (any case, blanks around
    ignored) and for the request's client; False once either count is past its limit in the
    window (the caller then refuses with :data:`THROTTLED` and does nothing)."""
    per_email, per_client = (settings.CONFAB[name] for name in _LIMITS[action])
    email_count = _count(f"{action}-attempts:email:" + _digest(email.strip().lower()))
    client_count = _count(f"{action}-attempts:address:" + _digest(_address(request)))
    return email_count <= per_email and client_count <= per_client


def _count(key: str) -> int:
    """Add one to the counter ``key`` (its window starts with its first count); the count."""
    window = settings.CONFAB["LOGIN_WINDOW_S"]
    cache.add(key, 0, timeout=window)  # starts the window; no-op while it runs
    try:
        return cache.incr(key)
    except ValueError:  # the window ended between add() and incr()
        cache.set(key, 1, timeout=window)
        return 1


class ThrottledModelBackend(ModelBackend):
    """Django's ``ModelBackend`` behind the throttle. Calls without a request (management
    commands, code) are not throttled: only requests come from people who may be guessing."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None,
        password: str | None = None, **kwargs: Any,
    ) -> User | None:
        """The user for these credentials, or None (also while locked, unchecked)."""
        if request is None:
            return super().authenticate(request, username, password, **kwargs)
        name = username if username is not None else kwargs.get(User.USERNAME_FIELD) or ""
        if login_locked(request, name):
            return None
        user = super().authenticate(request, username, password, **kwargs)
        if user is None:
            login_failed(request, name)
        else:
            login_succeeded(request, name)
        return user
