"""URL routes: thin; every app owns its own."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path

from apps.accounts.views.teams import home
from apps.api.api import api


def healthz(request: HttpRequest) -> JsonResponse:
    """Answers once the server is up (``manage.py serve`` waits for it)."""
    return JsonResponse({"ok": True})


urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("api/", api.urls),
    path("", include("apps.rooms.urls")),
    path("", home, name="home"),
    path("", include("apps.accounts.urls")),
    path("", include("apps.integrations.urls")),
    path("", include("apps.wiki.urls")),
]
