"""Channels routing for rooms: the conversation socket and the ``agent-runs`` worker.

The Origin check lives in the consumer, not in ``AllowedHostsOriginValidator``: cookie
connections must come from an allowed origin, while token clients (scripts) may send none.
"""

from __future__ import annotations

from channels.routing import URLRouter
from django.urls import path, re_path

from apps.accounts.auth import TokenAuthMiddleware
from apps.accounts.middleware import SocketLanguageMiddleware
from apps.realtime.groups import RUN_CHANNEL
from apps.rooms.consumers import ConversationConsumer, NotFoundConsumer
from apps.rooms.worker import RunWorkerConsumer
from apps.wiki.routing import websocket_urlpatterns as wiki_websocket_urlpatterns

__all__ = ["RUN_CHANNEL", "run_worker", "websocket_application"]

websocket_application = TokenAuthMiddleware(SocketLanguageMiddleware(URLRouter([
    path("ws/conversations/<int:conversation_id>/", ConversationConsumer.as_asgi()),
    *wiki_websocket_urlpatterns,
    re_path(r"", NotFoundConsumer.as_asgi()),
])))
run_worker = RunWorkerConsumer.as_asgi()
