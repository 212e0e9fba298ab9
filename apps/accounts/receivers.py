"""Django's own signals turned into ``credentials_changed`` (``apps.accounts.signals``).

- A saved user whose password hash, session generation or ``is_active`` changed: a password
  change (the account page, the reset form, the admin, ``changepassword``, a hash upgrade at
  sign-in), a deactivation or reactivation. The stored row is compared in ``pre_save`` (one
  query, skipped when ``update_fields`` leaves those fields alone, as the sign-in's
  ``last_login`` update does), so every way of saving a user is covered, whatever instance it
  went through.
- A deleted user.
- ``user_logged_out``: one session ends (Django sends the signal before it flushes the session,
  so the signal carries that session's digest).

``QuerySet.update()`` sends no signal: code that changes these fields that way sends
``credentials_changed`` itself, as "sign out everywhere" and the revoking of tokens do (the
sockets' check on every frame covers the rest).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_out
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver
from django.http import HttpRequest

from apps.accounts.models import User
from apps.accounts.signals import send_credentials_changed_on_commit, session_digest

_CREDENTIAL_FIELDS = ("password", "session_generation", "is_active")
_CHANGED = "_confab_credentials_changed"  # set on the instance between pre_save and post_save


@receiver(pre_save, sender=User)
def note_changed_credentials(sender: type[User], instance: User, raw: bool = False,
                             update_fields: frozenset[str] | None = None, **kwargs: Any) -> None:
    """Remember whether this save changes what signs the person in."""
    setattr(instance, _CHANGED, False)
    if raw or instance.pk is None:
        return
    if update_fields is not None and not set(update_fields) & set(_CREDENTIAL_FIELDS):
        return
    stored = User.objects.filter(pk=instance.pk).values(*_CREDENTIAL_FIELDS).first()
    setattr(instance, _CHANGED, stored is not None and any(
        stored[name] != getattr(instance, name) for name in _CREDENTIAL_FIELDS))


@receiver(post_save, sender=User)
def announce_changed_credentials(sender: type[User], instance: User, **kwargs: Any) -> None:
    """After commit: the person's sockets check their credentials again."""
    if getattr(instance, _CHANGED, False):
        setattr(instance, _CHANGED, False)
        send_credentials_changed_on_commit(user_id=instance.pk)


@receiver(post_delete, sender=User)
def announce_deleted_user(sender: type[User], instance: User, **kwargs: Any) -> None:
    """A deleted person's sockets close."""
    send_credentials_changed_on_commit(user_id=instance.pk)


@receiver(user_logged_out)
def announce_signed_out(sender: type, request: HttpRequest, user: User | None,
                        **kwargs: Any) -> None:
    """The sockets of the session that signs out close (the person's others stay)."""
    key = request.session.session_key
    if user is not None and key:
        send_credentials_changed_on_commit(user_id=user.pk, ended_session=session_digest(key))
