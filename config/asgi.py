"""The ASGI application: HTTP (Django), WebSockets (rooms), and the ``agent-runs`` worker."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi = get_asgi_application()  # sets Django up before the routing imports models

from channels.routing import ChannelNameRouter, ProtocolTypeRouter  # noqa: E402

from apps.rooms.routing import RUN_CHANNEL, run_worker, websocket_application  # noqa: E402

application = ProtocolTypeRouter({
    "http": django_asgi,
    "websocket": websocket_application,
    "channel": ChannelNameRouter({RUN_CHANNEL: run_worker}),
})
