"""URL routes: thin; every app owns its own."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog

from apps.accounts.views.teams import home
from apps.api.api import api


def healthz(request: HttpRequest) -> JsonResponse:
    """Answers once the server is up (``manage.py serve`` waits for it)."""
    return JsonResponse({"ok": True})


urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    # The pages' JavaScript strings (locale/*/djangojs.po) for the active language; cached by
    # the browser only as long as the language stays (Vary: Accept-Language, Cookie)
    path("jsi18n/", JavaScriptCatalog.as_view(packages=["apps.rooms"]), name="javascript-catalog"),
    path("api/", api.urls),
    path("", include("apps.rooms.urls")),
    path("", home, name="home"),
    path("", include("apps.accounts.urls")),
    path("", include("apps.integrations.urls")),
    path("", include("apps.wiki.urls")),
]
