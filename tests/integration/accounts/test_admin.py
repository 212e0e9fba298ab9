"""The accounts admin: profiles, team members (with the service rules), hashes never shown."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import ApiToken, Membership, Team, User
from apps.accounts.services import api_token_create, invitation_create
from apps.accounts.signals import membership_changed

pytestmark = pytest.mark.django_db


def team_form(team: Team, roles: dict[int, str], delete: Collection[int] = ()) -> dict:
    """The POST of the team change page: name, slug and the membership inline."""
    memberships = list(Membership.objects.filter(team=team).order_by("pk"))
    data: dict[str, Any] = {
        "name": team.name, "slug": team.slug,
        "memberships-TOTAL_FORMS": len(memberships),
        "memberships-INITIAL_FORMS": len(memberships),
        "memberships-MIN_NUM_FORMS": 0, "memberships-MAX_NUM_FORMS": 1000,
    }
    for i, membership in enumerate(memberships):
        data.update({
            f"memberships-{i}-id": membership.pk,
            f"memberships-{i}-team": team.pk,
            f"memberships-{i}-user": membership.user_id,
            f"memberships-{i}-role": roles.get(membership.user_id, membership.role),
        })
        if membership.user_id in delete:
            data[f"memberships-{i}-DELETE"] = "on"
    return data


def test_the_user_page_edits_the_display_name(admin_client: Client, bob: User) -> None:
    page = admin_client.get(reverse("admin:accounts_user_change", args=[bob.pk]))
    assert page.status_code == 200
    assert b'name="display_name"' in page.content


def test_the_team_page_changes_roles_and_announces_them(
    admin_client: Client, acme: Team, alice: User, bob: User, carol: User,
    django_capture_on_commit_callbacks: Any,
) -> None:
    received: list[tuple[int, str | None]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        received.append((kwargs["user_id"], kwargs["role"]))

    membership_changed.connect(receiver, weak=False)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = admin_client.post(
                reverse("admin:accounts_team_change", args=[acme.pk]),
                team_form(acme, {bob.pk: "admin"}, delete={carol.pk}))
    finally:
        membership_changed.disconnect(receiver)
    assert response.status_code == 302, response.content
    assert dict(Membership.objects.filter(team=acme).values_list("user_id", "role")) == {
        alice.pk: "owner", bob.pk: "admin"}
    assert sorted(received) == sorted([(bob.pk, "admin"), (carol.pk, None)])


def test_the_team_page_refuses_to_leave_no_owner(
    admin_client: Client, acme: Team, alice: User
) -> None:
    response = admin_client.post(reverse("admin:accounts_team_change", args=[acme.pk]),
                                 team_form(acme, {alice.pk: "member"}))
    assert response.status_code == 200
    assert b"at least one owner" in response.content
    assert Membership.objects.get(team=acme, user=alice).role == "owner"


def test_token_and_invitation_pages_never_show_a_hash_or_secret(
    admin_client: Client, acme: Team, alice: User
) -> None:
    token, raw_token = api_token_create(user=alice, name="laptop")
    invitation, raw_link = invitation_create(team=acme, role="member", by=alice)
    pages = [
        admin_client.get(reverse("admin:accounts_apitoken_change", args=[token.pk])),
        admin_client.get(reverse("admin:accounts_apitoken_changelist")),
        admin_client.get(reverse("admin:accounts_invitation_change", args=[invitation.pk])),
        admin_client.get(reverse("admin:accounts_invitation_changelist")),
    ]
    for page in pages:
        assert page.status_code == 200
        html = page.content.decode()
        for secret in (raw_token, token.key_hash, raw_link, invitation.token_hash):
            assert secret not in html
    assert "laptop" in pages[1].content.decode()


def test_tokens_cannot_be_made_in_the_admin_but_can_be_revoked(
    admin_client: Client, alice: User
) -> None:
    token, _ = api_token_create(user=alice, name="laptop")
    assert admin_client.get(reverse("admin:accounts_apitoken_add")).status_code == 403
    admin_client.post(reverse("admin:accounts_apitoken_changelist"),
                      {"action": "revoke", "_selected_action": [token.pk]})
    assert ApiToken.objects.get(pk=token.pk).revoked
