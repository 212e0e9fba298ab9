"""The REST API (DESIGN 3.5), mounted at ``/api/``: rooms, conversations, transcript exports
and team wikis (:mod:`apps.wiki.api`), with its OpenAPI schema at ``/api/openapi.json`` and
interactive docs at ``/api/docs``.

Callers authenticate with a personal API token (``Authorization: Bearer cf_...``) or the
browser's session (with the CSRF token on unsafe methods): see :mod:`apps.api.auth`.
"""

from __future__ import annotations

from ninja import NinjaAPI
from ninja.operation import Operation

from apps.api import conversations, images, rooms, search, versions
from apps.api.auth import SessionAuth, TokenAuth
from apps.api.errors import install_error_handlers
from apps.wiki import api as wiki_api

__all__ = ["api"]


class ConfabAPI(NinjaAPI):
    """NinjaAPI whose OpenAPI operation ids are the view names (``list_rooms``, ...), which
    client generators turn into method names."""

    def get_openapi_operation_id(self, operation: Operation) -> str:
        return operation.view_func.__name__


api = ConfabAPI(
    title="confab",
    version="1",
    description=(
        "Rooms, conversations, transcript exports and wikis of the teams you belong to. "
        "Authenticate with a personal API token (`Authorization: Bearer cf_...`) or a signed-in "
        "session (send `X-CSRFToken` on POST, PUT, PATCH and DELETE). Another team's objects "
        "answer 404, like missing ones. Errors are `{\"code\", \"message\"}` (a server bug: "
        "`500` with code `internal`)."
    ),
    auth=[TokenAuth(), SessionAuth()],
    urls_namespace="api",
)
api.add_router("/", rooms.router)
api.add_router("/", conversations.router)
api.add_router("/", versions.router)
api.add_router("/", images.router)
api.add_router("/", search.router)
api.add_router("/", wiki_api.router)
install_error_handlers(api)
