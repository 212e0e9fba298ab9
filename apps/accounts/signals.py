"""Signals other apps listen to.

``membership_changed`` is sent after the transaction that removed a membership or changed its
role has committed — never for a change that rolled back — with keyword arguments:

- ``team_id`` (int), ``user_id`` (int);
- ``role`` (str): the new role ("owner", "admin", "member", "viewer"), or None when the user is
  no longer a member.

``sender`` is :class:`~apps.accounts.models.Membership`. Receivers run synchronously in the
thread that committed (a sync thread, also when the service was called through
``sync_to_async``); a failing receiver is logged and does not stop the others. The rooms app
connects it to close the user's open sockets of that team (DESIGN 4: a member removed or demoted
has their open sockets closed).
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.dispatch import Signal

from apps.accounts.models import Membership

__all__ = ["membership_changed", "send_membership_changed_on_commit"]

log = logging.getLogger(__name__)

membership_changed = Signal()


def send_membership_changed_on_commit(*, team_id: int, user_id: int, role: str | None) -> None:
    """Send ``membership_changed`` once the current transaction commits (at once outside one)."""

    def send() -> None:
        results = membership_changed.send_robust(
            sender=Membership, team_id=team_id, user_id=user_id, role=role
        )
        for receiver, outcome in results:
            if isinstance(outcome, Exception):
                log.error("membership_changed receiver %r failed", receiver, exc_info=outcome)

    transaction.on_commit(send)
