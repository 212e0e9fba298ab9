"""The wiki's pages in the browser (issue 11), through Django's test client over the real store:
the tree, a page, the editor and its preview, saves that merge, the conflict screen, history
with the agent's runs, diffs, restore, rename, delete, search and uploads — and the roles:
viewers read, members write, owners and admins also delete. Every HTML answer is checked for
inline code the CSP would block. (Another team's pages: the isolation matrix in
``tests/integration/web/test_isolation_matrix.py``.)
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from html.parser import HTMLParser
from urllib.parse import unquote

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from apps.accounts.models import Team, User
from apps.engine.wiki import WriteResult
from apps.wiki.authors import agent_author
from apps.wiki.rendering import page_url
from apps.wiki.services import attachment_save, page_delete, page_save
from apps.wiki.stores import store_for
from tests.integration.web.html import assert_no_inline_code
from tests.integration.wiki.conftest import HOME, git

pytestmark = pytest.mark.django_db

CAFE = "Caf\u00e9"  # composed (NFC), as the store keeps names
CAFE_NFD = unicodedata.normalize("NFD", CAFE)  # "Cafe" + U+0301, as macOS spells file names
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00"
       b"\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N"
       b"\x00\x00\x00\x00IEND\xaeB`\x82")


@pytest.fixture
def signed_in() -> Callable[[User], Client]:
    def make(user: User) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


def wiki(team: Team, rest: str = "") -> str:
    return f"/teams/{team.pk}/wiki/{rest}"


def html(response) -> str:
    assert_no_inline_code(response)
    return response.content.decode()


def head(team: Team) -> str:
    return git(team, "rev-parse", "main").strip()


def save(client: Client, team: Team, path: str, content: str, blob: str = "",
         commit: str = "", message: str = ""):
    return client.post(wiki(team, f"-/edit/{path}"), {
        "content": content, "expected_blob": blob, "base_commit": commit, "message": message})


class _Textareas(HTMLParser):
    """Each textarea's value by id, as a browser reads it: its text with character references
    decoded, less one line feed right after the start tag (HTML, "in body" insertion mode, a
    ``textarea`` start tag: "If the next token is a U+000A LINE FEED (LF) character token, then
    ignore that token")."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.values: dict[str, str] = {}
        self._open: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "textarea":
            self._open = dict(attrs).get("id") or ""
            self.values[self._open] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea" and self._open is not None:
            text = self.values[self._open]
            self.values[self._open] = text[1:] if text.startswith("\n") else text
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self.values[self._open] += data


def textareas(page: str) -> dict[str, str]:
    parser = _Textareas()
    parser.feed(page)
    parser.close()
    return parser.values


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]] if response.context else []


# -- reading ---------------------------------------------------------------------------------


def test_the_nav_has_a_wiki_item_for_the_current_team(signed_in, acme: Team, bob: User) -> None:
    page = signed_in(bob).get("/rooms/").content.decode()
    assert f'<a href="/teams/{acme.pk}/wiki/">Wiki</a>' in page
    page = signed_in(bob).get(wiki(acme)).content.decode()
    assert f'<a href="/teams/{acme.pk}/wiki/" aria-current="page">Wiki</a>' in page


def test_an_empty_wiki_invites_members_to_start_it(signed_in, acme: Team, bob: User,
                                                   carol: User) -> None:
    page = html(signed_in(bob).get(wiki(acme)))
    assert "No pages yet." in page and wiki(acme, "-/edit/Home.md") in page
    assert 'action="' + wiki(acme, "-/upload/") + '"' in page
    viewer = html(signed_in(carol).get(wiki(acme)))
    assert "No pages yet." in viewer
    assert "-/edit/" not in viewer and "-/upload/" not in viewer and "New page" not in viewer


def test_the_tree_shows_folders_and_titles(signed_in, acme: Team, alice: User,
                                           home: WriteResult) -> None:
    for path, text in (("Runbooks/Deploy.md", "# Deploying\n"), ("运维/手册.md", "# 运维手册\n"),
                       ("Runbooks/Old/Notes.md", "no heading\n")):
        page_save(team=acme, by=alice, path=path, content=text, expected_blob=None, message="")
    page = html(signed_in(alice).get(wiki(acme)))
    assert "4 pages" in page
    for title, path in (("Home", "Home.md"), ("Deploying", "Runbooks/Deploy.md"),
                        ("运维手册", "运维/手册.md"), ("Notes", "Runbooks/Old/Notes.md")):
        assert f'<a href="{page_url(acme.pk, path)}">{title}</a>' in page, title
    assert f'<a href="{page_url(acme.pk, "Runbooks/")}">Runbooks/</a>' in page
    folder = html(signed_in(alice).get(wiki(acme, "Runbooks/")))
    assert "Deploying" in folder and "Home" not in folder.split('id="pages-title"')[1]
    assert signed_in(alice).get(wiki(acme, "Nowhere/")).status_code == 404


def test_a_page_is_rendered_with_its_author_and_the_live_data(signed_in, acme: Team,
                                                              carol: User,
                                                              home: WriteResult) -> None:
    response = signed_in(carol).get(wiki(acme, "Home.md"))
    page = html(response)
    assert '<h1 id="section-home">Home</h1>' in page and "<p>Welcome to the Acme wiki.</p>" in page
    # a link to a page nobody wrote yet is marked as missing
    assert (f'<a href="{page_url(acme.pk, "Runbooks/Deploy.md")}" class="wiki-missing"'
            in page)
    assert "Last changed by <strong>Alice</strong>" in page and "Start the wiki" in page
    assert f'data-blob="{home.blob}"' in page and f'data-commit="{home.commit}"' in page
    assert f'data-socket-path="/ws/teams/{acme.pk}/wiki/"' in page
    assert 'data-path="Home.md"' in page and 'data-mode="read"' in page
    assert 'src="/static/wiki/wiki.js"' in page
    # a viewer reads: no edit, rename or delete
    assert "-/edit/" not in page and "-/rename/" not in page and "-/delete/" not in page
    assert "-/history/Home.md" in page


def test_members_see_edit_and_rename_owners_also_delete(signed_in, acme: Team, alice: User,
                                                        bob: User, home: WriteResult) -> None:
    member = html(signed_in(bob).get(wiki(acme, "Home.md")))
    assert "-/edit/Home.md" in member and "-/rename/Home.md" in member
    assert "-/delete/Home.md" not in member
    assert "-/delete/Home.md" in html(signed_in(alice).get(wiki(acme, "Home.md")))


def test_a_page_as_it_was_at_an_old_revision(signed_in, acme: Team, alice: User,
                                             home: WriteResult) -> None:
    page_save(team=acme, by=alice, path="Home.md", content="# Home\n\nNew text.\n",
              expected_blob=home.blob, message="Rewrite")
    old = html(signed_in(alice).get(wiki(acme, "Home.md"), {"rev": home.commit}))
    assert "Welcome to the Acme wiki." in old and "New text." not in old
    assert f"data-old-rev=\"{home.commit}\"" in old and 'id="wiki-old"' in old
    for rev in ("--output=Home.md", "HEAD~1", home.commit[:12], "0" * 40):
        assert signed_in(alice).get(wiki(acme, "Home.md"), {"rev": rev}).status_code == 404


def test_a_missing_page_is_a_404_that_offers_to_create_it(signed_in, acme: Team, bob: User,
                                                          carol: User, home: WriteResult
                                                          ) -> None:
    response = signed_in(bob).get(wiki(acme, "Runbooks/Deploy.md"))
    assert response.status_code == 404
    assert wiki(acme, "-/edit/Runbooks/Deploy.md") in html(response)
    viewer = signed_in(carol).get(wiki(acme, "Runbooks/Deploy.md"))
    assert viewer.status_code == 404 and "-/edit/" not in viewer.content.decode()
    for path in ("../secret.md", "a/../../b.md", ".git/config", "Home", "-/x.md"):
        assert signed_in(bob).get(wiki(acme, path)).status_code == 404, path


def test_attachments_are_served_inline_images_and_downloads(signed_in, acme: Team,
                                                            alice: User, carol: User) -> None:
    attachment_save(team=acme, by=alice, path="_files/dot.png", content=PNG,
                    expected_blob=None, message="")
    attachment_save(team=acme, by=alice, path="_files/spec.pdf", content=b"%PDF-1.4",
                    expected_blob=None, message="")
    image = signed_in(carol).get(wiki(acme, "_files/dot.png"))
    assert image.status_code == 200 and image.content == PNG
    assert image["Content-Type"] == "image/png"
    assert image["Content-Disposition"].startswith("inline")
    assert image["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in image["Content-Security-Policy"]
    pdf = signed_in(carol).get(wiki(acme, "_files/spec.pdf"))
    assert pdf["Content-Disposition"] == "attachment; filename*=UTF-8''spec.pdf"
    assert signed_in(carol).get(wiki(acme, "_files/none.png")).status_code == 404
    tree = html(signed_in(carol).get(wiki(acme)))
    assert f'<a href="{wiki(acme, "_files/dot.png")}">dot.png</a>' in tree


def test_an_attachment_is_served_as_it_was_at_a_revision(signed_in, acme: Team,
                                                         alice: User, carol: User) -> None:
    first = attachment_save(team=acme, by=alice, path="_files/notes.txt", content=b"first\n",
                            expected_blob=None, message="")
    attachment_save(team=acme, by=alice, path="_files/notes.txt", content=b"second\n",
                    expected_blob=first.blob, message="")
    client = signed_in(carol)
    assert client.get(wiki(acme, "_files/notes.txt")).content == b"second\n"
    old = client.get(wiki(acme, "_files/notes.txt"), {"rev": first.commit})
    assert (old.status_code, old.content, old["ETag"]) == (200, b"first\n", f'"{first.blob}"')
    for rev in ("0" * 40, "main~1; rm", "--output=x"):
        assert client.get(wiki(acme, "_files/notes.txt"), {"rev": rev}).status_code == 404


# -- editing ---------------------------------------------------------------------------------


def test_the_editor_starts_from_the_page_and_its_blob(signed_in, acme: Team, bob: User,
                                                      home: WriteResult) -> None:
    page = html(signed_in(bob).get(wiki(acme, "-/edit/Home.md")))
    assert "Welcome to the Acme wiki." in page.split('id="wiki-text"')[1]
    assert f'name="expected_blob" value="{home.blob}"' in page
    assert f'name="base_commit" value="{home.commit}"' in page
    assert f'data-preview-url="{wiki(acme, "-/preview/")}"' in page
    assert 'id="wiki-preview"' in page and "<p>Welcome to the Acme wiki.</p>" in page
    assert 'data-mode="edit"' in page


def test_a_member_creates_a_page_in_a_cjk_folder(signed_in, acme: Team, bob: User) -> None:
    client = signed_in(bob)
    path = "运维/部署 手册.md"
    editor = html(client.get(wiki(acme, f"-/edit/{path}")))
    assert "New page" in editor and 'data-blob=""' in editor  # saved as create-only
    assert "# 部署 手册" in editor.split('id="wiki-text"')[1]
    response = save(client, acme, path, "# 部署\r\n\r\nStep one.\r\n", message="First")
    assert response.status_code == 302 and response["Location"] == page_url(acme.pk, path)
    landed = client.get(response["Location"])
    assert "Created the page." in messages_of(landed)
    assert git(acme, "show", f"main:{path}") == "# 部署\n\nStep one.\n"  # LF, as typed
    assert "Bob" in git(acme, "log", "-1", "--format=%an") and "First" in git(
        acme, "log", "-1", "--format=%s")


def test_new_page_form_adds_md_and_goes_to_the_editor(signed_in, acme: Team, bob: User) -> None:
    response = signed_in(bob).get(wiki(acme, "-/new/"), {"path": " Team / Onboarding "})
    assert response["Location"] == wiki(acme, "-/edit/Team/Onboarding.md")
    refused = signed_in(bob).get(wiki(acme, "-/new/"), {"path": "../x"}, follow=True)
    assert refused.redirect_chain[-1][0] == wiki(acme)
    assert any("path" in m or "part" in m for m in messages_of(refused))


def test_a_viewer_cannot_open_the_editor_or_save(signed_in, acme: Team, carol: User,
                                                 home: WriteResult) -> None:
    client = signed_in(carol)
    assert client.get(wiki(acme, "-/edit/Home.md")).status_code == 403
    assert save(client, acme, "Home.md", "# vandal\n", home.blob, home.commit).status_code == 403
    assert client.post(wiki(acme, "-/preview/"), {"content": "x"}).status_code == 403
    assert head(acme) == home.commit


def test_a_save_after_someone_elses_change_elsewhere_merges_and_says_so(
        signed_in, acme: Team, alice: User, bob: User) -> None:
    base = page_save(team=acme, by=alice, path="Plan.md", content="# Plan\n\none\n\ntwo\n\n"
                     "three\n", expected_blob=None, message="")
    page_save(team=acme, by=alice, path="Plan.md", content="# Plan\n\nONE (alice)\n\ntwo\n\n"
              "three\n", expected_blob=base.blob, message="alice")
    client = signed_in(bob)
    response = save(client, acme, "Plan.md", "# Plan\n\none\n\ntwo\n\nTHREE (bob)\n",
                    base.blob, base.commit, "bob")
    assert response.status_code == 302
    assert any("merged" in m for m in messages_of(client.get(response["Location"])))
    assert git(acme, "show", "main:Plan.md") == "# Plan\n\nONE (alice)\n\ntwo\n\nTHREE (bob)\n"


def test_an_overlapping_save_gets_the_conflict_screen_and_loses_nothing(
        signed_in, acme: Team, alice: User, bob: User, home: WriteResult) -> None:
    alices = page_save(team=acme, by=alice, path="Home.md",
                       content=HOME.replace("Welcome to the Acme wiki.", "Welcome, says Alice."),
                       expected_blob=home.blob, message="Alice's welcome")
    client = signed_in(bob)
    mine = HOME.replace("Welcome to the Acme wiki.", "Welcome, says Bob.")
    response = save(client, acme, "Home.md", mine, home.blob, home.commit, "Bob's welcome")
    assert response.status_code == 409
    page = html(response)
    assert 'data-mode="conflict"' in page and "Alice</strong> changed this page" in page
    textareas = dict(re.findall(r'<textarea id="([\w-]+)"[^>]*>(.*?)</textarea>', page, re.S))
    assert "Welcome, says Bob." in textareas["conflict-mine"]
    assert "Welcome, says Alice." in textareas["conflict-current"]
    merged = textareas["wiki-text"]
    assert "&lt;&lt;&lt;&lt;&lt;&lt;&lt;" in merged and "Welcome, says Bob." in merged
    assert "Welcome, says Alice." in merged and "&gt;&gt;&gt;&gt;&gt;&gt;&gt;" in merged
    assert f'name="expected_blob" value="{alices.blob}"' in page  # saved against the current
    assert 'id="conflict-meanwhile"' in page and "+Welcome, says Alice." in page
    assert head(acme) == alices.commit  # nothing saved yet

    resolved = HOME.replace("Welcome to the Acme wiki.", "Welcome, say Alice and Bob.")
    done = save(client, acme, "Home.md", resolved, alices.blob, alices.commit, "Bob's welcome")
    assert done.status_code == 302
    assert git(acme, "show", "main:Home.md") == resolved
    authors = git(acme, "log", "--format=%an", "--", "Home.md").split()
    assert authors == ["Bob", "Alice", "Alice"]


def test_a_page_starting_with_blank_lines_round_trips_through_the_editor(
        signed_in, acme: Team, alice: User, bob: User) -> None:
    text = "\n\nBelow two blank lines.\n"
    saved = page_save(team=acme, by=alice, path="Blank.md", content=text, expected_blob=None,
                      message="")
    client = signed_in(bob)
    shown = textareas(html(client.get(wiki(acme, "-/edit/Blank.md"))))["wiki-text"]
    assert shown == text
    again = save(client, acme, "Blank.md", shown, saved.blob, saved.commit)
    assert again.status_code == 302 and head(acme) == saved.commit  # nothing to save


def test_the_conflict_screen_keeps_leading_blank_lines(signed_in, acme: Team, alice: User,
                                                       bob: User) -> None:
    base = page_save(team=acme, by=alice, path="Blank.md", content="\n\nbase\n",
                     expected_blob=None, message="")
    page_save(team=acme, by=alice, path="Blank.md", content="\n\nalice\n",
              expected_blob=base.blob, message="")
    response = save(signed_in(bob), acme, "Blank.md", "\n\nbob\n", base.blob, base.commit)
    assert response.status_code == 409
    values = textareas(html(response))
    assert (values["conflict-mine"], values["conflict-current"]) == ("\n\nbob\n",
                                                                     "\n\nalice\n")
    assert values["conflict-merged"].startswith("\n\n<<<<<<<")
    assert values["wiki-text"] == values["conflict-merged"]


def test_creating_a_page_someone_else_just_created_is_a_conflict(
        signed_in, acme: Team, alice: User, bob: User) -> None:
    page_save(team=acme, by=alice, path="New.md", content="# Alice's\n", expected_blob=None,
              message="")
    response = save(signed_in(bob), acme, "New.md", "# Bob's\n")
    assert response.status_code == 409
    page = response.content.decode()
    assert "# Bob&#x27;s" in page and "# Alice&#x27;s" in page


def test_a_refused_save_keeps_the_text_with_the_reason(signed_in, acme: Team, bob: User,
                                                       settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "WIKI_PAGE_BYTES": 50}
    response = save(signed_in(bob), acme, "Big.md", "# Big\n\n" + "x" * 60)
    assert response.status_code == 413
    page = html(response)
    assert 'id="wiki-error"' in page and "x" * 60 in page
    response = save(signed_in(bob), acme, "Zero.md", "a\x00b")
    assert response.status_code == 400


def test_the_preview_is_the_same_sanitized_rendering(signed_in, acme: Team, bob: User,
                                                     home: WriteResult) -> None:
    client = signed_in(bob)
    response = client.post(wiki(acme, "-/preview/"), {
        "content": "**hi** <script>alert(1)</script> [x](javascript:alert(1)) [h](../Home.md) "
                   "![i](_files/a.png)", "path": "ops/Runbook.md"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    body = response.content.decode()
    assert "<strong>hi</strong>" in body and "&lt;script&gt;" in body and "<script" not in body
    assert 'href="javascript' not in body
    assert f'href="{page_url(acme.pk, "Home.md")}"' in body
    assert f'src="{page_url(acme.pk, "_files/a.png")}"' in body


def test_the_preview_needs_the_csrf_token(acme: Team, bob: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(bob)
    assert client.post(wiki(acme, "-/preview/"), {"content": "x"}).status_code == 403


# -- history, diff, restore ----------------------------------------------------------------


def test_history_shows_who_when_what_and_the_agents_run(signed_in, acme: Team, alice: User,
                                                        bob: User, carol: User,
                                                        home: WriteResult) -> None:
    by_agent = agent_author(bob, conversation_id=41, run_id=97, tool_call_id="call_1")
    page_save(team=acme, by=bob, path="Home.md", content=HOME + "\nAgent notes.\n",
              expected_blob=home.blob, message="Add the agent's notes", author=by_agent)
    page = html(signed_in(carol).get(wiki(acme, "-/history/Home.md")))
    assert "agent (for Bob)" in page and "Add the agent&#x27;s notes" in page
    assert '<a href="/conversations/41/" data-run="97">run 97</a>' in page
    assert "Alice" in page and "Start the wiki" in page
    rows = re.findall(r'<tr data-commit="([0-9a-f]{40})">', page)
    assert rows[1] == home.commit and len(rows) == 2
    assert "Restore this version" not in page  # a viewer restores nothing
    assert "Restore this version" in signed_in(bob).get(
        wiki(acme, "-/history/Home.md")).content.decode()
    assert signed_in(carol).get(wiki(acme, "-/history/Never.md")).status_code == 404


def test_a_diff_between_any_two_revisions(signed_in, acme: Team, alice: User,
                                          home: WriteResult) -> None:
    second = page_save(team=acme, by=alice, path="Home.md", content=HOME + "\nTwo.\n",
                       expected_blob=home.blob, message="two")
    page_save(team=acme, by=alice, path="Home.md", content=HOME + "\nTwo.\nThree.\n",
              expected_blob=second.blob, message="three")
    client = signed_in(alice)
    page = html(client.get(wiki(acme, "-/diff/Home.md"), {"from": home.commit,
                                                          "to": second.commit}))
    assert '<span class="diff-add">+Two.</span>' in page and "Three." not in page
    whole = html(client.get(wiki(acme, "-/diff/Home.md"), {"from": home.commit}))
    assert "+Three." in whole
    same = html(client.get(wiki(acme, "-/diff/Home.md"), {"from": home.commit,
                                                          "to": home.commit}))
    assert "No difference" in same
    for bad in ({"from": "--output=Home.md"}, {"from": home.commit, "to": "-p"}, {},
                {"from": home.commit[:10]}):
        assert client.get(wiki(acme, "-/diff/Home.md"), bad).status_code == 404, bad


def test_a_member_restores_an_old_revision_as_a_new_commit(signed_in, acme: Team, alice: User,
                                                           bob: User, home: WriteResult) -> None:
    page_save(team=acme, by=alice, path="Home.md", content="# Gone\n", expected_blob=home.blob,
              message="oops")
    client = signed_in(bob)
    response = client.post(wiki(acme, "-/restore/Home.md"), {"rev": home.commit})
    assert response.status_code == 302 and response["Location"] == page_url(acme.pk, "Home.md")
    assert git(acme, "show", "main:Home.md") == HOME
    assert len(git(acme, "log", "--format=%H", "--", "Home.md").split()) == 3
    assert client.post(wiki(acme, "-/restore/Home.md"), {"rev": "--output=x"}).status_code == 404


# -- rename, delete --------------------------------------------------------------------------


def test_rename_moves_the_page_and_its_history(signed_in, acme: Team, bob: User,
                                               home: WriteResult) -> None:
    client = signed_in(bob)
    form = html(client.get(wiki(acme, "-/rename/Home.md")))
    assert f'value="{home.blob}"' in form
    response = client.post(wiki(acme, "-/rename/Home.md"), {
        "to": "Start/Welcome", "expected_blob": home.blob, "message": "Move it"})
    assert response.status_code == 302
    assert response["Location"] == page_url(acme.pk, "Start/Welcome.md")
    assert client.get(wiki(acme, "Home.md")).status_code == 404
    history = html(client.get(wiki(acme, "-/history/Start/Welcome.md")))
    assert "Start the wiki" in history and "(as <code>Home.md</code>)" in history


def test_a_stale_rename_is_refused_with_the_reason(signed_in, acme: Team, alice: User,
                                                   bob: User, home: WriteResult) -> None:
    page_save(team=acme, by=alice, path="Home.md", content="# Changed\n",
              expected_blob=home.blob, message="")
    response = signed_in(bob).post(wiki(acme, "-/rename/Home.md"), {
        "to": "Other.md", "expected_blob": home.blob})
    assert response.status_code == 409 and 'id="wiki-error"' in html(response)
    assert signed_in(bob).get(wiki(acme, "Home.md")).status_code == 200


def test_members_cannot_delete_owners_can_and_history_stays(signed_in, acme: Team,
                                                            alice: User, bob: User,
                                                            home: WriteResult) -> None:
    member = signed_in(bob)
    assert member.get(wiki(acme, "-/delete/Home.md")).status_code == 403
    assert member.post(wiki(acme, "-/delete/Home.md"),
                       {"expected_blob": home.blob}).status_code == 403
    owner = signed_in(alice)
    assert f'value="{home.blob}"' in html(owner.get(wiki(acme, "-/delete/Home.md")))
    response = owner.post(wiki(acme, "-/delete/Home.md"), {"expected_blob": home.blob,
                                                           "message": "Clean up"})
    assert response.status_code == 302 and response["Location"] == wiki(acme)
    gone = owner.get(wiki(acme, "Home.md"))
    assert gone.status_code == 404 and wiki(acme, "-/history/Home.md") in gone.content.decode()
    assert "Clean up" in html(owner.get(wiki(acme, "-/history/Home.md")))
    assert owner.post(wiki(acme, "-/restore/Home.md"),
                      {"rev": home.commit}).status_code == 302
    assert git(acme, "show", "main:Home.md") == HOME


# -- search ----------------------------------------------------------------------------------


def test_search_finds_literal_text_and_cjk_substrings(signed_in, acme: Team, alice: User,
                                                      carol: User, home: WriteResult) -> None:
    page_save(team=acme, by=alice, path="运维/手册.md", content="# 手册\n\n部署前先备份数据库。\n"
              "--output=x and a.*b\n", expected_blob=None, message="")
    client = signed_in(carol)
    page = html(client.get(wiki(acme, "-/search/"), {"q": "备份"}))
    assert "部署前先<mark>备份</mark>数据库。" in page and page_url(acme.pk, "运维/手册.md") in page
    assert "<mark>--output=x</mark>" in html(client.get(wiki(acme, "-/search/"),
                                                         {"q": "--output=x"}))
    assert "<mark>a.*b</mark>" in html(client.get(wiki(acme, "-/search/"), {"q": "a.*b"}))
    assert "<mark>WELCOME</mark>" not in html(client.get(wiki(acme, "-/search/"),
                                                         {"q": "WELCOME"}))
    assert "<mark>Welcome</mark>" in html(client.get(wiki(acme, "-/search/"), {"q": "WELCOME"}))
    assert "No page contains" in html(client.get(wiki(acme, "-/search/"), {"q": "zebra"}))
    assert "Type a word" in html(client.get(wiki(acme, "-/search/")))


@pytest.mark.parametrize("query", ["a\x00b", "two\nlines"])
def test_a_search_the_store_refuses_says_what_a_search_may_be(signed_in, acme: Team, carol: User,
                                                               home: WriteResult,
                                                               query: str) -> None:
    response = signed_in(carol).get(wiki(acme, "-/search/"), {"q": query})
    assert response.status_code == 400
    assert "Search for one line of text, 1 to 200 characters." in html(response)


# -- uploads ---------------------------------------------------------------------------------


def upload(client: Client, team: Team, name: str, content: bytes, save_as: str = ""):
    return client.post(wiki(team, "-/upload/"), {
        "file": SimpleUploadedFile(name, content), "name": save_as})


def test_a_member_uploads_an_image_and_a_page_shows_it(signed_in, acme: Team, bob: User) -> None:
    client = signed_in(bob)
    response = upload(client, acme, "dot.png", PNG)
    assert response.status_code == 302
    assert git(acme, "cat-file", "-s", "main:_files/dot.png").strip() == str(len(PNG))
    save(client, acme, "Pic.md", "![a dot](_files/dot.png)")
    page = html(client.get(wiki(acme, "Pic.md")))
    assert f'<img src="{wiki(acme, "_files/dot.png")}" alt="a dot">' in page
    assert upload(client, acme, "x.bin", PNG, save_as="renamed.png").status_code == 302
    assert "renamed.png" in git(acme, "ls-tree", "--name-only", "main", "_files/")


def test_a_wrong_type_is_refused_with_the_reason(signed_in, acme: Team, bob: User) -> None:
    for name in ("drawing.svg", "page.html", "run.sh", "noext"):
        response = upload(signed_in(bob), acme, name, b"<svg onload=alert(1)>")
        assert response.status_code == 400, name
        page = html(response)
        assert 'id="upload-error"' in page and "must be one of" in page, name
    assert store_for(acme).head() is None  # nothing was committed


def test_a_file_over_the_limit_is_refused_with_its_size(signed_in, acme: Team, bob: User,
                                                        settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "WIKI_ATTACHMENT_BYTES": 64}
    response = upload(signed_in(bob), acme, "big.png", PNG)
    assert response.status_code == 413
    assert f"{len(PNG)} bytes: attachments may be at most 64" in html(response)


def test_names_typed_or_uploaded_in_nfd_are_kept_in_nfc(signed_in, acme: Team,
                                                        bob: User) -> None:
    assert CAFE_NFD != CAFE
    client = signed_in(bob)
    new = client.get(wiki(acme, "-/new/"), {"path": f"Menus/{CAFE_NFD}"})
    assert unquote(new["Location"]) == wiki(acme, f"-/edit/Menus/{CAFE}.md")
    assert save(client, acme, f"Menus/{CAFE_NFD}.md", "# Menu\n").status_code == 302
    assert upload(client, acme, f"{CAFE_NFD}.png", PNG).status_code == 302
    assert upload(client, acme, "x.png", PNG, save_as=f"{CAFE_NFD} 2.png").status_code == 302
    blob = store_for(acme).read(f"Menus/{CAFE}.md").blob
    renamed = client.post(wiki(acme, f"-/rename/Menus/{CAFE}.md"), {
        "to": f"{CAFE_NFD}/Menu", "expected_blob": blob})
    assert renamed.status_code == 302, renamed.content
    names = git(acme, "ls-tree", "-r", "-z", "--name-only", "main").split("\0")[:-1]
    assert sorted(names) == sorted([f"{CAFE}/Menu.md", f"_files/{CAFE}.png",
                                    f"_files/{CAFE} 2.png"])
    assert client.get(wiki(acme, f"{CAFE_NFD}/Menu.md")).status_code == 200  # a link in NFD


def test_a_viewer_cannot_upload(signed_in, acme: Team, carol: User) -> None:
    assert upload(signed_in(carol), acme, "dot.png", PNG).status_code == 403


def test_a_folder_without_its_slash_leads_to_the_folder(signed_in, acme: Team, alice: User
                                                        ) -> None:
    page_save(team=acme, by=alice, path="Runbooks/Deploy.md", content="# Deploy\n",
              expected_blob=None, message="")
    response = signed_in(alice).get(wiki(acme, "Runbooks"))
    assert response.status_code == 302 and response["Location"] == wiki(acme, "Runbooks/")
    assert signed_in(alice).get(wiki(acme, "Nothing")).status_code == 404


def test_attachments_are_renamed_by_members_and_deleted_by_owners(
        signed_in, acme: Team, alice: User, bob: User) -> None:
    saved = attachment_save(team=acme, by=alice, path="_files/old.png", content=PNG,
                            expected_blob=None, message="")
    member = html(signed_in(bob).get(wiki(acme)))
    assert wiki(acme, "-/rename/_files/old.png") in member
    assert wiki(acme, "-/delete/_files/old.png") not in member
    renamed = signed_in(bob).post(wiki(acme, "-/rename/_files/old.png"), {
        "to": "_files/new.png", "expected_blob": saved.blob})
    assert renamed.status_code == 302
    owner = signed_in(alice)
    assert wiki(acme, "-/delete/_files/new.png") in html(owner.get(wiki(acme)))
    deleted = owner.post(wiki(acme, "-/delete/_files/new.png"), {"expected_blob": saved.blob})
    assert deleted.status_code == 302
    assert owner.get(wiki(acme, "_files/new.png")).status_code == 404
    assert "_files" not in git(acme, "ls-tree", "--name-only", "main")


def test_saving_a_page_deleted_meanwhile_offers_to_create_it_again(
        signed_in, acme: Team, alice: User, bob: User, home: WriteResult) -> None:
    page_delete(team=acme, by=alice, path="Home.md", expected_blob=home.blob, message="")
    client = signed_in(bob)
    response = save(client, acme, "Home.md", HOME + "\nBob's addition.\n", home.blob,
                    home.commit)
    assert response.status_code == 409
    page = html(response)
    assert "deleted while you were editing" in page and "Bob&#x27;s addition." in page
    again = save(client, acme, "Home.md", HOME + "\nBob's addition.\n")
    assert again.status_code == 302
    assert "Bob's addition." in git(acme, "show", "main:Home.md")
