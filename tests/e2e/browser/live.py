"""What the browser tests drive: a live confab (:class:`ConfabServer`), the personas' browser
contexts (:class:`People`), :func:`login` and :func:`save_screenshot`. The fixtures that build
them are in ``conftest.py``."""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, BrowserContext, Locator, Page

from tests.e2e.browser.room import Room
from tests.e2e.harness import ProcessStack
from tests.services.django_proc import last_json, run_script

CHROMIUM = os.environ.get("CONFAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",  # root (CI) cannot use Chromium's user-namespace sandbox
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # The machine's network is closed: without these Chromium keeps dialling Google's hosts.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
FAKELLM_RATE = 40  # tokens (word pieces) per second: a 200-word reply streams for about 5 s
TIMEOUT_MS = 15_000  # every expect and action (the longest wait is the rest of a run)
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"  # git-ignored

written: list[Path] = []  # artefacts of this run, listed in the terminal summary


@dataclass
class ConfabServer:
    """A running ``manage.py serve`` and the demo team in its database."""

    url: str
    stack: ProcessStack
    env: dict[str, str]
    demo: dict[str, Any]
    passwords: dict[str, str] = field(default_factory=dict)

    @property
    def users(self) -> dict[str, Any]:
        return self.demo["users"]

    def user_id(self, name: str) -> int:
        return self.users[name]["id"]

    def password(self, name: str) -> str:
        return self.passwords.get(name) or self.users[name]["password"]

    def api(self, method: str, path: str, body: dict[str, Any] | None = None, *,
            user: str = "alice", status: int = 200) -> Any:
        """``method path`` on the REST API as ``user`` (their token); asserts the answer's
        ``status`` and returns its JSON (None for an empty body)."""
        request = urllib.request.Request(
            f"{self.url}{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.users[user]['token']}",
                     "Content-Type": "application/json"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=10) as response:
            assert response.status == status, response.status
            data = response.read()
            return json.loads(data) if data else None

    def new_conversation(self, title: str = "Browser test", agent_mode: str = "always") -> int:
        """A fresh conversation in the demo room (REST, as alice): tests never share one.
        ``agent_mode``: ``always`` or ``mention``."""
        return self.api("POST", f"/api/rooms/{self.demo['room']['id']}/conversations",
                        {"title": title[:100], "agent_mode": agent_mode}, status=201)["id"]

    def fill_conversation(self, conversation_id: int, turns: int) -> None:
        """``turns`` stored exchanges in the conversation (alice asks ``question <n>``, the
        agent reads a file and says ``answer <n>``), written in a Django process."""
        code = (
            "from apps.accounts.models import User\n"
            "from apps.rooms.models import Message\n"
            "from apps.rooms.plain_text import plain_text\n"
            "alice = User.objects.get(username='alice')\n"
            "rows = []\n"
            f"for n in range({turns}):\n"
            "    for role, content in (\n"
            "        ('user', [{'type': 'text', 'text': f'question {n}'}]),\n"
            "        ('assistant', [{'type': 'tool_use', 'id': f'c{n}', 'name': 'Read',\n"
            "                        'input': {'file_path': f'f{n}.txt'}}]),\n"
            "        ('user', [{'type': 'tool_result', 'tool_use_id': f'c{n}',\n"
            "                   'content': f'contents {n}', 'is_error': False}]),\n"
            "        ('assistant', [{'type': 'text', 'text': f'answer {n}'}])):\n"
            "        rows.append(Message(conversation_id=" f"{conversation_id}" ", role=role,\n"
            "            position=len(rows) + 1, content=content,\n"
            "            search_text=plain_text(content),\n"
            "            author=alice if role == 'user' else None,\n"
            "            author_name='Alice' if role == 'user' else ''))\n"
            "Message.objects.bulk_create(rows)\n"
            "# written a day ago: alice's rate limit counts the last minute's messages\n"
            "from datetime import timedelta\n"
            "from django.utils import timezone\n"
            f"Message.objects.filter(conversation_id={conversation_id}).update(\n"
            "    created_at=timezone.now() - timedelta(days=1))\n"
            "print('{}')\n")
        last_json(run_script(code, self.env))

    def create_outsider(self, username: str, team: str) -> str:
        """A user who belongs only to a new team of their own (``team_create`` in a Django
        process on the server's database); returns their password."""
        password = f"{username}-Pw-{os.urandom(6).hex()}"
        code = (
            "import json\n"
            "from apps.accounts.models import User\n"
            "from apps.accounts.services import team_create\n"
            f"user = User.objects.create_user(username={username!r}, password={password!r},\n"
            f"                                display_name={username.title()!r})\n"
            f"team = team_create(name={team!r}, owner=user)\n"
            "print(json.dumps({'user': user.pk, 'team': team.pk}))\n")
        assert last_json(run_script(code, self.env))["user"]
        self.passwords[username] = password
        return password

    def log(self) -> str:
        """The tail of the server's log (for assertion messages)."""
        return self.stack.get("serve").log_text()[-3000:]


def login(context: BrowserContext, username: str, password: str) -> Page:
    """Sign ``username`` in through ``/accounts/login/`` (relative to the context's
    ``base_url``); returns the page, on wherever the login redirected to."""
    page = context.new_page()
    page.goto("/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(password)
    page.locator("form:has(#id_password) [type=submit]").click()
    try:
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
    except Exception as error:
        raise AssertionError(f"{username} could not sign in; the login page shows:\n"
                             f"{page.locator('body').inner_text()}") from error
    return page


class People:
    """The personas of one test, each in a fresh browser context of their own. Each persona
    signs in once per test package (:func:`login`); later contexts reuse its cookies."""

    def __init__(self, server: ConfabServer, browser: Browser, states: dict[str, Any],
                 test_name: str) -> None:
        self.server, self.browser, self.states = server, browser, states
        self.test_name = test_name
        self.contexts: dict[str, BrowserContext] = {}
        self.pages: dict[str, Page] = {}

    def new_context(self, **options: Any) -> BrowserContext:
        """A context on the server (``base_url``), signed in as nobody."""
        context = self.browser.new_context(base_url=self.server.url,
                                           viewport={"width": 1200, "height": 900}, **options)
        context.set_default_timeout(TIMEOUT_MS)
        return context

    def context(self, name: str) -> BrowserContext:
        """``name``'s context (a demo persona, or one made by ``server.create_outsider``)."""
        if name not in self.contexts:
            if name not in self.states:
                first = self.new_context()
                try:
                    login(first, name, self.server.password(name))
                    self.states[name] = first.storage_state()
                finally:
                    first.close()
            self.contexts[name] = self.new_context(storage_state=self.states[name])
        return self.contexts[name]

    def page(self, name: str) -> Page:
        if name not in self.pages:
            self.pages[name] = self.context(name).new_page()
        return self.pages[name]

    def room(self, name: str, conversation_id: int) -> Room:
        """``name``'s page on the room of ``conversation_id``, loaded (HTTP 200) and connected:
        the presence list shows ``name`` (so the page's socket is open)."""
        room = Room(self.page(name), conversation_id, name)
        response = room.open()
        assert response is not None and response.status == 200, (
            f"{name} got HTTP {response and response.status} for the room page")
        room.wait_until_present(self.server.user_id(name))
        return room

    def save_failure_artifacts(self) -> None:
        """A screenshot and the HTML of every page this test opened."""
        for name, page in self.pages.items():
            stem = f"{_slug(self.test_name)}-{name}-failure"
            try:
                save_screenshot(page, stem)
                html = ARTIFACTS / f"{stem}.html"
                html.write_text(page.content())
                written.append(html)
            except Exception as error:  # a closed page must not hide the test's own failure
                print(f"could not save {stem}: {error}", file=sys.stderr)

    def close(self) -> None:
        for context in self.contexts.values():
            context.close()


def save_screenshot(page: Page, stem: str) -> Path:
    """A PNG of ``page`` as ``artifacts/<stem>.png``; its path is printed and listed at the end
    of the run."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{stem}.png"
    page.screenshot(path=path, full_page=True)
    print(f"screenshot: {path}")
    written.append(path)
    return path


DOCS_SCREENSHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"


def docs_screenshot(page: Page, stem: str, *, max_height: int = 900,
                    part: Locator | None = None) -> None:
    """``artifacts/<stem>.png`` (the whole page), and with CONFAB_DOCS_SCREENSHOTS=1 the
    README's copy ``docs/screenshots/<stem>.png``: the top of the page down to the end of its
    content, at most ``max_height`` pixels, or only the element ``part``. The page is scrolled
    to its top first: a full-page shot draws a sticky header where the scroll left it (the room
    scrolls to its last message), which left a blank band above it and the transcript peeking
    out over it."""
    save_screenshot(page, stem)
    if os.environ.get("CONFAB_DOCS_SCREENSHOTS") != "1":
        return
    DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    if part is not None:
        part.screenshot(path=DOCS_SCREENSHOTS / f"{stem}.png", animations="disabled")
        return
    page.evaluate("window.scrollTo(0, 0)")
    bottom = page.evaluate("() => Math.ceil(document.querySelector('main')"
                           ".getBoundingClientRect().bottom + window.scrollY)")
    width = page.viewport_size["width"] if page.viewport_size else 1200
    page.screenshot(path=DOCS_SCREENSHOTS / f"{stem}.png", full_page=True, animations="disabled",
                    clip={"x": 0, "y": 0, "width": width, "height": min(bottom + 8, max_height)})


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:80]
