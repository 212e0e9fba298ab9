"""Secrets at rest (DESIGN 4): a small model field over ``cryptography``'s MultiFernet.

Keys come from ``settings.CONFAB_FERNET_KEYS`` (newest first), never from SECRET_KEY. Rotation:
prepend a new key, run ``manage.py rotate_secrets`` (re-encrypts every value with the newest
key), then drop the old key. A value no key can decrypt raises loudly — never returns the
ciphertext, and nothing is pickled.

A row's secret is decrypted when its attribute is read, not when the row is loaded: a provider
whose key no longer decrypts must not break what only lists it (a room's model choices, the
admin page where a new key is entered), and loading a row costs no decryption it does not use.
What reads every field's attribute still decrypts them all (Django's ``refresh_from_db()``
without ``fields``, ``full_clean()``).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.models.query_utils import DeferredAttribute

__all__ = ["DecryptionError", "EncryptedTextField", "Sealed", "decrypt", "encrypt", "fernet",
           "rotate", "secret_opens", "secret_stored"]


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


class Sealed:
    """A secret as the database holds it (its Fernet token), not yet decrypted. A model's
    attribute opens it on first read; ``values()`` and ``values_list()`` of the field give it
    as it is (:meth:`open` decrypts). Its ``repr`` and ``str`` never show the token."""

    __slots__ = ("token",)

    def __init__(self, token: str) -> None:
        self.token = token

    def open(self) -> str:
        """The secret; DecryptionError if no configured key opens it."""
        return decrypt(self.token)

    def __repr__(self) -> str:
        return "<Sealed secret>"

    __str__ = __repr__


class _OpenedOnRead(DeferredAttribute):
    """The field's attribute: a loaded :class:`Sealed` is decrypted on its first read (the
    plaintext then stays on the instance, as an assigned value does). A data descriptor (it
    has ``__set__``): the value lives in the instance's ``__dict__``, which would otherwise
    answer reads without asking it."""

    def __get__(self, instance: models.Model | None, cls: type | None = None) -> Any:
        if instance is None:
            return self
        value = super().__get__(instance, cls)
        if isinstance(value, Sealed):
            value = instance.__dict__[self.field.attname] = value.open()
        return value

    def __set__(self, instance: models.Model, value: Any) -> None:
        instance.__dict__[self.field.attname] = value


class EncryptedTextField(models.TextField):
    """A text field stored encrypted; empty stays empty (nothing to hide). Loaded as a
    :class:`Sealed` token, decrypted when the attribute is read (DecryptionError there); a
    row saved with its secret unread keeps its token as stored."""

    descriptor_class = _OpenedOnRead

    def from_db_value(self, value: str | None, expression: Any, connection: Any
                      ) -> Sealed | str | None:
        if not value:
            return value
        return Sealed(value)

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        # the value as held (a Sealed token stays sealed), not the attribute, which opens it
        if self.attname in model_instance.__dict__:
            return model_instance.__dict__[self.attname]
        return super().pre_save(model_instance, add)

    def get_prep_value(self, value: Any) -> str | None:
        if isinstance(value, Sealed):
            return value.token
        value = super().get_prep_value(value)
        if not value:
            return value
        return encrypt(value)


def secret_opens(instance: models.Model, name: str) -> bool:
    """Whether the secret in ``instance``'s EncryptedTextField ``name`` decrypts (an empty one
    does: there is nothing to open)."""
    try:
        getattr(instance, name)
    except DecryptionError:
        return False
    return True


def secret_stored(instance: models.Model, name: str) -> bool:
    """Whether ``instance`` holds a secret in its EncryptedTextField ``name``, without
    decrypting it (a secret no key opens is still stored)."""
    if name in instance.__dict__:
        return bool(instance.__dict__[name])
    # deferred: read the token (refresh_from_db would open it)
    rows = type(instance)._base_manager.db_manager(instance._state.db).filter(pk=instance.pk)
    return bool(rows.values_list(name, flat=True).first())
