"""Search on PostgreSQL (issue 19): the same literal substring rules as on SQLite — CJK found
mid-sentence, ASCII case ignored, accented letters found as written — and another team's text
never found. (Whether ``UPPER`` folds non-ASCII letters depends on the database's ``LC_CTYPE``:
the test server's is C, so that is not asserted.)"""

from __future__ import annotations

import pytest

from apps.accounts.models import Membership, Role, Team
from apps.rooms.models import Conversation, Message, Room
from apps.rooms.search import search
from tests.integration.personas import make_user

pytestmark = pytest.mark.django_db


def test_search_finds_substrings_in_the_callers_teams_only() -> None:
    alice, charlie = make_user("alice"), make_user("charlie")
    acme = Team.objects.create(name="Acme", slug="acme")
    globex = Team.objects.create(name="Globex", slug="globex")
    Membership.objects.create(team=acme, user=alice, role=Role.OWNER)
    Membership.objects.create(team=globex, user=charlie, role=Role.OWNER)
    ours = Conversation.objects.create(room=Room.objects.create(team=acme, name="G"),
                                       title="École d'été")
    theirs = Conversation.objects.create(room=Room.objects.create(team=globex, name="G"),
                                         title="Other")
    said = Message.objects.create(conversation=ours, role="assistant", position=1, content=[
        {"type": "text", "text": "服务器下周搬到柏林的新机房。The BUDGET is fine."}])
    Message.objects.create(conversation=theirs, role="assistant", position=1, content=[
        {"type": "text", "text": "服务器下周搬到柏林的新机房。"}])

    hits, count = search(user=alice, query="柏林的新")
    assert count == 1 and hits[0].message.pk == said.pk
    assert hits[0].snippet[slice(*hits[0].highlight)] == "柏林的新"
    assert [h.message.pk for h in search(user=alice, query="the budget")[0]] == [said.pk]
    titles, _ = search(user=alice, query="cole d'été")
    assert [(h.conversation.pk, h.message) for h in titles] == [(ours.pk, None)]
    assert titles[0].snippet[slice(*titles[0].highlight)] == "cole d'été"
    assert [h.conversation.pk for h in search(user=charlie, query="柏林")[0]] == [theirs.pk]
