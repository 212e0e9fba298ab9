"""The account page (issue 14): a new password keeps this session and ends the others; signing
out everywhere ends every session, this one too, and leaves API tokens alone."""

from __future__ import annotations

import pytest
from django.contrib.auth import SESSION_KEY
from django.test import Client
from django.urls import reverse

from apps.accounts.models import User
from apps.accounts.services import api_token_create
from tests.integration.personas import PASSWORD

pytestmark = pytest.mark.django_db

ACCOUNT = reverse("accounts:account")
HOME = reverse("home")


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def still_signed_in(client: Client) -> bool:
    """Whether the client's session still signs it in (the next request decides)."""
    return client.get(ACCOUNT).status_code == 200 and SESSION_KEY in client.session


def test_the_account_page_is_linked_from_every_page(bob: User) -> None:
    page = signed_in(bob).get(reverse("accounts:tokens")).content.decode()
    assert f'<a class="who" href="{ACCOUNT}"' in page


def test_a_new_password_keeps_this_session_and_ends_the_others(bob: User) -> None:
    here, elsewhere = signed_in(bob), signed_in(bob)
    response = here.post(ACCOUNT, {"old_password": PASSWORD,
                                   "new_password1": "a-new-passphrase-42",
                                   "new_password2": "a-new-passphrase-42"})
    assert response.status_code == 302 and response.url == ACCOUNT
    assert still_signed_in(here)
    assert not still_signed_in(elsewhere)
    assert Client().login(username="bob", password="a-new-passphrase-42")


def test_a_wrong_old_password_changes_nothing(bob: User) -> None:
    client = signed_in(bob)
    response = client.post(ACCOUNT, {"old_password": "wrong", "new_password1": "x-new-pass-9",
                                     "new_password2": "x-new-pass-9"})
    assert response.status_code == 200
    assert "Your old password was entered incorrectly" in response.content.decode()
    assert Client().login(username="bob", password=PASSWORD)


def test_signing_out_everywhere_ends_every_session_but_not_the_tokens(bob: User) -> None:
    here, elsewhere = signed_in(bob), signed_in(bob)
    _, raw = api_token_create(user=bob, name="script")
    response = here.post(reverse("accounts:sign_out_everywhere"))
    assert response.status_code == 302 and response.url == reverse("accounts:login")
    assert not still_signed_in(here) and not still_signed_in(elsewhere)
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    assert api.get("/api/rooms").status_code == 200
    assert Client().login(username="bob", password=PASSWORD)  # the password still works


def test_signing_out_everywhere_is_a_post(bob: User) -> None:
    client = signed_in(bob)
    assert client.get(reverse("accounts:sign_out_everywhere")).status_code == 405
    assert still_signed_in(client)
