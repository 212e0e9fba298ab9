"""The API tokens page: a new token is shown once, listed by prefix, and revocable."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import ApiToken, hash_secret
from tests.integration.personas import mint_token

pytestmark = pytest.mark.django_db

TOKENS = reverse("accounts:tokens")


def api_status(raw: str) -> int:
    return Client().get("/api/rooms", headers={"Authorization": f"Bearer {raw}"}).status_code


def test_a_new_token_is_shown_once_and_works(signed_in, acme, alice) -> None:
    client = signed_in(alice)
    response = client.post(TOKENS, {"name": "laptop"})
    raw = re.search(rb'id="new-token">(cf_[^<]+)<', response.content).group(1).decode()
    assert response.headers["Cache-Control"].startswith("max-age=0")
    assert "no-store" in response.headers["Cache-Control"]
    token = ApiToken.objects.get(user=alice)
    assert token.key_hash == hash_secret(raw) and raw.startswith(token.prefix)
    listing = client.get(TOKENS).content
    assert raw.encode() not in listing
    assert f"{token.prefix}…".encode() in listing and b"laptop" in listing
    assert api_status(raw) == 200


def test_a_blank_name_is_refused(signed_in, alice) -> None:
    response = signed_in(alice).post(TOKENS, {"name": "  "})
    assert response.status_code == 200 and b"errorlist" in response.content
    assert not ApiToken.objects.exists()


def test_a_revoked_token_stops_working(signed_in, acme, alice) -> None:
    raw = mint_token(alice)
    token = ApiToken.objects.get(user=alice)
    client = signed_in(alice)
    response = client.post(reverse("accounts:token_revoke", args=[token.pk]), follow=True)
    assert b"is revoked" in response.content and b"revoked</span>" in response.content
    assert api_status(raw) == 401


def test_someone_elses_token_is_not_found_and_stays_live(signed_in, acme, alice, bob) -> None:
    raw = mint_token(alice, "alice-laptop")
    token = ApiToken.objects.get(user=alice)
    response = signed_in(bob).post(reverse("accounts:token_revoke", args=[token.pk]))
    assert response.status_code == 404
    assert api_status(raw) == 200
    assert b"alice-laptop" not in signed_in(bob).get(TOKENS).content
