"""team_create: the creator owns the team; slugs stay unique."""

from __future__ import annotations

import pytest

from apps.accounts.models import Membership, Role, User
from apps.accounts.services import team_create
from apps.common.errors import ApplicationError, ErrorCode

pytestmark = pytest.mark.django_db


def test_the_creator_becomes_the_only_owner(alice: User) -> None:
    team = team_create(name="  Initech ", owner=alice)
    assert team.name == "Initech"
    assert team.slug == "initech"
    assert team.created_by == alice
    assert list(Membership.objects.filter(team=team).values_list("user__username", "role")) == [
        ("alice", Role.OWNER)]


def test_slugs_are_numbered_when_the_name_is_taken(alice: User, charlie: User) -> None:
    first = team_create(name="Acme Labs", owner=alice)
    second = team_create(name="Acme  labs!", owner=charlie)
    third = team_create(name="acme-labs", owner=charlie)
    assert [first.slug, second.slug, third.slug] == ["acme-labs", "acme-labs-2", "acme-labs-3"]


def test_a_name_without_ascii_letters_still_gets_a_slug(alice: User) -> None:
    assert team_create(name="株式会社", owner=alice).slug == "team"
    assert team_create(name="合同会社", owner=alice).slug == "team-2"


@pytest.mark.parametrize("name", ["", "   ", "x" * 101])
def test_a_blank_or_too_long_name_is_refused(alice: User, name: str) -> None:
    with pytest.raises(ApplicationError) as caught:
        team_create(name=name, owner=alice)
    assert caught.value.code is ErrorCode.INVALID
