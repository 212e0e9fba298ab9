"""Signals other apps listen to.

``credentials_changed`` is sent after the transaction that may have ended a person's
credentials has committed: a password change or "sign out everywhere" (both change the session
auth hash), a deactivation or deletion, a revoked API token, or signing out (one session).
Keyword arguments:

- ``user_id`` (int);
- ``ended_session`` (str | None): when one session is ending (``user_logged_out`` is sent
  *before* Django flushes it), the SHA-256 of its key (:func:`session_digest`), else None.

The rooms app connects it to have the person's open sockets check their credentials again and
close with 4401 when they no longer sign them in (:func:`apps.accounts.auth.credentials_hold`).
``apps.accounts.receivers`` sends it for Django's own signals.

``membership_changed`` is sent after the transaction that removed a membership or changed its
role has committed — never for a change that rolled back — with keyword arguments:

- ``team_id`` (int), ``user_id`` (int);
- ``role`` (str): the new role ("owner", "admin", "member", "viewer"), or None when the user is
  no longer a member.

``sender`` is :class:`~apps.accounts.models.User` or
:class:`~apps.accounts.models.Membership`. Receivers of both run synchronously in the thread that
committed (a sync thread, also when the service was called through
``sync_to_async``); a failing receiver is logged and does not stop the others. The rooms app
connects it to close the user's open sockets of that team (DESIGN 4: a member removed or demoted
has their open sockets closed).
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.dispatch import Signal

from apps.accounts.models import Membership, User, hash_secret

__all__ = ["credentials_changed", "membership_changed", "send_credentials_changed_on_commit",
           "send_membership_changed_on_commit", "session_digest"]

log = logging.getLogger(__name__)

credentials_changed = Signal()
membership_changed = Signal()


def session_digest(session_key: str) -> str:
    """What ``credentials_changed`` carries of a session key (never the key itself)."""
    return hash_secret(session_key)


def send_credentials_changed_on_commit(*, user_id: int, ended_session: str | None = None
                                       ) -> None:
    """Send ``credentials_changed`` once the current transaction commits (at once outside
    one)."""

    def send() -> None:
        _robustly("credentials_changed", credentials_changed, User, user_id=user_id,
                  ended_session=ended_session)

    transaction.on_commit(send)


def send_membership_changed_on_commit(*, team_id: int, user_id: int, role: str | None) -> None:
    """Send ``membership_changed`` once the current transaction commits (at once outside one)."""

    def send() -> None:
        _robustly("membership_changed", membership_changed, Membership, team_id=team_id,
                  user_id=user_id, role=role)

    transaction.on_commit(send)


def _robustly(name: str, signal: Signal, sender: type, **kwargs: object) -> None:
    """Send ``signal``; a receiver that fails is logged and the others still run."""
    for receiver, outcome in signal.send_robust(sender=sender, **kwargs):
        if isinstance(outcome, Exception):
            log.error("%s receiver %r failed", name, receiver, exc_info=outcome)
