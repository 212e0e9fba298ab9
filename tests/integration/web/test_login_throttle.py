"""Sign-in is throttled against guessing: failures per username and address, and per address,
counted in the cache over a window (``apps.accounts.throttle``)."""

from __future__ import annotations

import pytest
from django.contrib.auth import SESSION_KEY
from django.test import Client
from django.urls import reverse

from apps.accounts.models import User
from tests.integration.personas import PASSWORD

pytestmark = pytest.mark.django_db

LOGIN = reverse("accounts:login")


def attempt(client: Client, username: str, password: str):
    return client.post(LOGIN, {"username": username, "password": password})


def signed_in(client: Client) -> bool:
    return SESSION_KEY in client.session


def fail(client: Client, username: str, times: int) -> None:
    for _ in range(times):
        assert attempt(client, username, "wrong").status_code == 200


class Clock:
    """Stands in for the ``time`` module of Django's cache backends."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


def test_the_right_password_signs_in(alice: User) -> None:
    client = Client()
    response = attempt(client, "alice", PASSWORD)
    assert response.status_code == 302 and signed_in(client)


def test_after_five_failures_even_the_right_password_is_refused(alice: User) -> None:
    client = Client()
    fail(client, "alice", 5)
    response = attempt(client, "alice", PASSWORD)
    assert response.status_code == 429
    assert b"Too many failed sign-ins" in response.content
    assert not signed_in(client)


def test_the_lock_is_per_address_so_a_guesser_cannot_lock_the_owner_out(alice: User) -> None:
    fail(Client(REMOTE_ADDR="203.0.113.9"), "alice", 5)
    client = Client(REMOTE_ADDR="198.51.100.7")
    assert attempt(client, "alice", PASSWORD).status_code == 302 and signed_in(client)


def test_the_lock_is_per_username(alice: User, bob: User) -> None:
    client = Client()
    fail(client, "alice", 5)
    assert attempt(client, "bob", PASSWORD).status_code == 302


def test_usernames_count_together_whatever_their_case(alice: User) -> None:
    client = Client()
    for name in ("alice", "Alice", "ALICE", "aLiCe", " alice"):
        attempt(client, name, "wrong")
    assert attempt(client, "alice", PASSWORD).status_code == 429


def test_a_success_clears_the_count(alice: User) -> None:
    client = Client()
    fail(client, "alice", 4)
    assert attempt(client, "alice", PASSWORD).status_code == 302
    client.post(reverse("accounts:logout"))
    fail(client, "alice", 4)
    assert attempt(client, "alice", PASSWORD).status_code == 302


def test_one_address_trying_many_usernames_is_stopped(settings, alice: User) -> None:
    settings.CONFAB = {**settings.CONFAB, "LOGIN_ADDRESS_FAILURES": 3}
    client = Client()
    for name in ("nobody", "root", "admin"):
        attempt(client, name, "password")
    assert attempt(client, "alice", PASSWORD).status_code == 429


def test_the_lock_ends_with_the_window(monkeypatch, alice: User) -> None:
    clock = Clock(1_000_000.0)
    monkeypatch.setattr("django.core.cache.backends.base.time", clock)
    monkeypatch.setattr("django.core.cache.backends.locmem.time", clock)
    client = Client()
    fail(client, "alice", 5)
    clock.now += 899
    assert attempt(client, "alice", PASSWORD).status_code == 429
    clock.now += 2
    assert attempt(client, "alice", PASSWORD).status_code == 302


def test_the_admin_login_is_throttled_too(alice: User) -> None:
    User.objects.filter(pk=alice.pk).update(is_staff=True, is_superuser=True)
    client = Client()
    fail(client, "alice", 5)
    client.post(reverse("admin:login"), {"username": "alice", "password": PASSWORD,
                                         "next": "/admin/"})
    assert not signed_in(client)
    assert client.get("/admin/").status_code == 302
