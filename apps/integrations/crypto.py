"""Secrets at rest (DESIGN 4): a small model field over ``cryptography``'s MultiFernet.

Keys come from ``settings.CONFAB_FERNET_KEYS`` (newest first), never from SECRET_KEY. Rotation:
prepend a new key, run ``manage.py rotate_secrets`` (re-encrypts every value with the newest
key), then drop the old key. A value no key can decrypt raises loudly — never returns the
ciphertext, and nothing is pickled.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models

__all__ = ["DecryptionError", "EncryptedTextField", "decrypt", "encrypt", "fernet", "rotate"]


class DecryptionError(RuntimeError):
    """A stored secret cannot be decrypted with any configured key."""


@cache
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    if not keys:
        raise ImproperlyConfigured("CONFAB_FERNET_KEYS is empty: secrets cannot be stored")
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except ValueError as exc:
        raise ImproperlyConfigured(
            "CONFAB_FERNET_KEYS holds a key that is not a valid Fernet key "
            "(32 url-safe base64-encoded bytes; make one with Fernet.generate_key())"
        ) from exc


def fernet() -> MultiFernet:
    """The MultiFernet of the configured keys."""
    return _fernet(tuple(settings.CONFAB_FERNET_KEYS))


def encrypt(value: str) -> str:
    """Ciphertext (a Fernet token) of ``value`` under the newest key."""
    return fernet().encrypt(value.encode()).decode()


def decrypt(token: str) -> str:
    """``value`` back; DecryptionError if no configured key opens it."""
    try:
        return fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise DecryptionError(
            "a stored secret cannot be decrypted with CONFAB_FERNET_KEYS: was a key removed "
            "before `manage.py rotate_secrets` ran?"
        ) from None


def rotate(token: str) -> str:
    """The same secret re-encrypted under the newest key."""
    try:
        return fernet().rotate(token.encode()).decode()
    except InvalidToken:
        raise DecryptionError("a stored secret cannot be decrypted for rotation") from None


class EncryptedTextField(models.TextField):
    """A text field stored encrypted; empty stays empty (nothing to hide)."""

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> str | None:
        if not value:
            return value
        return decrypt(value)

    def get_prep_value(self, value: Any) -> str | None:
        value = super().get_prep_value(value)
        if not value:
            return value
        return encrypt(value)
