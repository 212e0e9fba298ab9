"""Every API URL × {anonymous, charlie (other team), carol (viewer), bob (member), alice (owner)},
with token and with session auth (DESIGN 4: isolation tests as a matrix).

``test_every_api_route_has_a_row`` fails when a route is added to the API without a row here.
Another team's object must answer exactly like a missing one: same status, same body.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern

from apps.api.api import api

PERSONAS = ("anonymous", "charlie", "carol", "bob", "alice")
MISSING_ID = 999_999


@dataclass(frozen=True)
class Row:
    """One route: ``statuses`` in the order of :data:`PERSONAS`."""

    method: str
    path: str
    statuses: tuple[int, int, int, int, int]
    body: dict[str, Any] | None = None


PUBLIC = (200, 200, 200, 200, 200)
READ = (401, 404, 200, 200, 200)
WRITE = (401, 404, 403, 200, 200)
CREATE = (401, 404, 403, 201, 201)

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
    Row("GET", "/api/conversations/{conversation_id}/export.json", READ),
    Row("GET", "/api/conversations/{conversation_id}/export.md", READ),
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


def _call(client: Client, row: Row, ids: dict[str, int]):
    body = _fill(row.body, ids)
    return client.generic(row.method, _fill(row.path, ids),
                          data=b"" if body is None else json.dumps(body),
                          content_type="application/json")


@pytest.fixture
def ids(acme, globex, room, conversation) -> dict[str, int]:
    return {"team_id": acme.pk, "room_id": room.pk, "conversation_id": conversation.pk}


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
        missing = _call(client, row, dict.fromkeys(ids, MISSING_ID))
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
    rows = {(row.method, row.path) for row in MATRIX}
    assert _api_routes() == rows
