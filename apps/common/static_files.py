"""Static files served by the app itself (``CONFAB_SERVE_STATIC``, the one-process default)."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotFound

__all__ = ["StaticFilesHandler"]


class StaticFilesHandler(ASGIStaticFilesHandler):
    """Django's ASGI static handler (it serves with DEBUG off too: ``insecure=True``), except
    that a missing file is a plain ``404``. Django's own answer renders the site's 404 page for
    a request no middleware has seen (no user, no CSP nonce), which fails as a 500."""

    async def get_response_async(self, request: HttpRequest) -> HttpResponse:
        try:
            return await sync_to_async(self.serve, thread_sensitive=False)(request)
        except Http404:
            return HttpResponseNotFound("Not found.\n", content_type="text/plain")
