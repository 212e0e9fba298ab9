"""The team wiki in a real browser (issue 11): Chromium on a live ``manage.py serve``.

- Two people edit one page: the second sees "changed by" at once over the wiki socket, saves,
  gets the conflict screen, resolves it; the first, reading the page, sees "changed by" too;
  the history shows both. A save whose change does not overlap merges and says so.
- The XSS corpus rendered as a page and in the editor's live preview: no dialog, no script,
  no event handler, ``javascript:``/``data:`` URL, style or SVG — with the page's CSP, and with
  the CSP switched off (Playwright's ``bypass_csp``) to test the sanitizer alone.

Every wait is on the page's DOM. Screenshots of the page, the editor and the conflict screen go
to ``artifacts/``; with ``CONFAB_DOCS_SCREENSHOTS=1`` they also replace the README's copies in
``docs/screenshots/`` (small viewport-sized PNGs).
"""

from __future__ import annotations

import json
import re
import urllib.request
import uuid
from typing import Any
from urllib.parse import quote

import pytest
from playwright.sync_api import Dialog, Page, expect

from tests.e2e.browser.live import ConfabServer, People
from tests.e2e.browser.live import docs_screenshot as live_docs_screenshot

pytestmark = pytest.mark.e2e

PLAN = ("# Launch plan\n\n"
        "Date: to be decided\n\n"
        "Owner: nobody yet\n\n"
        "| Step | Who |\n|:--|:--|\n| Announce | Carol |\n| Ship | Bob |\n\n"
        "Budget: none\n")
CORPUS = "\n\n".join([
    "<script>window.__pwned = 'script'</script>",
    '<img src="x" onerror="window.__pwned = \'img\'">',
    '<svg onload="window.__pwned = \'svg\'"><circle r="4"/></svg>',
    '<iframe srcdoc="<script>parent.__pwned = \'iframe\'</script>"></iframe>',
    '<details open ontoggle="window.__pwned = \'details\'">x</details>',
    '<p style="position:fixed;inset:0;background:red">covered</p>',
    '<form id="wiki-editor"><button formaction="javascript:window.__pwned=1">go</button></form>',
    "[a link](javascript:window.__pwned='link')",
    "[a data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![a data image](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    "![an image](javascript:window.__pwned='image')",
    '<a href="javascript:window.__pwned=\'anchor\'">anchor</a>',
    "**bold** and `code` and [home](Home.md)",
])
DANGEROUS = ", ".join(f"{{root}} {selector}" for selector in (
    "script", "iframe", "svg", "form", "details", "[style]", "[id='wiki-editor']",
    "a[href^='javascript']", "a[href^='data']", "img[src^='javascript']", "img[src^='data']"))
ON_ATTRIBUTES = """root => [...root.querySelectorAll('*')].flatMap(el => [...el.attributes]
    .filter(a => a.name.startsWith('on')).map(a => el.tagName + ' ' + a.name))"""


# -- helpers ---------------------------------------------------------------------------------


def team_id(server: ConfabServer) -> int:
    return server.demo["team"]["id"]


def wiki_url(server: ConfabServer, rest: str = "") -> str:
    return f"/teams/{team_id(server)}/wiki/{rest}"


def quoted(path: str) -> str:
    return quote(path, safe="/")


def rest_put_page(server: ConfabServer, who: str, path: str, content: str) -> dict[str, Any]:
    """Create a page over REST with ``who``'s token (seeding, not what the test checks)."""
    request = urllib.request.Request(
        f"{server.url}/api/teams/{team_id(server)}/wiki/pages/{quoted(path)}",
        data=json.dumps({"content": content, "expected_blob": None}).encode(), method="PUT",
        headers={"Authorization": f"Bearer {server.users[who]['token']}",
                 "Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10) as response:
        assert response.status == 201, response.status
        return json.load(response)


def unique(name: str) -> str:
    return f"{name} {uuid.uuid4().hex[:6]}"


def open_editor(page: Page, server: ConfabServer, path: str) -> None:
    response = page.goto(wiki_url(server, f"-/edit/{quoted(path)}"))
    assert response is not None and response.status == 200, response and response.status
    expect(page.locator("#wiki")).to_have_attribute("data-socket", "open")


def save(page: Page, text: str | None = None, message: str = "") -> None:
    if text is not None:
        page.locator("#wiki-text").fill(text)
    if message:
        page.locator("#id_message").fill(message)
    page.locator('button[data-action="save"]').click()


def docs_screenshot(page: Page, name: str, *, max_height: int = 900) -> None:
    """:func:`tests.e2e.browser.live.docs_screenshot` as ``wiki-<name>``."""
    live_docs_screenshot(page, f"wiki-{name}", max_height=max_height)


# -- two people, one page ----------------------------------------------------------------------


def test_two_people_edit_one_page_the_second_sees_changed_by_and_resolves_the_conflict(
        confab_server: ConfabServer, people: People) -> None:
    path = f"Plans/{unique('Launch')}.md"
    alice, bob = people.page("alice"), people.page("bob")

    # alice creates the page in the editor; the preview follows her typing
    open_editor(alice, confab_server, path)
    alice.locator("#wiki-text").fill(PLAN)
    expect(alice.locator("#wiki-preview h1")).to_have_text("Launch plan")
    expect(alice.locator("#wiki-preview table td").first).to_have_text("Announce")
    save(alice, message="Start the plan")
    expect(alice.locator(".messages")).to_contain_text("Created the page.")
    expect(alice.locator("#wiki-body h1")).to_have_text("Launch plan")

    # both open the editor on the same version
    open_editor(alice, confab_server, path)
    open_editor(bob, confab_server, path)
    expect(bob.locator("#wiki-live")).to_be_hidden()

    # alice saves first; bob's editor says so at once
    save(alice, PLAN.replace("to be decided", "June 3 (Alice)"), "Set the date")
    expect(alice.locator(".messages")).to_contain_text("Saved.")
    expect(alice.locator("#wiki")).to_have_attribute("data-socket", "open")
    live = bob.locator("#wiki-live")
    expect(live).to_be_visible()
    expect(live).to_contain_text("changed by Alice")
    expect(live).to_contain_text("Your save will merge")

    # bob changed the same line: the conflict screen, with nothing lost
    bob.locator("#wiki-text").fill(PLAN.replace("to be decided", "June 10 (Bob)"))
    expect(bob.locator("#wiki-preview")).to_contain_text("June 10 (Bob)")
    docs_screenshot(bob, "editor")
    save(bob, message="Move the date")
    expect(bob.locator("#wiki-conflict")).to_be_visible()
    expect(bob.locator("#conflict-reason")).to_contain_text("Alice")
    expect(bob.locator("#conflict-mine")).to_have_value(re.compile(r"June 10 \(Bob\)"))
    expect(bob.locator("#conflict-current")).to_have_value(re.compile(r"June 3 \(Alice\)"))
    merged = bob.locator("#wiki-text")
    expect(merged).to_have_value(re.compile(r"<<<<<<<[\s\S]*June 10 \(Bob\)[\s\S]*>>>>>>>"))
    expect(merged).to_have_value(re.compile(r"<<<<<<<[\s\S]*June 3 \(Alice\)[\s\S]*>>>>>>>"))
    expect(bob.locator("#wiki-markers")).to_be_visible()  # markers left in the text
    expect(bob.locator("#conflict-meanwhile")).to_contain_text("+Date: June 3 (Alice)")
    docs_screenshot(bob, "conflict", max_height=1300)

    # the choices: theirs, mine, then an edit of his own
    bob.locator('button[data-use="conflict-current"]').click()
    expect(merged).to_have_value(re.compile(r"June 3 \(Alice\)"))
    expect(bob.locator("#wiki-markers")).to_be_hidden()
    bob.locator('button[data-use="conflict-mine"]').click()
    expect(merged).to_have_value(re.compile(r"June 10 \(Bob\)"))
    resolved = PLAN.replace("to be decided", "June 3, or June 10 if the review slips")

    # alice is reading the page meanwhile: bob's save reaches her at once
    alice_page = wiki_url(confab_server, quoted(path))
    alice.goto(alice_page)
    expect(alice.locator("#wiki")).to_have_attribute("data-socket", "open")
    save(bob, resolved)
    expect(bob.locator(".messages")).to_contain_text("Saved.")
    expect(bob.locator("#wiki-body")).to_contain_text("June 3, or June 10 if the review slips")
    expect(alice.locator("#wiki-live")).to_contain_text("changed by Bob")
    alice.locator('#wiki-live a[data-action="reload"]').click()
    expect(alice.locator("#wiki-body")).to_contain_text("June 3, or June 10 if the review slips")
    expect(alice.locator("#wiki-live")).to_be_hidden()

    # the history shows both, newest first
    bob.locator('a[data-action="history"]').click()
    rows = bob.locator("#wiki-history tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0).locator(".wiki-author")).to_contain_text("Bob")
    expect(rows.nth(0).locator(".wiki-subject")).to_contain_text("Move the date")
    expect(rows.nth(1).locator(".wiki-author")).to_contain_text("Alice")
    expect(rows.nth(1).locator(".wiki-subject")).to_contain_text("Set the date")
    expect(rows.nth(2).locator(".wiki-subject")).to_contain_text("Start the plan")
    bob.locator('button[data-action="compare"]').click()
    expect(bob.locator("#wiki-diff .diff-add")).to_contain_text(
        "+Date: June 3, or June 10 if the review slips")


def test_a_save_that_does_not_overlap_merges_and_says_so(confab_server: ConfabServer,
                                                         people: People) -> None:
    path = f"{unique('Merge')}.md"
    rest_put_page(confab_server, "alice", path, PLAN)
    alice, bob = people.page("alice"), people.page("bob")
    open_editor(alice, confab_server, path)
    open_editor(bob, confab_server, path)
    save(alice, PLAN.replace("to be decided", "June 3"))
    expect(bob.locator("#wiki-live")).to_contain_text("changed by Alice")
    save(bob, PLAN.replace("Budget: none", "Budget: 5k"))
    expect(bob.locator(".messages")).to_contain_text("merged")
    expect(bob.locator("#wiki-body")).to_contain_text("Date: June 3")
    expect(bob.locator("#wiki-body")).to_contain_text("Budget: 5k")


def test_the_wiki_page_tree_and_a_rendered_page(confab_server: ConfabServer,
                                                people: People) -> None:
    path = "Runbooks/Release checklist.md"
    rest_put_page(confab_server, "alice", path, (
        "# Release checklist\n\n"
        "Before every release, in order. See the [deploy runbook](Deploy.md) and the "
        "[on-call notes](On-call.md) (not written yet).\n\n"
        "| Step | Who | Done when |\n|:--|:--|:--|\n"
        "| Freeze `main` | Release captain | CI is green |\n"
        "| Tag the release | Release captain | `git tag v1.2.0` pushed |\n"
        "| Announce | Carol | Posted in #general |\n\n"
        "```sh\nmake deploy ENV=production\n```\n\n"
        "> Roll back at once if the error rate climbs: `make rollback`.\n"))
    carol = people.page("carol")  # a viewer reads
    carol.goto(wiki_url(confab_server))
    expect(carol.locator(f'.wiki-tree-page[data-path="{path}"] a')).to_have_text(
        "Release checklist")
    expect(carol.locator('button[data-action="new-page"]')).to_have_count(0)
    carol.locator(f'.wiki-tree-page[data-path="{path}"] a').click()
    expect(carol.locator("#wiki-body h1")).to_have_text("Release checklist")
    expect(carol.locator("#wiki-body table tr")).to_have_count(4)
    expect(carol.locator('a[data-action="edit"]')).to_have_count(0)
    expect(carol.locator("#wiki")).to_have_attribute("data-socket", "open")
    carol.locator("#wiki-body a", has_text="deploy runbook").click()
    expect(carol.locator("#wiki-body h1")).to_have_text("Deploy")
    bob = people.page("bob")  # a member sees the page's actions
    bob.goto(wiki_url(confab_server, quoted(path)))
    expect(bob.locator('a[data-action="edit"]')).to_be_visible()
    expect(bob.locator("#wiki-body a.wiki-missing")).to_have_text("on-call notes")
    expect(bob.locator("#wiki-body h1")).to_have_count(1)
    docs_screenshot(bob, "page")


# -- the XSS corpus ------------------------------------------------------------------------------


def _assert_nothing_ran(page: Page, root: str, dialogs: list[str]) -> None:
    assert page.evaluate("() => window.__pwned") is None
    assert dialogs == []
    dangerous = page.locator(DANGEROUS.replace("{root}", root))
    assert dangerous.count() == 0, dangerous.evaluate_all("els => els.map(e => e.outerHTML)")
    assert page.locator(root).evaluate(ON_ATTRIBUTES) == []


@pytest.mark.parametrize("csp", ["with the CSP", "without the CSP"])
def test_no_script_in_a_page_runs_in_the_page_or_the_preview(
        confab_server: ConfabServer, people: People, csp: str) -> None:
    path = f"{unique('Corpus')}.md"
    rest_put_page(confab_server, "alice", path, CORPUS)
    people.context("alice")  # signs alice in once; her cookies open the extra context
    context = people.new_context(storage_state=people.states["alice"],
                                 bypass_csp=csp == "without the CSP")
    try:
        page = context.new_page()
        dialogs: list[str] = []

        def dismiss(dialog: Dialog) -> None:
            dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", dismiss)
        response = page.goto(wiki_url(confab_server, quoted(path)))
        assert response is not None and response.status == 200
        assert "script-src 'self'" in response.headers["content-security-policy"]
        body = page.locator("#wiki-body")
        expect(body.locator("strong")).to_have_text("bold")  # Markdown still renders
        expect(body).to_contain_text("<script>window.__pwned = 'script'</script>")  # as text
        expect(body.locator('a[href$="/wiki/Home.md"]')).to_have_text("home")
        _assert_nothing_ran(page, "#wiki-body", dialogs)

        # the same text in the editor: the live preview comes from the same sanitizer
        page.goto(wiki_url(confab_server, f"-/edit/{quoted(path)}"))
        page.locator("#wiki-text").fill(CORPUS + "\n\npreview done")
        expect(page.locator("#wiki-preview")).to_contain_text("preview done")
        _assert_nothing_ran(page, "#wiki-preview", dialogs)
        assert page.locator("#wiki-editor").count() == 1  # the page's own form, not a clobber
    finally:
        context.close()
