"""The ASGI application: HTTP (Django), WebSockets (rooms), and the ``agent-runs`` worker."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi = get_asgi_application()  # sets Django up before the routing imports models

from channels.routing import ChannelNameRouter, ProtocolTypeRouter  # noqa: E402
from django.conf import settings  # noqa: E402

from apps.common.static_files import StaticFilesHandler  # noqa: E402
from apps.rooms.routing import RUN_CHANNEL, run_worker, websocket_application  # noqa: E402

# Static files (CSS, the room's ES modules) are served by the app itself unless a deployment
# serves collectstatic's output in front of it (CONFAB_SERVE_STATIC=0): one process is enough.
http_application = StaticFilesHandler(django_asgi) if settings.CONFAB["SERVE_STATIC"] \
    else django_asgi

application = ProtocolTypeRouter({
    "http": http_application,
    "websocket": websocket_application,
    "channel": ChannelNameRouter({RUN_CHANNEL: run_worker}),
})
