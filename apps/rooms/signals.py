"""Receivers: a member removed from a team has their open sockets of that team closed."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.dispatch import receiver

from apps.accounts.signals import membership_changed
from apps.realtime.groups import user_group


@receiver(membership_changed)
def close_sockets_of_former_member(sender: Any, *, team_id: int, user_id: int,
                                   role: str | None, **kwargs: Any) -> None:
    """Tell the user's sockets; each one of that team closes when the membership is gone (a
    demotion needs nothing: every frame is authorized against the current role)."""
    async_to_sync(get_channel_layer().group_send)(
        user_group(user_id), {"type": "member.changed", "team_id": team_id, "role": role})
