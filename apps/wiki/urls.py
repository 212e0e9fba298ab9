"""The wiki's URLs (namespace ``wiki``).

Pages in the browser live under ``/teams/<team id>/wiki/``: ``<path>`` is a page (``.md``), a
folder (ending in ``/``) or an attachment (``_files/...``); paths may contain ``/`` and any
letters (CJK too), normalized to NFC (:mod:`apps.wiki.converters`). The actions sit under
``-/``: no wiki path can start with ``-``, so no page can hide an action's URL.
"""

from __future__ import annotations

from django.urls import path

from apps.wiki import views
from apps.wiki.converters import WIKI_PATH
from apps.wiki.git_http import git_smart_http

app_name = "wiki"

_WIKI = "teams/<int:team_id>/wiki/"
_PATH = f"<{WIKI_PATH}:path>"

urlpatterns = [
    # git clone http://HOST/wiki/<team id>.git (read-only smart HTTP, token only)
    path("wiki/<int:team_id>.git/<path:rest>", git_smart_http, name="git"),
    path(_WIKI, views.tree, name="tree"),
    path(_WIKI + "-/search/", views.search, name="search"),
    path(_WIKI + "-/new/", views.new_page, name="new"),
    path(_WIKI + "-/preview/", views.preview, name="preview"),
    path(_WIKI + "-/upload/", views.upload, name="upload"),
    path(_WIKI + "-/edit/" + _PATH, views.edit, name="edit"),
    path(_WIKI + "-/history/" + _PATH, views.history, name="history"),
    path(_WIKI + "-/diff/" + _PATH, views.diff, name="diff"),
    path(_WIKI + "-/restore/" + _PATH, views.restore, name="restore"),
    path(_WIKI + "-/rename/" + _PATH, views.rename, name="rename"),
    path(_WIKI + "-/delete/" + _PATH, views.delete, name="delete"),
    path(_WIKI + _PATH, views.page, name="page"),
]
