"""Fixtures of the page tests: a clean cache (the login throttle's counters), a fourth Acme
member to act on, a model to choose, and clients signed in as each persona.

The personas (alice, bob, carol of Acme; charlie of Globex) come from
``tests/integration/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from django.core.cache import cache
from django.test import Client

from apps.accounts.models import Membership, Role, Team, User
from apps.integrations.models import ModelConfig, ProviderConfig
from tests.integration.personas import make_user


@pytest.fixture(autouse=True)
def clean_cache() -> Iterator[None]:
    """Throttle counters must not leak from one test into another."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def dave(acme: Team) -> User:
    """A member of Acme whom the others promote, demote and remove."""
    user = make_user("dave")
    Membership.objects.create(team=acme, user=user, role=Role.MEMBER)
    return user


@pytest.fixture
def model(db: None) -> ModelConfig:
    """An enabled model of an enabled provider (nothing listens at its URL)."""
    provider = ProviderConfig.objects.create(name="Vendor", kind="openai",
                                             base_url="https://llm.example.com/v1")
    return ModelConfig.objects.create(provider=provider, model_id="vendor-large")


@pytest.fixture
def signed_in(db: None) -> Callable[[User], Client]:
    """A client signed in as the given user (a fresh session)."""

    def make(user: User) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make
