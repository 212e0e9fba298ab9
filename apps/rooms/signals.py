"""Receivers: a person's open sockets hear when a membership of theirs ends (they close 4404)
and when their credentials change (each checks its own and closes 4401 if they fail)."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.dispatch import receiver

from apps.accounts.signals import credentials_changed, membership_changed
from apps.realtime.groups import user_group


@receiver(membership_changed)
def close_sockets_of_former_member(sender: Any, *, team_id: int, user_id: int,
                                   role: str | None, **kwargs: Any) -> None:
    """Tell the user's sockets; each one of that team closes when the membership is gone (a
    demotion needs nothing: every frame is authorized against the current role)."""
    async_to_sync(get_channel_layer().group_send)(
        user_group(user_id), {"type": "member.changed", "team_id": team_id, "role": role})


@receiver(credentials_changed)
def recheck_sockets_of_person(sender: Any, *, user_id: int, ended_session: str | None,
                              **kwargs: Any) -> None:
    """Tell the user's sockets; each checks what it connected with (a token, a session) and
    closes when that no longer signs it in, so the others of this person stay open."""
    async_to_sync(get_channel_layer().group_send)(
        user_group(user_id), {"type": "credentials.changed", "ended_session": ended_session})
