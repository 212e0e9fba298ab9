"""Token and session authentication of the REST API, and CSRF on session writes."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.accounts.services import api_token_create, api_token_revoke

pytestmark = pytest.mark.django_db


def _create_room(client: Client, team_id: int, **headers: str):
    return client.post("/api/rooms", {"team_id": team_id, "name": "Ops"},
                       content_type="application/json", headers=headers)


def test_anonymous_is_asked_to_authenticate(acme):
    response = Client().get("/api/rooms")
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_token_needs_no_csrf_token(token_client, bob, acme):
    response = _create_room(token_client(bob), acme.pk)
    assert response.status_code == 201
    assert response.json()["name"] == "Ops"


def test_a_revoked_or_unknown_token_is_refused(bob, acme):
    token, raw = api_token_create(user=bob, name="laptop")
    api_token_revoke(user=bob, token_id=token.pk)
    for value in (raw, "cf_not-a-token"):
        response = Client().get("/api/rooms", headers={"Authorization": f"Bearer {value}"})
        assert response.status_code == 401


def test_a_bad_token_never_falls_back_to_the_session(bob, acme):
    client = Client()
    client.force_login(bob)
    assert client.get("/api/rooms").status_code == 200
    response = client.get("/api/rooms", headers={"Authorization": "Bearer cf_wrong"})
    assert response.status_code == 401


def test_session_reads_need_no_csrf_token(bob, acme):
    client = Client(enforce_csrf_checks=True)
    client.force_login(bob)
    assert client.get("/api/rooms").status_code == 200


def test_session_writes_without_the_csrf_token_are_refused(bob, acme):
    client = Client(enforce_csrf_checks=True)
    client.force_login(bob)
    response = _create_room(client, acme.pk)
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"
    assert not acme.rooms.exists()


def test_session_writes_with_the_csrf_token_pass(bob, acme):
    client = Client(enforce_csrf_checks=True)
    client.force_login(bob)
    client.get("/api/docs")  # any page that renders the token sets the cookie
    token = client.cookies["csrftoken"].value
    response = _create_room(client, acme.pk, **{"X-CSRFToken": token})
    assert response.status_code == 201
