"""Invitations: made by managers, stored hashed, used once, expiring, revocable."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from apps.accounts.models import Invitation, Membership, Role, Team, User
from apps.accounts.services import invitation_accept, invitation_create, invitation_revoke
from apps.accounts.signals import membership_changed
from apps.common.errors import ApplicationError, ErrorCode
from tests.integration.personas import make_user

pytestmark = pytest.mark.django_db


def refused(code: ErrorCode, **kwargs: Any) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        invitation_accept(**kwargs)
    assert caught.value.code is code, caught.value.message
    return caught.value


def test_a_new_person_joins_with_the_invited_role(acme: Team, alice: User) -> None:
    dave = make_user("dave")
    invitation, raw = invitation_create(team=acme, role=Role.VIEWER, by=alice)
    membership = invitation_accept(token=raw, user=dave)
    assert (membership.team, membership.user, membership.role) == (acme, dave, "viewer")
    invitation.refresh_from_db()
    assert invitation.accepted_by == dave and invitation.accepted_at is not None


def test_only_the_hash_of_the_link_token_is_stored(acme: Team, alice: User) -> None:
    invitation, raw = invitation_create(team=acme, role=Role.MEMBER, by=alice)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM accounts_invitation WHERE id = %s", [invitation.pk])
        row = cursor.fetchone()
    assert len(raw) >= 40
    assert not any(raw in str(value) for value in row)


def test_an_invitation_is_used_once(acme: Team, alice: User) -> None:
    _, raw = invitation_create(team=acme, role=Role.MEMBER, by=alice)
    invitation_accept(token=raw, user=make_user("dave"))
    error = refused(ErrorCode.CONFLICT, token=raw, user=make_user("erin"))
    assert "already been used" in error.message
    assert not Membership.objects.filter(team=acme, user__username="erin").exists()


def test_an_expired_invitation_is_refused(acme: Team, alice: User) -> None:
    invitation, raw = invitation_create(team=acme, role=Role.MEMBER, by=alice,
                                        ttl=timedelta(hours=1))
    Invitation.objects.filter(pk=invitation.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1))
    error = refused(ErrorCode.INVALID, token=raw, user=make_user("dave"))
    assert "expired" in error.message


def test_a_revoked_invitation_is_refused(acme: Team, alice: User) -> None:
    invitation, raw = invitation_create(team=acme, role=Role.MEMBER, by=alice)
    invitation_revoke(team=acme, invitation_id=invitation.pk, by=alice)
    error = refused(ErrorCode.INVALID, token=raw, user=make_user("dave"))
    assert "revoked" in error.message


def test_an_unknown_token_is_not_found(acme: Team, bob: User) -> None:
    refused(ErrorCode.NOT_FOUND, token="no-such-token", user=bob)


def test_an_existing_member_keeps_the_higher_role(
    acme: Team, alice: User, bob: User, django_capture_on_commit_callbacks: Any
) -> None:
    _, viewer_link = invitation_create(team=acme, role=Role.VIEWER, by=alice)
    assert invitation_accept(token=viewer_link, user=bob).role == "member"  # never demoted

    received: list[dict] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        received.append(kwargs)

    membership_changed.connect(receiver, weak=False)
    try:
        _, admin_link = invitation_create(team=acme, role=Role.ADMIN, by=alice)
        with django_capture_on_commit_callbacks(execute=True):
            assert invitation_accept(token=admin_link, user=bob).role == "admin"
    finally:
        membership_changed.disconnect(receiver)
    assert [(r["user_id"], r["role"]) for r in received] == [(bob.pk, "admin")]


def test_an_email_invitation_is_for_that_address_only(acme: Team, alice: User) -> None:
    _, raw = invitation_create(team=acme, role=Role.MEMBER, by=alice, email=" Dave@Example.com")
    refused(ErrorCode.FORBIDDEN, token=raw, user=make_user("erin", email="erin@example.com"))
    dave = make_user("dave", email="dave@example.COM")
    assert invitation_accept(token=raw, user=dave).role == "member"


@pytest.mark.parametrize("actor", ["bob", "carol"])
def test_only_managers_invite(acme: Team, request: pytest.FixtureRequest, actor: str) -> None:
    with pytest.raises(ApplicationError) as caught:
        invitation_create(team=acme, role=Role.MEMBER, by=request.getfixturevalue(actor))
    assert caught.value.code is ErrorCode.FORBIDDEN


def test_an_admin_cannot_invite_an_owner(acme: Team, alice: User, bob: User) -> None:
    Membership.objects.filter(team=acme, user=bob).update(role=Role.ADMIN)
    with pytest.raises(ApplicationError) as caught:
        invitation_create(team=acme, role=Role.OWNER, by=bob)
    assert caught.value.code is ErrorCode.FORBIDDEN
    invitation_create(team=acme, role=Role.ADMIN, by=bob)  # up to its own level is fine


def test_charlie_cannot_invite_to_or_revoke_in_acme(
    acme: Team, globex: Team, alice: User, charlie: User
) -> None:
    with pytest.raises(ApplicationError) as caught:
        invitation_create(team=acme, role=Role.MEMBER, by=charlie)
    assert caught.value.code is ErrorCode.NOT_FOUND
    invitation, _ = invitation_create(team=acme, role=Role.MEMBER, by=alice)
    for team in (acme, globex):  # neither through Acme nor through his own team
        with pytest.raises(ApplicationError) as caught:
            invitation_revoke(team=team, invitation_id=invitation.pk, by=charlie)
        assert caught.value.code is ErrorCode.NOT_FOUND
    invitation.refresh_from_db()
    assert not invitation.revoked


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"ttl": timedelta(0)}, "90 days"),
    ({"ttl": timedelta(days=91)}, "90 days"),
    ({"email": "not an address"}, "not an email"),
    ({"role": "emperor"}, "Unknown role"),
])
def test_bad_invitation_input_is_invalid(
    acme: Team, alice: User, kwargs: dict, words: str
) -> None:
    with pytest.raises(ApplicationError) as caught:
        invitation_create(**{"team": acme, "role": Role.MEMBER, "by": alice, **kwargs})
    assert caught.value.code is ErrorCode.INVALID and words in caught.value.message


def test_a_used_invitation_cannot_be_revoked(acme: Team, alice: User) -> None:
    invitation, raw = invitation_create(team=acme, role=Role.MEMBER, by=alice)
    invitation_accept(token=raw, user=make_user("dave"))
    with pytest.raises(ApplicationError) as caught:
        invitation_revoke(team=acme, invitation_id=invitation.pk, by=alice)
    assert caught.value.code is ErrorCode.CONFLICT
