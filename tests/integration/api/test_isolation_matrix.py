"""Every API URL × {anonymous, charlie (other team), carol (viewer), bob (member), alice (owner)},
with token and with session auth (DESIGN 4: isolation tests as a matrix).

``test_every_api_route_has_a_row`` fails when a route is added to the API without a row here.
Another team's object must answer exactly like a missing one: same status, same body.
The wiki rows run against Acme's wiki (a Home page and an attachment by alice) in a WIKI_DIR of
the test's own; the clone URL has its matrix in ``tests/integration/wiki/test_git_http.py``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern

from apps.api.api import api
from apps.rooms.images import image_upload
from apps.rooms.models import Message
from apps.wiki.services import attachment_save, page_save
from tests.images import image_bytes

PERSONAS = ("anonymous", "charlie", "carol", "bob", "alice")
MISSING_ID = 999_999


@dataclass(frozen=True)
class Row:
    """One route: ``statuses`` in the order of :data:`PERSONAS`. ``path`` may end in a query;
    ``body`` is JSON, or raw bytes; ``files``: a multipart form of files instead (name ->
    bytes); ``names`` fills a placeholder from another id (the files route's ``{path}`` is an
    attachment's)."""

    method: str
    path: str
    statuses: tuple[int, int, int, int, int]
    body: dict[str, Any] | bytes | None = None
    names: dict[str, str] = field(default_factory=dict)
    files: dict[str, bytes] | None = None


PUBLIC = (200, 200, 200, 200, 200)
READ = (401, 404, 200, 200, 200)
WRITE = (401, 404, 403, 200, 200)
CREATE = (401, 404, 403, 201, 201)
MANAGE = (401, 404, 403, 403, 200)  # owners and admins only (bob is a member)
WIKI = "/api/teams/{team_id}/wiki"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))

MATRIX = [
    Row("GET", "/api/", (404, 404, 404, 404, 404)),
    Row("GET", "/api/openapi.json", PUBLIC),
    Row("GET", "/api/docs", PUBLIC),
    Row("GET", "/api/rooms", (401, 200, 200, 200, 200)),
    Row("POST", "/api/rooms", CREATE, {"team_id": "{team_id}", "name": "Ops"}),
    Row("GET", "/api/rooms/{room_id}", READ),
    Row("PATCH", "/api/rooms/{room_id}", WRITE, {"name": "Renamed"}),
    Row("POST", "/api/rooms/{room_id}/archive", WRITE),
    Row("GET", "/api/rooms/{room_id}/conversations", READ),
    Row("POST", "/api/rooms/{room_id}/conversations", CREATE, {"title": "New"}),
    Row("GET", "/api/conversations/{conversation_id}", READ),
    Row("PATCH", "/api/conversations/{conversation_id}", WRITE, {"title": "Renamed"}),
    Row("POST", "/api/conversations/{conversation_id}/archive", WRITE),
    # bob may write but did not start alice's conversation: only she or an owner/admin deletes.
    Row("DELETE", "/api/conversations/{conversation_id}", (401, 404, 403, 403, 204)),
    Row("GET", "/api/conversations/{conversation_id}/messages", READ),
    Row("GET", "/api/conversations/{conversation_id}/messages?before=p1.1", READ),
    Row("GET", "/api/conversations/{conversation_id}/export.json", READ),
    Row("GET", "/api/conversations/{conversation_id}/export.md", READ),
    Row("POST", "/api/conversations/{conversation_id}/fork", CREATE,
        {"message_id": "{message_id}"}),
    # the message is alice's: bob may write, but edits only his own
    Row("POST", "/api/conversations/{conversation_id}/messages/{message_id}/edit",
        (401, 404, 403, 403, 201), {"text": "Edited"}),
    Row("POST", "/api/conversations/{conversation_id}/regenerate", CREATE),
    Row("POST", "/api/conversations/{conversation_id}/images", CREATE,
        files={"file": image_bytes()}),
    Row("GET", "/api/conversations/{conversation_id}/images/{image_id}", READ),
    # a search finds only what the caller may see: another team's caller finds nothing (200)
    Row("GET", "/api/search?q=Plans", (401, 200, 200, 200, 200)),
    Row("GET", "/api/search?q=Plans&team_id={team_id}", (401, 200, 200, 200, 200)),
    Row("GET", WIKI + "/pages", READ),
    Row("GET", WIKI + "/pages/{path}", READ),
    # "author" in the body is ignored: commits are by the caller (tests/integration/wiki)
    Row("PUT", WIKI + "/pages/{path}", WRITE,
        {"content": "# Home\n\nChanged.\n", "expected_blob": "{blob}", "author": "Mallory"}),
    Row("DELETE", WIKI + "/pages/{path}?expected_blob={blob}", MANAGE),
    Row("POST", WIKI + "/pages/{path}/rename", WRITE,
        {"to": "Moved.md", "expected_blob": "{blob}"}),
    Row("POST", WIKI + "/pages/{path}/restore", WRITE, {"rev": "{commit}"}),
    Row("GET", WIKI + "/history/{path}", READ),
    Row("GET", WIKI + "/diff/{path}?from={commit}", READ),
    Row("GET", WIKI + "/search?q=welcome", READ),
    Row("GET", WIKI + "/files/{path}", READ, names={"path": "file"}),
    Row("PUT", WIKI + "/files/{path}?expected_blob={file_blob}", WRITE, PNG[::-1],
        names={"path": "file"}),
]


def _row_id(row: Row) -> str:
    return f"{row.method} {row.path}"


def _fill(value: Any, ids: dict[str, int]) -> Any:
    """``value`` with ``{name}`` placeholders replaced (whole-string placeholders by ints)."""
    if isinstance(value, dict):
        return {key: _fill(item, ids) for key, item in value.items()}
    if isinstance(value, str) and re.fullmatch(r"\{\w+\}", value):
        return ids[value[1:-1]]
    return value.format(**ids) if isinstance(value, str) else value


def _call(client: Client, row: Row, ids: dict[str, Any]):
    ids = {**ids, **{name: ids[source] for name, source in row.names.items()}}
    if row.files is not None:
        return client.post(_fill(row.path, ids), data={
            name: SimpleUploadedFile(name, data) for name, data in row.files.items()})
    if isinstance(row.body, bytes):
        return client.generic(row.method, _fill(row.path, ids), data=row.body,
                              content_type="application/octet-stream")
    body = _fill(row.body, ids)
    return client.generic(row.method, _fill(row.path, ids),
                          data=b"" if body is None else json.dumps(body),
                          content_type="application/json")


def _missing(ids: dict[str, Any]) -> dict[str, Any]:
    """Every id replaced by one that names nothing (of the same type)."""
    return {key: type(value)(MISSING_ID) for key, value in ids.items()}


@pytest.fixture
def wiki_ids(acme, alice, settings, tmp_path) -> dict[str, str]:
    """Acme's wiki (in this test's own WIKI_DIR): Home.md and an attachment, by alice."""
    settings.WIKI_DIR = tmp_path / "wiki"
    page = page_save(team=acme, by=alice, path="Home.md", content="# Home\n\nWelcome.\n",
                     expected_blob=None, message="Start")
    file = attachment_save(team=acme, by=alice, path="_files/logo.png", content=PNG,
                           expected_blob=None, message="Logo")
    return {"path": page.path, "blob": page.blob, "commit": page.commit, "file": file.path,
            "file_blob": file.blob}


@pytest.fixture
def message_id(conversation, alice) -> int:
    """alice's question in the conversation, answered by the agent."""
    asked = Message.objects.create(conversation=conversation, role="user", position=1,
                                   author=alice, author_name="Alice", content=[])
    Message.objects.create(conversation=conversation, role="assistant", position=2, content=[])
    return asked.pk


@pytest.fixture
def image_id(conversation, alice, settings, tmp_path) -> str:
    """An image alice uploaded to the conversation (in this test's own IMAGES_DIR)."""
    settings.IMAGES_DIR = tmp_path / "images"
    return image_upload(conversation=conversation, membership=alice.memberships.get(),
                        upload=SimpleUploadedFile("a.png", image_bytes())).pk


@pytest.fixture
def ids(acme, globex, room, conversation, message_id, wiki_ids, image_id) -> dict[str, Any]:
    return {"team_id": acme.pk, "room_id": room.pk, "conversation_id": conversation.pk,
            "message_id": message_id, "image_id": image_id, **wiki_ids}


@pytest.fixture(params=["token", "session"])
def client_for(request, token_client, session_client, alice, bob, carol, charlie):
    """A client acting as a persona, authenticated by token or by session."""
    people = {"alice": alice, "bob": bob, "carol": carol, "charlie": charlie}
    make = token_client if request.param == "token" else session_client

    def client(persona: str) -> Client:
        return Client() if persona == "anonymous" else make(people[persona])

    return client


@pytest.mark.django_db
@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("row", MATRIX, ids=_row_id)
def test_isolation_matrix(row: Row, persona: str, client_for, ids) -> None:
    client = client_for(persona)
    response = _call(client, row, ids)
    expected = row.statuses[PERSONAS.index(persona)]
    assert response.status_code == expected, response.content[:300]
    if expected == 404 and persona == "charlie" and "{" in row.path + str(row.body):
        missing = _call(client, row, _missing(ids))
        assert (missing.status_code, missing.json()) == (404, response.json())


def _api_routes() -> set[tuple[str, str]]:
    """(METHOD, /api/path) for every URL pattern of the API, with the methods each one really
    accepts: an unknown method gets ``405`` and the ``Allow`` list from an API operation; the
    other patterns (schema, docs, root) are plain views, counted as GET."""
    routes = set()
    patterns: list[URLPattern] = api.urls[0]
    for pattern in patterns:
        route = str(pattern.pattern)
        template = "/api/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
        response = Client().generic("PROPFIND", "/api/" + re.sub(r"<[^>]+>", "1", route))
        allowed = response["Allow"].split(", ") if response.status_code == 405 else ["GET"]
        routes.update((method, template) for method in allowed)
    return routes


@pytest.mark.django_db
def test_every_api_route_has_a_row() -> None:
    rows = {(row.method, row.path.partition("?")[0]) for row in MATRIX}
    assert _api_routes() == rows
