"""Signing up, and joining a team by an invitation link: signed in, by signing up, by logging in."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import SESSION_KEY
from django.test import Client
from django.urls import reverse

from apps.accounts.current import SESSION_KEY as TEAM_KEY
from apps.accounts.models import Invitation, Membership, Role, Team, User, hash_secret
from tests.integration.personas import PASSWORD, make_user

pytestmark = pytest.mark.django_db

SIGNUP = reverse("accounts:signup")
NEW_PASSWORD = "a-long-passphrase-9"


def signup_data(username: str = "erin", **extra: str) -> dict[str, str]:
    return {"username": username, "display_name": "Erin E.", "email": f"{username}@example.com",
            "password1": NEW_PASSWORD, "password2": NEW_PASSWORD, **extra}


def invite_link(client: Client, team: Team, **data: str) -> str:
    """Create an invitation through the members page; the link it shows (once)."""
    response = client.post(reverse("accounts:invitation_new", args=[team.pk]),
                           {"role": "member", **data})
    assert response.status_code == 200
    match = re.search(rb'id="invite-link">([^<]+)<', response.content)
    assert match, "the link is on the page"
    return match.group(1).decode()


def token_of(link: str) -> str:
    return link.rstrip("/").rsplit("/", 1)[1]


def test_signup_creates_the_user_and_signs_in(db: None) -> None:
    client = Client()
    response = client.post(SIGNUP, signup_data())
    assert response.status_code == 302
    user = User.objects.get(username="erin")
    assert user.display_name == "Erin E." and user.check_password(NEW_PASSWORD)
    assert client.session[SESSION_KEY] == str(user.pk)
    assert client.get("/").url == reverse("accounts:team_new")  # no team yet


def test_signup_refuses_mismatched_passwords_and_taken_names(alice: User) -> None:
    response = Client().post(SIGNUP, signup_data(password2="something-else-1"))
    assert response.status_code == 200 and b"errorlist" in response.content
    response = Client().post(SIGNUP, signup_data("ALICE"))
    assert response.status_code == 200 and b"already exists" in response.content
    assert not User.objects.filter(username__in=["erin", "ALICE"]).exists()


def test_the_link_is_shown_once_and_only_its_hash_is_kept(signed_in, acme, alice) -> None:
    client = signed_in(alice)
    link = invite_link(client, acme)
    token = token_of(link)
    assert link.startswith("http://testserver/invite/")
    assert Invitation.objects.get().token_hash == hash_secret(token)
    assert token.encode() not in client.get(
        reverse("accounts:team_members", args=[acme.pk])).content


def test_a_signed_out_visitor_signs_up_through_the_link_and_joins(signed_in, acme, alice) -> None:
    token = token_of(invite_link(signed_in(alice), acme, role="viewer"))
    visitor = Client()
    page = visitor.get(reverse("accounts:invitation", args=[token]))
    assert b"Join Acme" in page.content
    signup_url = f"{SIGNUP}?invite={token}"
    assert signup_url.encode() in page.content
    form = visitor.get(signup_url)
    assert b"You will join <strong>Acme</strong> as viewer" in form.content
    response = visitor.post(signup_url, signup_data(invite=token), follow=True)
    erin = User.objects.get(username="erin")
    assert Membership.objects.get(team=acme, user=erin).role == Role.VIEWER
    assert visitor.session[TEAM_KEY] == acme.pk
    assert b"You are in Acme as viewer." in response.content


def test_a_signed_out_visitor_logs_in_through_the_link_and_joins(
    signed_in, acme, alice, globex, charlie
) -> None:
    token = token_of(invite_link(signed_in(alice), acme))
    visitor = Client()
    login_url = f"{reverse('accounts:login')}?invite={token}"
    assert b"Log in to join <strong>Acme</strong>" in visitor.get(login_url).content
    visitor.post(login_url, {"username": "charlie", "password": PASSWORD, "invite": token})
    assert Membership.objects.get(team=acme, user=charlie).role == Role.MEMBER
    assert visitor.session[TEAM_KEY] == acme.pk


def test_opening_the_link_signed_in_asks_before_joining(signed_in, acme, alice, charlie) -> None:
    token = token_of(invite_link(signed_in(alice), acme))
    client = signed_in(charlie)
    url = reverse("accounts:invitation", args=[token])
    page = client.get(url)
    assert b"Join Acme as Charlie" in page.content
    assert not Membership.objects.filter(team=acme, user=charlie).exists()
    assert client.post(url).url == "/"
    assert Membership.objects.filter(team=acme, user=charlie).exists()


def test_a_used_link_does_not_work_twice(signed_in, acme, alice, charlie) -> None:
    token = token_of(invite_link(signed_in(alice), acme))
    url = reverse("accounts:invitation", args=[token])
    signed_in(charlie).post(url)
    other = signed_in(make_user("frank"))
    response = other.post(url, follow=True)
    assert b"already been used" in response.content
    assert not Membership.objects.filter(team=acme, user__username="frank").exists()


def test_a_revoked_link_does_not_work(signed_in, acme, alice, charlie) -> None:
    owner = signed_in(alice)
    token = token_of(invite_link(owner, acme))
    owner.post(reverse("accounts:invitation_revoke", args=[acme.pk, Invitation.objects.get().pk]))
    response = signed_in(charlie).post(reverse("accounts:invitation", args=[token]), follow=True)
    assert b"has been revoked" in response.content
    assert not Membership.objects.filter(team=acme, user=charlie).exists()


def test_a_link_for_an_address_refuses_other_people(signed_in, acme, alice, charlie) -> None:
    token = token_of(invite_link(signed_in(alice), acme, email="someone@example.com"))
    visitor = Client()
    response = visitor.post(f"{SIGNUP}?invite={token}", signup_data(invite=token), follow=True)
    assert b"for another email address" in response.content
    assert User.objects.filter(username="erin").exists()  # the account is made all the same
    assert not Membership.objects.filter(team=acme, user__username="erin").exists()


def test_an_admin_cannot_hand_out_the_owner_role(signed_in, acme, bob) -> None:
    Membership.objects.filter(team=acme, user=bob).update(role=Role.ADMIN)
    client = signed_in(bob)
    page = client.get(reverse("accounts:team_members", args=[acme.pk]))
    assert b'<option value="owner"' not in page.content
    response = client.post(reverse("accounts:invitation_new", args=[acme.pk]), {"role": "owner"})
    assert response.status_code == 200 and b"not one of the available choices" in response.content
    assert not Invitation.objects.exists()
