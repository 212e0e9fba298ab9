"""The site layout, error pages, log-out and password reset."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import SESSION_KEY
from django.test import Client
from django.urls import reverse

from apps.accounts.models import User
from tests.integration.web.html import assert_no_inline_code

pytestmark = pytest.mark.django_db


def test_an_unknown_page_is_the_sites_404(signed_in, acme, alice) -> None:
    response = signed_in(alice).get("/no/such/page/")
    assert response.status_code == 404
    assert b"Not found" in response.content and b"Acme" in response.content  # the layout
    assert_no_inline_code(response)


def test_a_refusal_is_the_sites_403_with_the_reason(signed_in, acme, bob) -> None:
    response = signed_in(bob).get(reverse("integrations:team_settings", args=[acme.pk]))
    assert response.status_code == 403
    assert b"Only owners and admins manage the team." in response.content
    assert_no_inline_code(response)


def test_pages_load_the_site_stylesheet_and_no_inline_code(signed_in, acme, alice) -> None:
    response = signed_in(alice).get(reverse("accounts:team_members", args=[acme.pk]))
    assert b'<link rel="stylesheet" href="/static/common/site.css">' in response.content
    assert_no_inline_code(response)


def test_every_post_form_carries_a_csrf_token(signed_in, acme, alice) -> None:
    for url in (reverse("accounts:team_members", args=[acme.pk]), reverse("accounts:tokens"),
                reverse("integrations:team_settings", args=[acme.pk])):
        html = signed_in(alice).get(url).content.decode()
        forms = re.findall(r'<form method="post".*?</form>', html, re.S)
        assert forms and all("csrfmiddlewaretoken" in form for form in forms)


def test_log_out_is_a_post(signed_in, alice) -> None:
    client = signed_in(alice)
    assert client.get(reverse("accounts:logout")).status_code == 405
    assert SESSION_KEY in client.session
    assert client.post(reverse("accounts:logout")).url == reverse("accounts:login")
    assert SESSION_KEY not in client.session


def test_a_password_reset_by_email(mailoutbox, alice: User) -> None:
    client = Client()
    client.post(reverse("accounts:password_reset"), {"email": "alice@example.com"})
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["alice@example.com"]
    link = re.search(r"http://testserver(/accounts/reset/\S+)", mailoutbox[0].body).group(1)
    form_url = client.get(link).url  # Django swaps the token for a session marker
    response = client.post(form_url, {"new_password1": "a-new-passphrase-7",
                                      "new_password2": "a-new-passphrase-7"})
    assert response.url == reverse("accounts:password_reset_complete")
    alice.refresh_from_db()
    assert alice.check_password("a-new-passphrase-7")


def test_a_reset_for_an_unknown_address_looks_the_same(mailoutbox, alice: User) -> None:
    response = Client().post(reverse("accounts:password_reset"), {"email": "x@example.com"})
    assert response.url == reverse("accounts:password_reset_done") and mailoutbox == []
