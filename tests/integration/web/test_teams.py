"""Teams through the pages: the home page, creating and switching teams, roles and removal."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.current import SESSION_KEY as TEAM_KEY
from apps.accounts.models import Membership, Role, Team, User

pytestmark = pytest.mark.django_db


def members_url(team: Team) -> str:
    return reverse("accounts:team_members", args=[team.pk])


def role_of(team: Team, user: User) -> str | None:
    membership = Membership.objects.filter(team=team, user=user).first()
    return membership.role if membership else None


def test_home_sends_people_to_their_place(signed_in, acme, alice) -> None:
    assert Client().get("/").url == f"{reverse('accounts:login')}?next=/"
    assert signed_in(alice).get("/").url == reverse("rooms:room_list")


def test_a_new_team_has_its_creator_as_owner_and_becomes_current(signed_in, acme, alice) -> None:
    client = signed_in(alice)
    response = client.post(reverse("accounts:team_new"), {"name": "Initech"})
    team = Team.objects.get(name="Initech")
    assert response.url == "/" and role_of(team, alice) == Role.OWNER
    assert client.session[TEAM_KEY] == team.pk


def test_a_blank_team_name_is_refused(signed_in, alice) -> None:
    response = signed_in(alice).post(reverse("accounts:team_new"), {"name": "   "})
    assert response.status_code == 200 and b"errorlist" in response.content
    assert not Team.objects.exists()


def test_switching_to_ones_own_team(signed_in, acme, alice) -> None:
    other = Team.objects.create(name="Zeta", slug="zeta")
    Membership.objects.create(team=other, user=alice, role=Role.MEMBER)
    client = signed_in(alice)
    client.get("/")
    assert client.session[TEAM_KEY] == acme.pk  # the first team by name
    assert client.post(reverse("accounts:team_switch", args=[other.pk])).url == "/"
    assert client.session[TEAM_KEY] == other.pk
    page = client.get(reverse("accounts:tokens"))
    assert page.context["current_membership"].team == other


def test_switching_to_a_team_one_is_not_in_is_refused(signed_in, acme, globex, alice) -> None:
    client = signed_in(alice)
    client.get("/")
    response = client.post(reverse("accounts:team_switch", args=[globex.pk]))
    assert response.status_code == 404
    assert client.session[TEAM_KEY] == acme.pk


def test_the_current_team_falls_back_when_one_leaves_it(signed_in, acme, globex, bob) -> None:
    Membership.objects.create(team=globex, user=bob, role=Role.MEMBER)
    client = signed_in(bob)
    client.post(reverse("accounts:team_switch", args=[globex.pk]))
    Membership.objects.filter(team=globex, user=bob).delete()
    page = client.get(reverse("accounts:tokens"))
    assert page.context["current_membership"].team == acme
    assert client.session[TEAM_KEY] == acme.pk


def test_the_top_bar_shows_team_settings_to_owners_and_admins_only(
    signed_in, acme, alice, bob
) -> None:
    settings_url = reverse("integrations:team_settings", args=[acme.pk]).encode()
    assert settings_url in signed_in(alice).get(members_url(acme)).content
    page = signed_in(bob).get(members_url(acme)).content
    assert settings_url not in page and b"Members" in page
    assert b"Log in" in Client().get(reverse("accounts:login")).content


def test_an_owner_changes_a_role_through_the_page(signed_in, acme, alice, dave) -> None:
    client = signed_in(alice)
    response = client.post(reverse("accounts:member_role", args=[acme.pk, dave.pk]),
                           {"role": "admin"}, follow=True)
    assert role_of(acme, dave) == Role.ADMIN
    assert b"Dave is now admin." in response.content


def test_a_member_id_no_row_can_hold_is_a_missing_member(signed_in, acme, alice) -> None:
    client = signed_in(alice)
    for name in ("accounts:member_role", "accounts:member_remove"):
        response = client.post(reverse(name, args=[acme.pk, 2**63]), {"role": "admin"})
        assert response.status_code == 404, name  # was a 500: OverflowError on SQLite


def test_members_and_viewers_cannot_change_roles(signed_in, acme, bob, carol, dave) -> None:
    for user in (bob, carol):
        response = signed_in(user).post(reverse("accounts:member_role", args=[acme.pk, dave.pk]),
                                        {"role": "viewer"})
        assert response.status_code == 403
    assert role_of(acme, dave) == Role.MEMBER
    assert b"Change role" not in signed_in(bob).get(members_url(acme)).content


def test_an_admin_cannot_touch_an_owner(signed_in, acme, alice, bob) -> None:
    Membership.objects.filter(team=acme, user=bob).update(role=Role.ADMIN)
    client = signed_in(bob)
    response = client.post(reverse("accounts:member_role", args=[acme.pk, alice.pk]),
                           {"role": "member"})
    assert response.status_code == 403 and b"Only an owner" in response.content
    assert role_of(acme, alice) == Role.OWNER


def test_the_last_owner_cannot_step_down(signed_in, acme, alice) -> None:
    response = signed_in(alice).post(reverse("accounts:member_role", args=[acme.pk, alice.pk]),
                                     {"role": "member"}, follow=True)
    assert b"A team needs at least one owner" in response.content
    assert role_of(acme, alice) == Role.OWNER


def test_an_unknown_role_is_refused(signed_in, acme, alice, dave) -> None:
    response = signed_in(alice).post(reverse("accounts:member_role", args=[acme.pk, dave.pk]),
                                     {"role": "emperor"}, follow=True)
    assert b"Choose one of the roles." in response.content
    assert role_of(acme, dave) == Role.MEMBER


def test_a_role_change_for_someone_outside_the_team_is_not_found(
    signed_in, acme, alice, charlie
) -> None:
    response = signed_in(alice).post(
        reverse("accounts:member_role", args=[acme.pk, charlie.pk]), {"role": "viewer"})
    assert response.status_code == 404


def test_an_owner_removes_a_member_through_the_page(signed_in, acme, alice, dave) -> None:
    response = signed_in(alice).post(reverse("accounts:member_remove", args=[acme.pk, dave.pk]),
                                     follow=True)
    assert role_of(acme, dave) is None
    assert b"Dave is no longer in Acme." in response.content


def test_a_member_leaves_and_goes_home(signed_in, acme, bob) -> None:
    client = signed_in(bob)
    response = client.post(reverse("accounts:member_remove", args=[acme.pk, bob.pk]))
    assert response.url == "/" and role_of(acme, bob) is None
    assert client.get(members_url(acme)).status_code == 404
