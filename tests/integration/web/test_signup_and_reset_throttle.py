"""Sign-up and password reset are throttled like sign-in (issue 14): attempts counted per email
address and per client over the window, then a 429 with a clear message, and nothing done
(no account made, no mail sent)."""

from __future__ import annotations

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from apps.accounts.models import User
from tests.integration.web.test_login_throttle import Clock

pytestmark = pytest.mark.django_db

SIGNUP = reverse("accounts:signup")
RESET = reverse("accounts:password_reset")
NEW_PASSWORD = "a-long-passphrase-9"
WAIT = b"Wait a few minutes and try again."


def sign_up(client: Client, username: str, email: str = "", password2: str = NEW_PASSWORD):
    return client.post(SIGNUP, {"username": username, "email": email or f"{username}@example.com",
                                "password1": NEW_PASSWORD, "password2": password2})


def reset(client: Client, email: str):
    return client.post(RESET, {"email": email})


def test_sign_ups_from_one_client_stop_at_the_limit(settings, db: None) -> None:
    settings.CONFAB = {**settings.CONFAB, "SIGNUP_CLIENT_ATTEMPTS": 3}
    for name in ("erin", "frank", "grace"):
        assert sign_up(Client(REMOTE_ADDR="203.0.113.9"), name).status_code == 302
    refused = sign_up(Client(REMOTE_ADDR="203.0.113.9"), "heidi")
    assert refused.status_code == 429 and b"Too many sign-ups" in refused.content
    assert WAIT in refused.content
    assert not User.objects.filter(username="heidi").exists()
    assert sign_up(Client(REMOTE_ADDR="198.51.100.7"), "heidi").status_code == 302


def test_sign_ups_for_one_address_stop_at_the_limit_whatever_the_client(db: None) -> None:
    for attempt in range(5):  # failed attempts count too: probing names costs the same
        client = Client(REMOTE_ADDR=f"203.0.113.{attempt}")
        response = sign_up(client, f"erin{attempt}", "erin@example.com", password2="typo-1")
        assert response.status_code == 200
    refused = sign_up(Client(REMOTE_ADDR="198.51.100.7"), "erin", " Erin@Example.com ")
    assert refused.status_code == 429 and WAIT in refused.content
    assert not User.objects.filter(username="erin").exists()


def test_the_sign_up_limit_ends_with_the_window(monkeypatch, settings, db: None) -> None:
    settings.CONFAB = {**settings.CONFAB, "SIGNUP_CLIENT_ATTEMPTS": 1}
    clock = Clock(1_000_000.0)
    monkeypatch.setattr("django.core.cache.backends.base.time", clock)
    monkeypatch.setattr("django.core.cache.backends.locmem.time", clock)
    assert sign_up(Client(), "erin").status_code == 302
    clock.now += 899
    assert sign_up(Client(), "frank").status_code == 429
    clock.now += 2
    assert sign_up(Client(), "frank").status_code == 302


def test_password_resets_for_one_address_stop_at_the_limit(alice: User) -> None:
    for attempt in range(5):
        response = reset(Client(REMOTE_ADDR=f"203.0.113.{attempt}"), "alice@example.com")
        assert response.status_code == 302
    assert len(mail.outbox) == 5
    refused = reset(Client(REMOTE_ADDR="198.51.100.7"), "ALICE@example.com")
    assert refused.status_code == 429
    assert b"Too many password reset requests" in refused.content and WAIT in refused.content
    assert len(mail.outbox) == 5  # no sixth mail


def test_password_resets_from_one_client_stop_at_the_limit(settings, alice: User) -> None:
    settings.CONFAB = {**settings.CONFAB, "PASSWORD_RESET_CLIENT_ATTEMPTS": 3}
    client = Client(REMOTE_ADDR="203.0.113.9")
    for email in ("nobody@example.com", "root@example.com", "admin@example.com"):
        assert reset(client, email).status_code == 302  # the same answer, known or not
    refused = reset(client, "alice@example.com")
    assert refused.status_code == 429 and WAIT in refused.content
    assert mail.outbox == []
