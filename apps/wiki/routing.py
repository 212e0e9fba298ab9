"""The wiki's socket route, mounted in the site's websocket router (``apps/rooms/routing.py``,
before its catch-all): ``ws/teams/<team id>/wiki/``."""

from __future__ import annotations

from django.urls import path

from apps.wiki.consumers import WikiConsumer

__all__ = ["websocket_urlpatterns"]

websocket_urlpatterns = [
    path("ws/teams/<int:team_id>/wiki/", WikiConsumer.as_asgi()),
]
