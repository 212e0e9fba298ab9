"""The composer's model and reasoning controls in a real browser (issue 17): the enabled models,
for the chosen one only the controls its configuration declares, a change seen by everyone in
the room and used by the next run."""

from __future__ import annotations

import json
import os
import re
import time

import pytest
from playwright.sync_api import Page, WebSocketRoute, expect

from tests.e2e.browser.live import ConfabServer, People
from tests.services.django_proc import last_json, run_script

pytestmark = pytest.mark.e2e


def _add_thinker(server: ConfabServer) -> tuple[int, str]:
    """A model of the offline provider declaring three controls, with a default budget
    (in the server's database); its id and name. Named afresh per test: the server is shared."""
    name = f"Thinker {os.urandom(3).hex()}"
    code = (
        "import json\n"
        "from apps.integrations.models import ModelConfig\n"
        "offline = ModelConfig.objects.get(model_id='confab-offline')\n"
        f"m = ModelConfig.objects.create(provider=offline.provider, model_id={name!r},\n"
        f"    display_name={name!r}, extend_params=['effort', 'enabled_search',\n"
        "    'thinking_budget'], default_reasoning={'thinking_budget': 4096})\n"
        "print(json.dumps({'id': m.pk}))\n")
    return last_json(run_script(code, server.env))["id"], name


def test_the_composer_shows_the_chosen_models_controls_and_the_next_run_uses_them(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    thinker, name = _add_thinker(confab_server)
    conversation = confab_server.new_conversation(request.node.name)
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    choice = alice.page.locator("#model-choice")
    expect(choice.locator("option:checked")).to_have_text("Offline scripted model")
    expect(choice.locator("option", has_text=name)).to_have_count(1)
    controls = alice.page.locator("#model-settings [data-control]")
    expect(controls).to_have_count(0)  # the offline model declares none

    choice.select_option(label=name)
    for room in (alice, bob):
        expect(room.page.locator("#model-choice")).to_have_value(str(thinker))
        expect(room.page.locator("#model-settings [data-control]")).to_have_count(3)
    effort = bob.page.locator('#model-settings select[data-control="effort"]')
    expect(effort.locator("option").first).to_have_text("default")
    budget = bob.page.locator('#model-settings input[data-control="thinking_budget"]')
    expect(budget).to_have_attribute("placeholder", "default (4096)")
    expect(bob.page.get_by_label("Web search")).not_to_be_checked()
    expect(bob.page.locator('[data-control="thinking_type"]')).to_have_count(0)

    effort.select_option("high")
    bob.page.get_by_label("Web search").check()
    alice_effort = alice.page.locator('#model-settings select[data-control="effort"]')
    expect(alice_effort).to_have_value("high")
    expect(alice.page.get_by_label("Web search")).to_be_checked()
    expect(alice.page.locator("#notices")).to_contain_text(
        "Bob changed the model settings: they apply from the next run.")

    alice.send("hello")
    expect(alice.run_status).to_have_text("Completed")
    exported = alice.page.request.get(f"/api/conversations/{conversation}/export.json")
    runs = json.loads(exported.body())["runs"]
    assert [(r["model"], r["reasoning"]) for r in runs] == [
        (name, {"effort": "high", "thinking_budget": 4096, "enabled_search": True})]


class HeldEchoes:
    """A page's room socket through Playwright's WebSocket routing, so a test decides when the
    page gets the server's ``settings_changed`` frames: while ``holding``, they wait in
    ``held`` (oldest first) until :meth:`release`; every other frame passes at once."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.holding = False
        self.held: list[str | bytes] = []
        self.route: WebSocketRoute | None = None
        page.route_web_socket(re.compile(r"/ws/"), self._connect)

    def _connect(self, route: WebSocketRoute) -> None:
        self.route = route
        server = route.connect_to_server()  # the page's frames go on to the server unchanged
        server.on_message(self._from_server)

    def _from_server(self, message: str | bytes) -> None:
        if self.holding and '"settings_changed"' in str(message):
            self.held.append(message)
        elif self.route is not None:
            self.route.send(message)

    def wait_held(self, count: int, timeout_s: float = 10.0) -> None:
        """Until ``count`` frames are held (Playwright delivers them while the page waits)."""
        deadline = time.monotonic() + timeout_s
        while len(self.held) < count:
            assert time.monotonic() < deadline, f"held {len(self.held)} of {count} frames"
            self.page.wait_for_timeout(20)

    def release(self, count: int | None = None) -> None:
        """Pass on the ``count`` oldest held frames (all of them when None)."""
        assert self.route is not None
        count = len(self.held) if count is None else count
        for message in self.held[:count]:
            self.route.send(message)
        del self.held[:count]


def test_an_earlier_echo_does_not_undo_a_later_change(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    """Bob picks an effort, then ticks "Web search": the echo of the effort arriving after the
    tick leaves the box ticked, and his next change still carries it. A refused change puts
    the server's settings back."""
    thinker, name = _add_thinker(confab_server)
    conversation = confab_server.new_conversation(request.node.name)
    echoes = HeldEchoes(people.page("bob"))
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    alice.page.locator("#model-choice").select_option(label=name)
    expect(bob.page.locator("#model-settings [data-control]")).to_have_count(3)

    echoes.holding = True
    bob.page.locator('#model-settings select[data-control="effort"]').select_option("high")
    echoes.wait_held(1)
    search = bob.page.get_by_label("Web search")
    search.check()
    echoes.wait_held(2)
    echoes.release(1)  # the effort's echo, sent before the server had the tick
    expect(bob.page.locator("#notices")).to_contain_text("Bob changed the model settings")
    expect(search).to_be_checked()

    budget = bob.page.locator('#model-settings input[data-control="thinking_budget"]')
    budget.fill("8192")
    budget.press("Tab")  # the change event
    alice_budget = alice.page.locator('#model-settings input[data-control="thinking_budget"]')
    expect(alice_budget).to_have_value("8192")
    expect(alice.page.get_by_label("Web search")).to_be_checked()  # not sent undone
    alice_effort = alice.page.locator('#model-settings select[data-control="effort"]')
    expect(alice_effort).to_have_value("high")

    echoes.holding = False
    echoes.release()
    expect(search).to_be_checked()
    expect(budget).to_have_value("8192")

    budget.fill("2000000")  # past what ReasoningParams takes: invalid, nothing stored
    budget.press("Tab")
    expect(bob.page.locator("#notices")).to_contain_text("thinking_budget")
    expect(budget).to_have_value("8192")
    expect(search).to_be_checked()


def test_a_viewer_sees_no_controls(confab_server: ConfabServer, people: People,
                                   request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name)
    carol = people.room("carol", conversation)
    expect(carol.page.locator("#viewer-note")).to_be_visible()
    expect(carol.page.locator("#model-settings")).to_have_count(0)
