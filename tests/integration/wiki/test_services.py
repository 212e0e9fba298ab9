"""The wiki services as the browser views and the agent's tools call them: who may write, what
a refusal looks like, who the commit is by, and the ``wiki.changed`` event after each commit."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.contrib.auth.models import AnonymousUser

from apps.common.errors import ApplicationError, ErrorCode
from apps.realtime.groups import wiki_group
from apps.wiki.authors import agent_author
from apps.wiki.errors import WikiConflictError
from apps.wiki.services import (
    page_delete,
    page_edit,
    page_rename,
    page_restore,
    page_save,
    wiki_membership,
)
from tests.integration.wiki.conftest import HOME, git


def refused(code: ErrorCode, call, **kwargs) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        call(**kwargs)
    assert caught.value.code == code, caught.value.message
    return caught.value


@pytest.mark.django_db
def test_membership_is_not_found_alike_for_outsiders_and_unknown_teams(acme, charlie) -> None:
    answers = {refused(ErrorCode.NOT_FOUND, wiki_membership, user=user, team_id=team_id).message
               for user, team_id in ((charlie, acme.pk), (charlie, 999_999),
                                     (AnonymousUser(), acme.pk))}
    assert answers == {"No such wiki."}


@pytest.mark.django_db
def test_roles_decide_who_writes_and_who_deletes(acme, alice, bob, carol, charlie,
                                                 home) -> None:
    write = {"team": acme, "path": "Home.md", "content": "# x\n", "expected_blob": home.blob,
             "message": ""}
    refused(ErrorCode.NOT_FOUND, page_save, by=charlie, **write)
    refused(ErrorCode.FORBIDDEN, page_save, by=carol, **write)
    refused(ErrorCode.FORBIDDEN, page_edit, team=acme, by=carol, path="Home.md", old="Home",
            new="x", message="")
    refused(ErrorCode.FORBIDDEN, page_rename, team=acme, by=carol, path="Home.md",
            to="B.md", expected_blob=home.blob, message="")
    refused(ErrorCode.FORBIDDEN, page_restore, team=acme, by=carol, path="Home.md",
            rev=home.commit, message="")
    delete = {"team": acme, "path": "Home.md", "expected_blob": home.blob, "message": ""}
    refused(ErrorCode.FORBIDDEN, page_delete, by=bob, **delete)
    refused(ErrorCode.FORBIDDEN, page_delete, by=carol, **delete)
    assert git(acme, "rev-parse", "main").strip() == home.commit  # nothing was committed
    assert page_delete(by=alice, **delete).blob is None


@pytest.mark.django_db
def test_a_conflict_carries_the_current_page_and_the_merged_text(acme, alice, bob,
                                                                 home) -> None:
    page_save(team=acme, by=alice, path="Home.md", content=HOME.replace("Welcome", "Hi"),
              expected_blob=home.blob, message="")
    with pytest.raises(WikiConflictError) as caught:
        page_save(team=acme, by=bob, path="Home.md", content=HOME.replace("Welcome", "Yo"),
                  expected_blob=home.blob, message="")
    body = caught.value.body()
    assert body["code"] == "conflict" and caught.value.status == 409
    assert "Hi" in body["current"]["content"] and "Yo" in body["merged_text"]


@pytest.mark.django_db
def test_edit_applies_to_the_page_as_it_is_now(acme, bob, home) -> None:
    result = page_edit(team=acme, by=bob, path="Home.md", old="Welcome", new="Hello",
                       message="Greet")
    assert result.path == "Home.md"
    assert "Hello to the Acme wiki." in git(acme, "show", "main:Home.md")
    refused(ErrorCode.INVALID, page_edit, team=acme, by=bob, path="Home.md", old="absent",
            new="x", message="")


@pytest.mark.django_db
def test_the_agent_commits_as_itself_for_the_person(acme, bob, home) -> None:
    author = agent_author(bob, conversation_id=3, run_id=4, tool_call_id="call_9")
    page_save(team=acme, by=bob, path="Notes.md", content="# Notes\n", expected_blob=None,
              message="Agent notes", author=author)
    log = git(acme, "log", "-1", "--format=%an%n%B", "main")
    assert log.splitlines()[0] == "agent (for Bob)"
    for trailer in (f"Confab-User: {bob.pk}", "Confab-Conversation: 3", "Confab-Run: 4",
                    "Confab-Tool-Call: call_9"):
        assert trailer in log


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_db_threads")
async def test_every_commit_is_announced_to_the_teams_wiki_group(acme, alice, globex) -> None:
    layer = get_channel_layer()
    ours, theirs = await layer.new_channel(), await layer.new_channel()
    await layer.group_add(wiki_group(acme.pk), ours)
    await layer.group_add(wiki_group(globex.pk), theirs)
    save = sync_to_async(page_save)
    created = await save(team=acme, by=alice, path="A.md", content="# A\n",
                         expected_blob=None, message="")
    same = await save(team=acme, by=alice, path="A.md", content="# A\n",
                      expected_blob=created.blob, message="")
    assert (same.changed, same.commit) == (False, created.commit)  # no commit: no news
    moved = await sync_to_async(page_rename)(team=acme, by=alice, path="A.md", to="B.md",
                                             expected_blob=created.blob, message="")
    first, second = await layer.receive(ours), await layer.receive(ours)
    assert first == {"type": "wiki.changed", "path": "A.md", "commit": created.commit,
                     "author": "Alice", "action": "write", "from": None}
    assert second == {"type": "wiki.changed", "path": "B.md", "commit": moved.commit,
                      "author": "Alice", "action": "rename", "from": "A.md"}
    # The other team's group heard nothing: the first thing it gets is a marker sent now.
    await layer.group_send(wiki_group(globex.pk), {"type": "marker"})
    assert await layer.receive(theirs) == {"type": "marker"}


@pytest.mark.django_db
def test_a_lost_repository_is_answered_as_damage_and_never_started_afresh(acme, alice,
                                                                            home) -> None:
    from apps.wiki.models import WikiRepository
    from apps.wiki.selectors import page_list
    from apps.wiki.stores import store_for

    assert WikiRepository.objects.filter(team=acme).exists()  # recorded by the first commit
    path = store_for(acme).path
    path.rename(path.with_name("moved-away.git"))  # the volume was not mounted, say
    for call, kwargs in ((page_list, {}), (page_save, {
            "by": alice, "path": "New.md", "content": "# New\n", "expected_blob": None,
            "message": ""})):
        error = refused(ErrorCode.UNAVAILABLE, call, team=acme, **kwargs)
        assert "restore it from a backup" in error.message
    assert not path.exists()
