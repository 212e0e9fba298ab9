"""Roles and removals: who may do what, the last owner, and membership_changed after commit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import transaction

from apps.accounts.models import Membership, Role, Team, User
from apps.accounts.services import membership_remove, membership_set_role
from apps.accounts.signals import membership_changed
from apps.common.errors import ApplicationError, ErrorCode
from tests.integration.personas import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def announced() -> Iterator[list[dict[str, Any]]]:
    """What membership_changed delivered: ``[{"team_id", "user_id", "role"}]``."""
    received: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        received.append({k: kwargs[k] for k in ("team_id", "user_id", "role")})

    membership_changed.connect(receiver, weak=False)
    yield received
    membership_changed.disconnect(receiver)


def role(team: Team, user: User) -> str | None:
    return Membership.objects.filter(team=team, user=user).values_list("role", flat=True).first()


def refused(code: ErrorCode, call: Callable[[], object]) -> None:
    with pytest.raises(ApplicationError) as caught:
        call()
    assert caught.value.code is code, caught.value.message


# -- set role ---------------------------------------------------------------------------------
def test_an_owner_changes_a_role_and_it_is_announced_after_commit(
    acme: Team, alice: User, bob: User, announced: list, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        membership_set_role(team=acme, user=bob, role=Role.VIEWER, by=alice)
    assert role(acme, bob) == "viewer"
    assert announced == []  # nothing before the commit
    for callback in callbacks:
        callback()
    assert announced == [{"team_id": acme.pk, "user_id": bob.pk, "role": "viewer"}]


def test_nothing_is_announced_when_the_transaction_rolls_back(
    acme: Team, alice: User, bob: User, announced: list, django_capture_on_commit_callbacks: Any
) -> None:
    with (django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError),
          transaction.atomic()):
        membership_set_role(team=acme, user=bob, role=Role.ADMIN, by=alice)
        raise RuntimeError("the caller's transaction fails afterwards")
    assert role(acme, bob) == "member"
    assert announced == []


def test_setting_the_same_role_again_changes_nothing(
    acme: Team, alice: User, bob: User, announced: list, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        membership_set_role(team=acme, user=bob, role="member", by=alice)
    assert callbacks == [] and announced == []


def test_an_admin_manages_members_but_not_owners(
    acme: Team, alice: User, bob: User, carol: User
) -> None:
    dave = make_user("dave")
    Membership.objects.create(team=acme, user=dave, role=Role.ADMIN)
    membership_set_role(team=acme, user=carol, role=Role.MEMBER, by=dave)
    assert role(acme, carol) == "member"
    refused(ErrorCode.FORBIDDEN,
            lambda: membership_set_role(team=acme, user=bob, role=Role.OWNER, by=dave))
    refused(ErrorCode.FORBIDDEN,
            lambda: membership_set_role(team=acme, user=alice, role=Role.MEMBER, by=dave))
    assert role(acme, bob) == "member" and role(acme, alice) == "owner"


@pytest.mark.parametrize("actor", ["bob", "carol"])
def test_members_and_viewers_cannot_change_roles(
    acme: Team, request: pytest.FixtureRequest, alice: User, actor: str
) -> None:
    by = request.getfixturevalue(actor)
    refused(ErrorCode.FORBIDDEN,
            lambda: membership_set_role(team=acme, user=by, role=Role.ADMIN, by=by))


def test_charlie_cannot_change_roles_in_acme(
    acme: Team, globex: Team, bob: User, charlie: User
) -> None:
    refused(ErrorCode.NOT_FOUND,
            lambda: membership_set_role(team=acme, user=bob, role=Role.VIEWER, by=charlie))
    assert role(acme, bob) == "member"


def test_a_non_member_target_is_not_found(acme: Team, alice: User, charlie: User) -> None:
    refused(ErrorCode.NOT_FOUND,
            lambda: membership_set_role(team=acme, user=charlie, role=Role.MEMBER, by=alice))


def test_an_unknown_role_is_invalid(acme: Team, alice: User, bob: User) -> None:
    refused(ErrorCode.INVALID,
            lambda: membership_set_role(team=acme, user=bob, role="superuser", by=alice))


def test_the_last_owner_cannot_be_demoted(acme: Team, alice: User) -> None:
    refused(ErrorCode.CONFLICT,
            lambda: membership_set_role(team=acme, user=alice, role=Role.ADMIN, by=alice))
    assert role(acme, alice) == "owner"


def test_an_owner_steps_down_once_another_owner_exists(
    acme: Team, alice: User, bob: User
) -> None:
    membership_set_role(team=acme, user=bob, role=Role.OWNER, by=alice)
    membership_set_role(team=acme, user=alice, role=Role.MEMBER, by=alice)
    assert role(acme, alice) == "member" and role(acme, bob) == "owner"
    # bob is now the only owner: alice (a member now) can do nothing about it
    refused(ErrorCode.FORBIDDEN,
            lambda: membership_set_role(team=acme, user=bob, role=Role.MEMBER, by=alice))


# -- remove ----------------------------------------------------------------------------------
def test_an_owner_removes_a_member_and_it_is_announced(
    acme: Team, alice: User, bob: User, announced: list, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        membership_remove(team=acme, user=bob, by=alice)
    assert role(acme, bob) is None
    assert announced == [{"team_id": acme.pk, "user_id": bob.pk, "role": None}]


def test_anyone_may_leave(acme: Team, carol: User, announced: list,
                          django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        membership_remove(team=acme, user=carol, by=carol)
    assert role(acme, carol) is None
    assert announced == [{"team_id": acme.pk, "user_id": carol.pk, "role": None}]


def test_the_last_owner_cannot_leave_or_be_removed(acme: Team, alice: User) -> None:
    refused(ErrorCode.CONFLICT, lambda: membership_remove(team=acme, user=alice, by=alice))
    assert role(acme, alice) == "owner"


def test_a_member_cannot_remove_another(acme: Team, bob: User, carol: User) -> None:
    refused(ErrorCode.FORBIDDEN, lambda: membership_remove(team=acme, user=carol, by=bob))
    assert role(acme, carol) == "viewer"


def test_an_admin_cannot_remove_an_owner(acme: Team, alice: User, bob: User) -> None:
    membership_set_role(team=acme, user=bob, role=Role.ADMIN, by=alice)
    refused(ErrorCode.FORBIDDEN, lambda: membership_remove(team=acme, user=alice, by=bob))


def test_charlie_cannot_remove_anyone_from_acme(
    acme: Team, globex: Team, bob: User, charlie: User
) -> None:
    refused(ErrorCode.NOT_FOUND, lambda: membership_remove(team=acme, user=bob, by=charlie))
    assert role(acme, bob) == "member"


def test_removing_someone_who_is_not_a_member_is_not_found(
    acme: Team, alice: User, charlie: User
) -> None:
    refused(ErrorCode.NOT_FOUND, lambda: membership_remove(team=acme, user=charlie, by=alice))


def test_a_failing_receiver_does_not_stop_the_others(
    acme: Team, alice: User, bob: User, announced: list, django_capture_on_commit_callbacks: Any
) -> None:
    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("socket layer down")

    membership_changed.connect(broken, weak=False)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            membership_remove(team=acme, user=bob, by=alice)
    finally:
        membership_changed.disconnect(broken)
    assert announced == [{"team_id": acme.pk, "user_id": bob.pk, "role": None}]
