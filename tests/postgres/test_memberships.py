"""The last owner under a race: two owners leaving (or demoting each other) at the same instant
on PostgreSQL must leave one owner, never none (the services lock the team row)."""

from __future__ import annotations

import pytest

from apps.accounts.models import Membership, Role, Team
from apps.accounts.services import membership_remove, membership_set_role
from apps.common.errors import ApplicationError
from tests.integration.personas import make_user
from tests.postgres.test_concurrency import _in_threads

pytestmark = pytest.mark.django_db(transaction=True)  # threads need committed rows

ROUNDS = 10


def _two_owners(round_: int) -> tuple[Team, list]:
    team = Team.objects.create(name=f"Race {round_}", slug=f"race-{round_}")
    owners = [make_user(f"owner{round_}-{i}") for i in range(2)]
    for user in owners:
        Membership.objects.create(team=team, user=user, role=Role.OWNER)
    return team, owners


def _owners(team: Team) -> int:
    return Membership.objects.filter(team=team, role=Role.OWNER).count()


def _outcome(call) -> str:
    try:
        call()
    except ApplicationError as error:
        return str(error.code)
    return "done"


def test_two_owners_leaving_at_once_leave_one_owner() -> None:
    for round_ in range(ROUNDS):
        team, owners = _two_owners(round_)
        outcomes = _in_threads(2, lambda i, t=team, o=owners: _outcome(
            lambda: membership_remove(team=t, user=o[i], by=o[i])))
        assert sorted(outcomes) == ["conflict", "done"], outcomes
        assert _owners(team) == 1


def test_two_owners_demoting_each_other_at_once_leave_one_owner() -> None:
    for round_ in range(ROUNDS):
        team, owners = _two_owners(round_)
        outcomes = _in_threads(2, lambda i, t=team, o=owners: _outcome(
            lambda: membership_set_role(team=t, user=o[1 - i], role=Role.ADMIN, by=o[i])))
        assert sorted(outcomes) == ["done", "forbidden"], outcomes  # the loser is an admin now
        assert _owners(team) == 1
