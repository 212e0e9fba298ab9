"""The wiki's REST API as clients use it (issue 9): shapes, conflicts, merges, limits, refusals
and authorship, over the real store in a WIKI_DIR of each test's own.

Deleting answers ``200`` with the commit that removed the page (not ``204``): a client needs it
to offer "undo" (a restore from the commit before it) or to link the change.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from apps.wiki.stores import store_for
from tests.integration.wiki.conftest import HOME, git

pytestmark = pytest.mark.django_db

HEX40 = r"[0-9a-f]{40}"
CAFE = "Caf\u00e9"  # composed (NFC), as the store keeps names
CAFE_NFD = unicodedata.normalize("NFD", CAFE)  # "Cafe" + U+0301, as macOS spells file names


def pages(team) -> str:
    return f"/api/teams/{team.pk}/wiki/pages"


def put(client, team, path: str, body: dict):
    return client.put(f"{pages(team)}/{path}", body, content_type="application/json")


def post(client, url: str, body: dict):
    return client.post(url, body, content_type="application/json")


def test_a_page_is_created_read_and_listed(acme, bob, token_client) -> None:
    client = token_client(bob)
    created = put(client, acme, "ops/Runbook.md", {"content": "# Runbook\n\nStep one.\n",
                                                   "expected_blob": None})
    assert created.status_code == 201, created.content
    body = created.json()
    assert set(body) == {"path", "blob", "commit", "merged", "changed"}
    assert body["path"] == "ops/Runbook.md" and body["merged"] is False and body["changed"]
    same = put(client, acme, "ops/Runbook.md", {"content": "# Runbook\n\nStep one.\n",
                                               "expected_blob": body["blob"]})
    assert same.status_code == 200 and same.json() == {**body, "changed": False}

    read = client.get(f"{pages(acme)}/ops/Runbook.md").json()
    assert read == {"path": "ops/Runbook.md", "content": "# Runbook\n\nStep one.\n",
                    "blob": body["blob"], "commit": body["commit"]}
    listed = client.get(pages(acme)).json()
    assert listed == [{"path": "ops/Runbook.md", "title": "Runbook", "blob": body["blob"],
                       "updated_at": listed[0]["updated_at"], "updated_by": "Bob"}]


def test_the_list_holds_pages_only_and_filters_by_prefix(acme, alice, home, token_client) -> None:
    client = token_client(alice)
    put(client, acme, "ops/Deploy.md", {"content": "# Deploy\n"})
    client.put(f"/api/teams/{acme.pk}/wiki/files/_files/a.png", b"png",
               content_type="application/octet-stream")
    assert [p["path"] for p in client.get(pages(acme)).json()] == ["Home.md", "ops/Deploy.md"]
    assert [p["path"] for p in client.get(pages(acme), {"prefix": "ops/"}).json()] == [
        "ops/Deploy.md"]


def test_a_cjk_page_name_works_end_to_end(acme, alice, token_client) -> None:
    client = token_client(alice)
    assert put(client, acme, "指南.md", {"content": "# 指南\n\n部署步骤。\n"}).status_code == 201
    assert client.get(f"{pages(acme)}/%E6%8C%87%E5%8D%97.md").json()["content"].startswith("# 指南")
    hits = client.get(f"/api/teams/{acme.pk}/wiki/search", {"q": "部署"}).json()
    assert hits == [{"path": "指南.md", "line": 3, "snippet": "部署步骤。"}]


def test_paths_in_nfd_are_normalized_to_nfc(acme, alice, token_client) -> None:
    assert CAFE_NFD != CAFE
    client = token_client(alice)
    created = put(client, acme, f"{CAFE_NFD}.md", {"content": "# Menu\n"})
    assert created.status_code == 201, created.content
    assert created.json()["path"] == f"{CAFE}.md"
    assert client.get(f"{pages(acme)}/{CAFE}.md").json()["content"] == "# Menu\n"
    assert client.get(f"{pages(acme)}/{CAFE_NFD}.md").json()["path"] == f"{CAFE}.md"
    moved = post(client, f"{pages(acme)}/{CAFE_NFD}.md/rename",
                 {"to": f"{CAFE_NFD}/Menu.md", "expected_blob": created.json()["blob"]})
    assert moved.status_code == 200 and moved.json()["path"] == f"{CAFE}/Menu.md"
    assert [p["path"] for p in client.get(pages(acme), {"prefix": f"{CAFE_NFD}/"}).json()] == [
        f"{CAFE}/Menu.md"]
    uploaded = client.put(f"/api/teams/{acme.pk}/wiki/files/_files/{CAFE_NFD}.png", b"png",
                          content_type="application/octet-stream")
    assert uploaded.status_code == 201 and uploaded.json()["path"] == f"_files/{CAFE}.png"
    assert sorted(git(acme, "ls-tree", "-r", "-z", "--name-only", "main").split("\0")[:-1]) == [
        f"{CAFE}/Menu.md", f"_files/{CAFE}.png"]


def test_create_only_of_an_existing_page_is_a_conflict_with_the_current_page(
        acme, bob, home, token_client) -> None:
    response = put(token_client(bob), acme, "Home.md", {"content": "# Mine\n",
                                                        "expected_blob": None})
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "conflict" and body["message"]
    assert body["current"] == {"content": HOME, "blob": home.blob}
    assert body["merged_text"] is None


def test_a_stale_write_elsewhere_in_the_page_is_merged(acme, alice, bob, home,
                                                       token_client) -> None:
    alice_edit = HOME.replace("# Home", "# Home page")
    first = put(token_client(alice), acme, "Home.md",
                {"content": alice_edit, "expected_blob": home.blob})
    assert first.status_code == 200 and first.json()["merged"] is False
    bob_edit = HOME + "\nBob's footer.\n"
    second = put(token_client(bob), acme, "Home.md",
                 {"content": bob_edit, "expected_blob": home.blob})  # stale: read before alice
    assert second.status_code == 200, second.content
    assert second.json()["merged"] is True
    content = token_client(bob).get(f"{pages(acme)}/Home.md").json()["content"]
    assert content.startswith("# Home page") and content.endswith("Bob's footer.\n")


def test_an_overlapping_stale_write_is_a_409_with_current_and_merged_text(
        acme, alice, bob, home, token_client) -> None:
    ours = put(token_client(alice), acme, "Home.md",
               {"content": HOME.replace("Welcome", "Hello"), "expected_blob": home.blob}).json()
    response = put(token_client(bob), acme, "Home.md",
                   {"content": HOME.replace("Welcome", "Greetings"),
                    "expected_blob": home.blob})
    assert response.status_code == 409
    body = response.json()
    assert set(body) == {"code", "message", "current", "merged_text"}
    assert body["current"]["blob"] == ours["blob"]
    assert "Hello" in body["current"]["content"]
    assert "<<<<<<<" in body["merged_text"] and "Greetings" in body["merged_text"]
    assert git(acme, "rev-parse", "main").strip() == ours["commit"]  # nothing committed


def test_rename_restore_history_and_diff(acme, alice, home, token_client) -> None:
    client = token_client(alice)
    wiki = f"/api/teams/{acme.pk}/wiki"
    changed = put(client, acme, "Home.md", {"content": HOME + "More.\n",
                                            "expected_blob": home.blob}).json()
    moved = post(client, f"{pages(acme)}/Home.md/rename",
                 {"to": "Start/Home.md", "expected_blob": changed["blob"]})
    assert moved.status_code == 200, moved.content
    assert moved.json()["path"] == "Start/Home.md"
    assert client.get(f"{pages(acme)}/Home.md").status_code == 404

    history = client.get(f"{wiki}/history/Start/Home.md").json()
    assert [entry["path"] for entry in history] == ["Start/Home.md", "Home.md", "Home.md"]
    newest = history[0]
    assert set(newest) == {"commit", "path", "author", "date", "subject", "trailers"}
    assert newest["author"] == "Alice" and newest["trailers"]["Confab-User"] == str(alice.pk)
    assert newest["trailers"]["Confab-Renamed-From"] == "Home.md"

    diff = client.get(f"{wiki}/diff/Home.md", {"from": home.commit, "to": changed["commit"]})
    assert diff.status_code == 200
    body = diff.json()
    assert body["from"] == home.commit and body["to"] == changed["commit"]
    assert "+More." in body["diff"]

    restored = post(client, f"{pages(acme)}/Home.md/restore", {"rev": home.commit})
    assert restored.status_code == 200, restored.content
    assert client.get(f"{pages(acme)}/Home.md").json()["content"] == HOME


def test_an_old_revision_is_read_with_rev(acme, alice, home, token_client) -> None:
    client = token_client(alice)
    put(client, acme, "Home.md", {"content": "# New\n", "expected_blob": home.blob})
    old = client.get(f"{pages(acme)}/Home.md", {"rev": home.commit}).json()
    assert old["content"] == HOME and old["commit"] == home.commit


def test_over_the_page_limit_is_413_and_commits_nothing(acme, alice, home, settings,
                                                        token_client) -> None:
    settings.CONFAB = {**settings.CONFAB, "WIKI_PAGE_BYTES": 100}
    response = put(token_client(alice), acme, "Big.md", {"content": "x" * 101})
    assert response.status_code == 413
    assert response.json()["code"] == "too_large"
    assert git(acme, "rev-parse", "main").strip() == home.commit


def test_over_the_quota_is_413(acme, alice, home, settings, token_client) -> None:
    settings.CONFAB = {**settings.CONFAB, "WIKI_QUOTA_BYTES": len(HOME.encode()) + 10}
    response = put(token_client(alice), acme, "Two.md", {"content": "y" * 20})
    assert (response.status_code, response.json()["code"]) == (413, "too_large")


@pytest.mark.parametrize("path", ["../x.md", "a/../../x.md", ".git/config.md", "-p.md",
                                  "Home.txt"])
def test_paths_the_rules_refuse_are_400_invalid(acme, alice, path, token_client) -> None:
    response = put(token_client(alice), acme, path, {"content": "# x\n"})
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid"


def test_a_case_twin_of_an_existing_page_is_refused(acme, alice, home, token_client) -> None:
    response = put(token_client(alice), acme, "home.md", {"content": "# twin\n"})
    assert (response.status_code, response.json()["code"]) == (400, "invalid")


@pytest.mark.parametrize("rev", ["--output=Home.md", "-p", "HEAD~1", "main", "0" * 40])
def test_revisions_that_are_options_or_unknown_answer_like_a_missing_page(
        acme, alice, home, rev, token_client, wiki_dir) -> None:
    client = token_client(alice)
    missing = client.get(f"{pages(acme)}/Nope.md")
    for response in (client.get(f"{pages(acme)}/Home.md", {"rev": rev}),
                     client.get(f"/api/teams/{acme.pk}/wiki/diff/Home.md", {"from": rev})):
        assert (response.status_code, response.json()) == (404, missing.json())
    restore = post(client, f"{pages(acme)}/Home.md/restore", {"rev": rev})
    assert (restore.status_code, restore.json()) == (404, missing.json())
    assert not (Path.cwd() / "Home.md").exists()
    assert not list(wiki_dir.parent.rglob("Home.md"))  # no file written by an option
    assert git(acme, "rev-parse", "main").strip() == home.commit


def test_a_viewer_reads_but_cannot_write(acme, carol, home, token_client) -> None:
    client = token_client(carol)
    assert client.get(f"{pages(acme)}/Home.md").status_code == 200
    response = put(client, acme, "Home.md", {"content": "# no\n", "expected_blob": home.blob})
    assert (response.status_code, response.json()["code"]) == (403, "forbidden")


def test_a_member_cannot_delete_an_owner_can(acme, alice, bob, home, token_client) -> None:
    url = f"{pages(acme)}/Home.md?expected_blob={home.blob}"
    refused = token_client(bob).delete(url)
    assert (refused.status_code, refused.json()["code"]) == (403, "forbidden")
    deleted = token_client(alice).delete(url)
    assert deleted.status_code == 200
    body = deleted.json()
    assert body["path"] == "Home.md" and body["blob"] is None
    assert git(acme, "rev-parse", "main").strip() == body["commit"]
    assert token_client(alice).get(f"{pages(acme)}/Home.md").status_code == 404


def test_a_stale_delete_is_a_conflict(acme, alice, home, token_client) -> None:
    client = token_client(alice)
    put(client, acme, "Home.md", {"content": "# Changed\n", "expected_blob": home.blob})
    response = client.delete(f"{pages(acme)}/Home.md?expected_blob={home.blob}")
    assert response.status_code == 409
    assert response.json()["current"]["content"] == "# Changed\n"


def test_the_author_is_the_caller_whatever_the_body_says(acme, bob, home, token_client,
                                                        session_client) -> None:
    for client in (token_client(bob), session_client(bob)):
        blob = client.get(f"{pages(acme)}/Home.md").json()["blob"]
        response = put(client, acme, "Home.md", {
            "content": f"# Home\n\n{blob}\n", "expected_blob": blob, "message": "Spoof",
            "author": "Mallory <mallory@evil.example>", "by": 1, "email": "x@evil.example"})
        assert response.status_code == 200, response.content
        log = git(acme, "log", "-1", "--format=%an%n%ae%n%B", "main")
        assert log.splitlines()[:3] == ["Bob", f"user-{bob.pk}@users.confab.invalid", "Spoof"]
        assert f"Confab-User: {bob.pk}" in log and "Mallory" not in log


def test_a_message_is_at_most_the_200_characters_a_commit_subject_keeps(
        acme, alice, home, token_client) -> None:
    client = token_client(alice)
    over = put(client, acme, "Home.md", {"content": "# Over\n", "expected_blob": home.blob,
                                         "message": "m" * 201})
    assert over.status_code == 400 and over.json()["code"] == "invalid"
    assert git(acme, "rev-parse", "main").strip() == home.commit
    longest = put(client, acme, "Home.md", {"content": "# Kept\n", "expected_blob": home.blob,
                                            "message": "m" * 200})
    assert longest.status_code == 200, longest.content
    assert git(acme, "log", "-1", "--format=%s", "main").strip() == "m" * 200
    upload = client.put(f"/api/teams/{acme.pk}/wiki/files/_files/a.png?message={'m' * 201}",
                        b"png", content_type="application/octet-stream")
    assert upload.status_code == 400


def test_another_teams_wiki_answers_like_a_missing_one(acme, charlie, home,
                                                       token_client) -> None:
    client = token_client(charlie)
    theirs = client.get(f"{pages(acme)}/Home.md")
    nobodys = client.get("/api/teams/999999/wiki/pages/Home.md")
    assert (theirs.status_code, theirs.json()) == (404, nobodys.json())
    assert theirs.json() == {"code": "not_found", "message": "No such wiki."}


def test_an_empty_wiki_lists_nothing_and_has_no_pages(acme, alice, token_client) -> None:
    client = token_client(alice)
    assert client.get(pages(acme)).json() == []
    assert client.get(f"{pages(acme)}/Home.md").status_code == 404
    assert client.get(f"/api/teams/{acme.pk}/wiki/search", {"q": "x"}).json() == []


@pytest.mark.parametrize("broken", [lambda good: b"[core\n",
                                    lambda good: good + b"[user]\n\tname = Ren\xe9\n"],
                         ids=["git refuses it", "git reads it, gitpython does not"])
def test_a_repository_whose_config_cannot_be_read_is_a_503_that_says_it_is_damaged(
        acme, alice, home, token_client, broken, caplog) -> None:
    config = store_for(acme).path / "config"
    config.write_bytes(broken(config.read_bytes()))  # gitpython reads it as it opens the repo
    answer = token_client(alice).get(f"{pages(acme)}/Home.md")
    assert answer.status_code == 503
    body = answer.json()
    assert body["code"] == "unavailable" and "restore it from a backup" in body["message"]
    assert "config" not in answer.content.decode()  # git's words and the path: the log's
    assert "its config cannot be read" in caplog.text


def test_attachments_are_uploaded_and_served_safely(acme, alice, carol, token_client) -> None:
    files = f"/api/teams/{acme.pk}/wiki/files"
    uploaded = token_client(alice).put(f"{files}/_files/logo.png", b"\x89PNG-bytes",
                                       content_type="application/octet-stream")
    assert uploaded.status_code == 201, uploaded.content
    token_client(alice).put(f"{files}/_files/notes.txt", b"<script>alert(1)</script>",
                            content_type="application/octet-stream")

    image = token_client(carol).get(f"{files}/_files/logo.png")
    assert image.status_code == 200 and image.content == b"\x89PNG-bytes"
    assert image["Content-Type"] == "image/png"
    assert image["X-Content-Type-Options"] == "nosniff"
    assert image["Content-Disposition"] == "inline"
    assert image["Content-Security-Policy"] == "default-src 'none'; sandbox"
    text = token_client(carol).get(f"{files}/_files/notes.txt")
    assert text["Content-Disposition"] == "attachment"
    assert text["X-Content-Type-Options"] == "nosniff"
    assert token_client(alice).get(f"{files}/Home.md").status_code == 404
    refused = token_client(carol).put(f"{files}/_files/x.png", b"x",
                                      content_type="application/octet-stream")
    assert refused.status_code == 403


def test_an_attachment_over_its_limit_is_413(acme, alice, settings, token_client) -> None:
    settings.CONFAB = {**settings.CONFAB, "WIKI_ATTACHMENT_BYTES": 10}
    response = token_client(alice).put(f"/api/teams/{acme.pk}/wiki/files/_files/big.png",
                                       b"x" * 11, content_type="application/octet-stream")
    assert (response.status_code, response.json()["code"]) == (413, "too_large")


def test_a_request_body_over_djangos_limit_is_413(acme, alice, settings, token_client) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    response = put(token_client(alice), acme, "Big.md", {"content": "x" * 200})
    assert (response.status_code, response.json()["code"]) == (413, "too_large")


def test_the_schema_documents_the_wiki_routes(client) -> None:
    paths = client.get("/api/openapi.json").json()["paths"]
    put_page = paths["/api/teams/{team_id}/wiki/pages/{path}"]["put"]
    assert {"200", "201", "400", "403", "404", "409", "413"} <= set(put_page["responses"])
    assert put_page["responses"]["409"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ConflictOut"}
    upload = paths["/api/teams/{team_id}/wiki/files/{path}"]["put"]
    assert "application/octet-stream" in upload["requestBody"]["content"]
