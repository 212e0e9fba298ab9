"""The people every test talks about (after healthchecks' ``hc/test.py``).

- alice: owner of team "Acme";
- bob: member of Acme;
- carol: viewer of Acme (watches, cannot write);
- charlie: owner of another team, "Globex" — the outsider who must see nothing of Acme.

Everyone's password is :data:`PASSWORD`; :func:`mint_token` gives a fresh API token. The
fixtures below need the database; a conftest imports them to use them:
``from tests.integration.personas import *  # noqa: F403``.
"""

from __future__ import annotations

import pytest

from apps.accounts.models import Membership, Role, Team, User
from apps.accounts.services import api_token_create

__all__ = ["PASSWORD", "acme", "alice", "bob", "carol", "charlie", "globex", "make_user",
           "mint_token"]

PASSWORD = "correct-horse-battery-staple"


def make_user(username: str, *, display_name: str = "", email: str = "") -> User:
    """A user whose password is :data:`PASSWORD`."""
    user = User(username=username, display_name=display_name or username.title(),
                email=email or f"{username}@example.com")
    user.set_password(PASSWORD)
    user.save()
    return user


def mint_token(user: User, name: str = "tests") -> str:
    """A new raw API token of ``user`` (``Authorization: Bearer <it>``)."""
    return api_token_create(user=user, name=name)[1]


def _team(name: str, members: dict[User, Role]) -> Team:
    team = Team.objects.create(name=name, slug=name.lower())
    for user, role in members.items():
        Membership.objects.create(team=team, user=user, role=role)
    return team


@pytest.fixture
def alice(db: None) -> User:
    return make_user("alice")


@pytest.fixture
def bob(db: None) -> User:
    return make_user("bob")


@pytest.fixture
def carol(db: None) -> User:
    return make_user("carol")


@pytest.fixture
def charlie(db: None) -> User:
    return make_user("charlie")


@pytest.fixture
def acme(alice: User, bob: User, carol: User) -> Team:
    """Acme: alice owner, bob member, carol viewer."""
    return _team("Acme", {alice: Role.OWNER, bob: Role.MEMBER, carol: Role.VIEWER})


@pytest.fixture
def globex(charlie: User) -> Team:
    """Globex: charlie owner."""
    return _team("Globex", {charlie: Role.OWNER})
